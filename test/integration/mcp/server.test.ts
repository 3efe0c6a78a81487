// `sbx mcp` end to end: the SDK's Client spawns the server over stdio and calls its tools under the
// built-in agent profile, as an agent would. Every kind of failure (a refusal, a non-zero exit, a
// forbidden read, a timeout, a bad cwd, a flood of output) is a result with isError, and the same
// server answers the next call. Runs as root and as an unprivileged user (see the README's Tests).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  killAll,
  makeTestHost,
  pidsWithArgv,
  requireIntegrationPrerequisites,
  SKIP_INTEGRATION,
  type TestHost,
  uniqueSleepArg,
} from '../../helpers/sbx-cli.js';
import { callRun, type Connected, connectSbx, fileAppears } from './client.js';

const MARKER = 'MCP-SECRET-8c41f2';

let t: TestHost;
let sbx: Connected;
let secret: string;

/** The server still answers: a plain allowed command, right after whatever came before. */
async function expectServing(): Promise<void> {
  const r = await callRun(sbx, { command: ['echo', 'still serving'] });
  expect(r.isError, r.text).toBe(false);
  expect(r.report.captured?.stdout.text).toBe('still serving\n');
}

describe.skipIf(SKIP_INTEGRATION)('sbx mcp: tools over stdio, under the agent profile', () => {
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    t = makeTestHost('mcp');
    secret = join(t.home, '.ssh', 'id_rsa');
    mkdirSync(join(t.home, '.ssh'), { mode: 0o700 });
    writeFileSync(secret, `-----BEGIN OPENSSH PRIVATE KEY-----\n${MARKER}\n`, { mode: 0o600 });
    mkdirSync(join(t.workspace, 'sub'));
    writeFileSync(join(t.workspace, 'sub', 'hello.txt'), 'hello from sub\n');
    // A way out of the workspace, as a command could plant one: a symlink to the planted key and one to /.
    symlinkSync(secret, join(t.workspace, 'key'));
    symlinkSync('/', join(t.workspace, 'root-link'));
    // The same way out one level down, under a name the workspace root does not hold.
    symlinkSync(secret, join(t.workspace, 'sub', 'away'));
    writeFileSync(join(t.workspace, '.env'), `API_TOKEN=${MARKER}\n`);
    sbx = await connectSbx(['-p', 'agent', '--workspace', t.workspace], t.env, t.workspace);
  });
  afterAll(async () => {
    await sbx?.close();
    t?.cleanup();
  });

  it('lists run, start, stop and explain, with run’s input schema and output schema (the JSON report)', async () => {
    const { tools } = await sbx.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['explain', 'run', 'start', 'stop']);
    const run = tools.find((tool) => tool.name === 'run')!;
    expect(Object.keys(run.inputSchema.properties ?? {}).sort()).toEqual([
      'command',
      'cwd',
      'output_limit',
      'shell',
      'timeout',
    ]);
    expect(run.outputSchema?.required).toEqual(expect.arrayContaining(['exitCode', 'setBy', 'violations']));
    expect(sbx.stderr()).toContain(`sbx mcp: profile agent`);
  });

  it('runs an allowed command: its output, exit 0, no isError', async () => {
    const r = await callRun(sbx, { command: ['cat', 'hello.txt'], cwd: 'sub' });
    expect(r.isError, r.text).toBe(false);
    expect(r.report.exitCode).toBe(0);
    expect(r.report.captured?.stdout.text).toBe('hello from sub\n');
    expect(r.text).toContain('hello from sub');
    expect(r.text).toMatch(/^cat exited 0 \[profile agent/);
  });

  it('runs a shell string through the command rules, each command judged', async () => {
    const ok = await callRun(sbx, { shell: 'cat sub/hello.txt | wc -l' });
    expect(ok.isError, ok.text).toBe(false);
    expect(ok.report.captured?.stdout.text.trim()).toBe('1');
    const refused = await callRun(sbx, { shell: 'cat sub/hello.txt | rm -f sub/hello.txt' });
    expect(refused.isError).toBe(true);
    expect(refused.report.error?.code).toBe('COMMAND_DENIED');
    expect(existsSync(join(t.workspace, 'sub', 'hello.txt'))).toBe(true);
  });

  it('a forbidden read of ~/.ssh/id_rsa fails inside (control: the same read works unsandboxed)', async () => {
    // The read through an interpreter, which no path guard judges: only the sandbox stands in its way.
    const read = ['node', '-e', 'process.stdout.write(require("fs").readFileSync("key"))'];
    expect(execFileSync(read[0]!, read.slice(1), { cwd: t.workspace, encoding: 'utf8' })).toContain(MARKER);
    const r = await callRun(sbx, { command: read });
    expect(r.isError).toBe(true);
    expect(r.report.exitCode).toBe(1);
    expect(r.report.setBy).toBe('child');
    expect(r.report.captured?.stderr.text).toMatch(/ENOENT/);
    expect(JSON.stringify(r)).not.toContain(MARKER);
    // By its host path (under /tmp, which the guard lets a command name: the sandbox has its own /tmp) it runs, and
    // finds nothing there.
    const direct = await callRun(sbx, { command: ['cat', secret] });
    expect(direct.isError).toBe(true);
    expect(direct.report.exitCode).toBe(1);
    expect(direct.report.captured?.stderr.text).toMatch(/No such file or directory/);
    expect(JSON.stringify(direct)).not.toContain(MARKER);
    // Through the workspace's symlink, the path guard refuses it before anything starts.
    const linked = await callRun(sbx, { command: ['cat', 'key'] });
    expect(linked.isError).toBe(true);
    expect(linked.report.error?.code).toBe('PATH_ESCAPE');
    expect(JSON.stringify(linked)).not.toContain(MARKER);
    await expectServing();
  });

  it("path guards read a relative argument from the call's cwd: sub/away leads out and is refused", async () => {
    // Judged from the workspace root, `away` names nothing and would pass; the command starts in sub/.
    const r = await callRun(sbx, { command: ['cat', 'away'], cwd: 'sub' });
    expect(r.isError).toBe(true);
    expect(r.report.error?.code, r.text).toBe('PATH_ESCAPE');
    expect(JSON.stringify(r)).not.toContain(MARKER);
    const inside = await callRun(sbx, { shell: 'cat hello.txt', cwd: 'sub' });
    expect(inside.report.captured?.stdout.text, inside.text).toBe('hello from sub\n');
  });

  it('a file the policy hid is named in the result with its rule, and reads empty inside', async () => {
    const r = await callRun(sbx, {
      command: ['node', '-e', 'process.stdout.write(require("fs").readFileSync(".env"))'],
    });
    expect(r.isError, r.text).toBe(false);
    expect(r.report.captured?.stdout.text).toBe('');
    expect(r.text).toMatch(
      new RegExp(
        `^hidden: \\d+ files? by the sensitive-file rules \\(.*\\), shown empty inside: .*${t.workspace}/\\.env`,
        'm',
      ),
    );
    expect(JSON.stringify(r)).not.toContain(MARKER);
  });

  it('a command the profile refuses: isError, the rule named, nothing ran', async () => {
    writeFileSync(join(t.workspace, 'victim'), 'x');
    const r = await callRun(sbx, { command: ['rm', 'victim'] });
    expect(r.isError).toBe(true);
    expect(r.report.exitCode).toBe(126);
    expect(r.report.setBy).toBe('sbx');
    expect(r.report.error?.code).toBe('COMMAND_DENIED');
    expect(r.report.violations.map((v) => v.rule)).toEqual(['commands.deny']);
    expect(r.text).toMatch(/^refused, nothing ran: COMMAND_DENIED/);
    expect(r.text).toContain('violation: command (commands.deny)');
    expect(r.text).toMatch(/^why: `sbx why -p \S+ -- rm victim` names the profile line that decides$/m);
    // The hint speaks to an MCP caller: no CLI flag it cannot pass.
    expect(r.text).not.toMatch(/--allow-denylisted-commands/);
    expect(existsSync(join(t.workspace, 'victim'))).toBe(true);
    await expectServing();
  });

  it('a non-zero exit is isError with the status', async () => {
    const r = await callRun(sbx, { command: ['false'] });
    expect(r.isError).toBe(true);
    expect(r.report.exitCode).toBe(1);
    expect(r.report.setBy).toBe('child');
    expect(r.text).toMatch(/^false exited 1/);
    await expectServing();
  });

  it('a timeout kills the command: exit 124, isError, the text says so', async () => {
    const r = await callRun(sbx, {
      command: ['node', '-e', 'setInterval(() => {}, 1000)'],
      timeout: 1,
    });
    expect(r.isError).toBe(true);
    expect(r.report.exitCode).toBe(124);
    expect(r.report.setBy).toBe('sbx');
    expect(r.report.violations.map((v) => v.kind)).toContain('timeout');
    expect(r.text).toMatch(/timed out/);
    await expectServing();
  });

  it('a cwd that leaves the workspace (.., a symlink, an absolute path) is refused: nothing runs', async () => {
    for (const cwd of ['../..', 'root-link', '/etc', 'sub/../..', 'missing']) {
      const r = await callRun(sbx, { command: ['touch', 'cwd-marker'], cwd });
      expect(r.isError, cwd).toBe(true);
      expect(r.report.error?.code, cwd).toBe('USAGE');
      expect(r.text, cwd).toMatch(/cwd /);
    }
    expect(existsSync(join(t.workspace, 'cwd-marker'))).toBe(false);
    await expectServing();
  });

  it('a refused cwd reads the same whether the path outside exists or not, and `..` is refused even inside', async () => {
    const texts = new Set<string>();
    for (const cwd of [join(t.home, '.ssh'), secret, '/no/such/dir', 'missing', 'sub/../sub', 'hello.txt']) {
      const r = await callRun(sbx, { command: ['true'], cwd });
      expect(r.isError, cwd).toBe(true);
      texts.add(r.report.error!.message.replace(JSON.stringify(cwd), 'CWD'));
    }
    expect([...texts]).toEqual(['cwd CWD: not a directory inside the workspace']);
    expect(sbx.stderr()).not.toContain(secret);
  });

  it('arguments that are not the schema, or both command and shell, are isError results', async () => {
    const both = await callRun(sbx, { command: ['ls'], shell: 'ls' });
    expect(both.isError).toBe(true);
    expect(both.text).toMatch(/exactly one of `command`/);
    const unknown = await sbx.client.callTool({ name: 'run', arguments: { command: ['ls'], profile: 'danger' } });
    expect(unknown.isError).toBe(true);
    expect(JSON.stringify(unknown.content)).toMatch(/profile/);
    await expectServing();
  });

  it('a flood of output keeps its head and its tail, the cut marked between: the summary at the end survives', async () => {
    const script =
      'console.log("first line"); process.stdout.write("x".repeat(200000)); console.log("\\nTests: 1 failed, 9 passed")';
    const r = await callRun(sbx, { command: ['node', '-e', script] });
    expect(r.isError, r.text).toBe(false);
    const out = r.report.captured!.stdout;
    expect(out.droppedBytes).toBeGreaterThan(180_000);
    expect(out.text).toMatch(/^first line\nx+\n\[sbx: \d+ bytes cut here\]\nx+\nTests: 1 failed, 9 passed\n$/);
    expect(r.text).toMatch(/\[sbx: \d+ bytes cut here\][\s\S]*Tests: 1 failed, 9 passed$/);
    expect(Buffer.byteLength(out.text)).toBeLessThan(16 * 1024 + 100);
    await expectServing();
  });

  it('output_limit sets how much of each stream comes back', async () => {
    const r = await callRun(sbx, {
      command: ['node', '-e', 'process.stdout.write("y".repeat(200000))'],
      output_limit: 65536,
    });
    const out = r.report.captured!.stdout;
    expect(out.droppedBytes).toBe(200_000 - 65_536);
    expect(out.text).toBe(`${'y'.repeat(32768)}\n[sbx: ${200_000 - 65_536} bytes cut here]\n${'y'.repeat(32768)}`);
    const tooSmall = await callRun(sbx, { command: ['true'], output_limit: 10 });
    expect(tooSmall.isError).toBe(true);
    await expectServing();
  });

  it('two calls in flight at once both complete: the first waits for a file only the second writes', async () => {
    const waiter = callRun(sbx, {
      command: [
        'node',
        '-e',
        'const fs = require("fs"); const t = setInterval(() => { if (fs.existsSync("go")) { clearInterval(t); console.log("saw go"); } }, 20)',
      ],
      timeout: 20,
    });
    const writer = callRun(sbx, { command: ['touch', 'go'] });
    const [w, g] = await Promise.all([waiter, writer]);
    expect(g.isError, g.text).toBe(false);
    expect(w.isError, w.text).toBe(false);
    expect(w.report.captured?.stdout.text).toBe('saw go\n');
  });

  it("a client's cancellation ends the call's sandbox; the server keeps serving", async () => {
    const marker = uniqueSleepArg();
    const argv = ['node', '-e', 'require("fs").writeFileSync("started", ""); setInterval(() => {}, 1000)', marker];
    const abort = new AbortController();
    try {
      const call = sbx.client.callTool({ name: 'run', arguments: { command: argv } }, undefined, {
        signal: abort.signal,
      });
      call.catch(() => {});
      await fileAppears(t.workspace, 'started');
      expect(pidsWithArgv(argv)).toHaveLength(1);
      abort.abort();
      await expect(call).rejects.toThrow(/abort/i);
      await expectServing();
      expect(pidsWithArgv(argv)).toEqual([]);
    } finally {
      killAll(argv);
    }
  });

  it('explain shows the sandbox and the verdict on a command, running nothing', async () => {
    const r = await sbx.client.callTool({ name: 'explain', arguments: { command: ['rm', 'x'] } });
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    const text = (r.content as { text: string }[])[0]!.text;
    expect(text).toMatch(/^profile\s+agent/);
    expect(text).toContain(`workspace ${t.workspace}`);
    expect(text).toMatch(/verdict\s+REFUSED: commands.deny/);
  });

  it('a ledger record for each run, in the invoking user’s state directory', () => {
    const ledger = join(t.home, '.local', 'state', 'sbx', 'audit.jsonl');
    expect(readFileSync(ledger, 'utf8')).toContain('"still serving"');
  });
});

