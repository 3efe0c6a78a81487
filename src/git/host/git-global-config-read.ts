// Reads the user's global git config files for their sandbox view (git/git-global-config.ts):
// ~/.gitconfig and $XDG_CONFIG_HOME/git/config, git's two "global" files. Read as hostile input
// (host/guarded-read.ts): a regular file, bounded, never below /proc, /sys or /dev, and only when
// it and every directory above it are the user's or root's and nobody else can write them; a file
// that fails a check is left out (the sandbox then has no identity, as before), never read anyway.
// The raw text never leaves this function: only the sanitized view does.
import { posix } from 'node:path';
import { isSbxError } from '../../errors.js';
import { sanitizeGlobalGitConfig } from '../git-global-config.js';
import type { Host } from '../../policy/host.js';
import { xdgDirs } from '../../policy/user-dirs.js';
import { readGuarded } from '../../host/guarded-read.js';

/** Far above any real ~/.gitconfig; a larger one is not a config file. */
const MAX_GLOBAL_CONFIG_BYTES = 256 * 1024;

export type GitGlobalView = NonNullable<Host['gitGlobal']>[number];

/** Each global file that exists and passes the checks, sanitized. */
export function readGitGlobalConfigs(home: string, env: Record<string, string>, uid: number): GitGlobalView[] {
  const files = [
    { file: posix.join(home, '.gitconfig'), which: 'home' as const },
    { file: posix.join(xdgDirs(env, home).configHome, 'git', 'config'), which: 'xdg' as const },
  ];
  const out: GitGlobalView[] = [];
  for (const { file, which } of files) {
    let text: string;
    try {
      text = readGuarded(file, { what: 'git config', maxBytes: MAX_GLOBAL_CONFIG_BYTES, checkOwner: true, uid }).text;
    } catch (error) {
      if (!isSbxError(error)) throw error;
      continue;
    }
    out.push({ file, which, content: sanitizeGlobalGitConfig(text, file).text });
  }
  return out;
}
