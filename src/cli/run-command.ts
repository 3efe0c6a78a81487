// `sbx run`: flags → RunOptions → run() → report and exit status.
import type { NetworkAsker } from '../network/network-asks.js';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  type Stats,
  openSync,
  readFileSync,
  readlinkSync,
  realpathSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { runUnchecked, type ProfileInfo, type RunOptions } from '../api.js';
import type { Approver } from '../commands/host/command-gate.js';
import type { RunHooks } from '../pipeline/run-options.js';
import { parseSize } from '../limits/units.js';
import { shellArgv } from '../policy/command-line.js';
import type { Policy } from '../policy/types.js';
import { ledgerPath } from '../report/host/ledger.js';
import { isSbxError, SbxError } from '../errors.js';
import { writableRootHolding } from '../report/report-file.js';
import { limitNotices } from '../report/limit-lines.js';
import { reportFromError, reportFromOutcome, summaryLines, type Report } from '../report/report.js';
import { reportBytes, writeReport } from '../report/host/write-report.js';
import { invokingView } from './print-error.js';
import { userDirs } from '../host/invoking-user.js';
import { toRunOptions, type RunCliFlags } from './run-flags.js';
import { firstOnHost, probeNoticeFacts } from '../report/host/notices.js';
import { droppedPathNotice } from '../toolchains/toolchains.js';

/**
 * Who `sbx run` runs for: this process (the CLI), or the caller of the warm server (cli/warm/warm-run.ts),
 * whose environment, working directory and stdio stand in for this process's. Everything the command
 * line's run reads of its caller, and every line it writes, goes through here.
 */
export interface RunDoor {
  env: Record<string, string | undefined>;
  /** undefined: this process's, read where the pipeline reads it (pipeline/context-stage.ts). */
  cwd: string | undefined;
  stdinIsTty: boolean;
  /** sbx's own lines (notices, the summary, errors). */
  stderr(text: string): void;
  /**
   * The report where stdout is the destination (--capture without another): `bytes` written whole,
   * else `failure(reason)` on stderr. Default: a synchronous write to descriptor 1.
   */
  stdoutReport?: (bytes: Buffer, failure: { before: string; after: string }) => void;
  /** Who answers a command rule's `ask`. Default: the terminal (cli/prompt.ts). */
  approve?: Approver;
  /** Ends the run (the warm server's caller went away). */
  signal?: AbortSignal;
  /** What the pipeline takes from a warm server: its caller's signals and stdio, and warm walks. */
  hooks?: Pick<RunHooks, 'signals' | 'stdioFrom' | 'warm' | 'onLaunch'>;
}

/** This process as the caller: the CLI's door. */
export function processDoor(): RunDoor {
  return {
    env: process.env,
    cwd: undefined,
    stdinIsTty: Boolean(process.stdin.isTTY),
    stderr: (text) => void process.stderr.write(text),
  };
}

interface ReportTarget {
  fd: number;
  /** Opened by sbx for --report-file (closed after the write); a --report-fd descriptor is the caller's. */
  owned: boolean;
  /** For messages: the flag that named it. */
  name: string;
}

/** fdinfo's flags are octal: O_PATH 010000000, the access mode in the low 2 bits. */
const FDINFO_PATH = 0o10000000;

/**
 * --report-fd N must be a descriptor the caller opened for writing, never one of Node's own: Node
 * opens its epoll, eventfd and signal pipes at start-up on the lowest free numbers (3 and up), and
 * a report written into one of them crashes sbx after the command ran. Only the shell half of
 * bin/sbx.js, which runs before Node, can still see the caller's table: it lists the --report-fd
 * numbers it found open in SBX_CALLER_FDS (see the comment there).
 */
