// The runs under way, so that a run starting while others write the same trees audits against the
// state from before any of them (git/baseline.ts), not against what their sandboxes planted so far.
// Each run leaves one record in sbx's own state directory (`$XDG_STATE_HOME/sbx/git-runs/`, 0700,
// owned by the user, never inside a writable tree): its process (pid and start time, so a reused
// pid is not taken for it), its trees and its baseline. It is written before the sandbox starts and
// removed after its audit. A record whose process is gone (sbx killed before its audit) is removed
// by the next run. Nothing here is serialised: an agent's parallel calls run side by side, and the
// audits come out as if the runs had been one. docs/SECURITY.md, "Git state: what a later host git runs".
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { isWithin } from '../../path-within.js';
import { type EarlierRun, inheritedBaseline } from '../baseline.js';
import type { GitSnapshot } from '../snapshot.js';

const FORMAT = 1;
/** Far above a real record (configs and hooks of every repository in the trees); a larger one is not read. */
const MAX_RECORD_BYTES = 64 * 1024 * 1024;

export interface LiveRunsPlace {
  /** `$XDG_STATE_HOME/sbx/git-runs`. */
  dir: string;
  uid: number;
}

interface RunRecord {
  format: number;
  pid: number;
  /** /proc/PID/stat's starttime: with the pid, names one process for as long as the machine is up. */
  started: string;
  /** Registration order, for "oldest first". */
  atMs: number;
  roots: string[];
  baseline: GitSnapshot;
}

/** The process's start time in clock ticks since boot, or undefined when it is gone. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name, which may hold spaces and parentheses: starttime is the 22nd.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

// Recorded file bytes travel as base64: JSON has no bytes, and a Buffer's own JSON is a number array.
function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  return raw instanceof Uint8Array ? { base64: Buffer.from(raw).toString('base64') } : value;
}

function reviver(_key: string, value: unknown): unknown {
  const v = value as { base64?: unknown } | null;
  if (v && typeof v === 'object' && typeof v.base64 === 'string' && Object.keys(v).length === 1)
    return Buffer.from(v.base64, 'base64');
  return value;
}

const UNWRITABLE = new Set(['EACCES', 'EPERM', 'EROFS']);

/**
 * The state directory, created 0700 or checked: only its user may write what a later audit trusts.
 * False when it cannot be created (a read-only HOME): no run of this user can register there either,
 * so each run's own walk is its baseline, as documented.
 */
function openPlace(place: LiveRunsPlace, roots: readonly string[]): boolean {
  try {
    mkdirSync(place.dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    if (UNWRITABLE.has((error as NodeJS.ErrnoException).code ?? '')) return false;
    throw error;
  }
  const st = lstatSync(place.dir);
  if (!st.isDirectory() || st.uid !== place.uid || (st.mode & 0o077) !== 0)
    throw new Error(`${place.dir} is not a private directory of uid ${place.uid} (chmod 700 it, or remove it)`);
  const real = realpathSync(place.dir);
  const inside = roots.find((root) => isWithin(real, root));
  if (inside) throw new Error(`${place.dir} lies inside the writable tree ${inside}: set XDG_STATE_HOME elsewhere`);
  return true;
}

function isRecord(v: unknown): v is RunRecord {
  const r = v as RunRecord;
  return (
    typeof r === 'object' &&
    r !== null &&
    r.format === FORMAT &&
    Number.isInteger(r.pid) &&
    typeof r.started === 'string' &&
    Number.isFinite(r.atMs) &&
    Array.isArray(r.roots) &&
    r.roots.every((root) => typeof root === 'string') &&
    typeof r.baseline === 'object' &&
    r.baseline !== null &&
    Array.isArray(r.baseline.gitDirs)
  );
}

/** One record, read through its descriptor: a private regular file of the user's, bounded. Throws when it is not. */
function readRecord(path: string, uid: number): RunRecord | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined; // its run has just ended
    throw error;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.uid !== uid || (st.mode & 0o077) !== 0 || st.size > MAX_RECORD_BYTES)
      throw new Error(`${path} is not a private file of uid ${uid}: remove it`);
    const record: unknown = JSON.parse(readFileSync(fd, 'utf8'), reviver);
    if (!isRecord(record)) throw new Error(`${path} is not a record this sbx wrote: remove it`);
    return record;
  } finally {
    closeSync(fd);
  }
}

const overlaps = (a: readonly string[], b: readonly string[]) =>
  a.some((x) => b.some((y) => isWithin(x, y) || isWithin(y, x)));

/** The live runs whose trees meet `roots`, oldest first; the records of runs that are gone are removed. */
function earlierRuns(place: LiveRunsPlace, roots: readonly string[]): EarlierRun[] {
  const live: RunRecord[] = [];
  for (const name of readdirSync(place.dir)) {
    if (!name.endsWith('.json')) continue;
    const path = join(place.dir, name);
    const record = readRecord(path, place.uid);
    if (!record) continue;
    if (processStart(record.pid) !== record.started) {
      rmSync(path, { force: true });
      continue;
    }
    if (overlaps(record.roots, roots)) live.push(record);
  }
  return live.sort((a, b) => a.atMs - b.atMs).map(({ roots, baseline }) => ({ roots, baseline }));
}

const recordPath = (place: LiveRunsPlace, session: string) => join(place.dir, `${session}.json`);

function writeRecord(place: LiveRunsPlace, session: string, record: RunRecord): void {
  const path = recordPath(place, session);
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    const text = Buffer.from(JSON.stringify(record, replacer));
    for (let at = 0; at < text.length; ) at += writeSync(fd, text, at);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

/**
 * Registers this run (after its own walk, before its sandbox starts) and returns its baseline: the own
 * walk, with the paths that earlier live runs cover taken from theirs. Throws
 * when the place or a live run's record cannot be trusted: the caller records that as a snapshot that
 * failed, which ends the run 125 after the command, with the path named.
 */
export function joinLiveRuns(
  place: LiveRunsPlace,
  session: string,
  roots: readonly string[],
  own: GitSnapshot,
): GitSnapshot {
  if (!openPlace(place, roots)) return own;
  const baseline = inheritedBaseline(own, earlierRuns(place, roots));
  const started = processStart(process.pid);
  if (started === undefined) throw new Error('/proc/self/stat cannot be read');
  const record = { format: FORMAT, pid: process.pid, started, atMs: Date.now(), roots: [...roots], baseline };
  writeRecord(place, session, record);
  return baseline;
}

/** Removes this run's record; nothing when there is none. */
export function leaveLiveRuns(place: LiveRunsPlace, session: string): void {
  rmSync(recordPath(place, session), { force: true });
}
