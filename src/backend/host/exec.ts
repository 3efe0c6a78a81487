// Spawns a Launch and waits for it. Only node built-ins: this is the launch path.
import { nowMs } from '../../host/clock.js';
import { spawn, type StdioOptions } from 'node:child_process';
import { closeSync, openSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { statusChildPid, statusExitCode } from '../bwrap/status.js';
import { leakedDescriptors, overlayLeaked } from '../../host/leaked-fds.js';
import type { ExtraFd, Interrupt, Launch } from '../launch.js';
import { SbxError } from '../../errors.js';

export type StdioMode = 'inherit' | 'capture' | 'ignore';

/** Where the signals to forward come from: this process (the CLI), or a warm server's caller (cli/warm/warm-run.ts). */
export interface SignalSource {
  on(sig: NodeJS.Signals, handler: () => void): unknown;
  off(sig: NodeJS.Signals, handler: () => void): unknown;
}

/**
 * A warm server's caller's stdio, on its way (cli/warm/warm-run.ts): the caller sends its descriptors
 * 0, 1 and 2 down `socket` with SCM_RIGHTS, and nothing in this process reads it. The launch starts
 * through `taker` (native/sbx-warm.c --take-stdio), which takes them from `socket` only if its sender
 * is the process `pid`, puts them at 0, 1 and 2, waits for the caller's go (sbx's lines said before
 * the launch are written by then: RunHooks.onLaunch), and execs the launch: the command writes where
 * it would have written under the caller's own `sbx run`. 'inherit' runs only.
 */
export interface StdioFrom {
  socket: Socket;
  taker: string;
  pid: number;
}

export interface ExecOptions {
  stdio: StdioMode;
  /** Bytes to feed the child's stdin in capture mode (otherwise stdin is empty). */
  input?: Uint8Array | string;
  /** Forward SIGINT/SIGTERM/SIGHUP received by this process to the sandboxed command (CLI). */
  forwardSignals: boolean;
  /** Where forwarded signals come from. Default: this process. */
  signals?: SignalSource;
  /** The caller's stdio, sent by another process (the warm server's runs); `stdio: 'inherit'` only. */
  stdioFrom?: StdioFrom;
  /** Interactive terminal: SIGINT/SIGQUIT already reach the child through the terminal. */
  tty: boolean;
  /** Abort (library callers): SIGTERM to the command, and after `graceMs` the whole sandbox is ended. */
  signal?: AbortSignal;
  /** Wall-clock limit: then SIGTERM to the command, and after `graceMs` SIGKILL to the whole sandbox. */
  timeoutMs?: number;
  graceMs?: number;
  /**
   * Who reports on the command. `status-fd` (default): the launcher writes the command's pid and exit
   * code to its status descriptor (bwrap's --json-status-fd, sbx-landlock), and sbx signals the
   * command itself. `supervisor`: the launcher supervises the command (nsjail), so signals go to the
   * launcher, and its log comes back raw for the backend to read.
   */
  supervision?: 'status-fd' | 'supervisor';
  /**
   * Pass data descriptors as unlinked regular files created here instead of pipes: nsjail open()s
   * /proc/self/fd/N, which fails (ENXIO) on node's socketpair pipes.
   */
  fdDir?: string;
  /** Capture mode: bytes kept of each stream (the rest is read and counted, never held). Default: 64 MiB. */
  captureMaxBytes?: number;
  /**
   * How sbx ends the whole sandbox (a second signal, the timeout's grace, a failed forward): SIGKILL
   * to the launcher by default. sbx-landlock takes SIGTERM, kills the command itself and still
   * restores what it guards before it exits (native/sbx-landlock.c on_signal); a SIGKILL could not.
   */
  launcherKill?: 'SIGKILL' | 'SIGTERM';
  /** The descriptors pinned for the launch's `bind` fds (host/pins.ts), by source path. */
  pins?: { fdOf(source: string): number | undefined };
  /**
   * Called with the launcher's pid once spawned (the memory watchdog). `alive` is false from the
   * moment node reaps it: node emits 'exit' in the same callback that reaps, so no timer can see the
   * pid in between, when it may already name another process.
   */
  watch?: (launcherPid: number, alive: () => boolean) => void;
  /**
   * Called once with the sandbox's init (host pid) as soon as the status descriptor names it, before
   * the command has run for long: its network namespace's counters are opened then
   * (network/host/net-counters.ts).
   */
  onSandbox?: (initPid: number) => void;
}

export type ExecResult =
  /** The command ran; `code` is its exit status (128+N when killed by signal N). */
  | ({
      kind: 'ran';
      code: number;
      durationMs: number;
      timedOut: boolean;
      interrupts: Interrupt[];
      /** What the launcher wrote on its status descriptor, for the backend to read (sbx-landlock's restore and its network judge's denials). */
      status: string;
    } & Captured)
  /** bwrap exited before the command started: the sandbox could not be built (its message went to stderr). */
  | { kind: 'setup-failed'; code: number | null; signal: NodeJS.Signals | null; durationMs: number; stderr?: Buffer }
  /** A supervising launcher ended (supervision: 'supervisor'): how, and its log; whether the command ran is for the log to say. */
  | ({
      kind: 'supervised';
      code: number | null;
      signal: NodeJS.Signals | null;
      log: string;
      durationMs: number;
      timedOut: boolean;
      interrupts: Interrupt[];
    } & Captured);

/** Capture mode: the kept head of each stream, its end when the head did not hold it, and how many bytes each carried in all. */
export interface Captured {
  stdout?: Buffer;
  stderr?: Buffer;
  /** The last bytes of each stream, when it carried more than its head keeps. */
  tails?: { stdout?: Buffer; stderr?: Buffer };
  streamBytes?: { stdout: number; stderr: number };
}

const DEFAULT_CAPTURE_MAX_BYTES = 64 * 1024 * 1024;
/**
 * The end of a stream kept past its head: far above what a report shows of it (report/scrub.ts keeps
 * half its bound from the end), so a test run's summary survives any amount of output before it.
 */
const CAPTURE_TAIL_BYTES = 1024 * 1024;
/** The launch's extra descriptors are numbered from here in the child. */
const EXTRA_BASE = 3;

/** A process's children (host view), or undefined when /proc has no entry for it. */
function childrenOf(pid: number): number[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return undefined;
  }
}