function callerReportFd(given: string, checkedOpen: string | undefined): ReportTarget {
  const fd = /^\d{1,9}$/.test(given) ? Number(given) : NaN;
  if (!Number.isInteger(fd) || fd < 3) {
    throw new SbxError('REPORT_FD', `--report-fd ${given}: must be a descriptor number of 3 or more`, {
      hint: 'stdout and stderr belong to the command; e.g. --report-fd 3 3>report.json',
    });
  }
  if (checkedOpen === undefined) {
    throw new SbxError('REPORT_FD', `--report-fd ${fd}: cannot tell the caller's descriptor ${fd} from Node's own`, {
      hint: 'start sbx as a program (sbx, or bin/sbx.js), not as `node bin/sbx.js`: its launcher checks the descriptor',
    });
  }
  if (!checkedOpen.split(' ').includes(String(fd))) {
    throw new SbxError('REPORT_FD', `--report-fd ${fd}: descriptor ${fd} is not open`, {
      hint: `open it in the calling shell, e.g. ${fd}>report.json`,
    });
  }
  let flags: string | undefined;
  try {
    flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
  } catch {
    // checked below
  }
  const bits = flags === undefined ? undefined : parseInt(flags, 8);
  if (bits === undefined || (bits & FDINFO_PATH) !== 0 || (bits & 3) === constants.O_RDONLY) {
    throw new SbxError('REPORT_FD', `--report-fd ${fd}: descriptor ${fd} is not open for writing`, {
      hint: `open it for writing, e.g. ${fd}>report.json`,
    });
  }
  return { fd, owned: false, name: `--report-fd ${fd}` };
}

/**
 * --report-file PATH as it will be opened: its directory's real path and its name. Checked before
 * anything runs; the name may not be a symlink or anything but a regular file (it is opened with
 * O_NOFOLLOW, so a symlink planted later fails the open instead of being followed).
 */
function reportFilePath(given: string, cwd: string | undefined): string {
  const absolute = cwd === undefined ? resolve(given) : resolve(cwd, given);
  let dir: string;
  try {
    dir = realpathSync(dirname(absolute));
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new SbxError('REPORT_FILE', `--report-file ${given}: cannot open it for writing (${reason})`, {
      hint: 'name a file in an existing directory you can write to',
    });
  }
  const path = join(dir, basename(absolute));
  let stat: Stats;
  try {
    stat = lstatSync(path);
  } catch {
    return path; // created by the open
  }
  if (stat.isSymbolicLink() || !stat.isFile()) {
    const what = stat.isSymbolicLink() ? 'a symbolic link' : 'not a regular file';
    throw new SbxError('REPORT_FILE', `--report-file ${given}: ${path} is ${what}`, {
      hint: 'name a regular file (it is replaced), or remove what is there',
    });
  }
  return path;
}

/** After the policy is known and before anything runs: refused when the sandbox could write it. */
function refuseWritableReportFile(policy: Policy, path: string, given: string): void {
  const root = writableRootHolding(policy, path);
  if (root === undefined) return;
  const why = 'the command could forge or remove its report';
  const where = `${path} lies in ${root}, which the sandbox can write`;
  throw new SbxError('REPORT_FILE', `--report-file ${given}: ${where}: ${why}`, {
    hint: 'put it outside the workspace and writable binds (e.g. /tmp, $XDG_STATE_HOME), or use --report-fd 3 3>FILE',
  });
}

/**
 * A caller's descriptor that is a file in a tree the sandbox can write (`--report-fd 3 3>ws/r.json`)
 * could be replaced by the command before the report lands in it: refused like such a --report-file.
 */
function refuseWritableReportFd(policy: Policy, target: ReportTarget | undefined): void {
  if (!target || target.name === 'stdout') return;
  let path: string;
  try {
    if (!fstatSync(target.fd).isFile()) return;
    path = readlinkSync(`/proc/self/fd/${target.fd}`);
  } catch {
    return;
  }
  const root = writableRootHolding(policy, path);
  if (root === undefined) return;
  throw new SbxError(
    'REPORT_FD',
    `${target.name}: it is ${path}, in ${root}, which the sandbox can write: the command could forge or remove its report`,
    {
      hint: 'write the report outside the workspace and writable binds (e.g. 3>/tmp/report.json), or read it from a pipe',
    },
  );
}

/** Opened once, without following a symlink at the name; the descriptor is checked to be the file that was checked. */
function openReportFile(path: string, given: string): ReportTarget {
  let fd: number;
  try {
    // Node opens with O_CLOEXEC: the sandbox never inherits it.
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    const why = reason === 'ELOOP' ? 'it is a symbolic link' : reason;
    throw new SbxError('REPORT_FILE', `--report-file ${given}: cannot open it for writing (${why})`, {
      hint: 'name a regular file in an existing directory you can write to',
    });
  }
  if (readlinkSync(`/proc/self/fd/${fd}`) !== path) {
    closeSync(fd);
    throw new SbxError('REPORT_FILE', `--report-file ${given}: the path changed while it was opened`, {
      hint: 'name a file in a directory nobody else writes to',
    });
  }
  return { fd, owned: true, name: `--report-file ${given}` };
}

