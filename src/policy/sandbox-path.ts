// Maps a path as the sandboxed command sees it back to the host file behind it, by walking the mount
// list from the top. Pure. Used to find the command on the sandbox PATH before anything is spawned.
import { posix } from 'node:path';
import { isWithin } from '../path-within.js';
import type { Mount } from './types.js';

/** The host path behind `path` inside the sandbox, or undefined if it is not backed by a host file. */
export function hostPathOf(mounts: readonly Mount[], path: string, depth = 0): string | undefined {
  if (depth > 8) return undefined;
  for (let i = mounts.length - 1; i >= 0; i--) {
    const m = mounts[i]!;
    if (m.kind === 'remount-ro' || !isWithin(path, m.target)) continue;
    switch (m.kind) {
      case 'bind':
        return posix.join(m.source, posix.relative(m.target, path));
      case 'symlink': {
        const base = posix.isAbsolute(m.linkTo) ? m.linkTo : posix.join(posix.dirname(m.target), m.linkTo);
        return hostPathOf(mounts, posix.join(base, posix.relative(m.target, path)), depth + 1);
      }
      default:
        return undefined;
    }
  }
  return undefined;
}
