// Stage 9, launch: the Policy compiled by the run's backend into the exact Launch, then wrapped to
// start inside the run's cgroup when it has limits (runtime/cgroup/apply.ts).
import type { Launch, Session } from '../backend/launch.js';
import type { PreparedLimits } from '../runtime/cgroup/apply.js';
import type { Backend, Launcher } from './backends.js';
import type { CleanupStack } from './cleanup.js';
import { cgroupHost, type PlannedLimits } from './limits.js';
import type { Derived } from './policy.js';
import type { RunContext } from './context.js';

export interface Launched {
  launch: Launch;
  /** The cgroup side of the limits: collected after the run. */
  limits?: PreparedLimits;
}

export async function compileRunLaunch({
  ctx,
  backend,
  launcher,
  derived,
  session,
  planned,
  cleanup,
}: {
  ctx: RunContext;
  backend: Backend;
  launcher: Launcher;
  derived: Derived;
  session: Session;
  planned: PlannedLimits | undefined;
  cleanup: CleanupStack;
}): Promise<Launched> {
  const launch = await backend.compile(derived.policy, session, launcher, derived.host, ctx.arch);
  if (!planned) return { launch };
  // The environment and uid the plan was probed with (pipeline/limits.ts): one host view per run.
  const host = cgroupHost(ctx);
  await planned.apply.sweepStaleCgroups(host);
  const limits = await planned.apply.prepareLimits(planned.plan, session, host);
  cleanup.defer(() => limits.cleanup());
  return { launch: { ...launch, ...limits.wrap(launch) }, limits };
}
