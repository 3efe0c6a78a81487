// The audit ledger: one JSON line per run and per approval answer, appended by every sbx process of
// a user to one file, bounded by rotation, read back by `sbx log`.
//
// Concurrency without a lock on the hot path: each record is ONE write(2) of one complete line on a
// descriptor opened with O_APPEND. open(2): "the modification of the file offset and the write
// operation are performed as a single atomic step", and Linux holds the inode lock across the whole
// copy on local filesystems, so concurrent lines never interleave. Not on NFS (open(2) warns that
// O_APPEND "may lead to corrupted files" there): keep the ledger on a local filesystem.
//
// Rotation is the only step that needs mutual exclusion; see rotateLedger.
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { SbxError } from '../../errors.js';
import { type AuditRecord, encodeRecord } from '../ledger-line.js';

export { MAX_LINE_BYTES } from '../ledger-line.js';
import { breakStaleLock, createLock, holdsLock, releaseLock } from '../../host/lock-file.js';
import type { Violation } from '../../policy/violation.js';
import { userDirs } from '../../host/invoking-user.js';

export interface LedgerFilter {
  /** Exact session id. */
  session?: string;
  /** Exact profile name. */
  profile?: string;
  /** A violation kind (`timeout`, `network`, ...): runs with at least one such violation. */
  violation?: string;
  /** The newest N matching records. */
  limit?: number;
}

const DEFAULT_MAX_BYTES = 10 * 1024 * 1024;
const DEFAULT_KEEP = 5;
/** Rotation holds the lock for a few renames; a lock this old belongs to a process that died holding it. */
const STALE_LOCK_MS = 10_000;
/** Shorter values would redact ordinary words ("1", "yes") and reveal more than they hide. */
const MIN_SECRET_CHARS = 4;
const REDACTED = '<redacted>';
/** Every line starts with it (serialize puts `v` first). Inside a JSON string its quotes would be escaped, so it marks record starts only. */
const RECORD_START = '{"v":1,';

/** SBX_AUDIT_FILE, else $XDG_STATE_HOME/sbx/audit.jsonl (XDG_STATE_HOME defaults to ~/.local/state). */
export function ledgerPath(env: Record<string, string | undefined>): string {
  if (env.SBX_AUDIT_FILE) return env.SBX_AUDIT_FILE;
  return join(userDirs(env).stateHome, 'sbx', 'audit.jsonl');
}

function ledgerError(message: string, path: string, cause?: unknown): SbxError {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  return new SbxError('AUDIT_FILE', `audit ledger ${path}: ${message}${code ? ` (${code})` : ''}`, {
    hint: `check the permissions of ${dirname(path)}, or choose another file with --audit-file or SBX_AUDIT_FILE`,
    ...(cause === undefined ? {} : { cause }),
  });
}

/** Every occurrence of each secret value (of MIN_SECRET_CHARS or more) inside each element becomes `<redacted>`. */
export function redactArgv(argv: readonly string[], secrets: readonly string[]): string[] {
  const values = secrets.filter((s) => s.length >= MIN_SECRET_CHARS);
  return argv.map((arg) => redactArg(arg, values));
}

function redactArg(arg: string, values: readonly string[]): string {
  // All occurrences are found first and merged spans replaced once: replacing value after value
  // would leave the tail of a second secret that overlaps the first ("abcdef" + "defghi" → "…ghi").
  const spans: [number, number][] = [];
  for (const value of values) {
    for (let at = arg.indexOf(value); at !== -1; at = arg.indexOf(value, at + 1)) spans.push([at, at + value.length]);
  }
  if (spans.length === 0) return arg;
  spans.sort((a, b) => a[0] - b[0]);
  let out = '';
  let end = -1; // of the merged span so far
  for (const [start, stop] of spans) {
    if (start > end) out += arg.slice(Math.max(end, 0), start) + REDACTED;
    end = Math.max(end, stop);
  }
  return out + arg.slice(end);
}

