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
  limits?: WalkLimits;
}

export interface GitAuditResult {
  violations: Violation[];
  /** Part of the git state was not audited or not repaired: sbx exits 125. */
  incomplete: boolean;
}

/** The plan for `roots`: git's two global config files under the invoking user's HOME and XDG config dir. */
export function planGitAudit(
  roots: readonly string[],
  dirs: { home: string; configHome: string },
  session: string,
  uid: number,
): GitAuditPlan {
  const globalConfigs = [posix.join(dirs.home, '.gitconfig'), posix.join(dirs.configHome, 'git', 'config')];
  return { roots, home: dirs.home, globalConfigs, session, uid };
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

/** Before the run. An error here leaves the audit to say so after the run. */
export function snapshotGitState(plan: GitAuditPlan): GitSnapshot | { failed: string } {
  try {
    return walk(plan);
  } catch (error) {
    return { failed: reason(error) };
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
