// Stage 9, launch: the Policy compiled by the run's backend into the exact Launch, then wrapped to
// start inside the run's cgroup when it has limits (runtime/cgroup/apply.ts). compile() shows the same
// launch, wrapper included, with nothing created (plannedLaunch).
import type { Launch, Session } from '../backend/launch.js';
import type { ChosenBackend } from '../backend/registry.js';
import { isSbxError } from '../errors.js';
import type { PreparedLimits } from '../runtime/cgroup/apply.js';
import type { CleanupStack } from './cleanup.js';
import { type PlannedLimits, planRunLimits } from './limits.js';
import type { Derived } from './policy.js';
import type { Prepared } from './prepare.js';

export interface Launched {
  launch: Launch;
  /** The cgroup side of the limits: collected after the run. */
  limits?: PreparedLimits;
}

export async function compileRunLaunch(
  backend: ChosenBackend,
  derived: Derived,
  session: Session,
  planned: PlannedLimits | undefined,
  p: Prepared,
  cleanup: CleanupStack,
): Promise<Launched> {
  const launch = await backend.compile(derived.policy, session, derived.host);
  if (!planned) return { launch };
  await planned.apply.sweepStaleCgroups();
  const limits = await planned.apply.prepareLimits(planned.plan, session, { env: p.env });
  cleanup.defer(() => limits.cleanup());
  return { launch: { ...launch, ...limits.wrap(launch) }, limits };
}

/** compile()'s launch: what run() would spawn, the limits wrapper included. */
export interface PlannedLaunch {
  launch: Launch;
  /** The backend's own launch, which `launch` starts through the wrapper; absent when nothing wraps it. */
  launcherLaunch?: Launch;
}

/**
 * Stages 6 and 9 as compile() sees them: the limits planned as run() plans them and the launch wrapped
 * the same way, with no cgroup created. Limits run() would refuse (stage 6) leave the launch unwrapped:
 * such a run spawns nothing, and `sbx explain` says why (its limits lines).
 */
export async function plannedLaunch(
  backend: ChosenBackend,
  derived: Derived,
  session: Session,
  p: Prepared,
): Promise<PlannedLaunch> {
  const launch = await backend.compile(derived.policy, session, derived.host);
  let planned: PlannedLimits | undefined;
  try {
    planned = await planRunLimits(derived.policy);
    if (!planned) return { launch };
    const wrapper = planned.apply.planLimitsWrapper(planned.plan, session.id, { env: p.env });
    return { launch: { ...launch, ...wrapper.wrap(launch) }, launcherLaunch: launch };
  } catch (error) {
    if (!isSbxError(error)) throw error;
    return { launch };
  }
}
