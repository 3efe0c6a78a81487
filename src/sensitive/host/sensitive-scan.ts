// Walks a tree that will be mounted into the sandbox and lists what the rules of
// sensitive/sensitive-files.ts mask, protect or replace there. Runs on every launch before bwrap, so it
// is written for speed: no stat calls (d_type from readdir), no path built for an entry whose
// basename no rule can match, one RegExp test per entry, and git's index read only when a candidate
// lies in a work tree (git/host/git-index.ts, one pass over its bytes).
//
// Git-aware: a file git tracks with exactly this content is not masked. Its content is in the object
// store (`git show HEAD:path` reads it), so masking it protects nothing, and an empty stand-in breaks
// the build and shows as a modification that `git add -A` would commit. The index lies in the
// mounted tree, where the sandbox can write it: a sandbox that stages `.env` (masked, so it can only
// stage the empty stand-in or content it knows) gets an entry whose blob id is not the real file's,
// and the real `.env` stays masked. An index that cannot be read or parsed exempts nothing (masked
// by name: fail closed).
import { createHash } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  realpathSync,
  renameSync,
  statSync,
  writeFileSync,
  type Dirent,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { SbxError } from '../../errors.js';
import { parseGitConfig, sanitizeGitConfig } from '../../git/git-config.js';
import { gitConfigView, gitExcludeView } from '../../host-state/guarded-state.js';
import type { SensitiveRuleInput } from '../sensitive-files.js';
import {
  BUILTIN_EXCEPT_GLOBS,
  BUILTIN_GIT_CONFIG_GLOBS,
  BUILTIN_HINT_GLOBS,
  BUILTIN_MASK_GLOBS,
  BUILTIN_PROTECT_GLOBS,
  DEFAULT_SKIP_DIRS,
  SOURCE_EXTENSIONS,
} from '../sensitive-globs.js';
import { sensitiveRulesFrom, type SensitiveRuleData, type UnmaskedBy } from '../sensitive-matcher.js';
import { PUBLIC_CANDIDATE_MAX_BYTES, PUBLIC_CANDIDATE_NAME, publicKindOf, type PublicKind } from '../public-keys.js';
import { BUILD, VERSION } from '../../version.js';
import { readGuarded } from '../../host/guarded-read.js';
import type { SensitiveRules } from '../sensitive-matcher.js';
import {
  isIndexFormatError,
  MAX_INDEX_BYTES,
  queryIndex,
  readRegularFile,
  verifyTracked,
  type IndexAnswer,
  type IndexEntry,
} from '../../git/host/git-index.js';
import { otherNamesOf } from './hard-links.js';
import { mountedTrees } from './mounted-trees.js';
import { isWithin } from '../../path-within.js';

/** Far above a large monorepo with its node_modules, low enough to keep a launch under a second. */
export const DEFAULT_MAX_SCAN_ENTRIES = 200_000;
/** The compiled rules of the largest profile are tens of KiB. */
const MAX_RULES_CACHE_BYTES = 4 * 1024 * 1024;
/** A git config or exclude file larger than this is masked, not parsed. */
const MAX_GIT_TEXT_BYTES = 1024 * 1024;

export interface SensitiveMask {
  /** Absolute host path (the tree root joined with the entry's relative path). */
  path: string;
  what: 'file' | 'dir';
  /**
   * Tracked by git, but the working file differs from the index: masked, with a stand-in git cannot
   * read, so no commit made inside can record the stand-in in its place.
   */
  tracked?: true;
}

/**
 * A path a rule would have masked that the sandbox sees as it is, and who let it in: the profile's
 * `sensitive.except`, the run's `unmask`, or its content (only a certificate or public key: `what`).
 */
export interface UnmaskedPath {
  path: string;
  by: UnmaskedBy | 'content';
  what?: PublicKind;
}

/** A file shown with content sbx generated (never a secret): a git config view, an exclude list. */
export interface SensitiveView {
  path: string;
  content: string;
  reason: string;
  role: 'git-config' | 'guard';
  /** A git config view: the credential keys the view leaves out (names, never values); absent when none. */
  withheld?: string[];
}

