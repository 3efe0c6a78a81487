// Where a path really lies: the device:inode of `/` and of every directory down to it, following
// symlinks as the kernel would (a dangling one too: its target is where a sandbox could create the
// file). Compared by identity, a second mount of the same tree or a symlinked dotfile directory
// cannot hide that a writable bind overlaps a protected path (policy/host-state.ts).
import { lstatSync, readlinkSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import type { PathChain } from '../policy/host-state.js';

/** Linux's own limit on symlinks followed in one lookup (ELOOP past it). */
const MAX_HOPS = 40;

const idOf = (st: { dev: number; ino: number }) => `${st.dev}:${st.ino}`;

/** undefined: no such entry. */
type Lstat = Stats | undefined | 'unsearchable';

/** One lstat per path for a batch of chains that share their first directories (HOME, ~/.config). */
export type ChainMemo = Map<string, Lstat>;

function lstatOnce(path: string, memo: ChainMemo): Lstat {
  let st = memo.get(path);
  if (st === undefined && !memo.has(path)) {
    try {
      st = lstatSync(path, { throwIfNoEntry: false });
    } catch {
      // EACCES: a directory this user cannot search. The chain ends above it, with that directory
      // still in it, so a bind of it or of anything above it is still seen.
      st = 'unsearchable';
    }
    memo.set(path, st);
  }
  return st;
}

/**
 * The chain of `path`, resolved one component at a time (so `..` after a symlink climbs from its
 * target, as the kernel does). A missing component ends the chain at its deepest existing ancestor.
 */
export function pathChain(path: string, memo: ChainMemo = new Map()): PathChain {
  const pending = path.split('/').filter(Boolean).reverse();
  let dir = '/';
  const root = lstatOnce('/', memo);
  if (root === undefined || root === 'unsearchable') return { ids: [], exists: false };
  let ids = [idOf(root)];
  let hops = 0;
  while (pending.length > 0) {
    const part = pending.pop()!;
    if (part === '.') continue;
    if (part === '..') {
      if (dir !== '/') {
        dir = dirname(dir);
        ids = ids.slice(0, -1);
      }
      continue;
    }
    const next = dir === '/' ? `/${part}` : `${dir}/${part}`;
    const st = lstatOnce(next, memo);
    if (st === undefined || st === 'unsearchable') return { ids, exists: false };
    if (st.isSymbolicLink()) {
      if (++hops > MAX_HOPS) return { ids, exists: false };
      const target = readlinkSync(next);
      if (target.startsWith('/')) {
        dir = '/';
        ids = ids.slice(0, 1);
      }
      pending.push(...target.split('/').filter(Boolean).reverse());
      continue;
    }
    dir = next;
    ids = [...ids, idOf(st)];
  }
  return { ids, exists: true };
}
