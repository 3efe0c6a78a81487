// `sbx hook AGENT --warm` end to end: the native client (dist/sbx-warm, which bin/sbx.js execs) and the
// warm server (`sbx warm-server`). Every recorded input gets the same answer from the server as from
// `sbx hook` without it; a profile edited between calls is judged anew; with no server, or one the
// client cannot place outside every sandbox, the call is answered without a server. Each trust check
// is shown both ways: a stand-in server (or client) run unsandboxed, in this process's namespaces, is
// talked to, and the same program under bwrap, in namespaces of its own, is refused.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, watch, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES_DIR, REPO_ROOT } from '../../helpers/paths.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbxRaw,
  SAFETY_MS,
  SKIP_INTEGRATION,
  stopWarmServers,
  type TestHost,
} from '../../helpers/sbx-cli.js';

const CLIENT = join(REPO_ROOT, 'dist', 'sbx-warm');
const STAND_IN = join(REPO_ROOT, 'test', 'fixtures', 'hooks', 'stand-in-warm-peer.mjs');
const HAS_CLIENT = existsSync(CLIENT);

let t: TestHost;
let socketPath: string;
/** Printed by the script the client falls back to in the direct calls: the call was not served. */
let fallbackScript: string;
const servers: ChildProcess[] = [];

/** A recorded input as sent from the workspace (a malformed one as it is). */
function inputFor(file: string): string {
  const text = readFileSync(join(FIXTURES_DIR, 'hooks', file), 'utf8');
  try {
    const input = JSON.parse(text);
    if (typeof input === 'object' && input !== null && 'cwd' in input) input.cwd = t.workspace;
    return JSON.stringify(input);
  } catch {
    return text;
  }
}

/**
 * `sbx hook ARGS...` without --warm (which would start a server of its own): what a --warm answer
 * must be once its wrapped command is read without the warm client (`'CLIENT' NODE BIN run --warm`
 * is `NODE BIN run` without it; test/integration/package/launcher.test.ts runs both).
 */
async function coldHook(args: readonly string[], env = t.env, cwd = t.workspace, input?: string) {
  return runSbxRaw(['hook', ...args], { env, cwd, ...(input !== undefined ? { input } : {}) });
}

/** A --warm answer with its wrapped command started as without --warm. */
function unwarmed(out: string): string {
  return out.replaceAll(`'${realpathSync(CLIENT)}' `, '').replaceAll(' run --warm -p ', ' run -p ');
}

/** The client run directly, falling back to a script that only says so: what it prints tells who answered. */
function direct(agent: string, input: string, extra: readonly string[] = [], env = t.env, cwd = t.workspace) {
  return runHost([CLIENT, process.execPath, fallbackScript, 'hook', agent, '--warm', ...extra], { env, cwd, input });
}

/** Starts `sbx warm-server` for t's user and waits until it listens. */
async function startServer(env: Record<string, string> = t.env): Promise<ChildProcess> {
  const server = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'sbx.js'), 'warm-server'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  servers.push(server);
  let out = '';
  server.stdout!.setEncoding('utf8');
  const ready = new Promise<void>((resolve, reject) => {
    server.stdout!.on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('\n')) resolve();
    });
    server.once('exit', (code) => reject(new Error(`warm-server exited ${code} before listening`)));
  });
  await ready;
  expect(out).toBe(`sbx warm-server: listening on ${socketPath}\n`);
  return server;
}

async function stop(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  server.kill('SIGTERM');
  await once(server, 'exit');
}

