// Stage 9, launch: the Policy compiled by the run's backend into the exact Launch, then wrapped to
// start inside the run's cgroup when it has limits (limits/host/cgroup/apply.ts). compile() shows the same
// launch, wrapper included, with nothing created (plannedLaunch).
import type { Launch, Session } from '../backend/launch.js';
import type { ChosenBackend } from '../backend/host/registry.js';
import { isSbxError } from '../errors.js';
import type { LauncherLimits } from '../limits/types.js';
import type { PreparedLimits } from '../limits/host/cgroup/apply.js';
import type { CleanupStack } from './cleanup.js';
import { cgroupHost, type PlannedLimits, planRunLimits } from './limits-stage.js';
import type { Derived } from './policy-stage.js';
import type { RunContext } from './context-stage.js';

export interface Launched {
  launch: Launch;
  /** The cgroup side of the limits: collected after the run. */
  limits?: PreparedLimits;
}

export async function compileRunLaunch({
  ctx,
  backend,
  derived,
  session,
  planned,
  cleanup,
}: {
  ctx: RunContext;
  backend: ChosenBackend;
  derived: Derived;
  session: Session;
  planned: PlannedLimits | undefined;
  cleanup: CleanupStack;
}): Promise<Launched> {
  const launch = await backend.compile(derived.policy, session, derived.host, ctx.arch);
  if (!planned) return { launch };
  // The environment and uid the plan was probed with (pipeline/limits-stage.ts): one host view per run.
  const host = cgroupHost(ctx);
  await planned.apply.sweepStaleCgroups(host);
  const limits = await planned.apply.prepareLimits(planned.plan, session, { ...host, ...launcherShare(backend) });
  cleanup.defer(() => limits.cleanup());
  const own = backend.commandLimits ? await backend.commandLimits.into(launch, limits.command) : launch;
  return { launch: { ...own, ...limits.wrap(own) }, limits };
}

/**
 * What the backend's launcher applies to the command alone (Backend.commandLimits): the wrapper leaves
 * it out, so the launcher's supervising process never shares a limit with the command.
 */
function launcherShare(backend: ChosenBackend): { launcher?: LauncherLimits } {
  return backend.commandLimits ? { launcher: backend.commandLimits.applies } : {};
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
export async function plannedLaunch({
  ctx,
  backend,
  derived,
  session,
}: {
  ctx: RunContext;
  backend: ChosenBackend;
  derived: Derived;
  session: Session;
}): Promise<PlannedLaunch> {
  const launch = await backend.compile(derived.policy, session, derived.host, ctx.arch);
  let planned: PlannedLimits | undefined;
  try {
    planned = await planRunLimits({ ctx, policy: derived.policy });
    if (!planned) return { launch };
    const wrapper = planned.apply.planLimitsWrapper(planned.plan, session.id, {
      ...cgroupHost(ctx),
      ...launcherShare(backend),
    });
    const own = backend.commandLimits ? await backend.commandLimits.into(launch, wrapper.command) : launch;
    if (!wrapper.wraps) return { launch: own };
    return { launch: { ...own, ...wrapper.wrap(own) }, launcherLaunch: own };
  } catch (error) {
    if (!isSbxError(error)) throw error;
    return { launch };
  }
}