/**
 * A report that cannot be written (the reader went away: EPIPE; a full disk: ENOSPC; EBADF) is one
 * line on stderr; the run's exit status stays the command's.
 */
function emitReport(target: ReportTarget, report: Report, door: RunDoor): void {
  const before = `sbx: the report could not be written to ${target.name} (`;
  const after = "); the exit status is the run's\n";
  try {
    if (target.name === 'stdout' && door.stdoutReport) door.stdoutReport(reportBytes(report), { before, after });
    else writeReport(target.fd, report);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    door.stderr(`${before}${reason}${after}`);
  } finally {
    if (target.owned) closeSync(target.fd);
  }
}

/**
 * The argv that runs (for the report). `--shell STRING` replaces COMMAND: sbx runs it with the system
 * shell and, under shell_syntax: restricted, judges each command of the string (policy/command-line.ts).
 */
function commandOf(command: string[], flags: RunCliFlags): string[] {
  if (flags.shell !== undefined && command.length > 0) {
    throw new SbxError('USAGE', '--shell takes the place of COMMAND: give one or the other', {
      hint: "e.g. sbx run --shell 'make test', or sbx run -- make test",
    });
  }
  if (flags.shell !== undefined) return shellArgv(flags.shell);
  if (command.length === 0)
    throw new SbxError('USAGE', 'no command given', {
      hint: 'put it after --, e.g. sbx run -- npm test (or use --shell STRING)',
    });
  return command;
}

/** Up to 64 MiB: an agent reads the report; more than that belongs in a file the command writes. */
function captureLimit(flags: RunCliFlags): number | undefined {
  if (flags.captureLimit === undefined) return undefined;
  try {
    return parseSize(flags.captureLimit, '--capture-limit', {
      min: 1,
      max: 64 * 1024 * 1024,
      example: '16KiB or 1MiB',
    });
  } catch (error) {
    if (!isSbxError(error)) throw error;
    throw new SbxError('USAGE', error.message, { ...(error.hint ? { hint: error.hint } : {}) });
  }
}

/** The notices this host has not been told yet (report/host/notices.ts). */
function onceOnHost(notices: string[], door: RunDoor): string[] {
  if (notices.length === 0) return [];
  const uid = process.getuid?.() ?? 0;
  const stateDir = join(userDirs(door.env).stateHome, 'sbx');
  return firstOnHost(notices, { stateDir, uid, facts: probeNoticeFacts(uid) });
}

/**
 * A project or user profile never hides a built-in silently, but says so once per profile file on
 * this host, not on every call: an agent's hook runs `sbx run -p agent` for each of its commands, and
 * the model reads the line every time (`sbx profiles` and the report's `profile.shadows` always say it).
 */
function noteShadowing(profile: ProfileInfo, door: RunDoor): void {
  if (!profile.shadows) return;
  const whose = profile.source === 'project' ? "the project's" : 'your';
  const notice = `profile "${profile.name}" is ${whose} ${profile.file} (shadows the built-in; -p builtin:${profile.name} names sbx's own; said once)`;
  for (const line of onceOnHost([notice], door)) door.stderr(`sbx: ${line}\n`);
}

/**
 * The network question on the terminal (docs/DESIGN.md, "Asking at the proxy"): asked while the command
 * runs, so only when none of its stdio is the terminal (--capture: stdin empty, stdout and stderr
 * pipes, and a session of its own without a controlling terminal, so it cannot open /dev/tty either)
 * and sbx's own stdin is one, someone at it. A command that owns the terminal is never interrupted by
 * a question it could read the answer to, or fake: its refusals stay refusals.
 */
