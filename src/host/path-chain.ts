// Where a path really lies: the device:inode of `/` and of every directory down to it, following
// symlinks as the kernel would (a dangling one too: its target is where a sandbox could create the
// file). Compared by identity, a second mount of the same tree or a symlinked dotfile directory
// cannot hide that a writable bind overlaps a protected path (host-state/host-state.ts).
import { lstatSync, readdirSync, readlinkSync, type Stats } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { PathChain } from '../host-state/host-state.js';

/** Linux's own limit on symlinks followed in one lookup (ELOOP past it). */
const MAX_HOPS = 40;

const idOf = (st: { dev: number; ino: number }) => `${st.dev}:${st.ino}`;

/** undefined: no such entry. */
type Lstat = Stats | undefined | 'unsearchable';

/** A directory holding this many of the paths asked about is listed once instead of probed by name. */
const LIST_AT = 4;

/**
 * One lookup per path for a batch of chains that share their directories: HOME, ~/.config and
 * ~/.local hold most of the paths host-state/host-state.ts protects, and most of those do not exist, so
 * one readdir answers them where a lstat each would cost a syscall each.
 */
export interface ChainMemo {
  stats: Map<string, Lstat>;
  toList: Set<string>;
  /** null: the directory could not be listed (looked up by name instead). */
  listings: Map<string, Set<string> | null>;
}

export function chainMemo(paths: readonly string[] = []): ChainMemo {
  const count = new Map<string, number>();
  for (const p of paths) count.set(dirname(p), (count.get(dirname(p)) ?? 0) + 1);
  const toList = new Set([...count].filter(([, n]) => n >= LIST_AT).map(([dir]) => dir));
  return { stats: new Map(), toList, listings: new Map() };
}

function listing(dir: string, memo: ChainMemo): Set<string> | null {
  let names = memo.listings.get(dir);
  if (names === undefined) {
    try {
      names = new Set(readdirSync(dir));
    } catch {
      names = null;
    }
    memo.listings.set(dir, names);
  }
  return names;
}

function lstatOnce(path: string, memo: ChainMemo): Lstat {
  if (memo.stats.has(path)) return memo.stats.get(path);
  const dir = dirname(path);
  // Only ever asked for a path whose directory was resolved (no symlink in it): its listing is its own.
  const names = memo.toList.has(dir) ? listing(dir, memo) : null;
  let st: Lstat;
  if (names && !names.has(basename(path))) st = undefined;
  else {
    try {
      st = lstatSync(path, { throwIfNoEntry: false });
    } catch {
      // EACCES: a directory this user cannot search. The chain ends above it, with that directory
      // still in it, so a bind of it or of anything above it is still seen.
      st = 'unsearchable';
    }
  }
  memo.stats.set(path, st);
  return st;
}

/**
 * The chain of `path`, resolved one component at a time (so `..` after a symlink climbs from its
 * target, as the kernel does). A missing component ends the chain at its deepest existing ancestor.
 */
export function pathChain(path: string, memo: ChainMemo = chainMemo()): PathChain {
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