/** The pid (host view) of the sandboxed command: the child of bwrap's pid-1 init. */
function commandPid(initPid: number): number | undefined {
  const children = childrenOf(initPid);
  return children === undefined ? undefined : (children[0] ?? initPid);
}

/**
 * Whether `pid` is the init of a pid namespace of its own (bwrap's pid 1, NSpid `HOST 1`), rather than a
 * command in the caller's namespace (sbx-landlock reports the command itself).
 */
function isNamespaceInit(pid: number): boolean {
  try {
    const nspid = /^NSpid:\s*(.*)$/m
      .exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
      ?.trim()
      .split(/\s+/);
    return nspid !== undefined && nspid.length > 1 && nspid.at(-1) === '1';
  } catch {
    return false;
  }
}

function signalNumber(sig: NodeJS.Signals): number {
  return osConstants.signals[sig];
}

/** A status or data descriptor: a pipe, or (fdDir) a data file. */
function dataSlot(fd: ExtraFd, fdDir: string | undefined, index: number, keep: (fd: number) => number) {
  if (fd.purpose === 'status' || fd.purpose === 'bind' || fdDir === undefined) return 'pipe';
  return keep(dataFile(fdDir, index, fd.data));
}

/** Written private, opened read-only, unlinked before the launcher starts: nothing to clean up. */
function dataFile(dir: string, index: number, data: Uint8Array): number {
  const path = join(dir, `fd${index}`);
  writeFileSync(path, data, { mode: 0o600, flag: 'wx' });
  try {
    return openSync(path, 'r');
  } finally {
    unlinkSync(path);
  }
}

