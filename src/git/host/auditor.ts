// The git-state auditor's two calls: a snapshot before the run, and after every sandbox process has
// exited the audit (walk again, diff, repair) as `git-state` violations. Neither throws: whatever
// the run left (modes, depth, links, names, sizes) ends as a violation naming the path, and an audit
// that could not finish says so loudly (`incomplete`: the pipeline then exits 125), so the report
// and the ledger are still written. docs/SECURITY.md, "Git state: what a later host git runs".
import { posix } from 'node:path';
import { isWithin } from '../../path-within.js';
import type { Violation } from '../../policy/violation.js';
import { gitStateChanges } from '../changes.js';
import type { GitSnapshot } from '../snapshot.js';
import { joinLiveRuns, type LiveRunsPlace, leaveLiveRuns } from './live-runs.js';
import { repairChange } from './repair.js';
import { DEFAULT_WALK_LIMITS, type WalkLimits, walkGitState } from './walk.js';

export interface GitAuditPlan {
  /** The writable trees, host paths (absolute, resolved). */
  roots: readonly string[];
  home?: string;
  /** The global git config files, whose includes and hooksPath count when they lie in a tree. */
  globalConfigs: readonly string[];
  /** Names the quarantined entries. */
  session: string;
  /** Whose directories the walk may open when the run made them unreadable (walk.ts readDir). */
  uid: number;
  /** Where runs under way are registered (live-runs.ts); without it, the run's own walk is its baseline. */
  live?: LiveRunsPlace;
  limits?: WalkLimits;
}

export interface GitAuditResult {
  violations: Violation[];
  /** Part of the git state was not audited or not repaired: sbx exits 125. */
  incomplete: boolean;
}

/**
 * The plan for `roots`: git's two global config files under the invoking user's HOME and XDG config
 * dir, and the runs under way registered in sbx's state directory.
 */
export function planGitAudit(
  roots: readonly string[],
  dirs: { home: string; configHome: string; stateHome: string },
  session: string,
  uid: number,
): GitAuditPlan {
  const globalConfigs = [posix.join(dirs.home, '.gitconfig'), posix.join(dirs.configHome, 'git', 'config')];
  const live = { dir: posix.join(dirs.stateHome, 'sbx', 'git-runs'), uid };
  return { roots, home: dirs.home, globalConfigs, session, uid, live };
}

const RULE = 'git.audit';
const violation = (detail: string): Violation => ({ phase: 'runtime', kind: 'git-state', rule: RULE, detail });
const reason = (error: unknown) =>
  (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));

/** Roots inside another root are walked with it. */
function outermost(roots: readonly string[]): string[] {
  const sorted = [...new Set(roots.map((r) => posix.resolve(r)))].sort((a, b) => a.length - b.length);
  return sorted.filter((r, i) => !sorted.slice(0, i).some((outer) => isWithin(r, outer)));
}

function walk(plan: GitAuditPlan, also?: readonly string[], whileOpen?: (snap: GitSnapshot) => void): GitSnapshot {
  const req = {
    roots: outermost(plan.roots),
    ...(plan.home !== undefined ? { home: plan.home } : {}),
    globalConfigs: plan.globalConfigs,
    uid: plan.uid,
    ...(also ? { also } : {}),
    limits: plan.limits ?? DEFAULT_WALK_LIMITS,
  };
  return walkGitState(req, whileOpen);
}

/**
 * Before the run: the walk, and the run registered among those under way (its baseline then takes
 * from earlier live runs what their sandboxes may have written already). An error here leaves the
 * audit to say so after the run. Once registered, `auditGitState` or `leaveGitRuns` unregisters it.
 */
export function snapshotGitState(plan: GitAuditPlan): GitSnapshot | { failed: string } {
  try {
    const own = walk(plan);
    return plan.live && plan.roots.length > 0 ? joinLiveRuns(plan.live, plan.session, outermost(plan.roots), own) : own;
  } catch (error) {
    return { failed: reason(error) };
  }
}

/** This run's registration removed (idempotent): after its audit, or when the run ends before one. */
export function leaveGitRuns(plan: GitAuditPlan): void {
  try {
    if (plan.live) leaveLiveRuns(plan.live, plan.session);
  } catch {
    // A record left behind is removed by the next run once this process is gone.
  }
}

function audit(plan: GitAuditPlan, before: GitSnapshot): GitAuditResult {
  const roots = outermost(plan.roots);
  const violations: Violation[] = [];
  let incomplete = false;
  const repair = (after: GitSnapshot) => {
    for (const change of gitStateChanges(before, after, roots)) {
      try {
        violations.push(violation(`${change.path}: ${change.what}; ${repairChange(change, plan.session)}`));
      } catch (error) {
        incomplete = true;
        violations.push(
          violation(
            `${change.path}: ${change.what}; NOT repaired (${reason(error)}): remove it before running git there`,
          ),
        );
      }
    }
  };
  const after = walk(
    plan,
    before.gitDirs.map((d) => d.path),
    repair,
  );
  for (const u of after.unchecked) {
    incomplete = true;
    violations.push(violation(`${u.path}: ${u.why}; inspect it before running git there`));
  }
  return { violations, incomplete };
}

/** After the run, once no sandbox process is left: the changes found, repaired, as violations. */
export function auditGitState(plan: GitAuditPlan, before: GitSnapshot | { failed: string }): GitAuditResult {
  try {
    return auditAgainst(plan, before);
  } finally {
    leaveGitRuns(plan);
  }
}

function auditAgainst(plan: GitAuditPlan, before: GitSnapshot | { failed: string }): GitAuditResult {
  if ('failed' in before) {
    const what = `the git state of ${plan.roots.join(', ')} could not be recorded before the run (${before.failed})`;
    return { violations: [violation(`${what}: inspect it before running git there`)], incomplete: true };
  }
  try {
    return audit(plan, before);
  } catch (error) {
    const detail = `the git state of ${plan.roots.join(', ')} could not be audited (${reason(error)}): inspect it before running git there`;
    return { violations: [violation(detail)], incomplete: true };
  }
}
