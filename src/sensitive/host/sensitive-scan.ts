// Walks a tree that will be mounted into the sandbox and lists what the rules of
// sensitive/sensitive-files.ts mask, protect or replace there. Runs on every launch before bwrap, so it
// is written for speed: no stat calls (d_type from readdir), no path built for an entry whose
// basename no rule can match, one RegExp test per entry.
//
// Git-aware: what the walk matched by name inside a work tree, git decides (git/host/tracked-files.ts:
// a file git tracks with exactly this content is not masked); a repository's configs are shown without
// credentials and the places git takes code from are held (git/host/held-git-files.ts); a key or
// certificate holding only public material is shown (sensitive/host/public-key-files.ts).
import { type Dirent, readdirSync, realpathSync, statSync } from 'node:fs';
import { SbxError } from '../../errors.js';
import { decideByGit, excludeView } from '../../git/host/tracked-files.js';
import { holdGitFiles } from '../../git/host/held-git-files.js';
import { type Candidate, inGitDir } from '../../git/work-trees.js';
import { isWithin } from '../../path-within.js';
import {
  DEFAULT_MAX_SCAN_ENTRIES,
  incompleteScan,
  type MountedTreesScan,
  rebaseScan,
  type ScanReader,
  type SensitiveMask,
  type SensitiveScan,
  type SensitiveView,
  type UnmaskedPath,
} from '../scan-result.js';
import type { SensitiveRules } from '../sensitive-matcher.js';
import { otherNamesOf } from './hard-links.js';
import { mountedTrees } from './mounted-trees.js';
import { showPublicKeys } from './public-key-files.js';

const ignoreRead: ScanReader = () => {};

function errorCode(cause: unknown): string | undefined {
  return (cause as NodeJS.ErrnoException | undefined)?.code;
}

const byPath = <T extends { path: string }>(a: T, b: T) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/**
 * Never follows symlinks: readdir's d_type says "symlink" and that entry is classified by its own
 * name, not descended. `root` is the (realpath of the) mount source; a root that cannot be read
 * throws, since nothing below it can be vouched for.
 */
export function scanSensitiveFiles(
  root: string,
  rules: SensitiveRules,
  opts: {
    maxEntries?: number;
    read?: ScanReader;
    /**
     * `root` is a pinned descriptor's /proc path: it has no parents to search for an enclosing
     * repository (scanMountedTrees says why a tracked file there is masked).
     */
    pinned?: boolean;
  } = {},
): SensitiveScan {
  const maxEntries = opts.maxEntries ?? DEFAULT_MAX_SCAN_ENTRIES;
  const read = opts.read ?? ignoreRead;
  const base = root.length > 1 && root.endsWith('/') ? root.slice(0, -1) : root;
  const absOf = (rel: string) => (rel === '' ? base : base === '/' ? `/${rel}` : `${base}/${rel}`);
  const walk = walkTree(absOf, rules, maxEntries, read);
  if (walk.truncated) return incompleteScan(walk.scanned);
  const budget = maxEntries - walk.scanned;
  const git = decideByGit(absOf, walk.candidates, walk.workTrees, { root: base, pinned: opts.pinned }, budget, read);
  const scanned = walk.scanned + git.scanned;
  if (git.truncated) return incompleteScan(scanned);
  const masks: SensitiveMask[] = [...walk.unreadable];
  const views: SensitiveView[] = [];
  const unmasked: UnmaskedPath[] = [...walk.unmasked];
  for (const { workTree, masked } of git.groups) {
    const shown = showPublicKeys(masked, read);
    masks.push(...shown.masks);
    unmasked.push(...shown.unmasked);
    // The masked untracked paths go into the work tree's exclude list, so `git add -A` inside does
    // not pick up the stand-ins.
    const untracked = shown.masks.filter((m) => !m.tracked);
    const view = workTree && excludeView(workTree, absOf, base, untracked, read);
    if (view) views.push(view);
  }
  const held = holdGitFiles(absOf, base, walk.gitConfigs, walk.protect, read);
  masks.push(...held.masks);
  views.push(...held.views);
  const protect = [...walk.protect, ...held.protect].sort();
  return {
    masks: masks.sort(byPath),
    protect,
    views: views.sort(byPath),
    unmasked: unmasked.sort(byPath),
    links: walk.links.sort(),
    scanned,
    truncated: false,
  };
}

