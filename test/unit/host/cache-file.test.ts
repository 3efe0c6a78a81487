// sbx's cache files (host/cache-file.ts) against what another local process could have put in their
// place: a link at the name, a FIFO, a file too large, writable by others or someone else's, a
// directory at the name, a cache directory or a directory above it that others can write. Each is a
// miss (read) or no write, never followed, waited on or written through. Control: the file sbx wrote
// reads back.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  lchownSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type CacheFile,
  isPrivateDir,
  makePrivateDir,
  pruneStaleCacheFiles,
  readCacheFile,
  STALE_CACHE_MS,
  writeCacheFile,
} from '../../../src/host/cache-file.js';
import { makeTempDir } from '../../helpers/tmp.js';

const uid = process.getuid?.() ?? 0;
const IS_ROOT = uid === 0;
/** The uid another local user's files have (root can make them; nobody else can). */
const OTHER = 65534;

function cacheIn(dir: string, maxBytes = 1024): CacheFile {
  return { path: join(dir, 'entry.json'), uid, maxBytes };
}

/** A private cache directory under a fresh temp dir (0700, the user's). */
function cacheDir(): string {
  const dir = join(makeTempDir('sbx-cache-file-'), 'cache');
  mkdirSync(dir, { mode: 0o700 });
  return dir;
}

describe('writeCacheFile and readCacheFile', () => {
  it('writes a private file in a private directory, whole, and reads it back (control)', () => {
    const base = makeTempDir('sbx-cache-file-');
    const file = cacheIn(join(base, 'a', 'b'));
    expect(writeCacheFile(file, '{"v":1}')).toBe(true);
    expect(readCacheFile(file)).toBe('{"v":1}');
    expect(statSync(file.path).mode & 0o777).toBe(0o600);
    expect(statSync(join(base, 'a', 'b')).mode & 0o777).toBe(0o700);
    expect(writeCacheFile(file, '{"v":2}')).toBe(true);
    expect(readCacheFile(file)).toBe('{"v":2}');
    // No temp file is left behind.
    expect(readdirSync(join(base, 'a', 'b'))).toEqual(['entry.json']);
  });

  it('reads nothing, and creates nothing, where there is no file or no directory', () => {
    const base = makeTempDir('sbx-cache-file-');
    expect(readCacheFile(cacheIn(join(base, 'missing')))).toBeUndefined();
    expect(readdirSync(base)).toEqual([]);
    expect(readCacheFile(cacheIn(cacheDir()))).toBeUndefined();
  });

  it('a link planted at the name is not followed: not read, and replaced (not written through) by a write', () => {
    const dir = cacheDir();
    const target = join(dir, 'target.json');
    writeFileSync(target, '{"planted":true}', { mode: 0o600 });
    const file = cacheIn(dir);
    symlinkSync(target, file.path);
    expect(readCacheFile(file)).toBeUndefined();
    expect(writeCacheFile(file, '{"v":1}')).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('{"planted":true}');
    expect(readCacheFile(file)).toBe('{"v":1}');
  });

  it('a FIFO at the name is a miss at once (no writer is waited for), and is replaced by a write', () => {
    const dir = cacheDir();
    const file = cacheIn(dir);
    expect(spawnSync('mkfifo', ['-m', '600', file.path]).status).toBe(0);
    expect(readCacheFile(file)).toBeUndefined();
    expect(writeCacheFile(file, 'x')).toBe(true);
    expect(statSync(file.path).isFile()).toBe(true);
  });

  it('a file over the bound is not read, and a text over it is not written (it could never be read back)', () => {
    const dir = cacheDir();
    const file = cacheIn(dir, 16);
    writeFileSync(file.path, 'x'.repeat(17), { mode: 0o600 });
    expect(readCacheFile(file)).toBeUndefined();
    writeFileSync(file.path, 'x'.repeat(16), { mode: 0o600 });
    expect(readCacheFile(file)).toBe('x'.repeat(16));
    expect(writeCacheFile(file, 'é'.repeat(9))).toBe(false);
    expect(readCacheFile(file)).toBe('x'.repeat(16));
  });

  it('a file others can write is not read', () => {
    const dir = cacheDir();
    const file = cacheIn(dir);
    writeCacheFile(file, 'x');
    chmodSync(file.path, 0o620);
    expect(readCacheFile(file)).toBeUndefined();
    chmodSync(file.path, 0o602);
    expect(readCacheFile(file)).toBeUndefined();
    chmodSync(file.path, 0o644);
    expect(readCacheFile(file)).toBe('x');
  });

  it.runIf(IS_ROOT)('a file of another user is not read (as root: chown makes one)', () => {
    const dir = cacheDir();
    const file = cacheIn(dir);
    writeCacheFile(file, 'x');
    lchownSync(file.path, OTHER, OTHER);
    expect(readCacheFile(file)).toBeUndefined();
  });

  it('a file owned by a uid other than the one asked for is not read', () => {
    const dir = cacheDir();
    writeCacheFile(cacheIn(dir), 'x');
    expect(readCacheFile({ ...cacheIn(dir), uid: uid + 1 })).toBeUndefined();
  });

  it('a directory at the name is neither read nor replaced', () => {
    const dir = cacheDir();
    const file = cacheIn(dir);
    mkdirSync(file.path);
    expect(readCacheFile(file)).toBeUndefined();
    expect(writeCacheFile(file, 'x')).toBe(false);
    expect(readdirSync(dir)).toEqual(['entry.json']);
  });
});

