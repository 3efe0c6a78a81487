// Around stage 10, exec: the git state of the writable trees recorded before the command starts, and
// audited after it has ended (src/git/): for bwrap and nsjail once the launcher has returned (its pid
// namespace is gone with it), for landlock once sbx-landlock has reported (it ends every descendant
// and restores its guarded paths first). What a later host git would run from the run's writes is
// repaired and reported as `git-state` violations; an audit that could not finish ends the run 125.
import { posix } from 'node:path';
import { ExitCode } from '../errors.js';
import { auditGitState, type GitAuditPlan, snapshotGitState } from '../git/host/auditor.js';
import type { Policy } from '../policy/types.js';
import type { Violation } from '../policy/violation.js';
import type { Ending } from '../report/ending.js';
import type { RunContext } from './context-stage.js';

export interface GitStateBefore {
  plan: GitAuditPlan;
  before: ReturnType<typeof snapshotGitState>;
}

/** The writable trees: every read-write bind's host source. */
const writableTrees = (policy: Policy) =>
  policy.mounts.flatMap((m) => (m.kind === 'bind' && m.access === 'rw' ? [m.source] : []));

export function recordGitState({ ctx, policy }: { ctx: RunContext; policy: Policy }): GitStateBefore {
  const { home, configHome } = ctx.dirs;
  const plan: GitAuditPlan = {
    roots: writableTrees(policy),
    home,
    globalConfigs: [posix.join(home, '.gitconfig'), posix.join(configHome, 'git', 'config')],
    session: ctx.sessionId,
  };
  return { plan, before: snapshotGitState(plan) };
}

export interface GitStateAudit {
  violations: Violation[];
  /** The ending, 125 by sbx when part of the git state was not audited or not repaired. */
  ended(ending: Ending): Ending;
}

export function auditRunGitState({ plan, before }: GitStateBefore): GitStateAudit {
  const { violations, incomplete } = auditGitState(plan, before);
  return {
    violations,
    ended: (ending) => (incomplete ? { ...ending, exitCode: ExitCode.SETUP, setBy: 'sbx' } : ending),
  };
}
