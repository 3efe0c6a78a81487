// The report's one write: to the descriptor `--report-fd` names or `--report-file` opened before the run.
import { writeSync } from 'node:fs';
import type { Report } from '../report.js';

/**
 * One JSON document and a newline, written synchronously so it is complete before sbx exits. A
 * descriptor may take less than all of it per write (a pipe): the rest follows. Throws the errno.
 */
export function writeReport(fd: number, report: Report): void {
  const bytes = reportBytes(report);
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done);
}

/** The report as it is written: one JSON document and a newline. */
export function reportBytes(report: Report): Buffer {
  return Buffer.from(JSON.stringify(report) + '\n');
}