describe('the cache directory', () => {
  it('is refused when group or others have any access, or a directory above it is writable by others', () => {
    const dir = cacheDir();
    const file = cacheIn(dir);
    writeCacheFile(file, 'x');
    chmodSync(dir, 0o750);
    expect(readCacheFile(file)).toBeUndefined();
    expect(writeCacheFile(file, 'y')).toBe(false);
    chmodSync(dir, 0o700);
    chmodSync(join(dir, '..'), 0o777);
    expect(readCacheFile(file)).toBeUndefined();
    // A sticky directory (like /tmp) lets others add entries, not replace sbx's.
    chmodSync(join(dir, '..'), 0o1777);
    expect(readCacheFile(file)).toBe('x');
  });

  it('reached through a link of the user: used, and the link is checked too', () => {
    const dir = cacheDir();
    writeCacheFile(cacheIn(dir), 'x');
    const link = join(makeTempDir('sbx-cache-link-'), 'cache');
    symlinkSync(dir, link);
    expect(readCacheFile(cacheIn(link))).toBe('x');
    if (IS_ROOT) {
      // Another user's link chose where sbx's cache is: not used.
      lchownSync(link, OTHER, OTHER);
      expect(readCacheFile(cacheIn(link))).toBeUndefined();
    }
  });

  it.runIf(IS_ROOT)('of another user is refused, and not written into (as root: chown makes one)', () => {
    const dir = cacheDir();
    lchownSync(dir, OTHER, OTHER);
    expect(isPrivateDir(dir, uid)).toBe(false);
    expect(writeCacheFile(cacheIn(dir), 'x')).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('makePrivateDir creates it 0700 with the directories to it; isPrivateDir alone creates nothing', () => {
    const base = makeTempDir('sbx-cache-file-');
    expect(isPrivateDir(join(base, 'x'), uid)).toBe(false);
    expect(readdirSync(base)).toEqual([]);
    expect(makePrivateDir(join(base, 'x', 'y'), uid)).toBe(true);
    expect(statSync(join(base, 'x')).mode & 0o777).toBe(0o700);
    expect(statSync(join(base, 'x', 'y')).mode & 0o777).toBe(0o700);
  });
});

describe('pruneStaleCacheFiles', () => {
  it('removes the entries of its kind written before the stale age, nothing else, and no link target', () => {
    const dir = cacheDir();
    const now = Date.now();
    const old = (now - STALE_CACHE_MS - 60_000) / 1000;
    const recent = (now - STALE_CACHE_MS + 60_000) / 1000;
    const target = join(dir, 'kept-target.json');
    writeFileSync(target, '{}');
    utimesSync(target, old, old);
    for (const [name, time] of [
      ['a-old.json', old],
      ['a-recent.json', recent],
      ['b-old.json', old],
    ] as const) {
      writeFileSync(join(dir, name), '{}');
      utimesSync(join(dir, name), time, time);
    }
    symlinkSync(target, join(dir, 'a-link.json'));
    // The link itself is new: it stays, and so does what it points at (another kind).
    pruneStaleCacheFiles(dir, (name) => name.startsWith('a-'), now);
    expect(readdirSync(dir).sort()).toEqual(['a-link.json', 'a-recent.json', 'b-old.json', 'kept-target.json']);
  });

  it('a directory it cannot read is left alone', () => {
    expect(() => pruneStaleCacheFiles('/nonexistent/sbx-cache', () => true, Date.now())).not.toThrow();
  });
});
