// `sbx mcp`'s background jobs: `start` runs a dev server and answers once it is launched, a later `run`
// of the workspace reaches the port the profile publishes (it joins the job's server), the host reaches
// it too, `stop` ends it and returns its output; a job does not outlive the server, and a fifth is
// refused. The SDK's client over stdio, real bwrap, root and unprivileged alike.
import { mkdirSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/free-port.js';
import {
  killAll,
  makeTestHost,
  pidsWithArgv,
  requireIntegrationPrerequisites,
  SBX_BIN,
  SKIP_INTEGRATION,
  start,
  type TestHost,
  uniqueSleepArg,
} from '../../helpers/sbx-cli.js';
import { callRun, type Connected, connectSbx, fileAppears } from './client.js';

let t: TestHost;
let sbx: Connected;
let port: number;

/** A server that says where it listens, writes `ready` once it does, and logs each request. */
const serverScript = (marker: string) =>
  `require("http").createServer((q, s) => { console.log("request " + q.url); s.end("served by the job " + q.url); })` +
  `.listen(${port}, "127.0.0.1", () => require("fs").writeFileSync("ready", "")); // ${marker}`;

const text = (r: { content: unknown }) => (r.content as { text: string }[]).map((c) => c.text).join('\n');

describe.skipIf(SKIP_INTEGRATION)('sbx mcp: start and stop, a dev server tested by later calls', () => {
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    t = makeTestHost('mcp-bg');
    port = await freePort();
    mkdirSync(join(t.configHome, 'sbx', 'profiles'), { recursive: true });
    writeFileSync(
      join(t.configHome, 'sbx', 'profiles', 'dev.yaml'),
      `extends: agent\nnetwork:\n  publish: [${port}]\n`,
    );
    sbx = await connectSbx(['-p', 'dev', '--workspace', t.workspace], t.env, t.workspace);
  });
  afterAll(async () => {
    await sbx?.close();
    t?.cleanup();
  });

  it('lists start and stop beside run and explain', async () => {
    const { tools } = await sbx.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['explain', 'run', 'start', 'stop']);
  });

  it('a started server answers a later run (and the host); stop ends it with its output, not as an error', async () => {
    const marker = uniqueSleepArg();
    const argv = ['node', '-e', serverScript(marker)];
    try {
      const started = await sbx.client.callTool({ name: 'start', arguments: { command: argv } });
      expect(started.isError, text(started)).toBeFalsy();
      const job = Number(/^job (\d+) started in the background/.exec(text(started))?.[1]);
      expect(job).toBeGreaterThan(0);
      await fileAppears(t.workspace, 'ready');
      const client = `require("http").get("http://127.0.0.1:${port}/from-run", (r) => r.pipe(process.stdout))`;
      const r = await callRun(sbx, { command: ['node', '-e', client] });
      expect(r.isError, r.text).toBe(false);
      expect(r.report.captured?.stdout.text).toBe('served by the job /from-run');
      expect(r.text).toMatch(new RegExp(`notice: publish ${port}: another sbx run of this workspace`));
      // Control: published, the host reaches the same server.
      const fromHost = await new Promise<string>((resolve, reject) =>
        get({ host: '127.0.0.1', port, path: '/from-host' }, (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve(body));
        }).on('error', reject),
      );
      expect(fromHost).toBe('served by the job /from-host');
      const result = await sbx.client.callTool({ name: 'stop', arguments: { job } });
      expect(result.isError, text(result)).toBeFalsy();
      const report = result.structuredContent as { interruptedBy?: string; captured?: { stdout: { text: string } } };
      expect(report.interruptedBy).toBe('caller');
      expect(report.captured?.stdout.text).toBe('request /from-run\nrequest /from-host\n');
      expect(pidsWithArgv(argv)).toEqual([]);
      const again = await sbx.client.callTool({ name: 'stop', arguments: { job } });
      expect(again.isError).toBe(true);
      expect(text(again)).toContain(`no background job ${job}`);
    } finally {
      killAll(argv);
    }
  });

  it('a command refused by the rules is answered as run answers it, and no job is made', async () => {
    const r = await sbx.client.callTool({ name: 'start', arguments: { command: ['rm', 'x'] } });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/^refused, nothing ran: COMMAND_DENIED/);
  });

  it('at most 4 jobs; the end of the server ends every job', async () => {
    const marker = uniqueSleepArg();
    const argv = ['node', '-e', `setInterval(() => {}, 1000) // ${marker}`];
    // Raw JSON-RPC on the server's stdio: the SDK client's close would kill a server that takes its time.
    const server = start(process.execPath, [SBX_BIN, 'mcp', '-p', 'agent', '--workspace', t.workspace], {
      env: t.env,
      cwd: t.workspace,
      stdin: 'pipe',
      timeoutMs: 60_000,
    });
    const send = (message: Record<string, unknown>) =>
      server.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
    const clientInfo = { name: 'raw', version: '1' };
    try {
      send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo } });
      await server.line(/"id":1\b/);
      send({ method: 'notifications/initialized' });
      for (let id = 2; id <= 6; id++) {
        send({ id, method: 'tools/call', params: { name: 'start', arguments: { command: argv } } });
        const line = await server.line(new RegExp(`"id":${id}\\b`));
        const { result } = JSON.parse(line) as { result: { isError?: boolean; content: { text: string }[] } };
        if (id < 6) expect(result.isError, result.content[0]!.text).toBeFalsy();
        else expect(result.content[0]!.text).toContain('4 background jobs already exist');
      }
      server.stdin!.end();
      const r = await server.done;
      expect(r.code, r.err).toBe(0);
      expect(pidsWithArgv(argv)).toEqual([]);
    } finally {
      killAll(argv);
    }
  });
});
