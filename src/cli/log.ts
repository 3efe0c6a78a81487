// `sbx log`: recent runs and approval answers from the audit ledger, as a table or JSON lines.
import { SbxError } from '../errors.js';
import { ledgerPath, readAuditLedger } from '../report/host/ledger.js';
import type { AuditRecord } from '../report/ledger-line.js';
import { shellJoin } from './quote.js';

const DEFAULT_LIMIT = 20;
const HEADER = ['TIME', 'SESSION', 'PROFILE', 'BACKEND', 'EXIT', 'DURATION', 'VIOLATIONS', 'COMMAND'];
const APPROVAL_WORDS: Record<Extract<AuditRecord, { type: 'approval' }>['decision'], string> = {
  once: 'approved once',
  always: 'approved always',
  deny: 'denied (10 minutes)',
  'deny-once': 'denied once',
  refused: 'refused',
};

export interface LogFlags {
  json?: boolean;
  session?: string;
  profile?: string;
  violation?: string;
  limit?: string;
  file?: string;
}

function parseLimit(text: string | undefined): number {
  if (text === undefined) return DEFAULT_LIMIT;
  if (!/^[1-9]\d*$/.test(text))
    throw new SbxError('USAGE', `--limit ${text}: expected a whole number of 1 or more`, {
      hint: 'e.g. sbx log -n 50',
    });
  return Number(text);
}

/** The ledger is written by sbx but may lie where a sandboxed command could edit it: no control characters reach the terminal. */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x1f\x7f-\x9f]/g, '?');
}

function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '-';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function cells(record: AuditRecord): string[] {
  const time = record.time.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  const command = shellJoin(record.argv);
  if (record.type === 'approval') {
    // A network answer's deny holds for its run only (network/network-asks.ts), not 10 minutes.
    const words = record.network
      ? `network ${record.network.host}:${record.network.port} ${record.decision === 'deny' ? 'denied for the run' : (APPROVAL_WORDS[record.decision] ?? record.decision)}`
      : (APPROVAL_WORDS[record.decision] ?? record.decision);
    return [time, record.sessionId, record.profile, '-', `${words} (${record.by})`, '-', '-']
      .map(printable)
      .concat(command);
  }
  const exit = [record.exitCode === undefined ? '-' : String(record.exitCode), record.signal, record.error?.code]
    .filter(Boolean)
    .join(' ');
  // A record cut to fit its line still names the kinds it left out (report/ledger-line.ts).
  const omitted = Object.keys(record.violationsOmitted ?? {});
  const kinds = [...new Set([...record.violations.map((v) => v.kind), ...omitted])].join(',') || '-';
  return [time, record.sessionId, record.profile, record.backend, exit, formatDuration(record.durationMs), kinds]
    .map(printable)
    .concat(command);
}

/** The table: a header and one row per record, columns padded to their widest cell, the command last and unpadded. */
export function formatLogTable(records: readonly AuditRecord[]): string[] {
  const rows = [HEADER, ...records.map(cells)];
  const widths = HEADER.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  return rows.map((row) =>
    row.map((cell, col) => (col === row.length - 1 ? cell : cell.padEnd(widths[col]!))).join('  '),
  );
}

export async function logCommand(flags: LogFlags): Promise<void> {
  const limit = parseLimit(flags.limit);
  const file = flags.file ?? ledgerPath(process.env);
  const { records, corruptLines } = readAuditLedger(file, {
    session: flags.session,
    profile: flags.profile,
    violation: flags.violation,
    limit,
  });
  if (corruptLines > 0)
    process.stderr.write(
      `sbx: skipped ${corruptLines} corrupt line${corruptLines === 1 ? '' : 's'} in ${file} (or its rotated files)\n`,
    );
  if (records.length === 0) {
    const filtered = flags.session !== undefined || flags.profile !== undefined || flags.violation !== undefined;
    process.stderr.write(`sbx: no audit records${filtered ? ' match' : ''} in ${file}\n`);
    return;
  }
  const lines = flags.json ? records.map((r) => JSON.stringify(r)) : formatLogTable(records);
  process.stdout.write(lines.join('\n') + '\n');
}
