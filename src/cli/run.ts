// `sbx run`: flags → RunOptions → run() → report and exit status.
import { fstatSync } from 'node:fs';
import { run } from '../api.js';
import { isSbxError, SbxError } from '../errors.js';
import { reportFromError, reportFromOutcome, summaryLines, writeReport, type Report, type ReportTarget } from '../report/report.js';
import { toRunOptions, type RunCliFlags } from './options.js';

function reportTarget(flags: RunCliFlags): ReportTarget | undefined {
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
    return { kind: 'fd', fd };
  }
  return flags.reportFile ? { kind: 'file', path: flags.reportFile } : undefined;
}

export async function runCommand(command: string[], flags: RunCliFlags): Promise<void> {
  if (flags.dryRun) {
    const { explainCommand } = await import('./explain.js');
    await explainCommand(command, flags);
    return;
  }
  const target = reportTarget(flags);
  const emit = (report: Report) => {
    if (target) writeReport(target, report);
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
  if (flags.verbose || report.exitCode !== 0 || report.violations.length > 0) {
    process.stderr.write(summaryLines(report).join('\n') + '\n');
  }
  process.exitCode = report.exitCode;
}
