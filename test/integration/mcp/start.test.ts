// `sbx mcp` at start and over its life: what is fixed when it starts (a workspace that is HOME and a
// project profile nobody trusted refuse the start; a host without a sandbox starts a server that
// refuses every call and runs nothing), a profile changed under a running server, a timeout that can
// only narrow the profile's, and stdout carrying nothing but the protocol.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { callRun, connectSbx, fileAppears } from './client.js';

let t: TestHost;

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

/** `node bin/sbx.js mcp ARGS` with stdin closed after `input`: its exit, stdout and stderr. */
function startRaw(args: string[], input: string) {
  return start(process.execPath, [SBX_BIN, 'mcp', ...args], { env: t.env, cwd: t.workspace, input }).done;
}

describe.skipIf(SKIP_INTEGRATION)('sbx mcp: fixed at start, refused at start, no sandbox', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('mcp-start');
  });
  afterAll(() => t?.cleanup());

  it('--workspace HOME is refused at start: exit 125, HOST_STATE_WRITABLE on stderr, nothing on stdout', async () => {
    const r = await startRaw(['-p', 'agent', '--workspace', t.home], `${JSON.stringify(INIT)}\n`);
    expect(r.code, r.err).toBe(125);
    expect(r.err).toMatch(/which no sandbox may write/);
    expect(r.out).toBe('');
  });

  it('a project profile nobody trusted is refused at start: exit 125, PROFILE_UNTRUSTED, with how to trust it', async () => {
    const project = join(t.root, 'project');
    mkdirSync(join(project, '.sbx', 'profiles'), { recursive: true });
    writeFileSync(join(project, '.sbx', 'profiles', 'wide.yaml'), 'extends: agent\nnetwork: host\n');
    const r = await start(process.execPath, [SBX_BIN, 'mcp', '-p', 'wide', '--workspace', project], {
      env: t.env,
      cwd: project,
      input: '',
    }).done;
    expect(r.code, r.err).toBe(125);
    expect(r.err).toMatch(/sbx trust/);
    expect(r.out).toBe('');
  });

  it('no sandbox on this host (bwrap missing): the server starts, every call is isError, nothing runs', async () => {
    const env = { ...t.env, SBX_BWRAP: join(t.root, 'no-such-bwrap') };
    const sbx = await connectSbx(['-p', 'agent', '--workspace', t.workspace], env, t.workspace);
    try {
      expect(sbx.stderr()).toMatch(/no sandbox on this host \(BWRAP_MISSING/);
      for (const args of [{ command: ['touch', 'ran'] }, { shell: 'touch ran' }]) {
        const r = await callRun(sbx, args);
        expect(r.isError).toBe(true);
        expect(r.report.error?.code).toBe('BWRAP_MISSING');
        expect(r.report.exitCode).toBe(125);
        expect(r.text).toMatch(/refused, nothing ran: BWRAP_MISSING/);
      }
      const explained = await sbx.client.callTool({ name: 'explain', arguments: {} });
      expect(explained.isError).toBe(true);
    } finally {
      await sbx.close();
    }
    expect(() => readFileSync(join(t.workspace, 'ran'))).toThrow(/ENOENT/);
  });

  it("a user profile changed after the start is refused (restart to use it); a call's timeout only narrows the profile's", async () => {
    const dir = join(t.configHome, 'sbx', 'profiles');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'short.yaml');
    writeFileSync(file, 'extends: agent\nlimits:\n  timeout: 1s\n');
    const sbx = await connectSbx(['-p', 'short', '--workspace', t.workspace], t.env, t.workspace);
    try {
      // Asking for an hour leaves the profile's second in force.
      const r = await callRun(sbx, { command: ['node', '-e', 'setInterval(() => {}, 1000)'], timeout: 3600 });
      expect(r.report.exitCode, r.text).toBe(124);
      expect(r.text).toMatch(/the 1s timeout/);
      writeFileSync(file, 'extends: agent\nnetwork: host\n');
      const changed = await callRun(sbx, { command: ['true'] });
      expect(changed.isError).toBe(true);
      expect(changed.report.error?.code).toBe('PROFILE_UNTRUSTED');
      expect(changed.text).toMatch(/restart sbx mcp/);
    } finally {
      await sbx.close();
    }
  });

  it("-p builtin:agent stays sbx's own profile on every call: a project agent.yaml nobody trusted changes nothing", async () => {
    // Re-resolved by its bare name, each call would find the project's profile and be refused (issue 33).
    const project = join(t.root, 'builtin-project');
    mkdirSync(join(project, '.sbx', 'profiles'), { recursive: true });
    writeFileSync(join(project, '.sbx', 'profiles', 'agent.yaml'), 'extends: default\nnetwork: host\n');
    const sbx = await connectSbx(['-p', 'builtin:agent', '--workspace', project], t.env, project);
    try {
      const r = await callRun(sbx, { command: ['echo', 'built-in'] });
      expect(r.isError, r.text).toBe(false);
      expect(r.report.captured?.stdout.text).toBe('built-in\n');
      const explained = await sbx.client.callTool({ name: 'explain', arguments: { command: ['true'] } });
      expect(explained.isError, JSON.stringify(explained.content)).toBeFalsy();
    } finally {
      await sbx.close();
    }
  });

  it('--max-runs 1: a second call waits for the first to end, then runs', async () => {
    const sbx = await connectSbx(['-p', 'agent', '--max-runs', '1', '--workspace', t.workspace], t.env, t.workspace);
    const waitFor = (name: string) =>
      'const fs = require("fs"); fs.writeFileSync("a-started", ""); ' +
      `const t = setInterval(() => { if (fs.existsSync("${name}")) { clearInterval(t); console.log("a done"); } }, 20)`;
    try {
      const first = callRun(sbx, { command: ['node', '-e', waitFor('release')], timeout: 60 });
      await fileAppears(t.workspace, 'a-started');
      const second = callRun(sbx, { command: ['touch', 'b-ran'] });
      // The server says the call is queued: until the first ends, it cannot have run.
      await sbx.stderrMatches(/a run waits for a free slot \(--max-runs\), 0 ahead of it/);
      expect(existsSync(join(t.workspace, 'b-ran'))).toBe(false);
      writeFileSync(join(t.workspace, 'release'), '');
      const [a, b] = await Promise.all([first, second]);
      expect(a.report.captured?.stdout.text, a.text).toBe('a done\n');
      expect(b.isError, b.text).toBe(false);
      expect(existsSync(join(t.workspace, 'b-ran'))).toBe(true);
    } finally {
      await sbx.close();
    }
  });

  it("a cancelled call's command that ignores SIGTERM is killed after the grace: the slot frees, no process is left", async () => {
    const sbx = await connectSbx(['-p', 'agent', '--max-runs', '1', '--workspace', t.workspace], t.env, t.workspace);
    const marker = uniqueSleepArg();
    const argv = [
      'node',
      '-e',
      'process.on("SIGTERM", () => {}); require("fs").writeFileSync("stubborn", ""); setInterval(() => {}, 1000)',
      marker,
    ];
    try {
      const abort = new AbortController();
      const call = sbx.client.callTool({ name: 'run', arguments: { command: argv } }, undefined, {
        signal: abort.signal,
      });
      call.catch(() => {});
      await fileAppears(t.workspace, 'stubborn');
      abort.abort();
      await expect(call).rejects.toThrow(/abort/i);
      // With one slot, this call runs only once the cancelled sandbox is gone: SIGTERM alone never ends it.
      const next = await callRun(sbx, { command: ['echo', 'next'] });
      expect(next.isError, next.text).toBe(false);
      expect(pidsWithArgv(argv)).toEqual([]);
    } finally {
      killAll(argv);
      await sbx.close();
    }
  });

  it('stdout carries only JSON-RPC, even when the command writes to its own stdout and stderr', async () => {
    const call = {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'run', arguments: { shell: 'echo to-stdout; echo to-stderr >&2' } },
    };
    const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
    const server = start(process.execPath, [SBX_BIN, 'mcp', '-p', 'agent', '--workspace', t.workspace], {
      env: t.env,
      cwd: t.workspace,
      stdin: 'pipe',
    });
    server.stdin!.write([INIT, initialized, call].map((m) => `${JSON.stringify(m)}\n`).join(''));
    await server.line(/"id":2/);
    // The end of its input ends the server.
    server.stdin!.end();
    const r = await server.done;
    expect(r.code, r.err).toBe(0);
    const lines = r.out.split('\n').filter((l) => l !== '');
    const messages = lines.map((l) => JSON.parse(l) as { id?: number; result?: { structuredContent?: unknown } });
    expect(messages.map((m) => m.id)).toEqual([1, 2]);
    expect(JSON.stringify(messages[1]!.result?.structuredContent)).toContain('to-stdout');
    expect(r.err).not.toContain('to-stdout');
  });

  it("what sbx mcp answers before the SDK loads is what the SDK answers, once; every later message is the SDK's", async () => {
    // The same messages three ways: initialize and tools/list answered by sbx itself
    // (src/cli/mcp/mcp-early.ts); initialize alone (a tools/list with params goes to the SDK); and
    // nothing (a capability the early answer does not read): byte for byte the same. The ping reuses
    // the id of initialize, whose replayed answer is still left out, and its own is not.
    const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    const sdkInit = { ...INIT, params: { ...INIT.params, capabilities: { experimental: { x: {} } } } };
    const sdkList = { ...list, params: { _meta: {} } };
    const outputs: string[] = [];
    for (const [first, listing] of [
      [INIT, list],
      [INIT, sdkList],
      [sdkInit, list],
    ] as const) {
      const server = start(process.execPath, [SBX_BIN, 'mcp', '-p', 'agent', '--workspace', t.workspace], {
        env: t.env,
        cwd: t.workspace,
        stdin: 'pipe',
      });
      server.stdin!.write([first, initialized, listing, ping].map((m) => `${JSON.stringify(m)}\n`).join(''));
      await server.line(/^\{"result":\{\},"jsonrpc":"2.0","id":1\}$/);
      server.stdin!.end();
      const r = await server.done;
      expect(r.code, r.err).toBe(0);
      outputs.push(r.out);
    }
    expect(outputs[1]).toBe(outputs[0]);
    expect(outputs[2]).toBe(outputs[0]);
    // One answer to each request, in order: initialize, tools/list, then ping.
    const messages = outputs[0]!
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { id: number; result: Record<string, unknown> });
    expect(messages.map((m) => m.id)).toEqual([1, 2, 1]);
    expect(messages[0]!.result.protocolVersion).toBe('2025-06-18');
    expect((messages[1]!.result.tools as { name: string }[]).map((tool) => tool.name)).toEqual([
      'run',
      'start',
      'stop',
      'explain',
    ]);
    expect(messages[2]!.result).toEqual({});
  });

  it('the end of its input ends the server and every sandbox still running', async () => {
    const marker = uniqueSleepArg();
    const argv = ['node', '-e', 'require("fs").writeFileSync("running", ""); setInterval(() => {}, 1000)', marker];
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run', arguments: { command: argv } } };
    const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
    const server = start(process.execPath, [SBX_BIN, 'mcp', '-p', 'agent', '--workspace', t.workspace], {
      env: t.env,
      cwd: t.workspace,
      stdin: 'pipe',
    });
    try {
      const running = fileAppears(t.workspace, 'running');
      server.stdin!.write([INIT, initialized, call].map((m) => `${JSON.stringify(m)}\n`).join(''));
      await running;
      expect(pidsWithArgv(argv)).toHaveLength(1);
      server.stdin!.end();
      const r = await server.done;
      expect(r.code, r.err).toBe(0);
      expect(pidsWithArgv(argv)).toEqual([]);
    } finally {
      killAll(argv);
    }
  });
});