/** The pinned descriptor of a mount source: fails closed, as re-opening the path would undo the pin. */
function pinnedFd(source: string, opts: ExecOptions): number {
  const fd = opts.pins?.fdOf(source);
  if (fd === undefined) {
    const hint = 'report this as an sbx bug; nothing was run';
    throw new SbxError('SANDBOX_SETUP', `mount source ${source} has no pinned descriptor`, { hint });
  }
  return fd;
}

type Child = ReturnType<typeof spawn>;

/** The launcher spawned with its descriptors: stdio, the launch's extra fds, leaked ones overlaid. */
function spawnLaunch(launch: Launch, opts: ExecOptions): Child {
  // Before anything is opened: a missing pin refuses the run.
  const pinned = launch.fds.map((fd) => (fd.purpose === 'bind' ? pinnedFd(fd.source, opts) : undefined));
  const leaked = leakedDescriptors().filter((fd) => fd >= EXTRA_BASE + launch.fds.length);
  // Descriptors this process opens for the child only: closed once it is spawned.
  const opened: number[] = [];
  const keep = (fd: number) => {
    opened.push(fd);
    return fd;
  };
  try {
    const devNull = leaked.length > 0 ? keep(openSync('/dev/null', 'r')) : -1;
    const capture = opts.stdio === 'capture';
    const from = opts.stdio === 'inherit' ? opts.stdioFrom : undefined;
    // With `from`, the taker puts the caller's descriptors over these before the launch starts.
    const passed = opts.stdio === 'capture' ? 'pipe' : from ? 'ignore' : opts.stdio;
    const stdio: Exclude<StdioOptions, string> = [
      capture ? (opts.input === undefined ? 'ignore' : 'pipe') : passed,
      passed,
      passed,
      ...launch.fds.map((fd, i) => pinned[i] ?? dataSlot(fd, opts.fdDir, EXTRA_BASE + i, keep)),
    ];
    overlayLeaked(stdio, leaked, devNull);
    if (from) {
      // Above every descriptor the launch names; the taker closes it before the launch starts.
      const at = stdio.length;
      stdio.push(from.socket);
      const args = ['--take-stdio', String(at), String(from.pid), launch.file, ...launch.args];
      return spawn(from.taker, args, { env: launch.env, stdio, windowsHide: true });
    }
    return spawn(launch.file, launch.args, { env: launch.env, stdio, windowsHide: true });
  } finally {
    for (const fd of opened) closeSync(fd);
  }
}

/**
 * Writes the data descriptors and reads the status ones; returns what the status pipes said so far,
 * each pipe's text whole (lines never interleave), the launcher's first: a second is the network
 * judge's inside the sandbox (backend/shared/bridge.ts).
 */
function feedDescriptors(child: Child, launch: Launch, opts: ExecOptions): () => string {
  const texts = launch.fds.map(() => '');
  const statusText = () => texts.join('');
  launch.fds.forEach((fd, i) => {
    const stream = child.stdio[EXTRA_BASE + i] as (Readable & Writable) | null;
    // null: a data descriptor passed as a file.
    if (!stream) return;
    stream.on('error', () => {});
    if (fd.purpose === 'status') {
      stream.setEncoding('utf8');
      let named = false;
      stream.on('data', (chunk: string) => {
        texts[i] += chunk;
        const init = named ? undefined : statusChildPid(statusText());
        if (init === undefined) return;
        named = true;
        opts.onSandbox?.(init);
      });
    } else if ('data' in fd) stream.end(Buffer.from(fd.data));
  });
  if (opts.stdio === 'capture' && opts.input !== undefined && child.stdin) {
    child.stdin.on('error', () => {});
    child.stdin.end(typeof opts.input === 'string' ? opts.input : Buffer.from(opts.input));
  }
  return statusText;
}

