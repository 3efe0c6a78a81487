// Stage 10, exec: the Launch spawned and waited for (backend/host/exec.ts), then read by its backend: how
// the command ended, or the SbxError of a sandbox that was never built.
import type { Launch, Session } from '../backend/launch.js';
import type { PreparedLimits } from '../limits/host/cgroup/apply.js';
import { execLaunch } from '../backend/host/exec.js';
import type { Pins } from '../host/pins.js';
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
  const result = await execLaunch(launch, {
    stdio: options.stdio,
    ...(options.input !== undefined ? { input: options.input } : {}),
    forwardSignals: options.forwardSignals,
    tty: derived.host.stdinIsTty,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...backend.execOptions(session),
    pins,
    ...(limits ? { watch: limits.watch } : {}),
  });
  return backend.read(result, derived.host);
}
