// A tree scan's result kept on disk between CLI runs, for trees that rarely change: the user's
// toolchain roots (pyenv, rustup, nvm), whose secret scan walks thousands of directories on every
// launch (about 60 ms for pyenv plus rustup on the development machine) and whose answer is almost
// always the same. docs/SECURITY.md ("Toolchain scan cache") has the threat model.
//
// A kept result is used only when everything the scan read is as it was: the scan reports each
// directory it listed, file it read or looked for, and link count it read (sensitive/scan-result.ts
// ScanReader), and each is fingerprinted by device, inode, mode, link count, size, mtime and ctime. A
// created, removed or renamed entry changes its directory's mtime and ctime; rewritten content
// changes the file's; a new hard link changes the file's ctime and link count. ctime cannot be set
// by a process (utimes sets it to now), so nothing short of moving the system clock back replays
// an old fingerprint. A scan that resolved a symlink (its target may lie anywhere) is not kept.
//
// Racing writers: timestamps come from a coarse clock, so a change made in the same tick right after
// the scan read a directory could leave its mtime as it was. A result is kept only when every
// timestamp it depends on is older than the scan's start by a margin (git's "racy clean" rule): a
// tree written to in the last seconds is scanned again next time, until it settles.
//
// Only local filesystems (ext4, xfs, btrfs, tmpfs, overlayfs, ...): on NFS, SMB or FUSE a stat can
// answer from a client's attribute cache, so a walk there is never kept.
//
// The file lives in sbx's own cache directory, which no sandbox can write (host-state/host-state.ts),
// and is read and written as every cache of sbx's is (host/cache-file.ts): bounded, and only when it
// and its directory are the user's and nobody else can write them or a directory above them. A
// missing, foreign, corrupt or stale entry means a fresh scan, never an error.
import { createHash } from 'node:crypto';
import { lstatSync, type Stats, statfsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pruneStaleCacheFiles, readCacheFile, writeCacheFile } from '../../host/cache-file.js';
import { BUILD, VERSION } from '../../version.js';
import type { ScanReader } from '../scan-result.js';

const FORMAT = 1;

/**
 * Local filesystems whose timestamps the kernel keeps itself, in nanoseconds, and whose attributes are
 * never served from a client's cache (statfs f_type): ext2/3/4, xfs, btrfs, tmpfs, overlayfs, f2fs,
 * zfs, bcachefs. On NFS, SMB or FUSE a stat may answer from a cache, or the server may keep coarse
 * times, so a walk there is never kept.
 */
const LOCAL_FILESYSTEMS = new Set([
  0xef53, 0x58465342, 0x9123683e, 0x01021994, 0x794c7630, 0xf2f52010, 0x2fc12fc1, 0xca451a4e,
]);
/** A tree changed less than this long before the scan started is scanned again next time. */
export const RACY_MARGIN_MS = 2000;
/** The fingerprints of a tree as large as pyenv plus rustup are a few hundred KiB. */
const MAX_ENTRY_BYTES = 8 * 1024 * 1024;

type ReadKind = Parameters<ScanReader>[1];

interface Entry<T> {
  format: number;
  key: string;
  value: T;
  /** [path ('@' stands for the tree's walk path), what was read, its fingerprint then]. */
  reads: [string, ReadKind, string][];
}

export interface ScanCacheOptions {
  /** sbx's cache directory; undefined: no cache (the scan runs). */
  dir: string | undefined;
  /** Everything the result depends on besides what the scan reads: the rules, the root and its identity. */
  material: unknown;
  /** Where the scan walks the tree: the pinned root's /proc/self/fd path, different in every process. */
  via: string;
  /**
   * The tree's host path, where a kept entry is checked (half the cost of a lookup through /proc). What
   * the path holds now need not be the pinned tree: every fingerprint names its inode, so a tree
   * swapped in since is a miss, and a kept entry vouches only for the pinned root it was made from
   * (its identity is part of `material`).
   */
  root: string;
  /** The invoking uid: the owner the entry and its directories must have. */
  uid: number;
  /** The scan's start, in ms since the epoch (tests pass a later one to keep a tree they just made). */
  startedAt?: number;
}

/** The entry's file for these options; undefined when there is no cache directory. */
function entryFile(opts: ScanCacheOptions): { file: string; key: string } | undefined {
  if (opts.dir === undefined) return undefined;
  const key = createHash('sha256')
    .update(JSON.stringify([FORMAT, BUILD, VERSION, opts.material]))
    .digest('hex')
    .slice(0, 32);
  return { file: join(opts.dir, `tree-scan-${key}.json`), key };
}

/**
 * The kept result when everything its walk read is unchanged, else undefined. Asked first, so that a
 * hit loads nothing the walk alone needs (the compiled rules).
 */