/** Opens (creating it 0600, and its directory 0700) for appending. Returns the descriptor. */
function openLedger(path: string): number {
  // O_NOFOLLOW: a symlink planted at the ledger's name must not redirect sbx's writes.
  // O_NONBLOCK: a FIFO there must not hang the end of the run (it is then refused below).
  const flags =
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  let fd: number;
  try {
    try {
      fd = openSync(path, flags, 0o600);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw cause;
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      fd = openSync(path, flags, 0o600);
    }
  } catch (cause) {
    throw ledgerError('cannot open it for appending', path, cause);
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw ledgerError('is not a regular file', path);
  }
  return fd;
}

/**
 * The ledger is evidence, not a dependency: a record that cannot be written is a warning, never a
 * failed run. It goes to the run's notices (RunOptions.onNotice: the CLI's stderr, or a warm server's
 * caller's), else to this process's stderr.
 */
export function appendAuditRecordOrWarn(
  path: string,
  record: AuditRecord,
  notice: ((line: string) => void) | undefined,
): void {
  try {
    appendAuditRecord(path, record);
  } catch (error) {
    const line = `sbx: warning: ${(error as Error).message}`;
    if (notice) notice(line);
    else process.stderr.write(`${line}\n`);
  }
}

/**
 * Appends one record: one write(2) of one line, safe against any number of concurrent sbx processes.
 * Then, when the file has grown beyond maxBytes, rotates it to `.1` … `.keep` (the oldest dropped).
 * Synchronous: it runs as sbx exits.
 */
export function appendAuditRecord(
  path: string,
  record: AuditRecord,
  opts: { maxBytes?: number; keep?: number } = {},
): void {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const keep = opts.keep ?? DEFAULT_KEEP;
  if (!(maxBytes > 0) || !Number.isSafeInteger(keep) || keep < 1) {
    throw new SbxError(
      'USAGE',
      `audit ledger rotation: maxBytes must be positive and keep a whole number of at least 1 (got ${maxBytes}, ${keep})`,
    );
  }
  const line = encodeRecord(record);
  const fd = openLedger(path);
  let size: number;
  try {
    const written = writeSync(fd, line);
    // A short write (disk full, RLIMIT_FSIZE) leaves a torn line; the reader resynchronises on the next record.
    if (written !== line.length) throw ledgerError(`short write (${written} of ${line.length} bytes)`, path);
    size = fstatSync(fd).size;
  } catch (cause) {
    throw cause instanceof SbxError ? cause : ledgerError('cannot append to it', path, cause);
  } finally {
    closeSync(fd);
  }
  // The record is committed before rotating, so a failed rotation never loses it.
  if (size > maxBytes) rotateLedger(path, maxBytes, keep);
}

/**
 * Rotation, by one process at a time: the holder of `<path>.lock` (created O_EXCL) renames; a process
 * that finds the lock taken skips rotation and has already appended. Appenders never wait.
 *
 * An appender that opened the file just before the rename writes into `.1`: its descriptor follows
 * the inode. That record is kept, only a few bytes out of order with the new file. It could be lost
 * only if `keep` further rotations dropped the inode between its open and its write.
 *
 * The size is re-read by name under the lock: the file this process measured may already have been
 * rotated by the previous holder, and rotating its fresh successor again would be a double rotation.
 */
function rotateLedger(path: string, maxBytes: number, keep: number): void {
  const lockPath = `${path}.lock`;
  const token = tryLock(lockPath, path);
  if (token === undefined) return;
  try {
    let size: number;
    try {
      size = statSync(path).size;
    } catch {
      return;
    }
    // Checked again just before renaming: a holder stopped past STALE_LOCK_MS (^Z) has lost the lock.
    if (size <= maxBytes || !holdsLock(lockPath, token)) return;
    // Shift only up to the first gap (normally the end of the chain): a rename onto `.keep` drops the oldest.
    let gap = 1;
    while (gap < keep && existsSync(`${path}.${gap}`)) gap++;
    for (let i = gap - 1; i >= 1; i--) renameIfPresent(`${path}.${i}`, `${path}.${i + 1}`);
    renameIfPresent(path, `${path}.1`);
  } finally {
    releaseLock(lockPath, token);
  }
}

function renameIfPresent(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw ledgerError(`cannot rotate ${from}`, to, cause);
  }
}