/** Runs the stand-in peer (test/fixtures/hooks/stand-in-warm-peer.mjs), under bwrap when `sandboxed`. */
function standIn(role: 'server' | 'client', sandboxed: boolean, ...args: string[]): ChildProcess {
  const node = [process.execPath, STAND_IN, role, ...args];
  const bwrap = [
    'bwrap',
    '--die-with-parent',
    '--unshare-user',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--bind',
    '/',
    '/',
  ];
  const argv = sandboxed ? [...bwrap, '--dev', '/dev', '--proc', '/proc', ...node] : node;
  return spawn(argv[0]!, argv.slice(1), { env: t.env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Resolves once `path` exists: a watch on its directory, no polling (events arrive on a later tick). */
async function pathAppears(path: string): Promise<void> {
  const watcher = watch(dirname(path));
  const timer = setTimeout(() => watcher.emit('error', new Error(`${path} never appeared`)), SAFETY_MS);
  try {
    while (!existsSync(path)) await once(watcher, 'change');
  } finally {
    clearTimeout(timer);
    watcher.close();
  }
}

async function lineOf(child: ChildProcess): Promise<string> {
  let out = '';
  child.stdout!.setEncoding('utf8');
  for await (const chunk of child.stdout!) {
    out += chunk;
    if (out.includes('\n')) return out.split('\n')[0]!;
  }
  const [code] = child.exitCode === null ? await once(child, 'exit') : [child.exitCode];
  throw new Error(`stand-in exited ${code} without a line: ${out}`);
}

describe.skipIf(SKIP_INTEGRATION || !HAS_CLIENT)('sbx hook --warm (native client and warm server)', () => {
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    t = makeTestHost('warm');
    writeFileSync(join(t.workspace, 'README.md'), '# fixture\n');
    fallbackScript = join(t.root, 'fallback.mjs');
    writeFileSync(fallbackScript, "process.stdout.write('FALLBACK ' + process.argv.slice(2).join(' ') + '\\n');\n");
    const sbxCache = join(t.cacheHome, 'sbx');
    mkdirSync(sbxCache, { recursive: true, mode: 0o700 });
    // warm-BUILD.sock: BUILD is the one dist/ was built with (the client has it compiled in).
    const { BUILD: build } = (await import(join(REPO_ROOT, 'dist', 'version.js'))) as { BUILD: string };
    expect(build).toMatch(/^[0-9a-f]{16}$/);
    socketPath = join(sbxCache, `warm-${build}.sock`);
  });
  afterEach(async () => {
    for (const server of servers.splice(0)) await stop(server);
  });
  afterAll(() => {
    if (t) stopWarmServers(t.cacheHome);
    t?.cleanup();
  });

  it('answers every recorded input as `sbx hook` does without it', async () => {
    await startServer();
    const fixtures = readdirSync(join(FIXTURES_DIR, 'hooks')).filter((f) => f.endsWith('.json'));
    expect(fixtures.length).toBeGreaterThan(10);
    for (const file of fixtures) {
      const agent = file.startsWith('gemini-cli.') ? 'gemini-cli' : 'claude-code';
      const input = inputFor(file);
      const cold = await coldHook([agent], t.env, t.workspace, input);
      const served = await direct(agent, input);
      expect(served.out, file).not.toMatch(/^FALLBACK/);
      expect({ code: served.code, out: unwarmed(served.out), err: served.err }, file).toEqual({
        code: cold.code,
        out: cold.out,
        err: cold.err,
      });
      // And through bin/sbx.js, as the agent starts it.
      const warm = await runSbxRaw(['hook', agent, '--warm'], { env: t.env, cwd: t.workspace, input });
      expect(warm.out, file).toBe(served.out);
    }
  });

  it("an input past the hook's 4 MiB bound is refused alike, read no further", async () => {
    await startServer();
    const input = 'x'.repeat(4 * 1024 * 1024 + 100);
    const cold = await coldHook(['claude-code'], t.env, t.workspace, input);
    const served = await direct('claude-code', input);
    expect(cold.out).toContain('the hook input is larger than 4194304 bytes');
    expect(unwarmed(served.out)).toBe(cold.out);
  });

  it('judges each call anew: a profile edited between two calls decides the second', async () => {
    const profiles = join(t.configHome, 'sbx', 'profiles');
    mkdirSync(profiles, { recursive: true });
    const profile = join(profiles, 'mine.yaml');
    writeFileSync(profile, 'extends: agent\n');
    await startServer();
    const input = inputFor('claude-code.bash-pipes.json');
    const before = await direct('claude-code', input, ['-p', 'mine']);
    expect(before.out).toContain('"updatedInput"');
    writeFileSync(profile, 'extends: agent\ncommands:\n  deny: [grep, cat, wc, head, sort, echo, ls, printf]\n');
    const after = await direct('claude-code', input, ['-p', 'mine']);
    expect(after.out).not.toMatch(/^FALLBACK/);
    expect(after.out).toContain('"permissionDecision":"deny"');
    expect(unwarmed(after.out)).toEqual((await coldHook(['claude-code', '-p', 'mine'], t.env, t.workspace, input)).out);
  });

  it('answers as `sbx hook` does through a run of changes, one server throughout', async () => {
    await startServer();
    const other = join(t.root, 'other-ws');
    const config = join(t.root, 'other-config');
    const tool = join(t.home, 'tool', 'bin');
    mkdirSync(other, { recursive: true });
    mkdirSync(join(config, 'sbx', 'profiles'), { recursive: true, mode: 0o700 });
    mkdirSync(tool, { recursive: true });
    let env = { ...t.env };
    let cwd = t.workspace;
    const commands = ['ls -la', 'cat README.md | wc -l', 'curl https://example.com', 'cat /etc/passwd', 'cd sub && ls'];
    const answers = async (label: string) => {
      const out: string[] = [];
      for (const command of commands) {
        const input = JSON.stringify({
          ...JSON.parse(inputFor('claude-code.bash-pipes.json')),
          cwd,
          tool_input: { command },
        });
        const flags = ['-p', 'agent'];
        const cold = await coldHook(['claude-code', ...flags], env, cwd, input);
        const served = await direct('claude-code', input, flags, env, cwd);
        expect(served.out, `${label}: ${command}`).not.toMatch(/^FALLBACK/);
        expect(unwarmed(served.out), `${label}: ${command}`).toBe(cold.out);
        out.push(cold.out);
      }
      return out.join('');
    };
    const baseline = await answers('baseline');
    // A secret appears in the workspace (the warm workspace scan must see it), and goes again.
    writeFileSync(join(t.workspace, '.env'), 'TOKEN=1\n');
    await answers('a secret added');
    rmSync(join(t.workspace, '.env'));
    // Another config home, whose agent profile denies ls: the caller's environment decides.
    writeFileSync(join(config, 'sbx', 'profiles', 'agent.yaml'), 'extends: agent\ncommands:\n  deny: [ls]\n');
    env = { ...t.env, XDG_CONFIG_HOME: config };
    expect(await answers('another config home')).not.toBe(baseline);
    // Another workspace: the rewrite names it.
    env = { ...t.env };
    cwd = other;
    expect(await answers('another cwd')).not.toBe(baseline);
    // A toolchain directory in HOME put first on PATH.
    cwd = t.workspace;
    env = { ...t.env, PATH: `${tool}:${t.env.PATH}` };
    await answers('a toolchain on PATH');
    env = { ...t.env };
    expect(await answers('back to the start')).toBe(baseline);
  });

  it('without a server, the call is answered by Node with the same arguments and input', async () => {
    const none = await direct('claude-code', inputFor('claude-code.bash-pipes.json'), ['-p', 'builtin:agent']);
    expect(none.out).toBe('FALLBACK hook claude-code --warm -p builtin:agent\n');
    expect(none.code).toBe(0);
  });

  it('a command line the server does not answer (--help) falls back before the input is read', async () => {
    await startServer();
    // stdin stays open: a client that read it first would never end.
    const child = spawn(CLIENT, [process.execPath, fallbackScript, 'hook', 'claude-code', '--warm', '--help'], {
      env: t.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const line = await lineOf(child);
    child.stdin!.end();
    expect(line).toBe('FALLBACK hook claude-code --warm --help');
  });

  it('a server that stops mid-call: the input already read reaches the fallback whole', async () => {
    const server = standIn('server', false, socketPath, 'close-after-go');
    expect(await lineOf(server)).toBe('listening');
    const input = inputFor('claude-code.bash-quotes.json');
    // The fallback is the real CLI here: its answer must be the one for this very input.
    const ran = await runHost(
      [CLIENT, process.execPath, join(REPO_ROOT, 'bin', 'sbx.js'), 'hook', 'claude-code', '--warm'],
      {
        env: t.env,
        cwd: t.workspace,
        input,
      },
    );
    const cold = await coldHook(['claude-code'], t.env, t.workspace, input);
    expect(unwarmed(ran.out)).toBe(cold.out);
    server.kill();
  });

  it('trusts only a server outside every sandbox: the stand-in answers unsandboxed, not under bwrap', async () => {
    const input = inputFor('claude-code.bash-pipes.json');
    // Control: in this process's namespaces the stand-in is trusted, and its forged answer is written.
    const plain = standIn('server', false, socketPath, 'forge');
    expect(await lineOf(plain)).toBe('listening');
    expect((await direct('claude-code', input)).out).toBe('FORGED\n');
    plain.kill();
    await once(plain, 'exit');
    // The same program in a sandbox's namespaces, on the same path: never talked to.
    const boxed = standIn('server', true, socketPath, 'forge');
    expect(await lineOf(boxed)).toBe('listening');
    const ran = await direct('claude-code', input);
    expect(ran.out).toBe('FALLBACK hook claude-code --warm\n');
    boxed.kill();
    await once(boxed, 'exit');
  });

  it('answers only a client that proves its pid outside every sandbox: the stand-in client, unsandboxed and under bwrap', async () => {
    await startServer();
    const input = inputFor('claude-code.bash-pipes.json');
    const plain = standIn('client', false, socketPath, input);
    expect(await lineOf(plain)).toMatch(/^answered .*"updatedInput"/);
    // Under bwrap it proves a pid of its own namespace (its comm set, its pid claimed): refused.
    const boxed = standIn('client', true, socketPath, input);
    expect(await lineOf(boxed)).toBe('closed before go');
    // And claiming the test runner's pid, whose comm it cannot set: refused too.
    const liar = standIn('client', true, socketPath, input, String(process.pid));
    expect(await lineOf(liar)).toBe('closed before go');
  });

  it('sbx doctor says whether a server of this build runs', async () => {
    const check = async () => {
      const r = await runSbxRaw(['doctor', '--json'], { env: t.env, cwd: t.workspace });
      const checks = JSON.parse(r.out).checks as { name: string; status: string; detail: string }[];
      return checks.find((c) => c.name === 'warm server');
    };
    rmSync(socketPath, { force: true });
    expect(await check()).toMatchObject({ status: 'ok', detail: expect.stringContaining('no warm server runs now') });
    await startServer();
    expect(await check()).toMatchObject({ status: 'ok', detail: expect.stringContaining(`listens on ${socketPath}`) });
  });

  it('exits when idle, and removes its socket', async () => {
    const server = await startServer({ ...t.env, SBX_WARM_IDLE_SECONDS: '1' });
    const [code] = await once(server, 'exit');
    expect(code).toBe(0);
    expect(existsSync(socketPath)).toBe(false);
  });

  it('a second server takes the socket and the first exits', async () => {
    const first = await startServer({ ...t.env, SBX_WARM_IDLE_SECONDS: '2' });
    await startServer();
    const [code] = await once(first, 'exit');
    expect(code).toBe(0);
    expect(existsSync(socketPath)).toBe(true);
    const served = await direct('claude-code', inputFor('claude-code.bash-pipes.json'));
    expect(served.out).toContain('"updatedInput"');
  });

  it('the first --warm call without a server starts one, detached, that answers the next', async () => {
    rmSync(socketPath, { force: true });
    const input = inputFor('claude-code.bash-pipes.json');
    const first = await runSbxRaw(['hook', 'claude-code', '--warm'], { env: t.env, cwd: t.workspace, input });
    expect(first.out).toContain('"updatedInput"');
    // The detached server: its socket is renamed into place once it listens.
    await pathAppears(socketPath);
    const served = await direct('claude-code', input);
    expect(served.out).toBe(first.out);
    // Stop it: the test's directories go away.
    expect(stopWarmServers(t.cacheHome)).toBe(1);
  });
});
