// Shared by the core integration tests (test/integration/core): run the real CLI (`node bin/sbx.js`)
// and the same probe unsandboxed, each with a controlled environment and cwd; a private HOME, XDG dirs
// and workspace per test file; /proc scans for marker processes. No sleeps: everything here waits on a
// process exit, a line of output or a descriptor closing, with a safety timeout that fails loudly.
import { spawn, spawnSync, type ChildProcess, type StdioOptions } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { REPO_ROOT } from './paths.js';
import { parseReport } from './report.js';
import type { Report } from '../../src/report/report.js';

export const SBX_BIN = join(REPO_ROOT, 'bin', 'sbx.js');
export const DIST_API = join(REPO_ROOT, 'dist', 'api.js');
export const DIST_CLI = join(REPO_ROOT, 'dist', 'cli.js');
/** The only way to skip the real-bwrap suites: an explicit opt-out. */
export const SKIP_INTEGRATION = process.env.SBX_SKIP_INTEGRATION === '1';
export const IS_ROOT = process.getuid?.() === 0;
/** The safety net for one process: far above any normal run, far below a `sleep 30`. */
export const SAFETY_MS = 15_000;

/** A clear failure (in beforeAll) when the suite cannot run here; never a silent skip. */
export function requireIntegrationPrerequisites(): void {
  for (const file of [DIST_API, DIST_CLI]) {
    if (!existsSync(file))
      throw new Error(
        `${file} is missing: run \`npm run build\` first (or set SBX_SKIP_INTEGRATION=1 to skip the real-bwrap suites)`,
      );
  }
  const which = spawnSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' });
  if (which.status !== 0)
    throw new Error('bwrap is not on PATH: apt-get install bubblewrap (or set SBX_SKIP_INTEGRATION=1)');
  const probe = spawnSync(
    'bwrap',
    ['--unshare-user', '--unshare-pid', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', 'true'],
    { encoding: 'utf8' },
  );
  if (probe.status !== 0) {
    throw new Error(
      `bwrap cannot create a user namespace here (exit ${probe.status}): ${probe.stderr.trim()}; enable unprivileged user namespaces (or set SBX_SKIP_INTEGRATION=1)`,
    );
  }
}

export interface TestHost {
  /** Everything below is inside this directory (removed by cleanup). */
  root: string;
  /** The invoking HOME (the host's view of it: planted secrets live here). */
  home: string;
  workspace: string;
  runtimeDir: string;
  cacheHome: string;
  configHome: string;
  /** The environment sbx is started with: nothing of the test runner's own. */
  env: Record<string, string>;
  cleanup(): void;
}

/** A fresh temp HOME, XDG dirs and workspace; `env` is the complete environment for the children. */
export function makeTestHost(prefix: string): TestHost {
  const root = mkdtempSync(join(tmpdir(), `sbx-core-${prefix}-`));
  const dir = (name: string, mode = 0o755) => {
    const path = join(root, name);
    mkdirSync(path, { mode, recursive: true });
    return path;
  };
  const home = dir('home', 0o700);
  const workspace = dir('ws');
  const runtimeDir = dir('run', 0o700);
  const cacheHome = dir('cache', 0o700);
  const configHome = dir('config', 0o700);
  return {
    root,
    home,
    workspace,
    runtimeDir,
    cacheHome,
    configHome,
    env: {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: home,
      XDG_RUNTIME_DIR: runtimeDir,
      XDG_CACHE_HOME: cacheHome,
      XDG_CONFIG_HOME: configHome,
      LANG: 'C',
      LC_ALL: 'C',
    },
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** A fresh directory under the test host, as the cwd of one scenario. */
export function scenarioDir(t: TestHost, name: string): string {
  const dir = join(t.root, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: Buffer;
  /** stdout / stderr as text. */
  out: string;
  err: string;
  /** Everything read from extra pipes (stdio index → bytes). */
  extra: Record<number, Buffer>;
}

export interface SpawnOptions {
  env: Record<string, string>;
  cwd: string;
  /** Bytes for stdin (then closed); otherwise stdin is /dev/null. */
  input?: Buffer | string;
  /** Descriptors beyond 0-2: 'pipe' (collected into `extra`), 'ignore', or an open fd number. */
  extraStdio?: Record<number, 'pipe' | 'ignore' | number>;
  timeoutMs?: number;
}

function stdioFor(opts: SpawnOptions, stdin: 'pipe' | 'ignore'): StdioOptions {
  const stdio: (string | number)[] = [stdin, 'pipe', 'pipe'];
  for (const [fd, what] of Object.entries(opts.extraStdio ?? {})) {
    while (stdio.length <= Number(fd)) stdio.push('ignore');
    stdio[Number(fd)] = what;
  }
  return stdio as StdioOptions;
}

export interface Started {
  child: ChildProcess;
  /** Resolves with the first stdout line matching `re` (rejects if stdout ends first). */
  line(re: RegExp): Promise<string>;
  /** Resolves once the process has exited and every stdio pipe has closed. */
  done: Promise<Ran>;
  /** Write to stdin (only when started with `stdin: 'pipe'`). */
  stdin: Writable | null;
}

/** Start a process and collect its output; `done` also waits for the pipes (held by any descendant). */
export function start(
  file: string,
  args: readonly string[],
  opts: SpawnOptions & { stdin?: 'pipe' | 'ignore' },
): Started {
  const stdinMode = opts.input !== undefined ? 'pipe' : (opts.stdin ?? 'ignore');
  const child = spawn(file, args, { env: opts.env, cwd: opts.cwd, stdio: stdioFor(opts, stdinMode) });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  const extra: Record<number, Buffer[]> = {};
  let text = '';
  const waiters: { re: RegExp; resolve: (l: string) => void; reject: (e: Error) => void }[] = [];
  const check = () => {
    const lines = text.split('\n').slice(0, -1);
    for (const w of [...waiters]) {
      const hit = lines.find((l) => w.re.test(l));
      if (hit !== undefined) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(hit);
      }
    }
  };
  child.stdout!.on('data', (c: Buffer) => {
    stdout.push(c);
    text += c.toString('latin1');
    check();
  });
  child.stderr!.on('data', (c: Buffer) => stderr.push(c));
  for (const [fd, what] of Object.entries(opts.extraStdio ?? {})) {
    if (what !== 'pipe') continue;
    const chunks: Buffer[] = (extra[Number(fd)] = []);
    (child.stdio[Number(fd)] as Readable).on('data', (c: Buffer) => chunks.push(c));
  }
  child.stdout!.on('end', () => {
    for (const w of waiters.splice(0))
      w.reject(
        new Error(
          `stdout ended before a line matching ${w.re}; stdout: ${JSON.stringify(text)}, stderr: ${JSON.stringify(Buffer.concat(stderr).toString())}`,
        ),
      );
  });
  if (opts.input !== undefined) {
    child.stdin!.on('error', () => {});
    child.stdin!.end(opts.input);
  }
  const timeoutMs = opts.timeoutMs ?? SAFETY_MS;
  const done = new Promise<Ran>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `safety timeout: ${[file, ...args].join(' ')} still running after ${timeoutMs} ms; stdout so far: ${JSON.stringify(text.slice(-500))}`,
        ),
      );
    }, timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const out = Buffer.concat(stdout);
      const err = Buffer.concat(stderr);
      resolve({
        code,
        signal,
        stdout: out,
        stderr: err,
        out: out.toString(),
        err: err.toString(),
        extra: Object.fromEntries(Object.entries(extra).map(([fd, c]) => [Number(fd), Buffer.concat(c)])),
      });
    });
  });
  done.catch(() => {});
  return {
    child,
    done,
    stdin: child.stdin,
    line: (re) =>
      new Promise<string>((resolve, reject) => {
        const waiter = { re, resolve, reject };
        waiters.push(waiter);
        check();
        if (child.stdout!.readableEnded && waiters.includes(waiter)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`stdout already ended without a line matching ${re}: ${JSON.stringify(text)}`));
        }
      }),
  };
}

