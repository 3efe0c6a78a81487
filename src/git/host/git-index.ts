// Which of a few paths git tracks, read from the index file itself (git's Documentation/gitformat-
// index.txt, versions 2 to 4) instead of spawning `git ls-files`, which costs a launch 5-10 ms. The
// index lies in a tree the sandbox can write, so it is hostile input: every read is bounded, any
// inconsistency throws (the caller then masks by name, fail closed), and a tracked entry counts
// only once the working file's content hashes to the entry's blob id (verifyTracked).
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/** One stage-0 entry of a regular file or symlink, or a gitlink (a submodule). */
export interface IndexEntry {
  /** Path relative to the work tree, `/`-separated, as git stores it (UTF-8 bytes decoded). */
  path: string;
  /** The object id (blob for files), lowercase hex. */
  oid: string;
  /** git's mode: 0o100644, 0o100755, 0o120000 (symlink), 0o160000 (gitlink). */
  mode: number;
  /** The file size git recorded (truncated to 32 bits). */
  size: number;
}

export interface IndexQuery {
  /** Paths whose entries are wanted. */
  files: ReadonlySet<string>;
  /** Directories (no trailing `/`): every entry below each is wanted. */
  dirs: readonly string[];
}

export interface IndexAnswer {
  /** Entries for the queried files that are in the index. */
  files: Map<string, IndexEntry>;
  /** Per queried directory, the entries below it (empty when none). */
  dirs: Map<string, IndexEntry[]>;
}

/** Far above a 1M-entry monorepo's index; a larger one is not read (and then nothing is exempt). */
export const MAX_INDEX_BYTES = 256 * 1024 * 1024;
/** A larger file is not hashed: it stays masked (its content counts as unknown). */
export const MAX_VERIFY_BYTES = 64 * 1024 * 1024;

const ENTRY_FIXED_BYTES = 40; // ctime, mtime (s, ns), dev, ino, mode, uid, gid, size: ten uint32
const FLAG_EXTENDED = 0x4000;
const FLAG_STAGE = 0x3000;
const NAME_MASK = 0x0fff;
const EXT_INTENT_TO_ADD = 0x2000;
const NO_DIRS: readonly { dir: string; bytes: Buffer }[] = [];
const ACCEPTED_MODES = new Set([0o100644, 0o100755, 0o120000, 0o160000]);

/**
 * Reads a regular file without following a final symlink and without blocking on a FIFO the sandbox
 * may have put there; undefined when it is not a regular file or exceeds `maxBytes`.
 */
export function readRegularFile(path: string, maxBytes: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > maxBytes) return undefined;
    const buf = Buffer.allocUnsafe(st.size);
    let got = 0;
    while (got < st.size) {
      const n = readSync(fd, buf, got, st.size - got, null);
      if (n === 0) break;
      got += n;
    }
    // Shrunk while read: what was hashed is not what will be mounted.
    return got === st.size ? buf : undefined;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

class IndexFormatError extends Error {}

function fail(why: string): never {
  throw new IndexFormatError(`git index: ${why}`);
}

/** The prefix-strip count of a v4 entry (git's varint.c: offset encoding, big-endian groups of 7 bits). */
function readVarint(buf: Buffer, at: number): [value: number, next: number] {
  let i = at;
  if (i >= buf.length) fail('truncated varint');
  let c = buf[i++]!;
  let value = c & 0x7f;
  while (c & 0x80) {
    if (i >= buf.length || value > 0xffffff) fail('bad varint');
    c = buf[i++]!;
    value = ((value + 1) << 7) | (c & 0x7f);
  }
  return [value, i];
}

function startsWithDir(src: Buffer, start: number, len: number, dir: Buffer): boolean {
  if (len <= dir.length || src[start + dir.length] !== 0x2f) return false;
  return src.compare(dir, 0, dir.length, start, start + dir.length) === 0;
}

/**
 * Looks the query up in an index file's bytes in one pass. Paths are compared as bytes (lengths
 * first), so a large index costs a walk over its entries and no string per entry. `hashBytes` is 20
 * (SHA-1 repositories) or 32 (SHA-256). Throws on any malformed or truncated entry; conflicted
 * (stage 1-3) and intent-to-add entries are left out (their content is not what the store holds).
 */
