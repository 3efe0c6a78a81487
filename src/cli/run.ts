// `sbx run`: flags → RunOptions → run() → report and exit status.
import { closeSync, fstatSync, openSync } from 'node:fs';
import { run, type RunOptions } from '../api.js';
import { parseSize } from '../limits/units.js';
import { ledgerPath } from '../report/ledger.js';
import { isSbxError, SbxError } from '../errors.js';
import { limitNotices } from '../report/limit-lines.js';
import { reportFromError, reportFromOutcome, summaryLines, writeReport, type Report } from '../report/report.js';
import { toRunOptions, type RunCliFlags } from './options.js';

interface ReportTarget {
  fd: number;
  /** Opened by sbx for --report-file (closed after the write); a --report-fd descriptor is the caller's. */
  owned: boolean;
}

/** Opened before anything runs: a report that cannot be written fails the run up front, not after it. */
function openReport(flags: RunCliFlags): ReportTarget | undefined {
  if (flags.reportFd !== undefined) {
    const fd = Number(flags.reportFd);
    if (!Number.isInteger(fd) || fd < 3) {
      throw new SbxError('REPORT_FD', `--report-fd ${flags.reportFd}: must be a descriptor number of 3 or more`, {
        hint: 'stdout and stderr belong to the command; e.g. --report-fd 3 3>report.json',
      });
    }
    try {
      fstatSync(fd);
    } catch {
      throw new SbxError('REPORT_FD', `--report-fd ${fd}: descriptor ${fd} is not open`, { hint: `open it in the calling shell, e.g. ${fd}>report.json` });
    }
    return { fd, owned: false };
  }
  if (!flags.reportFile) return undefined;
  try {
    // Node opens with O_CLOEXEC: the sandbox never inherits it.
    return { fd: openSync(flags.reportFile, 'w', 0o600), owned: true };
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new SbxError('REPORT_FILE', `--report-file ${flags.reportFile}: cannot open it for writing (${reason})`, {
      hint: 'name a file in an existing directory you can write to',
    });
  }
}

/** `--shell STRING` is `sh -c STRING`, judged by the command rules like any argv; it replaces COMMAND. */
function commandOf(command: string[], flags: RunCliFlags): string[] {
  if (flags.shell !== undefined && command.length > 0) {
    throw new SbxError('USAGE', '--shell takes the place of COMMAND: give one or the other', { hint: "e.g. sbx run --shell 'make test', or sbx run -- make test" });
  }
  if (flags.shell !== undefined) return ['sh', '-c', flags.shell];
  if (command.length === 0) throw new SbxError('USAGE', 'no command given', { hint: 'put it after --, e.g. sbx run -- npm test (or use --shell STRING)' });
  return command;
}

/** Up to 64 MiB: an agent reads the report; more than that belongs in a file the command writes. */
function captureLimit(flags: RunCliFlags): number | undefined {
  if (flags.captureLimit === undefined) return undefined;
  try {
    return parseSize(flags.captureLimit, '--capture-limit', { min: 1, max: 64 * 1024 * 1024, example: '16KiB or 1MiB' });
  } catch (error) {
    if (!isSbxError(error)) throw error;
    throw new SbxError('USAGE', error.message, { ...(error.hint ? { hint: error.hint } : {}) });
  }
}

function runOptionsOf(command: string[], flags: RunCliFlags): RunOptions {
  const limit = captureLimit(flags);
  return {
    ...toRunOptions(flags, command),
    stdio: flags.capture ? 'capture' : 'inherit',
    forwardSignals: true,
    ...(limit !== undefined ? { captureLimitBytes: limit } : {}),
    ...(flags.audit === false ? {} : { audit: { file: flags.auditFile ?? ledgerPath(process.env) } }),
    // Loaded only when a command needs an approval.
    ...(flags.approval === 'never' ? {} : { approve: async (request) => (await import('./prompt.js')).askOnTerminal(request) }),
  };
}

export async function runCommand(given: string[], flags: RunCliFlags): Promise<void> {
  const command = commandOf(given, flags);
  if (flags.dryRun) {
    const { explainCommand } = await import('./explain.js');
    await explainCommand(command, flags);
    return;
  }
  const options = runOptionsOf(command, flags);
  // With --capture the command's stdout is not the terminal's: the report takes its place when no
  // other destination is named.
  const target = openReport(flags) ?? (flags.capture ? { fd: 1, owned: false } : undefined);
  const emit = (report: Report) => {
    if (!target) return;
    writeReport(target.fd, report);
    if (target.owned) closeSync(target.fd);
  };
  let report: Report;
  try {
    const outcome = await run(options);
    report = reportFromOutcome(outcome);
    if (flags.verbose && outcome.droppedEnv.length > 0) {
      process.stderr.write(`sbx: kept out of the environment: ${outcome.droppedEnv.join(' ')}\n`);
    }
    if (flags.verbose && outcome.masked.length > 0) {
      const shown = outcome.masked.slice(0, 10).map((p) => JSON.stringify(p)).join(' ');
      process.stderr.write(`sbx: masked ${outcome.masked.length} sensitive file${outcome.masked.length === 1 ? '' : 's'}: ${shown}${outcome.masked.length > 10 ? ' ...' : ''}\n`);
    }
  } catch (error) {
    if (isSbxError(error)) emit(reportFromError(error, command));
    throw error;
  }
  emit(report);
  if (flags.backend === 'auto') process.stderr.write(`sbx: --backend auto chose ${report.backend ?? 'nothing'}\n`);
  // Limits the profile asked for that this host cannot enforce: said on every run, not only failed ones.
  for (const line of limitNotices(report)) process.stderr.write(`sbx: ${line}\n`);
  if (flags.verbose || report.exitCode !== 0 || report.violations.length > 0) {
    process.stderr.write(summaryLines(report).join('\n') + '\n');
  }
  process.exitCode = report.exitCode;
}
