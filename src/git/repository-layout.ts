// Where a repository in a tree the sensitive-file scan walks keeps what a later host git runs, read
// from the names of its config files and their text (git/host/held-git-files.ts holds what these
// name for the run): the hooks directory of a git dir, core.hooksPath, config.worktree. Pure: names
// and text in, answers out.
import { posix } from 'node:path';
import { hooksDirOf } from './discovery.js';
import { parseGitConfig } from './git-config.js';

/** Whether `rel` names a git dir's config (`config`, `.git/config`, `.git/modules/x/config`, `worktrees/x/config`). */
export const isConfigFile = (rel: string) => rel === 'config' || rel.endsWith('/config');

/**
 * The hooks directory (relative, as `configRel` is) of the git dir whose `config` this is, when that
 * git dir is a work tree's `.git` or a submodule's `.git/modules/<name>`: git init makes one there.
 */
export function hooksDirOfConfig(configRel: string): string | undefined {
  const gitDir = posix.dirname(configRel);
  const isGitDir = gitDir === '.git' || gitDir.endsWith('/.git') || /(^|\/)\.git\/modules\//.test(gitDir);
  return configRel.endsWith('/config') && isGitDir ? `${gitDir}/hooks` : undefined;
}

/**
 * core.hooksPath's last occurrence in a config's text (a bare key: none). A `[core "sub"]` section counts
 * as `[core]`: more is held, never less.
 */
function hooksPathOf(text: string): string | undefined {
  let section = '';
  let hooksPath: string | undefined;
  for (const event of parseGitConfig(text)) {
    if (event.kind === 'section') section = event.name.toLowerCase();
    else if (event.kind === 'key' && section === 'core' && event.key.toLowerCase() === 'hookspath')
      hooksPath = event.value;
  }
  return hooksPath;
}

/** Whether `rel` names a work tree's own `.git/config` (not a submodule's or a bare git dir's). */
export const isWorkTreeConfig = (rel: string) => rel === '.git/config' || rel.endsWith('/.git/config');

/**
 * The directory a work tree's `.git/config` (`configFile`, absolute) names in core.hooksPath, when it
 * lies below `base`: git runs the hooks from there. Relative paths are git's: from the top of the work
 * tree. `~` is left out (another home is not the tree's), as is a path outside `base`, which is not
 * the sandbox's to write.
 */
export function hooksPathBelow(configFile: string, text: string, base: string): string | undefined {
  const hooksPath = hooksPathOf(text);
  if (!hooksPath) return undefined;
  const gitDir = posix.dirname(configFile);
  const dir = hooksDirOf(gitDir, gitDir, hooksPath, undefined);
  return dir !== undefined && dir !== base && dir.startsWith(`${base}/`) ? dir : undefined;
}

/**
 * Whether a git dir whose config says this may read `config.worktree` (extensions.worktreeConfig). A
 * substring of the raw text: a superset of what git reads (keys are case-insensitive).
 */
export const mayReadWorktreeConfig = (text: string) => /worktreeconfig/i.test(text);
