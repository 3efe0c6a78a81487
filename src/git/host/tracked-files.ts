// Which of the files the sensitive-file scan matched by name (sensitive/host/sensitive-scan.ts) git
// tracks with exactly this content: those are not masked. Their content is in the object store (`git
// show HEAD:path` reads it), so masking them protects nothing, and an empty stand-in breaks the build
// and shows as a modification that `git add -A` would commit. The index is read only when a
// candidate lies in a work tree (git/host/git-index.ts, one pass over its bytes).
//
// The index lies in the mounted tree, where the sandbox can write it: a sandbox that stages `.env`
// (masked, so it can only stage the empty stand-in or content it knows) gets an entry whose blob id is
// not the real file's, and the real `.env` stays masked. An index that cannot be read or parsed
// exempts nothing (masked by name: fail closed).
import { type Dirent, lstatSync, readdirSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { gitExcludeView } from '../../host-state/guarded-state.js';
import type { ScanReader, SensitiveMask, SensitiveView } from '../../sensitive/scan-result.js';
import {
  byWorkTree,
  type Candidate,
  inGitDir,
  pathInWorkTree,
  withExcludedPaths,
  type WorkTree,
} from '../work-trees.js';
import {
  isIndexFormatError,
  MAX_INDEX_BYTES,
  queryIndex,
  readRegularFile,
  verifyTracked,
  type IndexAnswer,
  type IndexEntry,
} from './git-index.js';

/** An exclude file larger than this is not shown with sbx's lines (the masked paths stay masked). */
const MAX_EXCLUDE_BYTES = 1024 * 1024;

/**
 * The git directory of a work tree: `.git` itself, or the one a `.git` file names (worktrees and
 * submodules: "gitdir: PATH", relative to the work tree).
 */
function gitDirOf(workTree: string, read: ScanReader): string | undefined {
  const dotGit = join(workTree, '.git');
  read(dotGit, 'file');
  try {
    if (lstatSync(dotGit).isDirectory()) return dotGit;
  } catch {
    return undefined;
  }
  const text = readRegularFile(dotGit, 4096)?.toString('utf8');
  const m = text && /^gitdir: (.+?)\r?\n?$/.exec(text);
  return m ? resolve(workTree, m[1]!) : undefined;
}

/** The work tree enclosing `root` from above (git's own discovery: the nearest parent with a .git). */
function enclosingWorkTree(root: string, read: ScanReader): WorkTree | undefined {
  let dir = root;
  while (dir !== '/') {
    const parent = dirname(dir);
    read(join(parent, '.git'), 'file');
    try {
      lstatSync(join(parent, '.git'));
    } catch {
      dir = parent;
      continue;
    }
    const prefix = root.slice(parent === '/' ? 1 : parent.length + 1);
    return { rel: undefined, prefix, gitDir: gitDirOf(parent, read) };
  }
  return undefined;
}

/** The index's entries for the paths asked, or undefined when there is no index or it does not parse. */
function readIndex(
  gitDir: string | undefined,
  files: ReadonlySet<string>,
  dirs: readonly string[],
  read: ScanReader,
): IndexAnswer | undefined {
  if (gitDir !== undefined) read(join(gitDir, 'index'), 'file');
  const bytes = gitDir === undefined ? undefined : readRegularFile(join(gitDir, 'index'), MAX_INDEX_BYTES);
  if (!bytes) return undefined;
  // SHA-1 repositories, then SHA-256 ones (the index does not say which; a wrong guess does not parse).
  for (const hashBytes of [20, 32]) {
    try {
      return queryIndex(bytes, { files, dirs }, hashBytes);
    } catch (error) {
      if (!isIndexFormatError(error)) throw error;
    }
  }
  return undefined;
}

export interface GitDecision {
  /** Per work tree holding candidates (undefined: outside every one), those that stay masked. */
  groups: { workTree: WorkTree | undefined; masked: SensitiveMask[] }[];
  scanned: number;
  truncated: boolean;
}

/**
 * Which candidates stay masked: all of them outside a work tree; inside one, those git does not
 * track with this exact content. A matched directory holding tracked files is not hidden whole:
 * its untracked entries are.
 */
export function decideByGit(
  absOf: (rel: string) => string,
  candidates: Candidate[],
  workTreeRels: string[],
  /** The tree's root; unless pinned, its parents may hold its repository. */
  { root, pinned }: { root: string; pinned?: boolean },
  budget: number,
  read: ScanReader,
): GitDecision {
  const out: GitDecision = { groups: [], scanned: 0, truncated: false };
  if (candidates.length === 0) return out;
  const workTrees: WorkTree[] = workTreeRels.map((rel) => ({ rel, prefix: '', gitDir: gitDirOf(absOf(rel), read) }));
  if (!pinned && !workTreeRels.includes('')) {
    const above = enclosingWorkTree(root, read);
    if (above) workTrees.push(above);
  }
  for (const [wt, group] of byWorkTree(workTrees, candidates)) {
    const masked: SensitiveMask[] = [];
    const paths = (dir: boolean) =>
      wt ? group.filter((c) => c.dir === dir).map((c) => pathInWorkTree(wt, c.rel)) : [];
    const answer = wt && readIndex(wt.gitDir, new Set(paths(false)), paths(true), read);
    for (const c of group) {
      const path = absOf(c.rel);
      if (!answer || !wt || inGitDir(c.rel)) {
        masked.push({ path, what: c.dir ? 'dir' : 'file' });
      } else if (!c.dir) {
        const entry = answer.files.get(pathInWorkTree(wt, c.rel));
        read(path, 'file');
        if (!entry) masked.push({ path, what: 'file' });
        else if (!verifyTracked(path, entry)) masked.push({ path, what: 'file', tracked: true });
      } else {
        const tracked = answer.dirs.get(pathInWorkTree(wt, c.rel)) ?? [];
        if (tracked.length === 0) masked.push({ path, what: 'dir' });
        else {
          const below = maskUntrackedBelow(path, pathInWorkTree(wt, c.rel), tracked, budget - out.scanned, read);
          out.scanned += below.scanned;
          if (below.truncated) return { ...out, truncated: true };
          masked.push(...below.masks);
        }
      }
    }
    out.groups.push({ workTree: wt, masked });
  }
  return out;
}

/**
 * Inside a matched directory that holds tracked files: every entry is masked except tracked files
 * with their indexed content; a subdirectory without tracked files is masked whole.
 */
function maskUntrackedBelow(
  dir: string,
  dirInTree: string,
  tracked: IndexEntry[],
  budget: number,
  read: ScanReader,
): { masks: SensitiveMask[]; scanned: number; truncated: boolean } {
  const byPathInTree = new Map(tracked.map((e) => [e.path, e]));
  const masks: SensitiveMask[] = [];
  const pending = [''];
  let scanned = 0;
  while (pending.length > 0) {
    const rel = pending.pop()!;
    let entries: Dirent[];
    read(rel === '' ? dir : `${dir}/${rel}`, 'dir');
    try {
      entries = readdirSync(rel === '' ? dir : `${dir}/${rel}`, { withFileTypes: true });
    } catch {
      masks.push({ path: rel === '' ? dir : `${dir}/${rel}`, what: 'dir' });
      continue;
    }
    scanned += entries.length;
    if (scanned > budget) return { masks: [], scanned, truncated: true };
    for (const entry of entries) {
      const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
      const inTree = `${dirInTree}/${childRel}`;
      const path = `${dir}/${childRel}`;
      if (entry.isDirectory()) {
        if (tracked.some((e) => e.path.startsWith(`${inTree}/`))) pending.push(childRel);
        else masks.push({ path, what: 'dir' });
        continue;
      }
      const entryOf = byPathInTree.get(inTree);
      if (!entryOf) masks.push({ path, what: 'file' });
      else {
        // Its content decides: reported like every file the scan reads (an edit in place changes no
        // directory's timestamps, so the disk cache of sensitive/host/scan-cache.ts must check the file).
        read(path, 'file');
        if (!verifyTracked(path, entryOf)) masks.push({ path, what: 'file', tracked: true });
      }
    }
  }
  return { masks, scanned, truncated: false };
}

/**
 * The work tree's info/exclude with the masked untracked paths appended, so that `git add -A` inside
 * does not pick up the stand-ins: only when its git directory lies in this tree (so the sandbox's git
 * reads it) and the file exists (a mount needs its mount point).
 */
export function excludeView(
  wt: WorkTree,
  absOf: (rel: string) => string,
  root: string,
  masked: SensitiveMask[],
  read: ScanReader,
): SensitiveView | undefined {
  if (wt.rel === undefined || wt.gitDir === undefined || masked.length === 0) return undefined;
  const file = join(wt.gitDir, 'info', 'exclude');
  read(join(wt.gitDir, 'info'), 'file');
  read(file, 'file');
  let real: string;
  let rootReal: string;
  try {
    real = realpathSync(file);
    // The root may be walked through its pinned descriptor (/proc/self/fd/N): compare real paths,
    // and name the file under `root` like every other path of this scan.
    rootReal = realpathSync(root);
  } catch {
    return undefined;
  }
  if (!real.startsWith(`${rootReal}/`)) return undefined;
  const path = root + real.slice(rootReal.length);
  const original = readRegularFile(path, MAX_EXCLUDE_BYTES);
  if (!original) return undefined;
  const top = absOf(wt.rel);
  const paths = masked.map((m) => ({ rel: m.path.slice(top.length + 1), dir: m.what === 'dir' }));
  return gitExcludeView(path, withExcludedPaths(original.toString('utf8'), paths));
}