export interface SensitiveScan {
  /** Sorted, so a directory comes before anything below it. */
  masks: SensitiveMask[];
  /** Absolute host paths to bind read-only over themselves; sorted. */
  protect: string[];
  /** Files replaced by generated content. */
  views: SensitiveView[];
  /** Shown although a rule matched them (the report says who let them in); sorted. */
  unmasked: UnmaskedPath[];
  /**
   * Matching symlinks (never followed by the walk). A mount over a symlink lands on its target
   * inside the sandbox, and a dangling one would make bwrap fail: the caller resolves them.
   */
  links: string[];
  /** Directory entries examined. */
  scanned: number;
  /** More than maxEntries entries: the lists are incomplete and must not be used (fail closed). */
  truncated: boolean;
}

/**
 * Told of everything a scan's result depends on: a directory it listed, a file it read or looked for,
 * a symlink it resolved (whose target may lie anywhere), a file whose link count it read (`inode`:
 * changed by a link made in any directory, so only a watch on the file itself sees it). The
 * library's warm cache watches these (host/warm-cache.ts), the toolchain scans' disk cache
 * fingerprints them (sensitive/host/scan-cache.ts), and a plain run passes nothing. Every file whose content
 * a decision reads must be told, even inside a listed directory: an edit in place changes no
 * directory's timestamps.
 */
export type ScanReader = (path: string, what: 'dir' | 'file' | 'link' | 'inode') => void;

const ignoreRead: ScanReader = () => {};

function errorCode(cause: unknown): string | undefined {
  return (cause as NodeJS.ErrnoException | undefined)?.code;
}

const byPath = <T extends { path: string }>(a: T, b: T) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/** What the walk found that git may decide: a file or directory matched by name. */
interface Candidate {
  rel: string;
  dir: boolean;
}

/** A git work tree: where it is (relative to the scan root, or above it) and its git directory. */
interface WorkTree {
  /** Relative to the scan root; '' for the root itself. Undefined for a work tree above the root. */
  rel: string | undefined;
  /** The scan root's path inside the work tree ('' unless the work tree is above the root). */
  prefix: string;
  gitDir: string | undefined;
}

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

/** A gitignore line matching exactly this path from the work tree's top (none for a newline in it). */
function excludeLine(rel: string, dir: boolean): string | undefined {
  if (rel.includes('\n') || rel.includes('\r')) return undefined;
  const escaped = rel.replace(/[\\*?[]/g, '\\$&').replace(/ $/, '\\ ');
  return `/${escaped}${dir ? '/' : ''}`;
}

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
  if (walk.truncated) return incomplete(walk.scanned);
  const budget = maxEntries - walk.scanned;
  const git = decideByGit(absOf, walk.candidates, walk.workTrees, { root: base, pinned: opts.pinned }, budget, read);
  const scanned = walk.scanned + git.scanned;
  if (git.truncated) return incomplete(scanned);
  const configText = configReader(absOf, read);
  walk.gitConfigs.push(...madeWorktreeConfigs(absOf, walk.gitConfigs, configText, read));
  const configs = gitConfigViews(absOf, walk.gitConfigs, configText);
  walk.protect.push(...madeHooksDirs(absOf, walk.gitConfigs, walk.protect));
  walk.protect.push(...hooksPathDirs(absOf, base, walk.gitConfigs, configText));
  const masks = [...walk.unreadable, ...git.masks, ...configs.masks].sort(byPath);
  const views = [...git.views, ...configs.views].sort(byPath);
  const unmasked = [...walk.unmasked, ...git.unmasked].sort(byPath);
  return { masks, protect: walk.protect.sort(), views, unmasked, links: walk.links.sort(), scanned, truncated: false };
}

/** Past maxEntries: no lists at all, so nothing partial is ever used (fail closed). */
function incomplete(scanned: number): SensitiveScan {
  return { masks: [], protect: [], views: [], unmasked: [], links: [], scanned, truncated: true };
}

