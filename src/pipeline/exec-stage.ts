// Stage 10, exec: the Launch spawned and waited for (backend/host/exec.ts), then read by its backend: how
// the command ended, or the SbxError of a sandbox that was never built; and what the sandbox's own
// network namespace counted (network/host/net-counters.ts): attempts to leave it that found no route.
import type { Launch, Session } from '../backend/launch.js';
import type { PreparedLimits } from '../limits/host/cgroup/apply.js';
import { execLaunch } from '../backend/host/exec.js';
import { sandboxNetCounters } from '../network/host/net-counters.js';
import { capturesConnects } from '../backend/shared/bridge.js';
import type { Pins } from '../host/pins.js';
import type { Violation } from '../policy/violation.js';
import type { ChosenBackend, LaunchResult } from '../backend/host/registry.js';
import type { RunContext } from './context-stage.js';
import type { Derived } from './policy-stage.js';

export async function execute({
  ctx,
  backend,
  launch,
  derived,
  session,
  pins,
  limits,
}: {
  ctx: RunContext;
  backend: ChosenBackend;
  launch: Launch;
  derived: Derived;
  session: Session;
  pins: Pins;
  limits: PreparedLimits | undefined;
}): Promise<LaunchResult> {
  const { options } = ctx;
  const timeoutMs = derived.policy.limits.timeoutMs;
  const counters = sandboxNetCounters(derived.policy.network, capturesConnects(derived.policy));
  let unreachable: Violation[] = [];
  // Read once the sandbox has ended, whatever the launch came to: the counters' files are closed here.
  const launched = execLaunch(launch, {
    stdio: options.stdio,
    ...(options.input !== undefined ? { input: options.input } : {}),
    forwardSignals: options.forwardSignals,
    ...(ctx.signals ? { signals: ctx.signals } : {}),
    ...(ctx.stdioFrom ? { stdioFrom: ctx.stdioFrom } : {}),
    tty: derived.host.stdinIsTty,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...backend.execOptions(session),
    pins,
    ...(limits ? { watch: limits.watch } : {}),
    ...(counters ? { onSandbox: counters.open } : {}),
  });
  let result: Awaited<typeof launched>;
  try {
    result = await launched;
  } finally {
    unreachable = counters?.collect() ?? [];
  }
  const read = await backend.read(result, derived.host);
  return unreachable.length > 0 ? { ...read, observed: [...read.observed, ...unreachable] } : read;
}
