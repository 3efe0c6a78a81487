// One audit record as one line of at most MAX_LINE_BYTES (ledger.ts appends it with one write(2)).
// A record is never dropped for its size: a run whose command was refused thousands of
// distinct hosts, or whose argv is a megabyte of file names, would otherwise be missing from the
// ledger exactly when it matters. What does not fit is cut with counts: long strings keep their head
// and a marker, trailing arguments become "<truncated: N more arguments>", trailing violations are
// counted by kind in `violationsOmitted`.
import { SbxError } from '../errors.js';
import type { Violation, ViolationSource } from '../policy/violation.js';

interface RecordBase {
  v: 1;
  /** ISO 8601, UTC. */
  time: string;
  sessionId: string;
  profile: string;
  /** As run, after redactArgv: never a secret value. */
  argv: string[];
}

export type AuditRecord =
  | (RecordBase & {
      type: 'run';
      policyHash: string;
      backend: string;
      workspace: string;
      exitCode?: number;
      signal?: string;
      setBy?: 'child' | 'sbx';
      durationMs?: number;
      violations: Violation[];
      /** Violations left out to keep the line within MAX_LINE_BYTES, counted by kind (ledger-line.ts). */
      violationsOmitted?: Partial<Record<Violation['kind'], number>>;
      error?: { code: string; message: string; source?: ViolationSource };
    })
  | (RecordBase & {
      type: 'approval';
      fingerprint: string;
      decision: 'once' | 'always' | 'deny' | 'deny-once' | 'refused';
      /** `timeout`: a network question nobody answered in time. */
      by: 'user' | 'stored' | 'no-tty' | 'policy' | 'timeout';
      /**
       * A network answer (network/network-asks.ts): the destination asked about; `argv` is then the run's
       * command, and a `deny` holds for that run only.
       */
      network?: { host: string; port: number };
    });

/** A bound on one line: keeps a record one bounded write(2), and a hostile argv from bloating the ledger. */
export const MAX_LINE_BYTES = 64 * 1024;
/** Longer argv elements keep their head and a marker (a heredoc-sized `sh -c` script is still recognisable). */
const MAX_ARG_CHARS = 4096;
/** A violation's strings (detail, host, a source file) past this are shortened: a hostile host name is bounded. */
const MAX_VIOLATION_CHARS = 1024;
/**
 * The record's other strings (workspace, error message), shortened only when they alone take more than
 * a quarter of the line. At 6 bytes a character (JSON's \uXXXX) the dozen such fields stay under 40 KiB.
 */
const MAX_FIELD_CHARS = 512;
/** Room kept for the argv marker and the per-kind counts (13 kinds at most). */
const MARKER_BYTES = 1024;

export function serialize(record: AuditRecord): Buffer {
  // `v` first whatever the caller's key order: the reader resynchronises on the record start.
  const { v, ...rest } = record;
  return Buffer.from(JSON.stringify({ v, ...rest }) + '\n');
}

function truncateText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  // Never split a surrogate pair: a lone surrogate is not valid UTF-8.
  const cut = /[\uD800-\uDBFF]/.test(text[maxChars - 1]!) ? maxChars - 1 : maxChars;
  return `${text.slice(0, cut)}<truncated: ${text.length - cut} more chars>`;
}

/** A copy of plain JSON data with every string shortened to maxChars. */
function capStrings<T>(value: T, maxChars: number): T {
  if (typeof value === 'string') return truncateText(value, maxChars) as T;
  if (Array.isArray(value)) return value.map((item) => capStrings(item, maxChars)) as T;
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, capStrings(v, maxChars)])) as T;
  }
  return value;
}

/** How many leading items fit in budget bytes as JSON array elements. */
function fittingPrefix(items: readonly unknown[], budget: number): number {
  let left = budget;
  for (let i = 0; i < items.length; i++) {
    left -= Buffer.byteLength(JSON.stringify(items[i])) + 1;
    if (left < 0) return i;
  }
  return items.length;
}

function bytesOf(items: readonly unknown[]): number {
  return items.reduce<number>((sum, item) => sum + Buffer.byteLength(JSON.stringify(item)) + 1, 0);
}

function countByKind(violations: readonly Violation[]): Partial<Record<Violation['kind'], number>> {
  const counts: Partial<Record<Violation['kind'], number>> = {};
  for (const v of violations) counts[v.kind] = (counts[v.kind] ?? 0) + 1;
  return counts;
}

/** The record as one line of at most MAX_LINE_BYTES, shortened step by step only as far as needed. */
export function encodeRecord(record: AuditRecord): Buffer {
  const line = serialize(record);
  if (line.length <= MAX_LINE_BYTES) return line;
  const argv = record.argv.map((arg) => truncateText(arg, MAX_ARG_CHARS));
  const shortened: AuditRecord =
    record.type === 'run'
      ? { ...record, argv, violations: record.violations.map((v) => capStrings(v, MAX_VIOLATION_CHARS)) }
      : { ...record, argv };
  const shorter = serialize(shortened);
  if (shorter.length <= MAX_LINE_BYTES) return shorter;
  return encodeCut(shortened);
}

/**
 * Keeps leading violations and arguments within what the rest of the record leaves: violations get
 * at least half of it (the audit's point: what was refused), arguments whatever is left.
 */
function encodeCut(record: AuditRecord): Buffer {
  const violations = record.type === 'run' ? record.violations : [];
  let frame: AuditRecord = record.type === 'run' ? { ...record, argv: [], violations: [] } : { ...record, argv: [] };
  if (serialize(frame).length > MAX_LINE_BYTES / 4) frame = capStrings(frame, MAX_FIELD_CHARS);
  const budget = MAX_LINE_BYTES - serialize(frame).length - MARKER_BYTES;
  const violationBudget = Math.max(Math.floor(budget / 2), budget - bytesOf(record.argv));
  const keptViolations = fittingPrefix(violations, violationBudget);
  const keptArgs = fittingPrefix(record.argv, budget - bytesOf(violations.slice(0, keptViolations)));
  const argv = record.argv.slice(0, keptArgs);
  if (keptArgs < record.argv.length) argv.push(`<truncated: ${record.argv.length - keptArgs} more arguments>`);
  const cut: AuditRecord =
    frame.type === 'run'
      ? {
          ...frame,
          argv,
          violations: violations.slice(0, keptViolations),
          ...(keptViolations < violations.length
            ? { violationsOmitted: countByKind(violations.slice(keptViolations)) }
            : {}),
        }
      : { ...frame, argv };
  const encoded = serialize(cut);
  // Unreachable by the bounds above; kept so that a change to them fails loudly rather than tearing lines.
  if (encoded.length > MAX_LINE_BYTES) {
    throw new SbxError(
      'AUDIT_FILE',
      `audit record of session ${record.sessionId} is ${encoded.length} bytes after cutting, above the ${MAX_LINE_BYTES}-byte line limit`,
      { hint: 'report this as a bug in sbx (src/report/ledger-line.ts)' },
    );
  }
  return encoded;
}
