// Git's discovery rules, as the auditor needs them: which directory git takes as a git dir, what a
// `.git` file points at, where a repository's hooks and included config files are. Pure: names and
// bytes in, answers out. Source: git's setup.c (is_git_directory, validate_headref,
// read_gitfile_gently, setup_git_directory_gently_1) and git-config(1) (core.hooksPath, include).
import { posix } from 'node:path';

/** What the walker saw at a directory's `HEAD`. */
export type HeadSeen = { kind: 'file'; text: string } | { kind: 'link'; target: string } | { kind: 'absent' | 'other' };

/**
 * validate_headref(): a symlink into `refs/`, `ref: refs/...`, or a bare object id (SHA-1 or SHA-256
 * hex). Anything else and git does not take the directory for a git dir.
 */
export function isValidHead(head: HeadSeen): boolean {
  if (head.kind === 'link') return head.target.startsWith('refs/');
  if (head.kind !== 'file') return false;
  const text = head.text;
  if (text.startsWith('ref:')) return /^ref:[ \t\n\r]*refs\//.test(text);
  return /^(?:[0-9a-f]{40}|[0-9a-f]{64})(?:\s|$)/.test(text);
}

/**
 * is_git_directory(), from the names in the directory: a HEAD, and either a `commondir` (a linked
 * worktree's admin dir; objects and refs are found through it) or `objects` and `refs`. HEAD's
 * content is checked apart (isValidHead); the walker asks only about directories that pass this.
 */
export function hasGitDirNames(names: ReadonlySet<string>): boolean {
  return names.has('HEAD') && (names.has('commondir') || (names.has('objects') && names.has('refs')));
}

/** read_gitfile_gently(): `gitdir: <path>`, the path relative to the file's directory when not absolute. */
export function gitFileTarget(text: string, gitFile: string): string | undefined {
  const m = /^gitdir: ?(.*?)\r?\n?$/s.exec(text);
  if (!m?.[1] || m[1].includes('\n')) return undefined;
  return posix.resolve(posix.dirname(gitFile), m[1]);
}

/** A `commondir` file's path (first line), relative to the git dir when not absolute. */
export function commonDirTarget(text: string, gitDir: string): string | undefined {
  const line = text.split('\n')[0]?.replace(/\r$/, '');
  return line ? posix.resolve(gitDir, line) : undefined;
}

/** `~/x` and `~` as git expands them (interpolate_path); another user's `~name/` is left as written (not found). */
function expandHome(value: string, home: string | undefined): string | undefined {
  if (value === '~' || value.startsWith('~/')) return home === undefined ? undefined : home + value.slice(1);
  return value.startsWith('~') ? undefined : value;
}

/** An include.path value: relative to the directory of the file that includes it. */
export function includeTarget(value: string, configFile: string, home: string | undefined): string | undefined {
  const expanded = expandHome(value, home);
  return expanded === undefined ? undefined : posix.resolve(posix.dirname(configFile), expanded);
}

/**
 * Where git looks for a repository's hooks: core.hooksPath (relative to where hooks run: the working
 * tree's top for a `.git` directory, the git dir itself for a bare one; githooks(5)), else
 * `<common dir>/hooks`.
 */
export function hooksDirOf(
  gitDir: string,
  commonDir: string,
  hooksPath: string | undefined,
  home: string | undefined,
): string | undefined {
  if (hooksPath === undefined) return posix.join(commonDir, 'hooks');
  const expanded = expandHome(hooksPath, home);
  if (expanded === undefined) return undefined;
  const runsIn = posix.basename(gitDir) === '.git' ? posix.dirname(gitDir) : gitDir;
  return posix.resolve(runsIn, expanded);
}

/** A name git never runs as a hook: the samples `git init` writes. */
/**
 * A name in a hooks directory git never runs: its samples, and what an audit set aside there
 * (`NAME.sbx-quarantine-SESSION`, host/repair.ts), which a concurrent run's audit must leave alone.
 */
export const isInertHookName = (name: string) => name.endsWith('.sample') || name.includes('.sbx-quarantine-');
