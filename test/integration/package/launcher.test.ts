// Issue 31 §2: sbx's own launcher never runs a `node` planted in a PATH directory a sandbox can write.
// The workspace's `.venv/bin` (as an activated virtualenv puts it first on PATH) holds a `node` that
// leaves a marker file and then does what node does. bin/sbx.js (directly and through an installed
// link), `sbx hook claude-code` and the command it rewrites to, the MCP server as the README's config
// starts it, and the Action's steps each run with that PATH: the marker never appears. The control:
// a plain `exec node`, the launcher's old last word, runs the planted one. And the run warns that PATH
// holds a directory it can write.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  SBX_BIN,
  SKIP_INTEGRATION,
  type SpawnOptions,
  start,
  stopWarmServers,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { REPO_ROOT } from '../../helpers/paths.js';
import { runAction } from '../action/harness.js';

let t: TestHost;
let env: Record<string, string>;
let marker: string;
let planted: string;
let node: string;

const HOOK_INPUT = {
  session_id: 's',
  transcript_path: '/dev/null',
  permission_mode: 'default',
  hook_event_name: 'PreToolUse',
  tool_name: 'Bash',
  tool_input: { command: 'echo sandboxed', description: 'echo' },
  tool_use_id: 'toolu_launcher',
};

/** The file itself, as a shell or an agent starts it: the kernel reads its `#!/bin/sh`. */
function sbx(args: readonly string[], opts: SpawnOptions & { bin?: string }) {
  return start(opts.bin ?? SBX_BIN, args, opts).done;
}

