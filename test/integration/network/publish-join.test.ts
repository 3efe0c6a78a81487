// A dev server in one run, its clients in later runs (issue 33): under a profile that publishes the
// port, a later run of the same workspace whose port is taken by that server joins it, and its
// 127.0.0.1:PORT inside leads there. The isolation around it: a run whose profile does not publish the
// port finds nothing there, a run of another workspace is refused as before (PORT_IN_USE), and a port
// freed by the server's end is published afresh. Then the same through `sbx hook claude-code`, one
// profile for both calls, as an agent runs a server in the background and tests it. The real CLI and
// bwrap; root and an unprivileged user alike.
import { mkdirSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/free-port.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  runSbxRaw,
  SKIP_INTEGRATION,
  start,
  startSbx,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;

/** An HTTP server on 127.0.0.1:PORT answering `served by NAME PATH`; says "ready", ends with its stdin. */
const server = (port: number, name: string) =>
  `require("http").createServer((q, s) => s.end("served by ${name} " + q.url)).listen(${port}, "127.0.0.1", () => console.log("ready")); ` +
  'process.stdin.on("end", () => process.exit(0)).resume()';

/** GET 127.0.0.1:PORT/x: prints the body, or the error's code. */
const client = (port: number) =>
  `require("http").get("http://127.0.0.1:${port}/x", (r) => { let b = ""; r.on("data", (c) => (b += c)); r.on("end", () => console.log(b)); }).on("error", (e) => console.log(e.code))`;

/** GET from the host. */
function hostGet(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/host' }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
}

function profile(name: string, body: string): string {
  const file = join(t.configHome, 'sbx', 'profiles', `${name}.yaml`);
  writeFileSync(file, body);
  return name;
}

describe.skipIf(SKIP_INTEGRATION)(
  'network.publish: later runs of the workspace reach the server one run publishes',
  () => {
    let port: number;
    let serve: string;
    beforeAll(async () => {
      requireIntegrationPrerequisites();
      t = makeTestHost('publish-join');
      mkdirSync(join(t.configHome, 'sbx', 'profiles'), { recursive: true });
      port = await freePort();
      serve = profile('serve', `extends: default\nnetwork:\n  publish: [${port}]\n`);
    });
    afterAll(() => t?.cleanup());

    it('a second run joins the first run’s server; runs without the port, or of another workspace, do not', async () => {
      const first = startSbx(['-p', serve, '--', 'node', '-e', server(port, 'first')], {
        env: t.env,
        cwd: t.workspace,
        stdin: 'pipe',
      });
      await first.line(/^ready$/);
      try {
        // Control: the host reaches the published server.
        expect(await hostGet(port)).toBe('served by first /host');
        const second = await runSbx(['-p', serve, '--', 'node', '-e', client(port)], { env: t.env, cwd: t.workspace });
        expect(second.code, second.err).toBe(0);
        expect(second.out).toBe('served by first /x\n');
        expect(second.err).toMatch(
          new RegExp(`publish ${port}: another sbx run of this workspace \\(session \\S+\\) serves it`),
        );
        // The same client under a profile that does not publish the port: its loopback has nothing there.
        const without = await runSbx(['-p', 'default', '--', 'node', '-e', client(port)], {
          env: t.env,
          cwd: t.workspace,
        });
        expect(without.out).toBe('ECONNREFUSED\n');
        // Another workspace, the same profile: the port is taken, and not by a run of that workspace.
        const elsewhere = join(t.root, 'elsewhere');
        mkdirSync(elsewhere);
        const other = await runSbx(['-p', serve, '--', 'node', '-e', client(port)], { env: t.env, cwd: elsewhere });
        expect(other.code).toBe(125);
        expect(other.err).toContain(`network.publish: 127.0.0.1:${port} is already in use on the host`);
        expect(other.out).toBe('');
      } finally {
        first.stdin?.end();
        await first.done;
      }
      // The server's run is over: the next run publishes the port itself (nothing stale joins it).
      const again = startSbx(['-p', serve, '--', 'node', '-e', server(port, 'again')], {
        env: t.env,
        cwd: t.workspace,
        stdin: 'pipe',
      });
      await again.line(/^ready$/);
      expect(await hostGet(port)).toBe('served by again /host');
      again.stdin?.end();
      expect((await again.done).err).not.toContain('another sbx run');
    });

    it('under the hook: the server call runs in the background, the next call of the same profile tests it', async () => {
      const agentServe = profile('agent-serve', `extends: agent\nnetwork:\n  publish: [${port}]\n`);
      const rewrite = async (command: string) => {
        const input = JSON.stringify({
          session_id: 's',
          cwd: t.workspace,
          hook_event_name: 'PreToolUse',
          tool_name: 'Bash',
          tool_input: { command, run_in_background: true },
        });
        const r = await runSbxRaw(['hook', 'claude-code', '-p', agentServe], { env: t.env, cwd: t.workspace, input });
        const answer = JSON.parse(r.out).hookSpecificOutput;
        expect(answer.permissionDecision, answer.permissionDecisionReason).toBeUndefined();
        return answer.updatedInput.command as string;
      };
      const background = start('bash', ['-c', await rewrite(`node -e '${server(port, 'agent')}'`)], {
        env: t.env,
        cwd: t.workspace,
        stdin: 'pipe',
        timeoutMs: 60_000,
      });
      await background.line(/^ready$/);
      try {
        const tested = await runHost(['bash', '-c', await rewrite(`node -e '${client(port)}'`)], {
          env: t.env,
          cwd: t.workspace,
        });
        expect(tested.code, tested.err).toBe(0);
        expect(tested.out).toBe('served by agent /x\n');
      } finally {
        background.stdin?.end();
        await background.done;
      }
    });
  },
);