/** The walk over the tree: what is left to list, and what it found by name. */
interface TreeWalk {
  absOf: (rel: string) => string;
  rules: SensitiveRules;
  read: ScanReader;
  /** Directories still to list; `hinted`: a hinted directory's files are judged as hinted. */
  pending: { rel: string; hinted: boolean }[];
  /** Matched files and directories git may still exempt (git/host/tracked-files.ts). */
  candidates: Candidate[];
  /** Git config files: shown without credentials (git/host/held-git-files.ts). */
  gitConfigs: string[];
  /** Directories sbx cannot list: masked whole. */
  unreadable: SensitiveMask[];
  protect: string[];
  /** Matched by a rule, let in by the profile's or the run's exceptions. */
  unmasked: UnmaskedPath[];
  links: string[];
  /** Directories holding a `.git` (relative to the root). */
  workTrees: string[];
  scanned: number;
  truncated: boolean;
}

function walkTree(
  absOf: (rel: string) => string,
  rules: SensitiveRules,
  maxEntries: number,
  read: ScanReader,
): TreeWalk {
  const walk: TreeWalk = {
    absOf,
    rules,
    read,
    pending: [{ rel: '', hinted: false }],
    candidates: [],
    gitConfigs: [],
    unreadable: [],
    protect: [],
    unmasked: [],
    links: [],
    workTrees: [],
    scanned: 0,
    truncated: false,
  };
  while (walk.pending.length > 0) {
    const { rel, hinted } = walk.pending.pop()!;
    const entries = listDir(walk, rel);
    if (!entries) continue;
    if (walk.scanned + entries.length > maxEntries) {
      walk.truncated = true;
      break;
    }
    walk.scanned += entries.length;
    for (const entry of entries) visitEntry(walk, rel, hinted, entry);
  }
  return walk;
}

function listDir(walk: TreeWalk, rel: string): Dirent[] | undefined {
  walk.read(walk.absOf(rel), 'dir');
  try {
    return readdirSync(walk.absOf(rel), { withFileTypes: true });
  } catch (cause) {
    const code = errorCode(cause);
    if (rel === '') throw cause;
    // Removed since its parent was listed: nothing left to mask.
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    // Unreadable to us is not unreadable to the sandbox: the same uid can chmod its own directory
    // on a writable mount. What it holds is unknown, so it is masked whole (fail closed).
    if (code === 'EACCES' || code === 'EPERM') {
      walk.unreadable.push({ path: walk.absOf(rel), what: 'dir' });
      return undefined;
    }
    throw cause;
  }
}

/** One entry of the directory `rel`: recorded by its verdict, or queued when it is a directory to search. */
function visitEntry(walk: TreeWalk, rel: string, hinted: boolean, entry: Dirent): void {
  const { rules, absOf } = walk;
  const isDirectory = entry.isDirectory();
  // A repository's own files are never hinted: its config has a view, the rest is git's data.
  const isDotGit = entry.name === '.git';
  if (isDotGit && !inGitDir(rel)) walk.workTrees.push(rel);
  // A linked worktree's or a submodule's `.git` file (`gitdir: ...`): rewritten, it would point the
  // host's next git command at a gitdir the sandbox made, hooks and config included. Held read-only
  // like a hooks directory (a file guard under landlock).
  if (isDotGit && entry.isFile()) walk.protect.push(absOf(rel === '' ? entry.name : `${rel}/${entry.name}`));
  const inherits = hinted && !isDotGit;
  const candidate = inherits || rules.mayMatchName(entry.name);
  if (!candidate && !isDirectory) return;
  const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
  const verdict = candidate ? rules.classify(childRel, isDirectory || entry.isSymbolicLink(), inherits) : undefined;
  if (verdict === 'mask' || verdict === 'hint' || verdict === 'git-config') {
    if (entry.isSymbolicLink()) {
      walk.links.push(absOf(childRel));
    } else if (verdict === 'git-config') {
      if (isDirectory) walk.candidates.push({ rel: childRel, dir: true });
      else walk.gitConfigs.push(childRel);
    } else if (verdict === 'mask' || !isDirectory) {
      walk.candidates.push({ rel: childRel, dir: isDirectory });
    } else {
      // A hinted directory is searched: its files are judged one by one, as hinted.
      walk.pending.push({ rel: childRel, hinted: true });
    }
    return;
  }
  if (verdict === 'protect') walk.protect.push(absOf(childRel));
  // Shown as it is; a directory is still searched (the exception names it, not what lies below).
  if (verdict === 'unmasked')
    walk.unmasked.push({ path: absOf(childRel), by: rules.unmaskedBy(childRel, isDirectory) });
  if (isDirectory && !rules.canPrune(childRel)) walk.pending.push({ rel: childRel, hinted: inherits });
}

