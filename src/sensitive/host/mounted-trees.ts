// The trees a run mounts, as the sensitive-file scan reads them: each outermost root (a bind inside
// another mounted tree is read with it) and where to read it from. Reading a pinned root through
// its descriptor (/proc/self/fd/N, host/pins.ts) reads the tree that will be mounted, not
// whatever the path holds by then.

import { isWithin } from '../../path-within.js';

export interface MountedTree {
  /** The root's host path: every path a scan reports lies under one of these. */
  root: string;
  /** Where to read it: the pinned descriptor's /proc path, or the root itself. */
  via: string;
}

export function mountedTrees(roots: readonly string[], walkVia?: (root: string) => string | undefined): MountedTree[] {
  const outer = roots.filter((root) => !roots.some((other) => other !== root && isWithin(root, other)));
  return [...new Set(outer)].map((root) => ({ root, via: walkVia?.(root) ?? root }));
}

/** Where to read the host path `path` (inside one of `trees`) from. */
export function readPathOf(trees: readonly MountedTree[], path: string): string {
  const tree = trees.find((t) => isWithin(path, t.root));
  if (!tree || tree.via === tree.root) return path;
  if (path === tree.root) return tree.via;
  return tree.via + (tree.root === '/' ? path : path.slice(tree.root.length));
}
