// bin/sbx.js hands Node's compile cache this directory: code Node runs from it must be the user's own.
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileCacheDir } from '../../../src/host/compile-cache.js';
import { makeTempDir } from '../../helpers/tmp.js';

describe('compileCacheDir', () => {
  it('is sbx/node-compile-cache in the cache home, created private', () => {
    const home = makeTempDir();
    const dir = compileCacheDir({ HOME: home, XDG_CACHE_HOME: join(home, 'cache') });
    expect(dir).toBe(join(home, 'cache', 'sbx', 'node-compile-cache'));
    expect(statSync(dir!).mode & 0o777).toBe(0o700);
    expect(statSync(join(home, 'cache', 'sbx')).mode & 0o077).toBe(0);
  });

  it('follows HOME without XDG_CACHE_HOME', () => {
    const home = makeTempDir();
    expect(compileCacheDir({ HOME: home })).toBe(join(home, '.cache', 'sbx', 'node-compile-cache'));
  });

  it('is none with SBX_NO_CACHE', () => {
    const home = makeTempDir();
    expect(compileCacheDir({ HOME: home, SBX_NO_CACHE: '1' })).toBeUndefined();
  });

  it('is none when others could write the directory or one above it', () => {
    const home = makeTempDir();
    const dir = join(home, '.cache', 'sbx', 'node-compile-cache');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o770);
    expect(compileCacheDir({ HOME: home })).toBeUndefined();
    chmodSync(dir, 0o700);
    chmodSync(join(home, '.cache'), 0o777);
    expect(compileCacheDir({ HOME: home })).toBeUndefined();
    // A sticky directory (like /tmp) lets others add entries, not replace sbx's.
    chmodSync(join(home, '.cache'), 0o1777);
    expect(compileCacheDir({ HOME: home })).toBe(dir);
  });
});
