// Stage 6, limits: each limit given the mechanism that will enforce it on this host (limits/plan.ts),
// before anything is created: a `required` limit this host cannot enforce refuses the run here. The
// cgroup machinery loads only for runs that have limits: the plain launch path stays lean.
import type { LimitPlan } from '../limits/plan.js';
import type { Policy } from '../policy/types.js';
import type { RunContext } from './context-stage.js';

export interface PlannedLimits {
  plan: LimitPlan;
  /** The cgroup side (limits/host/cgroup/apply.ts), loaded with the plan. */
  apply: typeof import('../limits/host/cgroup/apply.js');
}

function hasLimits(limits: Policy['limits']): boolean {
  return Object.entries(limits).some(([key, value]) => key !== 'required' && value !== undefined);
}

/** What the cgroup machinery reads of the invoking process (limits/host/cgroup/probe.ts, apply.ts). */
export interface CgroupHost {
  env: Readonly<Record<string, string | undefined>>;
  uid: number;
}

/** The run context's: the one environment and uid a run plans, sweeps and applies its limits with. */
export function cgroupHost(ctx: RunContext): CgroupHost {
  return { env: ctx.env, uid: ctx.uid };
}

/** The plan on a host as `host` sees it; `sbx explain` passes its own process's. */
export async function planLimitsOn(policy: Policy, host: CgroupHost): Promise<PlannedLimits | undefined> {
  if (!hasLimits(policy.limits)) return undefined;
  const [{ planLimits }, { probeCgroupFacts }, apply] = await Promise.all([
    import('../limits/plan.js'),
    import('../limits/host/cgroup/probe.js'),
    import('../limits/host/cgroup/apply.js'),
  ]);
  return { plan: planLimits(policy.limits, probeCgroupFacts(host)), apply };
}

/**
 * Probed with the context's environment and uid, the ones the launch stage applies the plan with
 * (pipeline/launch-stage.ts): the systemd manager this probe finds is the one the scope is asked of.
 */
export function planRunLimits({
  ctx,
  policy,
}: {
  ctx: RunContext;
  policy: Policy;
}): Promise<PlannedLimits | undefined> {
  return planLimitsOn(policy, cgroupHost(ctx));
}

/** The limits the ending may blame a signal on: the planned ones that are enforced, as the user wrote them. */
export function enforcedLimits(limits: PlannedLimits | undefined): Record<string, string> {
  const enforced = limits?.plan.limits.filter((l) => l.enforced) ?? [];
  return Object.fromEntries(enforced.map((l) => [l.name, l.display]));
}