/** Takes the lock, breaking a stale one once. Returns its token, or undefined when another process holds it. */
function tryLock(lockPath: string, path: string): string | undefined {
  for (let attempt = 0; attempt < 2; attempt++) {
    let token: string | undefined;
    try {
      token = createLock(lockPath);
    } catch (cause) {
      throw ledgerError('cannot create the rotation lock', path, cause);
    }
    if (token !== undefined) return token;
    if (!breakStaleLock(lockPath, STALE_LOCK_MS)) return undefined;
  }
  return undefined;
}

function isAuditRecord(value: unknown): value is AuditRecord {
  const r = value as AuditRecord;
  if (
    typeof r !== 'object' ||
    r === null ||
    r.v !== 1 ||
    typeof r.time !== 'string' ||
    typeof r.sessionId !== 'string' ||
    typeof r.profile !== 'string'
  )
    return false;
  if (!Array.isArray(r.argv) || !r.argv.every((a) => typeof a === 'string')) return false;
  if (r.type === 'approval')
    return typeof r.fingerprint === 'string' && typeof r.decision === 'string' && typeof r.by === 'string';
  return (
    r.type === 'run' &&
    typeof r.backend === 'string' &&
    typeof r.policyHash === 'string' &&
    typeof r.workspace === 'string' &&
    Array.isArray(r.violations) &&
    r.violations.every((v) => typeof v === 'object' && v !== null && typeof v.kind === 'string')
  );
}

function parseRecord(text: string): AuditRecord | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isAuditRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The records of one file, in append order. A torn line (short write) still yields the record appended after it. */
function parseLedger(text: string): { records: AuditRecord[]; corruptLines: number } {
  const records: AuditRecord[] = [];
  let corruptLines = 0;
  const lines = text.split('\n');
  // An unterminated last line is a write in progress (a reader can see part of a concurrent write): not corrupt.
  lines.pop();
  for (const line of lines) {
    if (line === '') continue;
    const record = parseRecord(line);
    if (record) {
      records.push(record);
      continue;
    }
    corruptLines++;
    const start = line.lastIndexOf(RECORD_START);
    const resynced = start > 0 ? parseRecord(line.slice(start)) : undefined;
    if (resynced) records.push(resynced);
  }
  return { records, corruptLines };
}

function matches(record: AuditRecord, filter: LedgerFilter): boolean {
  if (filter.session !== undefined && record.sessionId !== filter.session) return false;
  if (filter.profile !== undefined && record.profile !== filter.profile) return false;
  if (
    filter.violation !== undefined &&
    !(
      record.type === 'run' &&
      (record.violations.some((v) => v.kind === filter.violation) ||
        (record.violationsOmitted?.[filter.violation as Violation['kind']] ?? 0) > 0)
    )
  )
    return false;
  return true;
}

/**
 * The matching records, newest last, and how many corrupt lines were skipped. Reads the current file,
 * then `.1`, `.2`, … only until `limit` records matched.
 */
export function readAuditLedger(
  path: string,
  filter: LedgerFilter = {},
): { records: AuditRecord[]; corruptLines: number } {
  const limit = filter.limit ?? Infinity;
  const newestFirst: AuditRecord[][] = [];
  let found = 0;
  let corruptLines = 0;
  for (let i = 0; found < limit; i++) {
    const file = i === 0 ? path : `${path}.${i}`;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw ledgerError('cannot read it', file, cause);
      // The current file may be missing for a moment (just rotated) or not yet created; `.N` ends the chain.
      if (i === 0) continue;
      break;
    }
    const parsed = parseLedger(text);
    const matching = parsed.records.filter((r) => matches(r, filter));
    newestFirst.push(matching);
    found += matching.length;
    corruptLines += parsed.corruptLines;
  }
  const all = newestFirst.reverse().flat();
  return { records: all.length > limit ? all.slice(all.length - limit) : all, corruptLines };
}

/** The matching records, newest last; corrupt lines are skipped (readAuditLedger counts them). */
export function readAuditRecords(path: string, filter?: LedgerFilter): AuditRecord[] {
  return readAuditLedger(path, filter).records;
}