/** Runaway output must not exhaust sbx: past the cap, bytes are drained and counted only. */
function collect(stream: Readable | null, maxBytes: number): () => { buf: Buffer; tail?: Buffer; total: number } {
  const chunks: Buffer[] = [];
  let kept = 0;
  let total = 0;
  // Past the head, the last CAPTURE_TAIL_BYTES: whole chunks, the oldest dropped while the rest still hold the bound.
  const tail: Buffer[] = [];
  let tailBytes = 0;
  stream?.on('data', (c: Buffer) => {
    total += c.length;
    const room = maxBytes - kept;
    if (room > 0) {
      const part = c.length > room ? c.subarray(0, room) : c;
      chunks.push(part);
      kept += part.length;
      if (part.length === c.length) return;
      c = c.subarray(part.length);
    }
    tail.push(c);
    tailBytes += c.length;
    while (tail.length > 1 && tailBytes - tail[0]!.length >= CAPTURE_TAIL_BYTES) tailBytes -= tail.shift()!.length;
  });
  return () => {
    const end = Buffer.concat(tail);
    return {
      buf: Buffer.concat(chunks),
      ...(end.length > 0 ? { tail: end.subarray(Math.max(0, end.length - CAPTURE_TAIL_BYTES)) } : {}),
      total,
    };
  };
}

interface Supervision {
  interrupts: Interrupt[];
  /** Signals sbx was sent (a second of the same kind kills the sandbox). */
  received: Set<string>;
  firstSignal(): NodeJS.Signals | undefined;
  timedOut(): boolean;
  stop(): void;
}

/**
 * Signals and the timeout: the first signal of a kind is passed to the command; a second of the same
 * kind ends the whole sandbox. bwrap: sbx signals the command itself (its pid from the status pipe);
 * nsjail ends the sandbox on SIGINT/SIGTERM/SIGHUP/SIGQUIT and reports the signal it got.
 */
