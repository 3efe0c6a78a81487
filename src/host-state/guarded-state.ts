// The entries that keep host state read-only inside a writable workspace: their reasons, and the git
// views the scans generate. Pure. bwrap enforces them with read-only binds and generated files; the
// landlock backend, which cannot narrow a granted tree, guards the same paths instead: snapshotted
// before the command, put back after it (native/sbx-guard.c). It knows them by their role
// (policy/types.ts MountRole: guard, git-config), never by these reasons, which are text for people.
import type { Host } from '../policy/host.js';

type GitView = Host['sensitiveFiles']['views'][number];

/** A repository's hooks directory, bound read-only over itself (policy/derive/overlay.ts bindReadOnly). */
export const GIT_HOOKS_REASON = 'sensitive: git hooks stay read-only';
/** The user's sbx config dir or a project's .sbx, wherever a writable bind shows it. */
export const OWN_POLICY_REASON = "sbx's policy files stay read-only";

/**
 * A git config file shown without its credentials (git/host/held-git-files.ts,
 * git/host/git-worktree.ts); `withheld`: the keys the sanitizer removed (git/git-config.ts), when any.
 */
export function gitConfigView(path: string, content: string, removed: readonly string[]): GitView {
  const withheld = removed.length > 0 ? { withheld: [...removed] } : {};
  return { path, content, reason: 'git config without credentials', role: 'git-config', ...withheld };
}

/** A repository's info/exclude with the masked files added, so that `git add -A` leaves their stand-ins out. */
export function gitExcludeView(path: string, content: string): GitView {
  return { path, content, reason: 'git exclude: masked files stay out of commits', role: 'guard' };
}
