// Stage 12, report: the Outcome a run returns (and the CLI turns into its summary and JSON report):
// the ending, the limits as planned and what they measured, the proxy's account, what was masked and
// dropped, and captured output bounded and scrubbed of secret values.
import type { PlannedLimit } from '../limits/plan.js';
import { isCredentialName } from '../env/env.js';
import type { Violation } from '../policy/violation.js';
import { redactArgv } from '../report/host/ledger.js';
import type { CapturedText, Lifted, Outcome } from '../report/outcome.js';
import type { CollectedLimits } from '../limits/host/cgroup/apply.js';
import type { EgressStats } from '../network/host/index.js';
import type { LaunchResult } from '../backend/host/registry.js';
import type { Ending } from '../report/ending.js';
import type { PlannedLimits } from './limits-stage.js';
import type { RunContext } from './context-stage.js';
import type { ProfileInfo } from './run-options.js';
import type { Derived } from './policy-stage.js';

/** Everything the run produced, from its context to its ending. */
export interface OutcomeInput {
  ctx: RunContext;
  profile: ProfileInfo;
  backend: Outcome['backend'];
  approximations: string[];
  warnings: string[];
  lifted: Lifted;
  derived: Derived;
  /** The values no report may show: the secrets', and the credentials' (which the command never held). */
  secrets: readonly string[];
  limits: PlannedLimits | undefined;
  collected: CollectedLimits;
  egress: EgressStats | undefined;
  result: LaunchResult;
  ending: Ending;
}

/** A planned limit as the report shows it: what was asked, what enforced it, and why not exactly. */
function reportedLimit(l: PlannedLimit): NonNullable<Outcome['limits']>[number] {
  const { name, display: value, value: base, mechanism, exact, enforced, gap } = l;
  return { name, value, base, mechanism, exact, enforced, ...(gap ? { reason: gap } : {}) };
}

/** Capture mode only: the scrubber's patterns are not loaded for a plain run. */
async function capturedView(r: OutcomeInput): Promise<Outcome['captured']> {
  const { stdout, stderr, streamBytes, tails } = r.result;
  if (!stdout || !stderr) return undefined;
  const { scrubCapture, scrubbedValues } = await import('../report/scrub.js');
  const credentials = Object.fromEntries(Object.entries(r.derived.host.env).filter(([name]) => isCredentialName(name)));
  const secrets = scrubbedValues(credentials, r.secrets);
  const view = (buf: Buffer, total: number, tail: Buffer | undefined): CapturedText => {
    const limit = r.ctx.options.captureLimitBytes;
    const { text, droppedBytes, hits } = scrubCapture(buf, limit, { secrets }, total, tail ? { tail } : {});
    return { text, droppedBytes, redactions: hits };
  };
  return {
    stdout: view(stdout, streamBytes?.stdout ?? stdout.length, tails?.stdout),
    stderr: view(stderr, streamBytes?.stderr ?? stderr.length, tails?.stderr),
  };
}

/** What the policy masked, but for what the backend left readable (pipeline/policy-stage.ts withExposed). */
function maskedPaths(r: OutcomeInput): string[] {
  const shown = new Set(r.lifted.unmasked.map((u) => u.path));
  return r.derived.policy.mounts.flatMap((m) =>
    (m.kind === 'mask' || m.kind === 'file') && m.role === 'secret' && !shown.has(m.target) ? [m.target] : [],
  );
}

export async function outcomeOf(r: OutcomeInput): Promise<Outcome> {
  const { policy, hash } = r.derived;
  const { ending, result, egress, collected } = r;
  const captured = await capturedView(r);
  const violations: Violation[] = ending.violations;
  return {
    sessionId: r.ctx.sessionId,
    profile: r.profile,
    backend: r.backend,
    ...(r.approximations.length > 0 ? { approximations: r.approximations } : {}),
    ...(r.warnings.length > 0 ? { warnings: r.warnings } : {}),
    policyHash: hash,
    // A secret typed on the command line is still a secret: reports and the ledger show a marker.
    command: redactArgv(policy.command, r.secrets),
    exitCode: ending.exitCode,
    setBy: ending.setBy,
    ...(ending.signal ? { signal: ending.signal } : {}),
    ...(ending.interruptedBy ? { interruptedBy: ending.interruptedBy } : {}),
    durationMs: result.durationMs,
    violations,
    ...(r.limits ? { limits: r.limits.plan.limits.map(reportedLimit) } : {}),
    ...(Object.keys(collected.peaks).length > 0 ? { peaks: collected.peaks } : {}),
    ...(egress ? { network: { connections: egress.connections, violationsDropped: egress.violationsDropped } } : {}),
    droppedEnv: policy.env.dropped.map((d) => d.name),
    secrets: policy.env.secrets,
    masked: maskedPaths(r),
    lifted: r.lifted,
    ...(result.stdout ? { stdout: result.stdout, stderr: result.stderr! } : {}),
    ...(captured ? { captured } : {}),
  };
}