export function keptScan<T>(opts: ScanCacheOptions): T | undefined {
  const entry = entryFile(opts);
  return entry ? readEntry<T>(entry.file, entry.key, opts) : undefined;
}

/** `scan()`, its result kept when it may be (everything it read is fingerprinted as it reads it). */
export function recordedScan<T>(opts: ScanCacheOptions, scan: (read: ScanReader) => T): T {
  const entry = entryFile(opts);
  if (entry === undefined) return scan(() => {});
  const startedAt = opts.startedAt ?? Date.now();
  const reads: Entry<T>['reads'] = [];
  const devices = new Map<number, boolean>();
  let keep = true;
  const value = scan((path, what) => {
    if (!keep) return;
    const stored = storedPath(path, opts.via);
    if (what === 'link' || stored === undefined) {
      keep = false;
      return;
    }
    const fp = fingerprint(path, what);
    if (fp.newest >= startedAt - RACY_MARGIN_MS || !onLocalFilesystem(path, fp.devices, devices)) keep = false;
    else reads.push([stored, what, fp.text]);
  });
  if (keep) writeEntry(entry.file, opts.uid, { format: FORMAT, key: entry.key, value, reads });
  return value;
}

/** `path` with the walk's /proc prefix as '@'; undefined for another process-specific path. */
function storedPath(path: string, via: string): string | undefined {
  if (path === via) return '@';
  if (path.startsWith(`${via}/`)) return `@${path.slice(via.length)}`;
  return path.startsWith('/proc/') ? undefined : path;
}

function livePath(stored: string, root: string): string {
  return stored === '@' || stored.startsWith('@/') ? (root === '/' ? '' : root) + (stored.slice(1) || '/') : stored;
}

/**
 * What a read depended on. A directory or a link count is the object itself (followed: the walk lists
 * through /proc/self/fd); a file is both the name (a symlink swapped in) and what it reaches.
 */
function fingerprint(path: string, what: ReadKind): { text: string; newest: number; devices: number[] } {
  const parts = what === 'file' ? [stat(path, lstatSync), stat(path, statSync)] : [stat(path, statSync)];
  return {
    text: parts.map((p) => p.text).join('|'),
    newest: Math.max(...parts.map((p) => p.newest)),
    devices: parts.flatMap((p) => (p.dev === undefined ? [] : [p.dev])),
  };
}

function stat(path: string, how: typeof statSync | typeof lstatSync): { text: string; newest: number; dev?: number } {
  let s: Stats | undefined;
  try {
    s = how(path);
  } catch (error) {
    return { text: `-${(error as NodeJS.ErrnoException).code ?? 'error'}`, newest: 0 };
  }
  if (!s) return { text: '-', newest: 0 };
  return {
    text: `${s.dev}:${s.ino}:${s.mode}:${s.nlink}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`,
    newest: Math.max(s.mtimeMs, s.ctimeMs),
    dev: s.dev,
  };
}

/** Whether every device a fingerprint names is a local filesystem (statfs once per device). */
function onLocalFilesystem(path: string, devices: number[], known: Map<number, boolean>): boolean {
  for (const dev of devices) {
    let local = known.get(dev);
    if (local === undefined) {
      try {
        local = LOCAL_FILESYSTEMS.has(statfsSync(path).type);
      } catch {
        local = false;
      }
      known.set(dev, local);
    }
    if (!local) return false;
  }
  return true;
}

function readEntry<T>(file: string, key: string, opts: ScanCacheOptions): T | undefined {
  const text = readCacheFile({ path: file, uid: opts.uid, maxBytes: MAX_ENTRY_BYTES });
  if (text === undefined) return undefined;
  let entry: Entry<T>;
  try {
    entry = JSON.parse(text) as Entry<T>;
  } catch {
    return undefined;
  }
  // A scan lists its root first: an entry that read nothing vouches for nothing.
  if (entry?.format !== FORMAT || entry.key !== key || !Array.isArray(entry.reads) || entry.value === undefined)
    return undefined;
  if (entry.reads[0]?.[0] !== '@' || entry.reads[0][1] !== 'dir') return undefined;
  for (const read of entry.reads) {
    if (!Array.isArray(read) || read.length !== 3) return undefined;
    const [stored, what, text] = read;
    if (typeof stored !== 'string' || (what !== 'dir' && what !== 'file' && what !== 'inode')) return undefined;
    if (fingerprint(livePath(stored, opts.root), what).text !== text) return undefined;
  }
  return entry.value;
}

function writeEntry(file: string, uid: number, entry: Entry<unknown>): void {
  // The cache is an optimisation: an entry too large, or a read-only or full disk, must not stop a run.
  if (writeCacheFile({ path: file, uid, maxBytes: MAX_ENTRY_BYTES }, JSON.stringify(entry))) {
    pruneStaleCacheFiles(dirname(file), (name) => name.startsWith('tree-scan-'), Date.now());
  }
}
