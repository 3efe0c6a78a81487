// Around stage 10, exec: the git state of the writable trees recorded before the command starts, and
// audited after it has ended (src/git/): for bwrap and nsjail once the launcher has returned (its pid
// namespace is gone with it), for landlock once sbx-landlock has reported (it ends every descendant
// and restores its guarded paths first). What a later host git would run from the run's writes is
// repaired and reported as `git-state` violations; an audit that could not finish ends the run 125.
import { ExitCode } from '../errors.js';
import { auditGitState, type GitAuditPlan, leaveGitRuns, planGitAudit, snapshotGitState } from '../git/host/auditor.js';
import type { Policy } from '../policy/types.js';
import type { Violation } from '../policy/violation.js';
import type { Ending } from '../report/ending.js';
import { writableRoots } from '../report/report-file.js';
import type { CleanupStack } from './cleanup.js';
import type { RunContext } from './context-stage.js';

export interface GitStateBefore {
  plan: GitAuditPlan;
  before: ReturnType<typeof snapshotGitState>;
}

export function recordGitState({
  ctx,
  policy,
  cleanup,
}: {
  ctx: RunContext;
  policy: Policy;
  cleanup: CleanupStack;
}): GitStateBefore {
  // Danger mode binds the host's root writable: the command can write ~/.bashrc as well as any hook,
  // so no git-state promise holds, and a walk of / is not an audit (docs/SECURITY.md).
  const roots = policy.mode === 'danger' ? [] : writableRoots(policy);
  const plan = planGitAudit(roots, ctx.dirs, ctx.sessionId, ctx.uid);
  // The run's registration among those under way ends with its audit, or with the run if it fails
  // before one (a library caller's process lives on: a record left would pin an old baseline).
  cleanup.defer(() => leaveGitRuns(plan));
  return { plan, before: snapshotGitState(plan) };
}

export interface GitStateAudit {
  violations: Violation[];
  /** The ending, 125 by sbx when part of the git state was not audited or not repaired. */
  ended(ending: Ending): Ending;
}

/** 125 by sbx, the command's own status kept in a violation of its own (the report has one exit code). */
function unaudited(ending: Ending): Ending {
  const said: Violation = {
    phase: 'runtime',
    kind: 'git-state',
    rule: 'git.audit',
    detail: `the command exited ${ending.exitCode}; sbx exits ${ExitCode.SETUP}: the git state was not all audited or repaired`,
  };
  return { ...ending, exitCode: ExitCode.SETUP, setBy: 'sbx', violations: [...ending.violations, said] };
}

export function auditRunGitState({ plan, before }: GitStateBefore): GitStateAudit {
  const { violations, incomplete } = auditGitState(plan, before);
  return {
    violations,
    ended: (ending) => (incomplete ? unaudited(ending) : ending),
  };
}