/**
 * Scans each root (realpaths of directories) and resolves the symlinks the walk did not follow: a
 * link whose target lies in a mounted tree masks (or protects) that target; a dangling link, or one
 * leading out of every tree, shows nothing the sandbox can read. A tree too large to scan refuses
 * the run: masking only part of it would be a silent hole.
 *
 * `walkVia(root)`: where to walk `root` from, e.g. `/proc/self/fd/N` of the descriptor the launcher
 * will mount (host/pins.ts). Walking the path instead would let a concurrent writer rename the
 * pinned directory away and put an empty one in its place for the scan: the masks would then be
 * computed for a tree other than the one mounted. A tree walked through its descriptor also has no
 * enclosing repository: git's objects above it are not mounted, so a tracked file there is masked
 * like an untracked one.
 */
export function scanMountedTrees(
  roots: readonly string[],
  rules: SensitiveRules,
  opts: { maxEntries?: number; walkVia?: (root: string) => string | undefined; read?: ScanReader } = {},
): MountedTreesScan {
  const read = opts.read ?? ignoreRead;
  const maxEntries = opts.maxEntries ?? DEFAULT_MAX_SCAN_ENTRIES;
  const masks = new Map<string, { dir: boolean; tracked?: true }>();
  const protect = new Set<string>();
  const views: SensitiveView[] = [];
  const unmasked: UnmaskedPath[] = [];
  let scanned = 0;
  // `link`: a symlink the walk did not follow (its target may lie anywhere); `dir`: a protected
  // directory the walk reached without following one.
  const resolveInTrees = (path: string, what: 'link' | 'dir'): { real: string; dir: boolean } | undefined => {
    read(path, what);
    try {
      const real = realpathSync(path);
      return roots.some((root) => isWithin(real, root)) ? { real, dir: statSync(real).isDirectory() } : undefined;
    } catch {
      return undefined;
    }
  };
  // A bind inside another mounted tree is scanned with it.
  const trees = mountedTrees(roots, opts.walkVia);
  for (const { root, via } of trees) {
    const walked = scanSensitiveFiles(via, rules, {
      maxEntries: Math.max(0, maxEntries - scanned),
      read,
      pinned: via !== root,
    });
    const scan = via === root ? walked : rebaseScan(walked, via, root);
    if (scan.truncated) {
      throw new SbxError(
        'SENSITIVE_SCAN_LIMIT',
        `the sensitive-file scan of ${root} passed ${maxEntries} entries: secret files in it could not all be masked`,
        {
          hint: 'skip large generated directories with sensitive.skip (e.g. [node_modules, target]) in the profile, or use a smaller workspace',
        },
      );
    }
    scanned += scan.scanned;
    for (const m of scan.masks) {
      masks.set(m.path, { dir: m.what === 'dir', ...(m.tracked ? { tracked: m.tracked } : {}) });
    }
    views.push(...scan.views);
    unmasked.push(...scan.unmasked);
    for (const link of scan.links) {
      const target = resolveInTrees(link, 'link');
      if (target) masks.set(target.real, { dir: target.dir });
    }
    for (const path of scan.protect) {
      // Files too: a linked worktree's `.git` file is held like a hooks directory.
      const target = resolveInTrees(path, 'dir');
      if (target) protect.add(target.real);
    }
  }
  const shown = views.filter((v) => !masks.has(v.path)).map((v) => v.path);
  const maskList = [...masks].map(([path, m]) => ({ path, dir: m.dir }));
  for (const other of otherNamesOf(trees, maskList, shown, { read, maxEntries }))
    masks.set(other.path, { dir: other.dir });
  return {
    masks: [...masks].map(([path, m]) => ({ path, ...m })),
    protect: [...protect],
    // A view whose file is also masked (a symlinked exclude) is not shown: its content was read.
    views: views.filter((v) => !masks.has(v.path)),
    // A file shown by its content whose other name (a hard link) or a symlink got masked stays listed: it is shown.
    unmasked: unmasked.filter((u) => !masks.has(u.path)),
    scanned,
  };
}