function supervise(child: Child, opts: ExecOptions, status: () => string): Supervision {
  const received = new Set<string>();
  const interrupts: Interrupt[] = [];
  let firstSignal: NodeJS.Signals | undefined;
  let timedOut = false;
  const endAll = opts.launcherKill ?? 'SIGKILL';
  /**
   * The launcher killed while bwrap still builds the sandbox can leave the sandbox it has already cloned
   * running (its death signal is armed only later), holding the output pipes this run waits on: its
   * children go first.
   */
  const endSandbox = () => {
    for (const pid of (child.pid === undefined ? undefined : childrenOf(child.pid)) ?? []) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    child.kill(endAll);
  };
  /**
   * To the command, once the status pipe has named the sandbox's init; before, the sandbox is ended
   * (nothing has run). An init that has not started the command yet is killed outright: pid 1 ignores
   * a signal it has no handler for, and nothing has run either.
   */
  const deliver = (sig: NodeJS.Signals) => {
    const init = statusChildPid(status());
    const pid = init === undefined ? undefined : commandPid(init);
    if (init === undefined || pid === undefined) return endSandbox();
    try {
      process.kill(pid, pid === init && isNamespaceInit(init) ? 'SIGKILL' : sig);
    } catch {
      child.kill(endAll);
    }
  };
  const forward = (sig: NodeJS.Signals, escalate = true) => {
    if (escalate && received.has(sig)) return void child.kill(endAll);
    if (escalate) received.add(sig);
    firstSignal ??= sig;
    if (opts.supervision === 'supervisor') return void child.kill(sig);
    deliver(sig);
  };
  const handlers: [NodeJS.Signals, () => void][] = [];
  const source = opts.signals ?? process;
  for (const sig of opts.forwardSignals ? (['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const) : []) {
    // On a terminal the kernel already delivers ^C and ^\ to the child's process group.
    const fromTerminal = opts.tty && (sig === 'SIGINT' || sig === 'SIGQUIT');
    const handler = () => {
      interrupts.push({ by: 'user', signal: signalNumber(sig) });
      if (!fromTerminal) forward(sig);
    };
    source.on(sig, handler);
    handlers.push([sig, handler]);
  }
  let killTimer: NodeJS.Timeout | undefined;
  // Killing bwrap's monitor takes the whole pid namespace with it (--die-with-parent).
  const endAfterGrace = () => {
    killTimer ??= setTimeout(() => child.kill(endAll), opts.graceMs ?? 2000);
  };
  // A caller's abort is final, like the timeout: a command that ignores SIGTERM must not outlive it.
  const onAbort = () => {
    interrupts.push({ by: 'caller', signal: signalNumber('SIGTERM') });
    forward('SIGTERM');
    endAfterGrace();
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const timeoutTimer =
    opts.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          forward('SIGTERM', false);
          endAfterGrace();
        }, opts.timeoutMs);
  return {
    interrupts,
    received,
    firstSignal: () => firstSignal,
    timedOut: () => timedOut,
    stop() {
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      for (const [sig, handler] of handlers) source.off(sig, handler);
      opts.signal?.removeEventListener('abort', onAbort);
    },
  };
}

/** What the launcher's exit and status pipe say became of the command. */
function resultOf(
  exit: [number | null, NodeJS.Signals | null],
  statusText: string,
  s: Supervision,
  base: { durationMs: number } & Captured,
  opts: ExecOptions,
): ExecResult {
  const [code, signal] = exit;
  const ran = { ...base, timedOut: s.timedOut(), interrupts: s.interrupts, status: statusText };
  if (opts.supervision === 'supervisor') return { kind: 'supervised', code, signal, log: statusText, ...ran };
  const childCode = statusExitCode(statusText);
  if (childCode !== undefined) return { kind: 'ran', code: childCode, ...ran };
  // bwrap named the command's pid, so the sandbox was built; its monitor was then killed from
  // outside (the OOM killer may pick it in a memory-limited cgroup): the run ended by that signal.
  const started = statusChildPid(statusText) !== undefined;
  if (signal !== null && started && s.firstSignal() === undefined && !s.timedOut()) {
    return { kind: 'ran', code: 128 + signalNumber(signal), ...ran };
  }
  // bwrap (or a limits trampoline) whose child we killed exits 128+N itself rather than dying of N.
  const ended = signal !== null || (code !== null && code > 128);
  if (ended && (s.received.size > 0 || s.timedOut())) {
    // We ended the sandbox (a signal before bwrap named the command's pid, a second signal, or the
    // timeout's grace ran out) before it reported: the status is that of the signal we were sent.
    return { kind: 'ran', code: 128 + signalNumber(s.firstSignal() ?? signal ?? 'SIGKILL'), ...ran };
  }
  const { durationMs, stderr } = base;
  return { kind: 'setup-failed', code, signal, durationMs, ...(stderr ? { stderr } : {}) };
}

export async function execLaunch(launch: Launch, opts: ExecOptions): Promise<ExecResult> {
  const started = nowMs();
  const child = spawnLaunch(launch, opts);
  const status = feedDescriptors(child, launch, opts);
  const maxBytes = opts.captureMaxBytes ?? DEFAULT_CAPTURE_MAX_BYTES;
  const stdout = opts.stdio === 'capture' ? collect(child.stdout, maxBytes) : undefined;
  const stderr = opts.stdio === 'capture' ? collect(child.stderr, maxBytes) : undefined;
  const supervision = supervise(child, opts, status);
  let reaped = false;
  child.once('exit', () => {
    reaped = true;
  });
  if (child.pid !== undefined) opts.watch?.(child.pid, () => !reaped);
  try {
    const exit = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (c, s) => resolve([c, s]));
    });
    const captured: Captured = {};
    if (stdout && stderr) {
      const [out, err] = [stdout(), stderr()];
      Object.assign(captured, {
        stdout: out.buf,
        stderr: err.buf,
        ...(out.tail || err.tail
          ? { tails: { ...(out.tail ? { stdout: out.tail } : {}), ...(err.tail ? { stderr: err.tail } : {}) } }
          : {}),
        streamBytes: { stdout: out.total, stderr: err.total },
      });
    }
    return resultOf(exit, status(), supervision, { durationMs: nowMs() - started, ...captured }, opts);
  } finally {
    supervision.stop();
  }
}
