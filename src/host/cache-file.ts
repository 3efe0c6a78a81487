// One file of sbx's that only saves work or remembers something: the resolved-profile cache, the
// compiled sensitive rules, bwrap's version, a toolchain root's kept scan, the notices already said.
// Each is rewritten whole, and anything doubtful about it is a miss (the work is done again, the
// notice said again), never an error. The stores (trust pins, approvals, the audit ledger, the runs
// under way) are not read through here: one of those that cannot be trusted must be refused aloud.
//
// The files lie in sbx's own directories, which no sandbox can write (host-state/host-state.ts), but
// are read as any file another local process could have planted (docs/SECURITY.md, "sbx's own
// state"): the directory must be the user's alone and no directory above it writable by anyone else
// (the owner rule of host/guarded-read.ts), and the file a regular file of the user's that nobody
// else can write, checked on the descriptor that is read, never a link followed, a FIFO waited on,
// or more than the cache's bound read. A write lands under a fresh name in the same directory
// (O_CREAT|O_EXCL|O_NOFOLLOW: nothing already there is written through) and is renamed over the
// name, so a reader sees the old file or the new one whole. No fsync: a file a crash left empty or
// torn does not parse, which is a miss.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';

export interface CacheFile {
  /** Where the file is; its directory is sbx's own (created 0700 by the first write). */
  path: string;
  /** The invoking uid: the owner the file and its directory must have. */
  uid: number;
  /** A larger file is not read, nor written (it could never be read back). */
  maxBytes: number;
}

/** Owned by `uid` or root, and writable by no one else (a sticky directory such as /tmp excepted; a link's own mode means nothing). */
function ownedSafely(path: string, uid: number): boolean {
  const st = lstatSync(path);
  if (st.uid !== uid && st.uid !== 0) return false;
  return st.isSymbolicLink() || (st.mode & 0o022) === 0 || (st.isDirectory() && (st.mode & 0o1000) !== 0);
}

/** Every directory above `path`, up to `/`. */
function ancestors(path: string): string[] {
  const out: string[] = [];
  for (let p = dirname(path); ; p = dirname(p)) {
    out.push(p);
    if (dirname(p) === p) return out;
  }
}

/**
 * Whether `dir` is the user's alone (a directory owned by `uid`, no access for group or others) and
 * nobody else can write a directory above it, on the path as written (a link there was placed by
 * whoever owns it, and chose the target) and on the real one.
 */
export function isPrivateDir(dir: string, uid: number): boolean {
  try {
    const written = resolve(dir);
    const real = realpathSync(written);
    const st = lstatSync(real);
    if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) return false;
    const above = new Set([...ancestors(written), ...ancestors(real)]);
    if (written !== real) above.add(written);
    return [...above].every((path) => ownedSafely(path, uid));
  } catch {
    return false;
  }
}

/** `dir` and the directories to it created 0700 where missing; then whether it is private (isPrivateDir). */
export function makePrivateDir(dir: string, uid: number): boolean {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch {
    return false;
  }
  return isPrivateDir(dir, uid);
}

/** The `size` bytes fstat saw; undefined when there are more: changed in place, which sbx never does to a cache file. */
function readWhole(fd: number, size: number): Buffer | undefined {
  const buf = Buffer.allocUnsafe(size + 1);
  let at = 0;
  while (at < buf.length) {
    const n = readSync(fd, buf, at, buf.length - at, null);
    if (n === 0) break;
    at += n;
  }
  return at > size ? undefined : buf.subarray(0, at);
}

/** The file's text, or undefined when it is missing or anything about it or its directory is not as sbx writes it. */
export function readCacheFile(file: CacheFile): string | undefined {
  if (!isPrivateDir(dirname(file.path), file.uid)) return undefined;
  let fd: number;
  try {
    // O_NOFOLLOW: a link at the name is refused (ELOOP). O_NONBLOCK: a FIFO opens at once, and is
    // refused below, instead of waiting for a writer. O_NOCTTY: a terminal never becomes sbx's.
    fd = openSync(file.path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.uid !== file.uid || (st.mode & 0o022) !== 0 || st.size > file.maxBytes) return undefined;
    return readWhole(fd, st.size)?.toString('utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** Replace the file with `text`; false when it could not be (the cache is optional: nothing else changes). */
export function writeCacheFile(file: CacheFile, text: string): boolean {
  const bytes = Buffer.from(text);
  if (bytes.length > file.maxBytes || !makePrivateDir(dirname(file.path), file.uid)) return false;
  const temp = `${file.path}.${randomBytes(6).toString('hex')}.tmp`;
  let fd: number;
  try {
    fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch {
    return false;
  }
  try {
    try {
      for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file.path);
    return true;
  } catch {
    rmSync(temp, { force: true });
    return false;
  }
}

/** Cache entries written longer ago than this go when another of their kind is written (pruneStaleCacheFiles). */
export const STALE_CACHE_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * Removes the files of `dir` that `isEntry` names as one kind of cache entry and that were written more
 * than STALE_CACHE_MS before `nowMs`: every sbx build and every rule change keys new entries, and the
 * old ones would pile up. A hit never rewrites its entry, so one still in use is made again once a
 * month. Only the entry itself is removed (lstat, unlink: a link named like one is not followed).
 */
export function pruneStaleCacheFiles(dir: string, isEntry: (name: string) => boolean, nowMs: number): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!isEntry(name)) continue;
    const path = join(dir, name);
    try {
      if (nowMs - lstatSync(path).mtimeMs > STALE_CACHE_MS) unlinkSync(path);
    } catch {
      // Gone already, or not ours to remove: nothing to do.
    }
  }
}