export function queryIndex(buf: Buffer, query: IndexQuery, hashBytes = 20): IndexAnswer {
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'DIRC') fail('no DIRC signature');
  const version = buf.readUInt32BE(4);
  if (version < 2 || version > 4) fail(`unsupported version ${version}`);
  const count = buf.readUInt32BE(8);
  const answer: IndexAnswer = { files: new Map(), dirs: new Map(query.dirs.map((d) => [d, []])) };
  const wanted = wantedOf(query);
  const walk: Walk = { at: 12, src: buf, nameStart: 0, nameLen: 0, scratch: Buffer.alloc(4096) };
  for (let n = 0; n < count; n++) {
    const start = walk.at;
    if (readEntry(buf, walk, version, hashBytes)) collect(buf, start, walk, wanted, hashBytes, answer);
  }
  return answer;
}

/** The query, prepared for byte comparison. */
interface Wanted {
  /** Keyed by their UTF-8 bytes read as latin1 (one char per byte). */
  files: Set<string>;
  /** quickKey of each wanted file: an entry's name is decoded only when its key is one of these. */
  quickKeys: Set<number>;
  dirs: readonly { dir: string; bytes: Buffer }[];
}

/** Length and last two bytes: most entries are ruled out by a few reads. */
function quickKey(len: number, last: number, beforeLast: number): number {
  return len * 65536 + last * 256 + beforeLast;
}

function wantedOf(query: IndexQuery): Wanted {
  const files = new Set([...query.files].map((p) => Buffer.from(p, 'utf8').toString('latin1')));
  const keyOf = (k: string) =>
    quickKey(k.length, k.charCodeAt(k.length - 1), k.length > 1 ? k.charCodeAt(k.length - 2) : 0);
  return {
    files,
    quickKeys: new Set([...files].map(keyOf)),
    dirs: query.dirs.map((d) => ({ dir: d, bytes: Buffer.from(d, 'utf8') })),
  };
}

/** Where the walk is, and the current entry's name: `src[nameStart, nameStart + nameLen)`. */
interface Walk {
  /** Offset of the next entry. */
  at: number;
  src: Buffer;
  nameStart: number;
  nameLen: number;
  /** v4 only: the reconstructed name (each is the previous one, cut, plus a suffix). */
  scratch: Buffer;
}

/**
 * Reads the entry at `walk.at` (its flags and name) and moves past it. Whether it counts: stage 0
 * and not intent-to-add.
 */
function readEntry(buf: Buffer, walk: Walk, version: number, hashBytes: number): boolean {
  const start = walk.at;
  const nameOffset = ENTRY_FIXED_BYTES + hashBytes + 2;
  if (start + nameOffset > buf.length) fail('truncated entry');
  const flags = buf.readUInt16BE(start + ENTRY_FIXED_BYTES + hashBytes);
  let extended = 0;
  let pos = start + nameOffset;
  if (flags & FLAG_EXTENDED) {
    if (version < 3) fail('extended flag in a version 2 index');
    if (pos + 2 > buf.length) fail('truncated entry');
    extended = buf.readUInt16BE(pos);
    pos += 2;
  }
  const flagLen = flags & NAME_MASK;
  if (version === 4) readPrefixedName(buf, walk, pos, flagLen);
  else readPaddedName(buf, walk, start, pos, flagLen);
  if (walk.nameLen === 0) fail('empty path');
  if (flagLen < NAME_MASK ? flagLen !== walk.nameLen : walk.nameLen < NAME_MASK) {
    fail('name length does not match its flags');
  }
  return (flags & FLAG_STAGE) === 0 && (extended & EXT_INTENT_TO_ADD) === 0;
}