// The bin is started as a program, as users start it: its shell line runs first (and checks
// --report-fd against the caller's descriptors), then the Node.js recorded at install (node-path).

/** `bin/sbx.js run ARGS...`, started (for signal and fd tests). */
export function startSbx(args: readonly string[], opts: SpawnOptions & { stdin?: 'pipe' | 'ignore' }): Started {
  return start(SBX_BIN, ['run', ...args], opts);
}

/** `bin/sbx.js run ARGS...` to completion. */
export function runSbx(args: readonly string[], opts: SpawnOptions): Promise<Ran> {
  return start(SBX_BIN, ['run', ...args], opts).done;
}

/** `bin/sbx.js run --report-fd 3 ARGS...` to completion, with its report parsed and schema-checked. */
export async function runSbxReport(args: readonly string[], opts: SpawnOptions): Promise<{ r: Ran; report: Report }> {
  const r = await runSbx(['--report-fd', '3', ...args], { ...opts, extraStdio: { 3: 'pipe' } });
  return { r, report: parseReport(r.extra[3]!.toString()) };
}

/** `bin/sbx.js ARGS...` (any subcommand, or none) to completion. */
export function runSbxRaw(args: readonly string[], opts: SpawnOptions): Promise<Ran> {
  return start(SBX_BIN, args, opts).done;
}

