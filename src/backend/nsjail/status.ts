// nsjail's exit and its log (--log_fd, INFO level) → what became of the command. Pure: the runtime
// hands in how the nsjail process ended and the text it read from the log pipe.
//
// nsjail (-Mo) exits with the command's status, 128+N when a signal N killed it (subproc.cc
// reapProc), 128+N when nsjail itself got a fatal signal N and killed the sandbox (nsjail.cc
// standaloneMode), and 255 when it could not start the command (0xff, or LOG_F's _exit(0xff)). 255 is
// also a status a command may exit with, so the log decides: only a reaped command ran.
import { SbxError } from '../../errors.js';
import type { Violation } from '../../policy/violation.js';
import { SIGNAL_NAMES, signalName } from '../shared/signals.js';

/** How the nsjail process ended (node's 'close' event). */
export interface NsjailExit {
  code: number | null;
  signal: string | null;
}

export interface NsjailStatus {
  /** The command was executed: nsjail reaped it, or was killed after starting it. */
  started: boolean;
  /** The exit status sbx reports: the command's code, 128+signal, 124 on nsjail's time limit; nsjail's own code when not started. */
  code: number;
  /** nsjail's --time_limit ended the command. */
  timedOut: boolean;
  /** The signal that ended the command (or that nsjail got and ended the sandbox for). */
  signal?: string;
  /** What only the log tells: nsjail's time limit, a seccomp kill with its syscall number. */
  violations: Violation[];
  /** Not started: nsjail's own account of why, most specific line first. */
  failure?: string;
}

const TIMEOUT_CODE = 124;

function nameOf(n: number): string {
  return signalName(n) ?? `SIG${n}`;
}

interface LogLine {
  level: string;
  text: string;
}

/** `[I][2026-01-01T00:00:00+0000] text` or `[W][time][pid] func():line text` (logs.cc logMsg). */
function parseLines(log: string): LogLine[] {
  const out: LogLine[] = [];
  for (const raw of log.split('\n')) {
    // A terminal log would carry colour codes; the pipe does not, but a stray one must not hide a line.
    const line = raw.replace(/\x1b\[[0-9;]*m/g, '');
    const m = /^\[([DIWEF])\]\[[^\]]*\](?:\[[\d/]+\] [\w:~]+\(\):\d+)? ?(.*)$/.exec(line);
    if (m) out.push({ level: m[1]!, text: m[2]! });
  }
  return out;
}

/** nsjail's own errors that only say "something above failed". */
const GENERIC = [
  /^Couldn't launch the child process$/,
  /^Launching child process failed$/,
  /^Received error message from the child process before it has been executed$/,
  /^Couldn't initialize/,
  /^Failed to build mount tree$/,
  /^Couldn't parse cmdline options$/,
  /^Couldn't prepare sandboxing policy$/,
  // Logged on every root run mapping to uid 0 (as policy.identity asks): a notice, not a cause.
  /^Process will be [UG]ID\/E[UG]ID=0 in the global user namespace/,
];

const isSpecific = (l: LogLine) => !GENERIC.some((re) => re.test(l.text));