/** The walk over the tree: what is left to list, and what it found by name. */
interface TreeWalk {
  absOf: (rel: string) => string;
  rules: SensitiveRules;
  read: ScanReader;
  /** Directories still to list; `hinted`: a hinted directory's files are judged as hinted. */
  pending: { rel: string; hinted: boolean }[];
  /** Matched files and directories git may still exempt (decideByGit). */
  candidates: Candidate[];
  /** Git config files: shown without credentials (gitConfigViews). */
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
  if (isDotGit && !`/${rel}/`.includes('/.git/')) walk.workTrees.push(rel);
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
 * A repository without a hooks directory (a clone made without templates, one whose hooks were
 * deleted): the protect rule holds only what exists, so a sandbox could create `.git/hooks` and the
 * host's next commit would run what it put there. sbx creates the empty directory git init would have
 * made, before anything of the sandbox runs, so that it is held read-only like any other. Where sbx
 * cannot create it (a tree it may not write), neither can the sandbox, which runs as the same user.
 */
function madeHooksDirs(
  absOf: (rel: string) => string,
  gitConfigs: readonly string[],
  protect: readonly string[],
): string[] {
  const made: string[] = [];
  for (const rel of gitConfigs) {
    const gitDir = dirname(rel);
    const isGitDir = gitDir === '.git' || gitDir.endsWith('/.git') || /(^|\/)\.git\/modules\//.test(gitDir);
    if (!rel.endsWith('/config') || !isGitDir) continue;
    const hooks = absOf(`${gitDir}/hooks`);
    if (protect.includes(hooks)) continue;
    try {
      mkdirSync(hooks, { mode: 0o755 });
      made.push(hooks);
    } catch {
      // EEXIST (a file or a link there: the walk judged it by its name) or not writable: nothing to add.
    }
  }
  return made;
}

/** A git config file's text, read once (bounded, regular files only) for the passes below; undefined when unreadable. */
type ConfigText = (rel: string) => string | undefined;

function configReader(absOf: (rel: string) => string, read: ScanReader): ConfigText {
  const texts = new Map<string, string | undefined>();
  return (rel) => {
    if (!texts.has(rel)) {
      read(absOf(rel), 'file');
      texts.set(rel, readRegularFile(absOf(rel), MAX_GIT_TEXT_BYTES)?.toString('utf8'));
    }
    return texts.get(rel);
  };
}

/**
 * A repository's `core.hooksPath` inside the scanned tree (husky's `.husky/_`, a `githooks/` folder):
 * git runs the hooks from there, so the directory is protected like `.git/hooks`, and made empty
 * first where it does not exist yet (as madeHooksDirs does). Relative paths are git's: from the top
 * of the work tree. A path outside the tree is not the sandbox's to write. The protect list resolves
 * a link to where it points (scanMountedTrees).
 */
function hooksPathDirs(
  absOf: (rel: string) => string,
  base: string,
  gitConfigs: readonly string[],
  configText: ConfigText,
): string[] {
  const out: string[] = [];
  for (const rel of gitConfigs) {
    if (rel !== '.git/config' && !rel.endsWith('/.git/config')) continue;
    const text = configText(rel);
    if (text === undefined) continue;
    let section = '';
    let hooksPath: string | undefined;
    for (const event of parseGitConfig(text)) {
      if (event.kind === 'section') section = event.name.toLowerCase();
      else if (event.kind === 'key' && section === 'core' && event.key.toLowerCase() === 'hookspath')
        hooksPath = event.value;
    }
    if (!hooksPath || hooksPath.startsWith('~')) continue;
    const top = dirname(dirname(absOf(rel)));
    const dir = resolve(top, hooksPath);
    if (dir === base || !dir.startsWith(`${base}/`)) continue;
    makeDirsBelow(base, dir);
    out.push(dir);
  }
  return out;
}

/**
 * `dir` and each missing directory between `base` and it, one at a time: a link on the way (a
 * repository can ship `.husky` -> elsewhere) is never followed, and the walk stops there, as it does
 * at anything that is not a directory or cannot be made. What exists is protected as it is.
 */
function makeDirsBelow(base: string, dir: string): void {
  let at = base;
  for (const part of dir.slice(base.length + 1).split('/')) {
    at = `${at}/${part}`;
    try {
      if (!lstatSync(at).isDirectory()) return;
    } catch {
      try {
        mkdirSync(at, { mode: 0o755 });
      } catch {
        return;
      }
    }
  }
}

/**
 * A repository whose config turns on extensions.worktreeConfig reads `config.worktree` in its gitdir
 * and in each linked worktree's `worktrees/<name>`. The config globs hold only files that exist, so
 * an absent one would be a planting spot (core.hooksPath, core.fsmonitor: code the host's next git
 * command runs). As with madeHooksDirs, sbx creates it empty before the run, so that it is a view
 * like any other config. The test is a substring of the raw text, a superset of what git reads
 * (keys are case-insensitive); the file is made only where the extension may be on.
 * Returns the files made, relative to the root.
 */
function madeWorktreeConfigs(
  absOf: (rel: string) => string,
  gitConfigs: readonly string[],
  configText: ConfigText,
  read: ScanReader,
): string[] {
  const made: string[] = [];
  const known = new Set(gitConfigs);
  for (const rel of gitConfigs) {
    if (!rel.endsWith('/config') && rel !== 'config') continue;
    const text = configText(rel);
    if (!text || !/worktreeconfig/i.test(text)) continue;
    const gitDir = dirname(rel);
    const linked = linkedWorktrees(absOf(`${gitDir}/worktrees`), read).map((name) => `${gitDir}/worktrees/${name}`);
    for (const dir of [gitDir, ...linked]) {
      const file = `${dir}/config.worktree`;
      if (known.has(file)) continue;
      try {
        // wx: O_EXCL, so an entry already there (a link included) is never written through.
        writeFileSync(absOf(file), '', { flag: 'wx', mode: 0o644 });
        made.push(file);
      } catch {
        // EEXIST (the walk judged that entry by its name) or not writable (nor then by the sandbox).
      }
    }
  }
  return made;
}

/**
 * The linked worktrees' directories in `<gitdir>/worktrees`: none when it is absent, unreadable or not
 * a directory of its own. A repository can ship `worktrees` as a link to anywhere, and sbx would then
 * create `config.worktree` files there, outside the tree.
 */
function linkedWorktrees(dir: string, read: ScanReader): string[] {
  read(dir, 'dir');
  try {
    if (!lstatSync(dir).isDirectory()) return [];
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? [e.name] : []));
  } catch {
    return [];
  }
}