function networkAsker(
  flags: RunCliFlags,
  profileName: () => string,
  door: RunDoor,
): Pick<RunOptions, 'onNetworkRequest'> {
  if (flags.approval === 'never' || !flags.capture || !door.stdinIsTty) return {};
  // One asker per run, loaded with its first question: its queue keeps the questions one at a time.
  let asker: Promise<NetworkAsker> | undefined;
  return {
    onNetworkRequest: async (request, context) => {
      asker ??= import('./prompt.js').then((prompt) => prompt.terminalNetworkAsker(profileName));
      return (await asker)(request, context);
    },
  };
}

export function runOptionsOf(command: string[], flags: RunCliFlags, door: RunDoor = processDoor()): RunOptions {
  const limit = captureLimit(flags);
  let profileName = '';
  return {
    ...toRunOptions(flags, command),
    ...(door.cwd !== undefined ? { cwd: door.cwd } : {}),
    hostEnv: door.env,
    tty: door.stdinIsTty,
    stdio: flags.capture ? 'capture' : 'inherit',
    forwardSignals: true,
    ...(door.signal ? { signal: door.signal } : {}),
    ...(limit !== undefined ? { captureLimitBytes: limit } : {}),
    ...(flags.audit === false ? {} : { audit: { file: flags.auditFile ?? ledgerPath(door.env) } }),
    // Loaded only when a command needs an approval.
    ...(flags.approval === 'never'
      ? {}
      : { approve: door.approve ?? (async (request) => (await import('./prompt.js')).askOnTerminal(request)) }),
    ...networkAsker(flags, () => profileName, door),
    onProfile: (profile) => {
      profileName = profile.name;
      noteShadowing(profile, door);
    },
    onNotice: (line) => door.stderr(`${line}\n`),
  };
}

/**
 * `sbx run` in this process, its exit status set. With --warm (a run the warm server did not take, or
 * with no server yet) a server is started alongside for the next ones.
 */
export async function runHere(given: string[], flags: RunCliFlags): Promise<void> {
  if (flags.warm) {
    import('./warm/warm-server.js').then((warm) => warm.startWarmServer(process.env)).catch(() => {});
  }
  const code = await runCommand(given, flags);
  if (code !== undefined) process.exitCode = code;
}

/** `sbx run`: returns its exit status (the command's, or sbx's own refusal throws); undefined for --dry-run. */
export async function runCommand(
  given: string[],
  flags: RunCliFlags,
  door: RunDoor = processDoor(),
): Promise<number | undefined> {
  // The runner's environment is read once, here (loaded only inside a GitHub Actions job).
  if (door.env.GITHUB_ACTIONS !== 'true') return (await runAndReport(given, flags, undefined, door))?.exitCode;
  const { githubAtDoor, inGithubActions, refuseWritableRunnerFiles } = await import('./actions-mode.js');
  const github = githubAtDoor(process.env);
  const shown = flags.shell !== undefined ? shellArgv(flags.shell) : given;
  const refuse = (policy: Policy) => refuseWritableRunnerFiles(policy, github);
  let exitCode: number | undefined;
  await inGithubActions(github, shown, async () => {
    const report = await runAndReport(given, flags, refuse, door);
    exitCode = report?.exitCode;
    return report;
  });
  return exitCode;
}

/**
 * The run, its report and the human summary. Returns the report (none for --dry-run); `checkHost`
 * refuses a policy before anything runs (the runner's files in a GitHub Actions job).
 */
