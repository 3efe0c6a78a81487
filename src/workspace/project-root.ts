// The workspace when nobody named one: the project the current directory belongs to, found as git
// finds it (the nearest parent holding `.git`), so that `sbx run -- git status` works from a
// subdirectory and npm finds package.json. Pure: the runtime lists what each parent holds.
//
// A parent is a claim someone else may have made: a `.git` planted above the current directory (in
// /tmp, in a shared checkout) would widen the writable workspace to a tree the user never chose. So,
// like git's own safe.directory check, a `.git` counts only when it and its directory are the
// invoking user's; the search never reaches or passes HOME (a dotfiles repository in ~ is not a
// project, and a writable HOME is refused anyway: host-state/host-state.ts), never picks a system
// directory, and stops at a filesystem boundary (git's GIT_DISCOVERY_ACROSS_FILESYSTEM default).
import { posix } from 'node:path';
import { isWithin } from '../path-within.js';
import { FORBIDDEN_ROOTS } from '../policy/derive/bind-checks.js';

/** What the runtime found in one parent directory. */
export interface ParentFact {
  dir: string;
  /** The directory's device: the search stops where it changes. */
  dev: number;
  /** `.git` there (a directory or a worktree's file), with the owners of it and of `dir`; undefined when absent. */
  git?: { uid: number; dirUid: number };
}

/**
 * Directories that are never a project's top level, whatever they hold: those that may never be a
 * workspace (policy/derive/bind-checks.ts), and the shared parents of many users' or projects' trees.
 */
const SYSTEM_DIRS = new Set([
  ...FORBIDDEN_ROOTS,
  ...['/lib32', '/libx32', '/var/tmp', '/tmp', '/home', '/root', '/opt', '/srv', '/mnt', '/media'],
]);

/** The directories to look in, nearest first: the cwd and its parents below HOME (or up to a system directory). */
export function projectRootCandidates(cwd: string, home: string): string[] {
  const out: string[] = [];
  for (let dir = posix.normalize(cwd); ; dir = posix.dirname(dir)) {
    if (dir === home || isWithin(home, dir) || SYSTEM_DIRS.has(dir)) return out;
    out.push(dir);
    if (posix.dirname(dir) === dir) return out;
  }
}

export interface ProjectRoot {
  path: string;
  /** For stderr and `sbx explain`. */
  reason: string;
}

/**
 * The git top level above `cwd` from the facts of projectRootCandidates (nearest first, possibly cut
 * short by the runtime at the first `.git`); undefined when the cwd itself is the top level, or
 * there is none to use (the workspace stays the cwd).
 */
export function chooseProjectRoot(cwd: string, uid: number, facts: readonly ParentFact[]): ProjectRoot | undefined {
  const start = facts[0];
  if (start === undefined || start.dir !== posix.normalize(cwd)) return undefined;
  for (const fact of facts) {
    if (fact.dev !== start.dev) return undefined;
    if (fact.git === undefined) continue;
    // Someone else's .git is not this user's project: stop, as git does, rather than look further up.
    if (fact.git.uid !== uid || fact.git.dirUid !== uid) return undefined;
    if (fact.dir === start.dir) return undefined;
    return { path: fact.dir, reason: 'the git top level above the current directory' };
  }
  return undefined;
}
