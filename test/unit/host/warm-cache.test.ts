// The library's warm cache: a kept walk result is dropped by any change in a directory it read, and
// the change is seen by the very next get() (no sleep: the kernel has queued the event already).
import { chmodSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type WalkWatch, WarmCache } from '../../../src/host/warm-cache.js';

const made: string[] = [];
const caches: WarmCache<number>[] = [];
afterEach(() => {
  for (const c of caches.splice(0)) c.clear();
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tree(): { root: string; sub: string } {
  const root = mkdtempSync(join(tmpdir(), 'sbx-warm-'));
  made.push(root);
  const sub = join(root, 'sub');
  mkdirSync(sub);
  writeFileSync(join(sub, 'file'), 'a');
  return { root, sub };
}

function counting(
  dirs: string[],
  during?: () => void,
  cache = new WarmCache<number>(),
): { cache: WarmCache<number>; walk: (w: WalkWatch) => number; walks: () => number } {
  caches.push(cache);
  let n = 0;
  const walk = (w: WalkWatch) => {
    for (const dir of dirs) w.watch(dir);
    during?.();
    return ++n;
  };
  return { cache, walk, walks: () => n };
}

describe('WarmCache', () => {
  it('holds at most its budget of watches, dropping the result used least recently', async () => {
    const cache = new WarmCache<number>(4);
    const [a, b, c] = [tree(), tree(), tree()];
    const walkA = counting([a.root, a.sub], undefined, cache);
    const walkB = counting([b.root, b.sub], undefined, cache);
    const walkC = counting([c.root, c.sub], undefined, cache);
    await cache.get('a', walkA.walk);
    await cache.get('b', walkB.walk);
    await cache.get('a', walkA.walk); // a is now the more recent
    await cache.get('c', walkC.walk); // 6 watches: b goes
    expect([cache.has('a'), cache.has('b'), cache.has('c')]).toEqual([true, false, true]);
    expect(await cache.get('a', walkA.walk)).toBe(1);
    expect(await cache.get('b', walkB.walk)).toBe(2);
    // A result alone over the budget is still kept: only older ones make room.
    const big = counting([a.root, a.sub, b.root, b.sub, c.root], undefined, new WarmCache<number>(4));
    await big.cache.get('big', big.walk);
    expect(big.cache.has('big')).toBe(true);
  });

  it('drops a result unused for its idle time, and keeps the one in use', async () => {
    let now = 0;
    const cache = new WarmCache<number>(100, 1000, () => now);
    const [a, b] = [tree(), tree()];
    const walkA = counting([a.root], undefined, cache);
    const walkB = counting([b.root], undefined, cache);
    await cache.get('a', walkA.walk);
    now = 500;
    await cache.get('b', walkB.walk);
    now = 1200; // a unused for 1200 ms, b for 700
    await cache.get('b', walkB.walk);
    expect([cache.has('a'), cache.has('b')]).toEqual([false, true]);
    now = 5000; // b idle too, but it is the one asked for: kept and returned
    expect(await cache.get('b', walkB.walk)).toBe(1);
  });

  it('keeps a result while nothing changes', async () => {
    const { root, sub } = tree();
    const { cache, walk, walks } = counting([root, sub]);
    expect(await cache.get('k', walk)).toBe(1);
    expect(await cache.get('k', walk)).toBe(1);
    expect(walks()).toBe(1);
  });

  it.each([
    ['a new file', (sub: string) => writeFileSync(join(sub, 'new.env'), 'SECRET=1')],
    ['a changed file', (sub: string) => writeFileSync(join(sub, 'file'), 'b')],
    ['a chmod', (sub: string) => chmodSync(join(sub, 'file'), 0o600)],
    ['a rename', (sub: string) => renameSync(join(sub, 'file'), join(sub, 'moved'))],
    ['a removal', (sub: string) => rmSync(join(sub, 'file'))],
  ])('drops it on %s, seen by the next get()', async (_what, change) => {
    const { root, sub } = tree();
    const { cache, walk } = counting([root, sub]);
    expect(await cache.get('k', walk)).toBe(1);
    change(sub);
    expect(await cache.get('k', walk)).toBe(2);
    expect(await cache.get('k', walk)).toBe(2);
  });

  it('keeps results apart by key', async () => {
    const { root } = tree();
    const { cache, walk, walks } = counting([root]);
    await cache.get('a', walk);
    await cache.get('b', walk);
    expect(walks()).toBe(2);
    expect(cache.size).toBe(2);
  });

  it('keeps nothing it cannot watch', async () => {
    const { root } = tree();
    const { cache, walk, walks } = counting([root, join(root, 'gone')]);
    await cache.get('k', walk);
    await cache.get('k', walk);
    expect(walks()).toBe(2);
    expect(cache.size).toBe(0);
  });

  it('keeps nothing that reads more directories than it may watch', async () => {
    const { root } = tree();
    const { cache, walk, walks } = counting(Array.from({ length: 2001 }, (_, i) => `${root}/${i}`));
    await cache.get('k', walk);
    await cache.get('k', walk);
    expect(walks()).toBe(2);
  });

  it('keeps no walk during which a directory it read changed', async () => {
    const { root, sub } = tree();
    const { cache, walk, walks } = counting([root, sub], () => writeFileSync(join(sub, `x${Date.now()}`), ''));
    await cache.get('k', walk);
    expect(cache.size).toBe(0);
    await cache.get('k', walk);
    expect(walks()).toBe(2);
  });

  it('keeps no walk that read something it could not watch', async () => {
    const { root } = tree();
    const cache = new WarmCache<number>();
    caches.push(cache);
    await cache.get('k', (w) => {
      w.watch(root);
      w.unwatchable();
      return 1;
    });
    expect(cache.size).toBe(0);
  });
});