async function runAndReport(
  given: string[],
  flags: RunCliFlags,
  checkHost: ((policy: Policy) => void) | undefined,
  door: RunDoor,
): Promise<Report | undefined> {
  // Set by bin/sbx.js for this check only: not part of the environment the sandbox's rules filter.
  const checkedFds = door.env.SBX_CALLER_FDS;
  delete door.env.SBX_CALLER_FDS;
  const command = commandOf(given, flags);
  if (flags.dryRun) {
    const { explainCommand } = await import('./explain.js');
    await explainCommand(given, flags);
    return undefined;
  }
  const options = runOptionsOf(given, flags, door);
  const reportFile = flags.reportFd === undefined && flags.reportFile !== undefined ? flags.reportFile : undefined;
  const reportPath = reportFile === undefined ? undefined : reportFilePath(reportFile, door.cwd);
  // With --capture the command's stdout is not the terminal's: the report takes its place when no
  // other destination is named.
  let target: ReportTarget | undefined =
    flags.reportFd !== undefined
      ? callerReportFd(flags.reportFd, checkedFds)
      : flags.capture && reportPath === undefined
        ? { fd: 1, owned: false, name: 'stdout' }
        : undefined;
  // The report file is checked against the sandbox's writable trees, then opened, before anything runs.
  const checkPolicy = (policy: Policy) => {
    checkHost?.(policy);
    // A PATH entry the sandbox will not see (another user may write it, HOME kept private): named
    // once per host, before anything runs, so a tool resolving elsewhere inside is not a mystery.
    for (const line of onceOnHost(droppedPathNotice(policy.toolchainsSkipped), door)) door.stderr(`sbx: ${line}\n`);
    // Said once, before anything runs: the command sees more than the directory it was started in.
    if (policy.workspace.detected)
      door.stderr(`sbx: workspace: ${policy.workspace.host} (${policy.workspace.detected})\n`);
    if (reportPath === undefined) {
      refuseWritableReportFd(policy, target);
      return;
    }
    refuseWritableReportFile(policy, reportPath, reportFile!);
    target = openReportFile(reportPath, reportFile!);
  };
  let report: Report;
  try {
    const outcome = await runUnchecked(options, { checkPolicy, ...door.hooks });
    report = reportFromOutcome(outcome);
    if (flags.verbose && outcome.droppedEnv.length > 0) {
      door.stderr(`sbx: kept out of the environment: ${outcome.droppedEnv.join(' ')}\n`);
    }
    if (flags.verbose && outcome.masked.length > 0) {
      const shown = outcome.masked
        .slice(0, 10)
        .map((p) => JSON.stringify(p))
        .join(' ');
      door.stderr(
        `sbx: masked ${outcome.masked.length} sensitive file${outcome.masked.length === 1 ? '' : 's'}: ${shown}${outcome.masked.length > 10 ? ' ...' : ''}\n`,
      );
    }
    // Said on every run, not only with --verbose: these are secrets the sandbox could read.
    const exposed = outcome.lifted?.unmasked.filter((u) => u.by === 'exposed') ?? [];
    if (exposed.length > 0) {
      const paths = exposed.map((u) => JSON.stringify(u.path)).join(' ');
      door.stderr(`sbx: readable by the command (--expose-workspace-secrets): ${paths}\n`);
    }
    if (flags.verbose && outcome.lifted?.unmasked.length) {
      const by = {
        profile: 'sensitive.except',
        request: '--unmask',
        content: 'public content',
        exposed: '--expose-workspace-secrets',
      } as const;
      const shown = outcome.lifted.unmasked
        .slice(0, 10)
        .map((u) => `${JSON.stringify(u.path)} (${by[u.by]})`)
        .join(' ');
      const more = outcome.lifted.unmasked.length > 10 ? ' ...' : '';
      door.stderr(`sbx: shown though a sensitive-file rule matched: ${shown}${more}\n`);
    }
  } catch (error) {
    if (!isSbxError(error) || !error.run || error.code === 'REPORT_FILE') throw error;
    // Refused before the policy was derived: nothing ran, the file is opened now.
    if (!target && reportPath !== undefined) {
      try {
        target = openReportFile(reportPath, reportFile!);
      } catch (openError) {
        if (!isSbxError(openError)) throw openError;
        door.stderr(`sbx: the report could not be written: ${openError.message}\n`);
      }
    }
    // The command as run() redacted it (a secret typed in it shows as a marker), once it knew the secrets.
    if (target) emitReport(target, reportFromError(error, error.run.command ?? command, error.run), door);
    throw error;
  }
  if (target) emitReport(target, report, door);
  if (flags.backend === 'auto') door.stderr(`sbx: --backend auto chose ${report.backend ?? 'nothing'}\n`);
  // Limits the profile asked for that this host cannot enforce: said once per host (report/host/notices.ts),
  // whether the run failed or not; the report and `sbx doctor` always say it.
  for (const line of onceOnHost(limitNotices(report), door)) door.stderr(`sbx: ${line}\n`);
  if (flags.verbose || report.exitCode !== 0 || report.violations.length > 0) {
    door.stderr(summaryLines(report, invokingView(door.cwd)).join('\n') + '\n');
  }
  return report;
}