describe.skipIf(SKIP_INTEGRATION)("sbx mcp: a call's cwd moves the command, never the profile", () => {
  const NOTE = 'MCP-PRIVATE-5d07aa';
  let h: TestHost;
  let server: Connected;
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    h = makeTestHost('mcp-rel');
    // A keep-out list relative to where sbx starts: resolved against the call's cwd, `cwd: "sub"` would move it to sub/private.
    mkdirSync(join(h.configHome, 'sbx', 'profiles'), { recursive: true });
    writeFileSync(
      join(h.configHome, 'sbx', 'profiles', 'rel.yaml'),
      'extends: default\nsensitive:\n  roots: [private]\n',
    );
    mkdirSync(join(h.workspace, 'private'));
    mkdirSync(join(h.workspace, 'sub'));
    writeFileSync(join(h.workspace, 'private', 'notes.txt'), `${NOTE}\n`);
    server = await connectSbx(['-p', 'rel', '--workspace', h.workspace], h.env, h.workspace);
  });
  afterAll(async () => {
    await server?.close();
    h?.cleanup();
  });

  it('private/ stays masked from every cwd; the command starts in the cwd', async () => {
    // Control: the file is readable outside the sandbox.
    expect(readFileSync(join(h.workspace, 'private', 'notes.txt'), 'utf8')).toContain(NOTE);
    // The directory's name only: a whole temp path can look like a secret to the output scrubber.
    const shell = 'cat "$SBX_WORKSPACE/private/notes.txt"; echo "start=$(basename "$PWD")"';
    for (const cwd of [undefined, 'sub', 'private']) {
      const r = await callRun(server, { shell, ...(cwd !== undefined ? { cwd } : {}) });
      expect(r.report.error, String(cwd)).toBeUndefined();
      const out = r.report.captured?.stdout.text ?? '';
      expect(out, String(cwd)).not.toContain(NOTE);
      expect(out, String(cwd)).toContain(`start=${cwd ?? 'ws'}\n`);
    }
  });
});