/** The control: the same probe, unsandboxed, same env and cwd. */
export function runHost(command: readonly string[], opts: SpawnOptions): Promise<Ran> {
  return start(command[0]!, command.slice(1), opts).done;
}

/** Host pids whose argv is exactly `argv` (read from /proc; the scan never matches itself). */
export function pidsWithArgv(argv: readonly string[]): number[] {
  const want = argv.join('\0');
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (cmdline.split('\0').slice(0, -1).join('\0') === want) out.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/**
 * Stops the hook servers (`sbx warm-server`, started detached by `sbx hook --warm`) whose sbx cache is
 * under `cacheHome`: a test's servers, found by their environment, before its directories go away.
 */
export function stopWarmServers(cacheHome: string): number {
  let stopped = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      // node [flags] bin/sbx.js warm-server (warm-server.ts SERVER_NODE_FLAGS)
      if (cmdline.at(-2) !== 'warm-server') continue;
      if (!readFileSync(`/proc/${name}/environ`, 'utf8').split('\0').includes(`XDG_CACHE_HOME=${cacheHome}`)) continue;
      process.kill(Number(name), 'SIGTERM');
      stopped++;
    } catch {
      // exited meanwhile, or another user's
    }
  }
  return stopped;
}

/** A `sleep` argument no other process on this host has: the marker of one test's sandbox. */
export function uniqueSleepArg(): string {
  return `30.${process.pid}${Math.floor(Math.random() * 1e6)
    .toString()
    .padStart(6, '0')}`;
}

/**
 * A shell script for inside the sandbox: starts `sleep MARKER`, waits (busy, no sleep) until that
 * process really is `sleep MARKER` (exec done), then prints `ready <session id>` and waits for it.
 */
export function sleeperScript(marker: string): string {
  return `sleep ${marker} & pid=$!; until [ "$(tr '\\0' ' ' < /proc/$pid/cmdline 2>/dev/null)" = "sleep ${marker} " ]; do :; done; echo "ready $SBX_SESSION_ID $pid"; wait $pid`;
}

/** Kill leftovers of a failed test (by exact argv) so one failure does not leak into the next run. */
export function killAll(argv: readonly string[]): void {
  for (const pid of pidsWithArgv(argv)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}