/** Each git config file shown without its credentials; one that cannot be read is masked. */
function gitConfigViews(
  absOf: (rel: string) => string,
  gitConfigs: readonly string[],
  configText: ConfigText,
): { masks: SensitiveMask[]; views: SensitiveView[] } {
  const out: { masks: SensitiveMask[]; views: SensitiveView[] } = { masks: [], views: [] };
  for (const rel of gitConfigs) {
    const text = configText(rel);
    if (text === undefined) {
      out.masks.push({ path: absOf(rel), what: 'file' });
      continue;
    }
    const { text: content, removed } = sanitizeGitConfig(text);
    out.views.push(gitConfigView(absOf(rel), content, removed));
  }
  return out;
}

interface GitDecision {
  masks: SensitiveMask[];
  views: SensitiveView[];
  unmasked: UnmaskedPath[];
  scanned: number;
  truncated: boolean;
}

/**
 * Which candidates stay masked: all of them outside a work tree; inside one, those git does not
 * track with this exact content. A matched directory holding tracked files is not hidden whole:
 * its untracked entries are. Each work tree whose git directory lies in this tree gets an exclude
 * list naming its masked untracked paths, so `git add -A` inside does not pick up the stand-ins.
 */
function decideByGit(
  absOf: (rel: string) => string,
  candidates: Candidate[],
  workTreeRels: string[],
  /** The tree's root; unless pinned, its parents may hold its repository. */
  { root, pinned }: { root: string; pinned?: boolean },
  budget: number,
  read: ScanReader,
): GitDecision {
  const out: GitDecision = { masks: [], views: [], unmasked: [], scanned: 0, truncated: false };
  if (candidates.length === 0) return out;
  const workTrees: WorkTree[] = workTreeRels.map((rel) => ({ rel, prefix: '', gitDir: gitDirOf(absOf(rel), read) }));
  if (!pinned && !workTreeRels.includes('')) {
    const above = enclosingWorkTree(root, read);
    if (above) workTrees.push(above);
  }
  // The deepest work tree holding each candidate (a nested repository is its own).
  const holds = (wt: WorkTree, rel: string) => wt.rel === undefined || wt.rel === '' || rel.startsWith(`${wt.rel}/`);
  const depth = (wt: WorkTree) => (wt.rel === undefined ? -1 : wt.rel.length);
  const owner = (rel: string) => workTrees.filter((wt) => holds(wt, rel)).sort((a, b) => depth(b) - depth(a))[0];
  const inTree = (wt: WorkTree, rel: string) =>
    wt.rel ? rel.slice(wt.rel.length + 1) : wt.prefix ? `${wt.prefix}/${rel}` : rel;
  const groups = new Map<WorkTree | undefined, Candidate[]>();
  for (const c of candidates) {
    const wt = owner(c.rel);
    const group = groups.get(wt);
    if (group) group.push(c);
    else groups.set(wt, [c]);
  }
  for (const [wt, group] of groups) {
    const masked: SensitiveMask[] = [];
    const paths = (dir: boolean) => (wt ? group.filter((c) => c.dir === dir).map((c) => inTree(wt, c.rel)) : []);
    const answer = wt && readIndex(wt.gitDir, new Set(paths(false)), paths(true), read);
    for (const c of group) {
      const path = absOf(c.rel);
      // Nothing under a .git directory is ever tracked, whatever a hostile index claims.
      const gitInternal = `/${c.rel}/`.includes('/.git/');
      if (!answer || !wt || gitInternal) {
        masked.push({ path, what: c.dir ? 'dir' : 'file' });
      } else if (!c.dir) {
        const entry = answer.files.get(inTree(wt, c.rel));
        read(path, 'file');
        if (!entry) masked.push({ path, what: 'file' });
        else if (!verifyTracked(path, entry)) masked.push({ path, what: 'file', tracked: true });
      } else {
        const tracked = answer.dirs.get(inTree(wt, c.rel)) ?? [];
        if (tracked.length === 0) masked.push({ path, what: 'dir' });
        else {
          const below = maskUntrackedBelow(path, inTree(wt, c.rel), tracked, budget - out.scanned, read);
          out.scanned += below.scanned;
          if (below.truncated) return { ...out, truncated: true };
          masked.push(...below.masks);
        }
      }
    }
    const shown = showPublic(masked, read);
    masked.splice(0, masked.length, ...shown.masks);
    out.unmasked.push(...shown.unmasked);
    out.masks.push(...masked);
    const view =
      wt &&
      excludeView(
        wt,
        absOf,
        root,
        masked.filter((m) => !m.tracked),
        read,
      );
    if (view) out.views.push(view);
  }
  return out;
}

