// Maps a path as the sandboxed command sees it back to the host file behind it, by walking the mount
// list from the top. Pure. Used to find the command on the sandbox PATH before anything is spawned, and
// by `sbx why` (policy/why.ts) to name the mount a path lies on.
import { posix } from 'node:path';
import { isWithin } from '../path-within.js';
import type { Mount } from './types.js';

/**
 * The index of the mount `path` inside the sandbox lies on: the last one applied whose target holds it
 * (a later mount covers an earlier one), a `remount-ro` aside (it changes a mount's flags, not what
 * shows). -1: none, the path is on the sandbox's own empty root.
 */
export function mountIndexOf(mounts: readonly Mount[], path: string): number {
  for (let i = mounts.length - 1; i >= 0; i--) {
    const m = mounts[i]!;
    if (m.kind !== 'remount-ro' && isWithin(path, m.target)) return i;
  }
  return -1;
}

/** Where a path under a `symlink` mount leads, inside the sandbox. */
export function throughLink(m: Extract<Mount, { kind: 'symlink' }>, path: string): string {
  const base = posix.isAbsolute(m.linkTo) ? m.linkTo : posix.join(posix.dirname(m.target), m.linkTo);
  return posix.join(base, posix.relative(m.target, path));
}

/** The host path behind `path` inside the sandbox, or undefined if it is not backed by a host file. */
export function hostPathOf(mounts: readonly Mount[], path: string, depth = 0): string | undefined {
  if (depth > 8) return undefined;
  const m = mounts[mountIndexOf(mounts, path)];
  if (m?.kind === 'bind') return posix.join(m.source, posix.relative(m.target, path));
  if (m?.kind === 'symlink') return hostPathOf(mounts, throughLink(m, path), depth + 1);
  return undefined;
}
