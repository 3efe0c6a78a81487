// The git-state walker: every directory of the writable trees read once (readdir, no link
// followed: a symlinked directory is a link, not entered), each git dir git's discovery would take
// recorded (git/discovery.ts), with the `.git` files, the hooks directories and the included
// config files that lie in the trees. Nothing is pruned but a git dir's `objects` (no code is read
// from there, and a `.git` file pointing into it is followed explicitly): a nested repository under
// `node_modules` or `.venv` is recorded as any other. The work is bounded (entries, depth, path
// length); a bound hit or an unreadable directory is an `Unchecked` naming the path, never a throw.
import { chmodSync, type Dirent, lstatSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { posix } from 'node:path';
import { isWithin } from '../../path-within.js';
import { programEntries } from '../config-programs.js';
import {
  commonDirTarget,
  gitFileTarget,
  hasGitDirNames,
  type HeadSeen,
  hooksDirOf,
  includeTarget,
  isInertHookName,
  isValidHead,
} from '../discovery.js';
import type { FileState, GitDirState, GitSnapshot, HooksDirState } from '../snapshot.js';
import { lstatOrNone, readState, textOf } from './read.js';

export interface WalkLimits {
  /** Directory entries read in all, over every tree. */
  maxEntries: number;
  /** Directories below a tree's root. */
  maxDepth: number;
  /** A path longer than this is past what a host git can be run in (PATH_MAX is 4096 with its NUL). */
  maxPathLength: number;
}

export const DEFAULT_WALK_LIMITS: WalkLimits = { maxEntries: 1_000_000, maxDepth: 256, maxPathLength: 4000 };

/** git's include depth limit (config.c MAX_INCLUDE_DEPTH). */
const MAX_INCLUDE_DEPTH = 10;

export interface WalkRequest {
  /** The writable trees (host paths, absolute, resolved). */
  roots: readonly string[];
  /** The invoking user's HOME (git expands `~` with it). */
  home?: string;
  /** The global config files (~/.gitconfig, $XDG_CONFIG_HOME/git/config): their includes and hooksPath, when in a tree. */
  globalConfigs: readonly string[];
  /** The invoking user: a directory of theirs the run made unreadable is opened for the walk. */
  uid: number;
  /** Git dirs recorded before: looked at again even when they are no longer git dirs. */
  also?: readonly string[];
  limits: WalkLimits;
}

const UNREACHABLE = new Set(['ELOOP', 'ENAMETOOLONG']);
const GONE = new Set(['ENOENT', 'ENOTDIR']);

const message = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error);

class Walk {
  readonly snap: GitSnapshot = { gitDirs: [], gitFiles: {}, includes: {}, hookDirs: {}, unchecked: [], entries: 0 };
  private readonly seenDirs = new Set<string>();
  /** Directories of the user's own that were not readable, opened up for the walk: given back by `restoreModes`. */
  private readonly opened: { path: string; mode: number }[] = [];

  constructor(private readonly req: WalkRequest) {}

  inTrees = (path: string) => this.req.roots.some((root) => isWithin(path, root));

  unchecked(path: string, why: string): void {
    this.snap.unchecked.push({ path, why });
  }

  /** One tree, breadth first with an explicit queue: no recursion, so no depth can overflow sbx's stack. */
  tree(root: string): void {
    const { maxEntries, maxDepth, maxPathLength } = this.req.limits;
    // A writable bind of one file (a unix socket) holds no git dir; one that is gone holds nothing.
    try {
      if (!lstatOrNone(root)?.isDirectory()) return;
    } catch (error) {
      this.unchecked(root, `not read: ${message(error)}`);
      return;
    }
    const queue: { path: string; depth: number }[] = [{ path: root, depth: 0 }];
    for (let next = 0; next < queue.length; next++) {
      const { path, depth } = queue[next]!;
      let entries: Dirent[];
      try {
        entries = this.readDir(path);
      } catch (error) {
        // Gone, or no longer a directory, since its parent was listed: nothing a later host git could
        // use is at this path now. Only a process outside the sandbox moves it during the audit after
        // the run (the sandbox's have all exited), and a concurrent run's own audit walks its own plants.
        if (GONE.has((error as NodeJS.ErrnoException).code ?? '')) continue;
        this.unchecked(path, `not read: ${message(error)}`);
        continue;
      }
      this.snap.entries += entries.length;
      if (this.snap.entries > maxEntries) {
        this.unchecked(path, `more than ${maxEntries} entries in the writable trees: the rest was not audited`);
        return;
      }
      const isGit = entries.some((e) => e.name === 'HEAD') && this.gitDirAmong(path, entries);
      const base = path === '/' ? '' : path;
      for (const e of entries) {
        const isDir = e.isDirectory();
        if (e.name === '.git' && !isDir) this.gitFile(`${base}/${e.name}`);
        if (!isDir || (isGit && e.name === 'objects')) continue;
        const child = `${base}/${e.name}`;
        if (depth + 1 > maxDepth || child.length > maxPathLength) {
          this.unchecked(child, `deeper than ${maxDepth} directories or ${maxPathLength} bytes: not audited`);
          continue;
        }
        queue.push({ path: child, depth: depth + 1 });
      }
    }
  }

