// The facts the offline rule needs to judge a git remote (git/git-remotes.ts): the config git
// inside the sandbox would read, from the repository the command runs in. The config is the
// repository's, so read bounded and as a regular file only; it decides nothing but whether a remote
// is a local path, and none of it is printed. The global files are the sanitized views the sandbox
// sees (Host.gitGlobal), so a rewrite sbx kept out cannot make a remote look local.
import { lstatSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Host } from '../../policy/host.js';
import { isWithin } from '../../path-within.js';
import { type GitRemoteFacts, gitRemoteFacts } from '../git-remotes.js';
import { readRegularFile } from './git-index.js';

const MAX_CONFIG_BYTES = 1024 * 1024;

function text(path: string, maxBytes: number): string | undefined {
  return readRegularFile(path, maxBytes)?.toString('utf8');
}

/** The repository's config file: `.git/config`, or for a `.git` file its git dir's (a worktree's common dir's). */
function repositoryConfig(dir: string): string | undefined {
  const dotGit = join(dir, '.git');
  const st = lstatSync(dotGit, { throwIfNoEntry: false });
  if (st?.isDirectory()) return join(dotGit, 'config');
  if (!st?.isFile()) return undefined;
  const m = /^gitdir: (.+?)\r?\n?$/.exec(text(dotGit, 4096) ?? '');
  if (!m) return undefined;
  const gitDir = resolve(dir, m[1]!);
  const common = text(join(gitDir, 'commondir'), 4096)?.replace(/\r?\n$/, '');
  return join(common ? resolve(gitDir, common) : gitDir, 'config');
}

/** What git run in `base` would know about remotes; the search for the repository stays inside the workspace. */
export function readGitRemoteFacts(base: string, workspace: string, host: Host): GitRemoteFacts {
  const texts = (host.gitGlobal ?? []).map((view) => view.content);
  for (let dir = base; isWithin(dir, workspace); dir = dirname(dir)) {
    const config = repositoryConfig(dir);
    if (config !== undefined) {
      const repo = text(config, MAX_CONFIG_BYTES);
      if (repo !== undefined) texts.push(repo);
      break;
    }
    if (dir === workspace) break;
  }
  return gitRemoteFacts(texts);
}
