// Protected host files by identity, hard links included (docs/SECURITY.md, "Hard links to protected files"). host-state/host-state.ts compares
// directories: no writable bind may contain a protected path. A hard link is the same file under a
// second name in another directory: `~/.bashrc` hard-linked with `~/dotfiles/bashrc` (a dotfile
// manager's habit) is rewritten through the workspace's name, and the next login shell runs it; a
// linked `~/.config/sbx/profiles/default.yaml` gives the next run `network: host`. So each protected
// file with more than one link has its other names looked for in the writable trees of the run.
//
// What is checked, and the bounds:
// - the protected paths that are files (shell startup files, ~/.gitconfig, ~/.npmrc, ...; symlinks
//   followed), and the regular files in sbx's own config and state directories and in git's
//   ~/.config/git, at most MAX_PROTECTED_ENTRIES entries listed there (deeper or further files are
//   not checked: those directories hold a few files each). Files inside toolchain trees (.nvm,
//   .rustup) and caches are not checked: nobody hard-links them, and walking them costs every run.
// - only when one of those has a link count above 1: every writable tree, through its pinned
//   descriptor, directories on another filesystem skipped (a hard link never crosses one), at most
//   MAX_SEARCH_ENTRIES entries listed. A search that stops there before every name is found cannot
//   show that the other name is elsewhere: it is reported as unfinished, and the run refused.
// The common case (no protected file with a second link) costs one stat per protected path.
import { type Dirent, lstatSync, readdirSync, type Stats, statSync } from 'node:fs';
import type { HostStateLink, HostStatePath } from '../host-state.js';

/** Entries listed in sbx's own directories and git's config directory to find their linked files. */
const MAX_PROTECTED_ENTRIES = 2_000;
/** Entries listed in the writable trees looking for other names of a linked protected file. */
export const MAX_SEARCH_ENTRIES = 200_000;

const keyOf = (st: Stats) => `${st.dev}:${st.ino}`;

interface Linked {
  path: string;
  what: string;
  st: Stats;
}

/** A writable tree of the run: its real path, and where to read it (the pinned descriptor's /proc path). */
export interface WritableTree {
  real: string;
  via: string;
}

function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** Regular files below `dir` (depth 3, symlinks not followed) with more than one link, within `budget`. */
function linkedFilesIn(dir: string, what: string, budget: { left: number }): Linked[] {
  const found: Linked[] = [];
  const pending: [string, number][] = [[dir, 0]];
  while (pending.length > 0 && budget.left > 0) {
    const [current, depth] = pending.pop()!;
    let entries: Dirent[];
    try {
      entries = readdirSync(current, { withFileTypes: true });
    } catch {
      continue;
    }
    budget.left -= entries.length;
    for (const entry of entries) {
      const path = `${current}/${entry.name}`;
      if (entry.isDirectory() && depth < 3) pending.push([path, depth + 1]);
      else if (entry.isFile()) {
        const st = lstatSync(path, { throwIfNoEntry: false });
        if (st && st.nlink > 1) found.push({ path, what, st });
      }
    }
  }
  return found;
}

/** The protected files (see above) that have more than one link. */
function linkedProtectedFiles(state: readonly HostStatePath[]): Linked[] {
  const linked: Linked[] = [];
  const budget = { left: MAX_PROTECTED_ENTRIES };
  for (const s of state) {
    if (s.scope !== 'tree') continue;
    const st = statOrUndefined(s.path);
    if (!st) continue;
    if (st.isFile() && st.nlink > 1) linked.push({ path: s.path, what: s.what, st });
    else if (st.isDirectory() && s.linkWalk) linked.push(...linkedFilesIn(s.path, s.what, budget));
  }
  const seen = new Set<string>();
  return linked.filter((l) => !seen.has(keyOf(l.st)) && seen.add(keyOf(l.st)));
}

/**
 * Other names, inside the writable trees, of the protected files: one HostStateLink per name found,
 * and one without `other` for a file whose search stopped at MAX_SEARCH_ENTRIES.
 */
export function hostStateLinks(
  state: readonly HostStatePath[],
  trees: readonly WritableTree[],
  maxEntries = MAX_SEARCH_ENTRIES,
): HostStateLink[] {
  if (trees.length === 0) return [];
  const linked = linkedProtectedFiles(state);
  if (linked.length === 0) return [];
  const byKey = new Map(linked.map((l) => [keyOf(l.st), l]));
  const devices = new Set(linked.map((l) => l.st.dev));
  const out: HostStateLink[] = [];
  let entries = 0;
  for (const tree of trees) {
    const pending = [tree.real];
    while (pending.length > 0) {
      const current = pending.pop()!;
      const via = tree.via + current.slice(tree.real.length);
      // A hard link never crosses a filesystem: a directory on another device holds no other name.
      const dirSt = statOrUndefined(via);
      if (!dirSt || !devices.has(dirSt.dev)) continue;
      let listed: Dirent[];
      try {
        listed = readdirSync(via, { withFileTypes: true });
      } catch {
        // A directory sbx cannot list, the sandbox (same uid) cannot either until it chmods it,
        // which it may: the name there stays unknown, so the search is unfinished.
        entries = maxEntries + 1;
        break;
      }
      entries += listed.length;
      if (entries > maxEntries) break;
      for (const entry of listed) {
        const path = `${current}/${entry.name}`;
        if (entry.isDirectory()) pending.push(path);
        else if (entry.isFile()) {
          const st = lstatSync(`${via}/${entry.name}`, { throwIfNoEntry: false });
          const l = st && byKey.get(keyOf(st));
          if (l && path !== l.path) out.push({ path: l.path, what: l.what, other: path, tree: tree.real });
        }
      }
    }
    if (entries > maxEntries) {
      // Cut short with nothing found: each linked file may still have a name in the rest of the tree.
      if (out.length === 0)
        for (const l of linked)
          out.push({ path: l.path, what: l.what, tree: tree.real, nlink: l.st.nlink, maxEntries });
      break;
    }
  }
  return out;
}