  /**
   * A directory's entries. One of the user's own that the user may not read or search (a run's
   * `chmod 0`) is opened to the user for the rest of the walk: host git, as the same user, can open it
   * again whenever it likes, and what is below it counts like the rest. Nothing but the sandbox, which
   * is not running while sbx walks, and root can change the mode meanwhile.
   */
  private readDir(path: string): Dirent[] {
    try {
      return readdirSync(path, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EACCES') throw error;
      const st = lstatSync(path);
      if (!st.isDirectory() || st.uid !== this.req.uid) throw error;
      chmodSync(path, (st.mode & 0o7777) | 0o500);
      this.opened.push({ path, mode: st.mode & 0o7777 });
      return readdirSync(path, { withFileTypes: true });
    }
  }

  /** Gives each directory opened for the walk its mode back, deepest first; one that cannot be is unchecked. */
  restoreModes(): void {
    for (const { path, mode } of this.opened.reverse()) {
      try {
        chmodSync(path, mode);
      } catch (error) {
        this.unchecked(path, `mode ${mode.toString(8)} not given back: ${message(error)}`);
      }
    }
  }

  private gitDirAmong(path: string, entries: readonly Dirent[]): boolean {
    return hasGitDirNames(new Set(entries.map((e) => e.name))) && this.gitDir(path);
  }

  /** Records a directory as a git dir candidate; returns whether git takes it for one. */
  gitDir(path: string): boolean {
    if (this.seenDirs.has(path)) return this.snap.gitDirs.some((d) => d.path === path && d.isGitDir);
    this.seenDirs.add(path);
    try {
      // Only a path with no link on it: one named by a pointer, or recorded before the run, may now go
      // through a link the run made (`sub` → ~/other), and what it names is not in the trees.
      const st = lstatOrNone(path);
      if (!st?.isDirectory() || realpathSync.native(path) !== path) return false;
      const head = readState(`${path}/HEAD`);
      const names = new Set(['HEAD', 'objects', 'refs', 'commondir'].filter((n) => lstatOrNone(`${path}/${n}`)));
      const isGitDir = hasGitDirNames(names) && isValidHead(headSeen(head));
      const [config, configWorktree, commondir, gitdir] = ['config', 'config.worktree', 'commondir', 'gitdir'].map(
        (n) => readState(`${path}/${n}`),
      );
      const commonText = textOf(commondir);
      const commonDir = (commonText !== undefined ? commonDirTarget(commonText, path) : undefined) ?? path;
      const programs = [
        ...this.programsOf(`${path}/config`, config),
        ...this.programsOf(`${path}/config.worktree`, configWorktree),
      ];
      const hooksPath = [config, configWorktree]
        .map((s) => programEntries(textOf(s) ?? '').hooksPath)
        .findLast(Boolean);
      const hooksDir = hooksDirOf(path, commonDir, hooksPath, this.req.home);
      const state: GitDirState = {
        path,
        dev: st.dev,
        ino: st.ino,
        isGitDir,
        ...defined({ head, config, configWorktree, commondir, gitdir, hooksDir }),
        commonDir,
        programs,
      };
      this.snap.gitDirs.push(state);
      if (hooksDir && this.inTrees(hooksDir)) this.hooksDir(hooksDir);
      return isGitDir;
    } catch (error) {
      // A path no lookup can resolve (a link loop, too long a name) is one git cannot open either.
      if (UNREACHABLE.has(message(error))) return false;
      this.unchecked(path, `git dir not read: ${message(error)}`);
      return false;
    }
  }

  /** A config file's program entries, its includes recorded; a config git reads through a link or cannot be read whole counts as one. */
  programsOf(file: string, state: FileState | undefined, depth = 0): string[] {
    if (!state) return [];
    if (state.kind === 'link') return [`(config is a link to ${state.target})`];
    const text = textOf(state);
    if (text === undefined) return [`(config not readable: ${state.kind}, ${state.size} bytes)`];
    const found = programEntries(text);
    for (const value of found.includes) {
      const target = includeTarget(value, file, this.req.home);
      if (target && this.inTrees(target)) this.include(target, depth + 1);
    }
    return [...found.entries, ...Array.from({ length: found.unparsed }, (_, i) => `(unparsed line ${i + 1})`)];
  }

  include(path: string, depth: number): void {
    if (path in this.snap.includes) return;
    if (depth > MAX_INCLUDE_DEPTH) return;
    try {
      const state = readState(path) ?? null;
      this.snap.includes[path] = { state, programs: [] };
      this.snap.includes[path].programs = state ? this.programsOf(path, state, depth) : [];
    } catch (error) {
      this.unchecked(path, `included config not read: ${message(error)}`);
    }
  }

  hooksDir(path: string): void {
    if (path in this.snap.hookDirs) return;
    try {
      const parent = posix.dirname(path);
      if (lstatOrNone(parent)?.isDirectory() && realpathSync.native(parent) !== parent) {
        this.unchecked(path, 'hooks directory reached through a link: not followed');
        return;
      }
      const st = lstatOrNone(path);
      if (st?.isSymbolicLink()) {
        this.snap.hookDirs[path] = { present: true, link: readlinkSync(path), entries: {} };
        return;
      }
      if (!st?.isDirectory()) {
        this.snap.hookDirs[path] = { present: st !== undefined, entries: {} };
        return;
      }
      const entries: HooksDirState['entries'] = {};
      for (const name of readdirSync(path)) {
        if (isInertHookName(name)) continue;
        const state = readState(`${path}/${name}`);
        if (state) entries[name] = state;
      }
      this.snap.hookDirs[path] = { present: true, dev: st.dev, ino: st.ino, entries };
    } catch (error) {
      this.unchecked(path, `hooks directory not read: ${message(error)}`);
    }
  }

  /** A `.git` file or link: recorded, and the git dir it names looked at even where the walk does not go. */
  gitFile(path: string): void {
    try {
      const state = readState(path);
      if (!state) return;
      this.snap.gitFiles[path] = state;
      const text = textOf(state);
      const target =
        state.kind === 'link'
          ? posix.resolve(posix.dirname(path), state.target!)
          : text !== undefined
            ? gitFileTarget(text, path)
            : undefined;
      if (target && this.inTrees(target)) this.gitDir(target);
    } catch (error) {
      this.unchecked(path, `.git file not read: ${message(error)}`);
    }
  }

  globals(): void {
    for (const file of this.req.globalConfigs) {
      try {
        const state = readState(file);
        const text = textOf(state);
        if (text === undefined) continue;
        const found = programEntries(text);
        for (const value of found.includes) {
          const target = includeTarget(value, file, this.req.home);
          if (target && this.inTrees(target)) this.include(target, 1);
        }
        const hooks = found.hooksPath !== undefined ? includeTarget(found.hooksPath, file, this.req.home) : undefined;
        if (hooks && this.inTrees(hooks)) this.hooksDir(hooks);
      } catch (error) {
        this.unchecked(file, `global git config not read: ${message(error)}`);
      }
    }
  }
}

function headSeen(head: FileState | undefined): HeadSeen {
  if (!head) return { kind: 'absent' };
  if (head.kind === 'link') return { kind: 'link', target: head.target ?? '' };
  const text = textOf(head);
  return text === undefined ? { kind: 'other' } : { kind: 'file', text };
}

/** The keys of `o` whose values are defined (exactOptionalPropertyTypes). */
function defined<T extends Record<string, unknown>>(o: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as never;
}

/**
 * Snapshot of the git state in the writable trees. Never throws for what it finds: the unreadable is
 * `unchecked`. `whileOpen` runs on the snapshot before the directories opened for the walk get their
 * modes back (the audit's repairs reach what lies below them).
 */
export function walkGitState(req: WalkRequest, whileOpen?: (snap: GitSnapshot) => void): GitSnapshot {
  const walk = new Walk(req);
  try {
    for (const root of req.roots) walk.tree(root);
    for (const path of req.also ?? []) walk.gitDir(path);
    walk.globals();
    whileOpen?.(walk.snap);
  } finally {
    walk.restoreModes();
  }
  return walk.snap;
}