/** v4: the previous name cut by a varint, plus a NUL-terminated suffix; no padding. */
function readPrefixedName(buf: Buffer, walk: Walk, pos: number, flagLen: number): void {
  const [strip, suffixStart] = readVarint(buf, pos);
  if (strip > walk.nameLen) fail('prefix longer than the previous name');
  const kept = walk.nameLen - strip;
  // The flags give the whole length unless it is 0xFFF or more: then the NUL does.
  const end = flagLen < NAME_MASK ? suffixStart + flagLen - kept : buf.indexOf(0, suffixStart);
  if (end < suffixStart || end >= buf.length || buf[end] !== 0) fail('name length does not match its flags');
  walk.nameLen = kept + end - suffixStart;
  if (walk.nameLen > walk.scratch.length) {
    const bigger = Buffer.alloc(Math.max(walk.scratch.length * 2, walk.nameLen));
    walk.scratch.copy(bigger, 0, 0, kept);
    walk.scratch = bigger;
  }
  const scratch = walk.scratch;
  // A loop, not Buffer.copy: suffixes are a few bytes, and the native call costs more than it copies.
  for (let i = suffixStart, j = kept; i < end; i++, j++) scratch[j] = buf[i]!;
  walk.src = scratch;
  walk.nameStart = 0;
  walk.at = end + 1;
}

/** v2 and v3: the whole name in place, NUL-padded. */
function readPaddedName(buf: Buffer, walk: Walk, start: number, pos: number, flagLen: number): void {
  const nameLen = flagLen < NAME_MASK ? flagLen : buf.indexOf(0, pos) - pos;
  if (nameLen < 0 || pos + nameLen >= buf.length || buf[pos + nameLen] !== 0) {
    fail('name length does not match its flags');
  }
  walk.src = buf;
  walk.nameStart = pos;
  walk.nameLen = nameLen;
  // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
  walk.at = start + ((pos - start + nameLen + 8) & ~7);
  if (walk.at > buf.length) fail('truncated entry');
}

/** Adds the entry at `start` to the answer when the query wants it (as a file or below a directory). */
function collect(buf: Buffer, start: number, walk: Walk, wanted: Wanted, hashBytes: number, answer: IndexAnswer): void {
  const { src, nameStart, nameLen } = walk;
  const nameEnd = nameStart + nameLen;
  const key = quickKey(nameLen, src[nameEnd - 1]!, nameLen > 1 ? src[nameEnd - 2]! : 0);
  const isFile = wanted.quickKeys.has(key) && wanted.files.has(src.toString('latin1', nameStart, nameEnd));
  const underDirs =
    wanted.dirs.length === 0 ? NO_DIRS : wanted.dirs.filter((d) => startsWithDir(src, nameStart, nameLen, d.bytes));
  if (!isFile && underDirs.length === 0) return;
  const mode = buf.readUInt32BE(start + 24);
  if (!ACCEPTED_MODES.has(mode)) return;
  const entry: IndexEntry = {
    path: src.toString('utf8', nameStart, nameEnd),
    oid: buf.toString('hex', start + ENTRY_FIXED_BYTES, start + ENTRY_FIXED_BYTES + hashBytes),
    mode,
    size: buf.readUInt32BE(start + 36),
  };
  if (isFile) answer.files.set(entry.path, entry);
  for (const d of underDirs) answer.dirs.get(d.dir)!.push(entry);
}

/**
 * Whether `path` holds exactly the content of the index entry: a regular file whose git blob id
 * (hash of "blob <size>\0" and the bytes) is the entry's. Only then is the file's content what the
 * repository's object store holds; a stand-in staged from inside a sandbox (an empty `.env`) has
 * another id, so a hostile index cannot vouch for a file whose content it does not know.
 */
export function verifyTracked(path: string, entry: IndexEntry): boolean {
  if (entry.mode !== 0o100644 && entry.mode !== 0o100755) return false;
  const bytes = readRegularFile(path, MAX_VERIFY_BYTES);
  if (!bytes || bytes.length % 2 ** 32 !== entry.size) return false;
  const algorithm = entry.oid.length === 64 ? 'sha256' : 'sha1';
  const oid = createHash(algorithm).update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
  return oid === entry.oid;
}

export function isIndexFormatError(error: unknown): boolean {
  return error instanceof IndexFormatError;
}
