// After a bwrap run: a `commondir` the command created in a repository's gitdir is removed and
// reported. A mount cannot keep a path absent, and an empty placeholder breaks git, so this is
// checked after the run instead, when every sandbox process is dead (bwrap's pid namespace ends with
// its first process). Created there, `commondir` points host git's config and hooks at any
// directory (docs/SECURITY.md, the `.git/hooks` row).
import { lstatSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { GIT_CONFIG_VIEW_REASON } from '../policy/guarded-state.js';
import type { Violation } from '../policy/violation.js';

/**
 * `views`: the scan's git views (host paths). Only a gitdir's own `config` names a gitdir that has no
 * `commondir` of its own (a linked worktree's `worktrees/<name>` has one, and no `config`). A
 * `commondir` is the command's when its ctime, which no process can set back, is not older than the
 * run: one the repository had before is left alone.
 */
export function removeCreatedCommondirs(
  views: readonly { path: string; reason: string }[],
  runStartedMs: number,
): Violation[] {
  const out: Violation[] = [];
  for (const view of views) {
    if (view.reason !== GIT_CONFIG_VIEW_REASON || basename(view.path) !== 'config') continue;
    const path = join(dirname(view.path), 'commondir');
    let ctimeMs: number;
    try {
      ctimeMs = lstatSync(path).ctimeMs;
    } catch {
      continue; // absent, as it should be
    }
    if (ctimeMs < runStartedMs) continue;
    // rmSync never follows a link, at the top or below.
    rmSync(path, { recursive: true, force: true });
    out.push({ phase: 'runtime', kind: 'git-state', rule: 'bwrap.commondir', detail: `${path}: added; removed` });
  }
  return out;
}