/** `chdir('/x'): No such file or directory`: the line already names its errno. */
const CARRIES_ERRNO = /\): [A-Z][^:']*$/;
/** A mount point nsjail could not pre-create but mounted anyway: not an error. */
const PRECREATE = /^openat\(root_fd, .*O_CREAT\): /;

/**
 * The first error that is not one of nsjail's "something above failed" lines names the cause; when it
 * names no errno, a warning logged just before it carries it (`open_tree('/x'): No such file or directory`).
 */
function describeFailure(lines: LogLine[]): string | undefined {
  const i = lines.findIndex((l) => (l.level === 'E' || l.level === 'F') && isSpecific(l));
  if (i < 0) return lines.findLast((l) => l.level === 'E' || l.level === 'F')?.text;
  const error = lines[i]!.text;
  const before = lines[i - 1];
  const cause =
    before && before.level === 'W' && isSpecific(before) && !PRECREATE.test(before.text) && !CARRIES_ERRNO.test(error);
  return cause ? `${error} (${before.text})` : error;
}

export function parseNsjailStatus(exit: NsjailExit, log: string): NsjailStatus {
  const lines = parseLines(log);
  const find = (re: RegExp) => lines.map((l) => re.exec(l.text)).find((m): m is RegExpExecArray => m !== null);
  const launchFailed = find(/^Couldn't launch the child process$/) !== undefined;
  const executing = find(/^Executing '/) !== undefined;
  const exited = find(/^pid=\d+ \(.*\) exited with status: (\d+), \(PIDs left: \d+\)$/);
  const killed = find(/^pid=\d+ \(.*\) terminated with signal: \S+ \((\d+)\), \(PIDs left: \d+\)$/);
  const stopped = find(/^Server stops due to fatal signal \((\d+)\) caught\. Exiting$/);
  const timedOut = find(/^pid=\d+ run time >= time limit/) !== undefined;
  const syscall = find(/^pid=\d+, Syscall number:(-?\d+),/);
  const sigsys = find(/committed a syscall\/seccomp violation and exited with SIGSYS$/);

  const started =
    !launchFailed &&
    (exited !== undefined || killed !== undefined || (executing && (exit.signal !== null || stopped !== undefined)));
  if (!started) {
    const failure =
      describeFailure(lines) ??
      (exit.signal
        ? `nsjail was killed by ${exit.signal}`
        : `nsjail exited with status ${exit.code ?? '?'} and no log`);
    return { started: false, code: exit.code ?? 255, timedOut: false, violations: [], failure };
  }

  const violations: Violation[] = [];
  if (timedOut)
    violations.push({
      phase: 'runtime',
      kind: 'timeout',
      rule: 'limits.timeout',
      detail: "nsjail's time limit ended the command",
    });
  if (sigsys) {
    violations.push({
      phase: 'runtime',
      kind: 'seccomp',
      rule: 'seccomp',
      detail: `the command was killed by SIGSYS${syscall ? ` (syscall ${syscall[1]})` : ''}`,
    });
  }
  let code: number;
  let signal: string | undefined;
  if (stopped) {
    // nsjail got SIGINT/SIGTERM/...: it killed the sandbox with SIGKILL and exits 128+that signal.
    signal = nameOf(Number(stopped[1]));
    code = 128 + Number(stopped[1]);
  } else if (killed) {
    signal = nameOf(Number(killed[1]));
    code = 128 + Number(killed[1]);
  } else if (exited) {
    code = Number(exited[1]);
  } else {
    // nsjail itself was killed (by sbx's timeout or a second Ctrl-C) before it could reap the command.
    const n = SIGNAL_NAMES.indexOf(exit.signal ?? '');
    signal = exit.signal ?? undefined;
    code = n > 0 ? 128 + n : (exit.code ?? 255);
  }
  return { started: true, code: timedOut ? TIMEOUT_CODE : code, timedOut, ...(signal ? { signal } : {}), violations };
}

/**
 * The SbxError for a run nsjail could not start. An execve() failure is the command's fault (127 or
 * 126, as commands/host/command.ts reports before launch); everything else is sandbox setup (125).
 */
export function nsjailSetupError(status: NsjailStatus): SbxError {
  const failure = status.failure ?? 'nsjail could not start the command';
  const exec = /execve\('(.*)'\) failed: (.*)$/.exec(failure);
  if (exec && /No such file or directory/.test(exec[2]!)) {
    return new SbxError('COMMAND_NOT_FOUND', `command not found in the sandbox: ${exec[1]} (or its interpreter)`, {
      hint: "only the workspace and the profile's binds are visible inside",
    });
  }
  if (exec && /Permission denied|Exec format error/.test(exec[2]!)) {
    return new SbxError('COMMAND_NOT_EXECUTABLE', `${exec[1]} cannot be executed: ${exec[2]}`, {
      hint: 'chmod +x it, or run it through its interpreter',
    });
  }
  return new SbxError('SANDBOX_SETUP', `nsjail could not build the sandbox (exit ${status.code}): ${failure}`, {
    hint: 'run `sbx doctor`, and `sbx explain --backend nsjail -- CMD` to see the exact nsjail command',
  });
}