/**
 * The masked files named like keys or certificates (*.pem, *.crt, *.key, *.pub) whose first
 * PUBLIC_CANDIDATE_MAX_BYTES are the whole file and hold only public material (sensitive/public-keys.ts)
 * are shown instead. One bounded read per such candidate, never for any other entry: the scan runs on
 * every launch. A file that cannot be read, is larger, or does not parse stays masked.
 */
function showPublic(masked: SensitiveMask[], read: ScanReader): { masks: SensitiveMask[]; unmasked: UnmaskedPath[] } {
  const out: { masks: SensitiveMask[]; unmasked: UnmaskedPath[] } = { masks: [], unmasked: [] };
  for (const m of masked) {
    const name = m.path.slice(m.path.lastIndexOf('/') + 1);
    if (m.what !== 'file' || !PUBLIC_CANDIDATE_NAME.test(name)) {
      out.masks.push(m);
      continue;
    }
    read(m.path, 'file');
    const bytes = readRegularFile(m.path, PUBLIC_CANDIDATE_MAX_BYTES);
    const what = bytes && publicKindOf(bytes);
    if (what) out.unmasked.push({ path: m.path, by: 'content', what });
    else out.masks.push(m);
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
 * The work tree's info/exclude with the masked untracked paths appended, when its git directory lies
 * in this tree (so the sandbox's git reads it) and the file exists (a mount needs its mount point).
 */
function excludeView(
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
  const original = readRegularFile(path, MAX_GIT_TEXT_BYTES);
  if (!original) return undefined;
  const top = absOf(wt.rel);
  const lines = masked.flatMap((m) => excludeLine(m.path.slice(top.length + 1), m.what === 'dir') ?? []);
  const text = original.toString('utf8');
  const separator = text === '' || text.endsWith('\n') ? '' : '\n';
  const heading = '# sbx: masked in this sandbox (empty stand-ins git must not commit)';
  const content = `${text}${separator}${heading}\n${lines.join('\n')}\n`;
  return gitExcludeView(path, content);
}

/** What derivePolicy needs (Host.sensitiveFiles), for every tree that will be mounted. */
export interface MountedTreesScan {
  masks: { path: string; dir: boolean; tracked?: true }[];
  protect: string[];
  views: SensitiveView[];
  /** Matched by a rule, shown anyway: by the profile's or the run's exceptions, or public content. */
  unmasked: UnmaskedPath[];
  scanned: number;
}

/**
 * Scans each root (realpaths of directories) and resolves the symlinks the walk did not follow: a
 * link whose target lies in a mounted tree masks (or protects) that target; a dangling link, or one
 * leading out of every tree, shows nothing the sandbox can read. A tree too large to scan refuses
 * the run: masking only part of it would be a silent hole.
 */
/** A scan's paths, found under `from` (the pinned descriptor's /proc path), as paths under `to`. */
function rebaseScan(scan: SensitiveScan, from: string, to: string): SensitiveScan {
  const move = (path: string) =>
    path === from ? to : path.startsWith(`${from}/`) ? to + path.slice(from.length) : path;
  return {
    ...scan,
    masks: scan.masks.map((m) => ({ ...m, path: move(m.path) })),
    protect: scan.protect.map(move),
    views: scan.views.map((v) => ({ ...v, path: move(v.path) })),
    unmasked: scan.unmasked.map((u) => ({ ...u, path: move(u.path) })),
    links: scan.links.map(move),
  };
}

/**
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

/**
 * The compiled rules for this input, from `cacheDir` when a run compiled them before: compiling the
 * globs (and loading minimatch to do it) costs a launch more than the scan of a small tree. The key
 * covers the built-in lists, the profile's additions and the sbx build. The cache lives in a
 * sensitive root (never visible in a sandbox); a file that does not revive is recompiled.
 */
export async function loadSensitiveRules(
  input: SensitiveRuleInput,
  cacheDir: string | undefined,
): Promise<SensitiveRules> {
  const key = createHash('sha256')
    .update(
      JSON.stringify([
        BUILD,
        VERSION,
        BUILTIN_MASK_GLOBS,
        BUILTIN_HINT_GLOBS,
        BUILTIN_GIT_CONFIG_GLOBS,
        SOURCE_EXTENSIONS,
        BUILTIN_EXCEPT_GLOBS,
        BUILTIN_PROTECT_GLOBS,
        DEFAULT_SKIP_DIRS,
        input.files ?? [],
        input.except ?? [],
        input.unmask ?? [],
        input.skip ?? [],
      ]),
    )
    .digest('hex')
    .slice(0, 32);
  const file = cacheDir ? join(cacheDir, `sensitive-rules-${key}.json`) : undefined;
  if (file) {
    try {
      // sbx's own cache, but read as any file a process could have planted: bounded, and only when
      // it and every parent are the user's (or root's) and not writable by others.
      const uid = process.getuid?.() ?? 0;
      const guard = { what: 'sensitive rules cache', maxBytes: MAX_RULES_CACHE_BYTES, checkOwner: true, uid };
      return sensitiveRulesFrom(JSON.parse(readGuarded(file, guard).text) as SensitiveRuleData);
    } catch {
      // not cached yet, foreign, corrupt or unreadable: compile
    }
  }
  const { compileSensitiveRuleData } = await import('../sensitive-files.js');
  let data: SensitiveRuleData;
  try {
    data = compileSensitiveRuleData(input);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw new SbxError('PROFILE_INVALID', `sensitive: ${error.message}`, {
      hint: 'write minimatch globs relative to the mounted tree, e.g. "*.sqlite" or "secrets/"',
    });
  }
  if (file) {
    try {
      mkdirSync(cacheDir!, { recursive: true, mode: 0o700 });
      writeFileSync(`${file}.${process.pid}`, JSON.stringify(data), { mode: 0o600 });
      renameSync(`${file}.${process.pid}`, file);
    } catch {
      // the cache is optional
    }
  }
  return sensitiveRulesFrom(data);
}
