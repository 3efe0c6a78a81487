// The reasons of the Policy entries that keep host state read-only inside a writable workspace. Pure.
// bwrap enforces them with read-only binds and generated files; the landlock backend, which cannot
// narrow a granted tree, guards the same paths instead: snapshotted before the command, put back
// after it (native/sbx-guard.c). Named once here so that the compiler recognises what derivePolicy
// and the sensitive scan produced.

/** A repository's hooks directory, bound read-only over itself (policy/derive/overlay.ts bindReadOnly). */
export const GIT_HOOKS_REASON = 'sensitive: git hooks stay read-only';
/** The user's sbx config dir or a project's .sbx, wherever a writable bind shows it. */
export const OWN_POLICY_REASON = "sbx's policy files stay read-only";
/** A git config file, shown without its credentials (sensitive/host/sensitive-scan.ts, git/host/git-worktree.ts). */
export const GIT_CONFIG_VIEW_REASON = 'git config without credentials';
/** A repository's info/exclude with the masked files added, so that `git add -A` leaves their stand-ins out. */
export const GIT_EXCLUDE_VIEW_REASON = 'git exclude: masked files stay out of commits';

/** A git config view's `withheld`: the keys the sanitizer removed (git/git-config.ts), only when there are any. */
export function withheldOf(removed: readonly string[]): { withheld?: string[] } {
  return removed.length > 0 ? { withheld: [...removed] } : {};
}