describe.skipIf(SKIP_INTEGRATION)("sbx's own launcher and a planted node (issue 31 §2)", () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    const record = join(REPO_ROOT, 'node-path');
    if (!existsSync(record))
      throw new Error(
        `${record} is missing: run npm ci (its install script records Node.js) or node bin/record-node.js`,
      );
    node = readFileSync(record, 'utf8').trim();
    t = makeTestHost('launcher');
    planted = join(t.workspace, '.venv', 'bin');
    mkdirSync(planted, { recursive: true });
    marker = join(t.root, 'PLANTED-NODE-RAN');
    writeFileSync(join(planted, 'node'), `#!/bin/sh\ntouch '${marker}'\nexec '${node}' "$@"\n`);
    chmodSync(join(planted, 'node'), 0o755);
    env = { ...t.env, PATH: `${planted}:${t.env.PATH}` };
  });
  afterAll(() => t?.cleanup());

  const ranPlanted = () => existsSync(marker);

  it('control: a plain `exec node` with this PATH runs the planted one', async () => {
    const r = await runHost(['sh', '-c', 'exec node -e 0'], { env, cwd: t.workspace });
    expect(r.code).toBe(0);
    expect(ranPlanted()).toBe(true);
    rmSync(marker);
  });

  it('bin/sbx.js, directly and through an installed link, runs the recorded node', async () => {
    const bindir = join(t.root, 'bin');
    mkdirSync(bindir, { recursive: true });
    symlinkSync(SBX_BIN, join(bindir, 'sbx'));
    for (const bin of [SBX_BIN, join(bindir, 'sbx')]) {
      const r = await sbx(['run', '--', 'sh', '-c', 'echo ok'], { env, cwd: t.workspace, bin });
      expect(r.code, r.err).toBe(0);
      expect(r.out).toBe('ok\n');
      // Once, naming the entry: the command could plant anything else there too.
      expect(r.err).toContain(`sbx: warning: PATH holds ${planted}, which this run can write`);
    }
    expect(ranPlanted()).toBe(false);
  });

  it.each([[[]], [['--warm']]])('sbx hook claude-code %j, and the rewritten command it answers with', async (flags) => {
    // --warm: the native client (dist/sbx-warm) is given the recorded node, finds no server, execs it,
    // and the answer starts one, with that node (stopped below: the test's directories go away).
    const input = JSON.stringify({ ...HOOK_INPUT, cwd: t.workspace });
    const r = await sbx(['hook', 'claude-code', ...flags], { env, cwd: t.workspace, input });
    expect(r.code, r.err).toBe(0);
    const decision = JSON.parse(r.out).hookSpecificOutput;
    // The command rewritten, no decision: the agent's own approvals still ask (README, Coding agent hooks).
    expect(decision.permissionDecision).toBeUndefined();
    const rewritten = decision.updatedInput.command as string;
    // With --warm the run starts through the warm client, given that same node (never a PATH lookup).
    const start =
      flags.length > 0 ? `'${realpathSync(join(REPO_ROOT, 'dist', 'sbx-warm'))}' '${node}' '` : `'${node}' '`;
    expect(rewritten.startsWith(start), rewritten).toBe(true);
    const ran = await runHost(['bash', '-c', rewritten], { env, cwd: t.workspace });
    expect(ran.out).toBe('sandboxed\n');
    expect(ranPlanted()).toBe(false);
    stopWarmServers(t.cacheHome);
  });

  it("sbx mcp as the README's config starts it (absolute node and sbx)", async () => {
    const transport = new StdioClientTransport({
      command: node,
      args: [SBX_BIN, 'mcp', '-p', 'builtin:agent', '--workspace', '.'],
      env,
      cwd: t.workspace,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'sbx-test', version: '1' });
    await client.connect(transport);
    try {
      const r = await client.callTool({ name: 'run', arguments: { shell: 'echo via-mcp' } });
      expect(r.isError).not.toBe(true);
      expect(JSON.stringify(r.structuredContent)).toContain('via-mcp');
    } finally {
      await client.close();
    }
    expect(ranPlanted()).toBe(false);
  });

  it("the Action's steps", async () => {
    const r = await runAction({ ...t, env }, 'launcher', { command: 'echo from-action' });
    expect(r.steps.map((s) => s.code)).toEqual([0, 0, 0, 0, 0]);
    expect(r.log).toContain('from-action\n');
    expect(ranPlanted()).toBe(false);
  });

  it('a bwrap planted on PATH in the workspace is refused, never run; --backend auto passes it by', async () => {
    const tools = join(t.workspace, 'tools', 'bin');
    mkdirSync(tools, { recursive: true });
    const bwrapMarker = join(t.root, 'PLANTED-BWRAP-RAN');
    writeFileSync(join(tools, 'bwrap'), `#!/bin/sh\ntouch '${bwrapMarker}'\nexec /usr/bin/bwrap "$@"\n`);
    chmodSync(join(tools, 'bwrap'), 0o755);
    const withBwrap = { ...t.env, PATH: `${tools}:${t.env.PATH}` };
    const r = await sbx(['run', '--', 'true'], { env: withBwrap, cwd: t.workspace });
    expect(r.code).toBe(125);
    expect(r.err).toContain(`the bwrap first on PATH, ${join(tools, 'bwrap')}, lies in ${t.workspace}`);
    expect(r.err).toContain('SBX_BWRAP=/usr/bin/bwrap');
    const auto = await sbx(['run', '--backend', 'auto', '--', 'true'], { env: withBwrap, cwd: t.workspace });
    expect(auto.code, auto.err).toBe(0);
    expect(existsSync(bwrapMarker)).toBe(false);
    // Control: the same PATH, looked up plainly, runs the planted one.
    expect((await runHost(['sh', '-c', 'exec bwrap --version'], { env: withBwrap, cwd: t.workspace })).code).toBe(0);
    expect(existsSync(bwrapMarker)).toBe(true);
  });

  it('without a record the launcher still finds node on PATH (what install.sh and npm ci prevent)', () => {
    // Read only: the launcher's shell half, given a package root with no node-path.
    const root = join(t.root, 'unrecorded');
    mkdirSync(join(root, 'bin'), { recursive: true });
    const launcher = readFileSync(SBX_BIN, 'utf8').split('\n').slice(0, 2).join('\n');
    writeFileSync(join(root, 'bin', 'sbx.js'), `${launcher}\n`);
    chmodSync(join(root, 'bin', 'sbx.js'), 0o755);
    const r = spawnSync(join(root, 'bin', 'sbx.js'), ['-e', '0'], { env, encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(ranPlanted()).toBe(true);
    rmSync(marker);
  });
});
