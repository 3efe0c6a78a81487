// `sbx run`: flags → RunOptions → run() → report and exit status.
import { closeSync, fstatSync, openSync } from 'node:fs';
import { run } from '../api.js';
import { isSbxError, SbxError } from '../errors.js';
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

export async function runCommand(command: string[], flags: RunCliFlags): Promise<void> {
  if (flags.dryRun) {
    const { explainCommand } = await import('./explain.js');
    await explainCommand(command, flags);
    return;
  }
  const target = openReport(flags);
  const emit = (report: Report) => {
    if (!target) return;
    writeReport(target.fd, report);
    if (target.owned) closeSync(target.fd);
  };
  let report: Report;
  try {
    const outcome = await run({ ...toRunOptions(flags, command), stdio: 'inherit', forwardSignals: true });
    report = reportFromOutcome(outcome);
    if (flags.verbose && outcome.droppedEnv.length > 0) {
      process.stderr.write(`sbx: kept out of the environment: ${outcome.droppedEnv.join(' ')}\n`);
    }
  } catch (error) {
    if (isSbxError(error)) emit(reportFromError(error, command));
    throw error;
  }
  emit(report);
  if (flags.backend === 'auto') process.stderr.write(`sbx: --backend auto chose ${report.backend ?? 'nothing'}\n`);
  if (flags.verbose || report.exitCode !== 0 || report.violations.length > 0) {
    process.stderr.write(summaryLines(report).join('\n') + '\n');
  }
  process.exitCode = report.exitCode;
}
