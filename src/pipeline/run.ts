// The run, stage by stage: prepare → trust → policy → secrets → gate → limits → session → egress →
// ssh-agent → launch → exec → ending → report. Each stage is a module of this directory with one job; this file
// only sequences them, records what the run has learnt (every refusal carries it), and owns the one
// cleanup stack that undoes whatever the stages created. docs/ARCHITECTURE.md draws the same line.
import { nowMs } from '../runtime/clock.js';
import { isSbxError, SbxError } from '../errors.js';
import { shellArgv } from '../policy/command-line.js';
import type { ResolvedProfile } from '../profile/load.js';
import { redactArgv } from '../report/ledger.js';
import type { Outcome } from '../report/outcome.js';
import { type AuditTrail, openAuditTrail } from '../runtime/audit-trail.js';
import { decideCommandOnHost } from '../runtime/command-gate.js';
import { openPins, type Pins } from '../runtime/pins.js';
import { newSessionId, plannedSession } from '../runtime/session.js';
import { type ChosenBackend, chooseBackend } from '../backend/registry.js';
import { CleanupStack } from './cleanup.js';
import { startEgress } from './egress.js';
import { startSshAgent } from './ssh-agent.js';
import { endingOf } from '../report/ending.js';
import { execute } from './exec.js';
import { gate } from './gate.js';
import { compileRunLaunch, plannedLaunch } from './launch.js';
import { enforcedLimits, planRunLimits } from './limits.js';
import {
  type CompileOptions,
  type Compiled,
  compileSettings,
  type KnownFacts,
  type RunHooks,
  type RunOptions,
  type RunSettings,
  runSettings,
} from './options.js';
import { outcomeOf } from './outcome.js';
import { type Derived, derive, liftedOf, withExposed } from './policy.js';
import { type Prepared, prepare } from './prepare.js';
import { loadRunSecrets } from './secrets.js';
import { openRunSession } from './session.js';
import { terminalWarnings } from './terminal.js';
import { locateError, locateViolations, ruleSourcesOf } from './sources.js';
import { describeProfile, trustProfile } from './trust.js';
import type { RuleSources } from '../profile/positions.js';

/** Everything up to the policy: what both run() and compile() do. */
interface Resolved {
  prepared: Prepared;
  profile: ResolvedProfile;
  backend: ChosenBackend;
  derived: Derived;
  pins: Pins;
  sources: RuleSources;
}

/** What a refusal is located with, once the profile is known (run.ts's catch reads it). */
interface Located {
  sources?: RuleSources;
}

/** Runs `body`, whose refusals (an SbxError) get the profile line of their rule once resolve() has learnt the sources. */
async function locating<T>(body: (located: Located) => Promise<T>): Promise<T> {
  const located: Located = {};
  try {
    return await body(located);
  } catch (error) {
    if (isSbxError(error) && located.sources) locateError(error, located.sources);
    throw error;
  }
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (!signal?.aborted) return;
  throw new SbxError('ABORTED', 'the run was aborted (options.signal) before the command started: nothing ran', {
    hint: 'the AbortSignal passed to run() had fired; call run() again with a signal that has not',
    cause: signal.reason,
  });
}

/** Stages prepare and trust: the pins, the prepared options and the trusted profile with its rule sources. */
async function trusted(options: CompileOptions, cleanup: CleanupStack, known: KnownFacts, located: Located) {
  // The pinned mount sources live as long as the run, whatever ends it.
  const pins = openPins();
  cleanup.defer(() => pins.close());
  const prepared = prepare(options);
  const profile = await trustProfile(options, prepared, known);
  const sources = ruleSourcesOf(options, profile.positions);
  located.sources = sources;
  return { pins, prepared, profile, sources };
}

/** Stages prepare, trust and policy; the backend is chosen once the profile (which may name one) is known. */
async function resolve(
  options: CompileOptions,
  cleanup: CleanupStack,
  known: KnownFacts,
  warm: boolean,
  located: Located = {},
): Promise<Resolved> {
  const { pins, prepared, profile, sources } = await trusted(options, cleanup, known, located);
  const choice = options.backend ?? profile.profile.backend ?? 'bwrap';
  const ctx = { env: prepared.env, cacheDir: prepared.search.cacheDir, uid: prepared.uid, choice };
  const backend = await chooseBackend(ctx);
  known.backend = backend.name;
  const derived = await derive({ options, resolved: profile, prepared, pins, sessionId: known.sessionId, warm });
  known.policyHash = derived.hash;
  return { prepared, profile, backend, derived, pins, sources };
}

/** Resolve and compile without running: the policy and the exact launcher argv. */
export async function compileRun(requested: CompileOptions): Promise<Compiled> {
  const options = compileSettings(requested);
  const known: KnownFacts = { sessionId: newSessionId(), profile: null };
  const cleanup = new CleanupStack();
  return locating(async (located) => {
    const r = await resolve(options, cleanup, known, false, located);
    const session = plannedSession(r.prepared.env, r.prepared.uid, known.sessionId);
    const launches = await plannedLaunch(r.backend, r.derived, session, r.prepared);
    const { policy, host } = r.derived;
    const decided = decideCommandOnHost(policy, host, options.allowDenylistedCommands);
    // `sbx explain --json` names each refusing rule's line, as a run's report would.
    const commandDecision =
      decided.verdict === 'deny'
        ? { ...decided, violations: locateViolations(decided.violations, r.sources) }
        : decided;
    const profile = describeProfile(r.profile);
    const lifted = withExposed(liftedOf(r.derived, options), await r.backend.exposed(policy));
    const launcher = r.backend.launcher;
    return { sessionId: known.sessionId, profile, policy, ...launches, launcher, commandDecision, lifted };
  }).finally(() => cleanup.unwind());
}

/**
 * Stages prepare, trust, policy and the gate, with no approver and no ledger: returns when run() with
 * these options would pass its gate (a remembered approval included), throws the refusal otherwise.
 * Nothing is created or run. `sbx hook` answers an agent with it; the wrapped `sbx run` judges again.
 */
export async function admitRun(requested: CompileOptions, hooks: RunHooks): Promise<void> {
  const options = compileSettings(requested);
  const known: KnownFacts = { sessionId: newSessionId(), profile: null };
  const cleanup = new CleanupStack();
  // Located as compile() and run() do, so the hook's deny names the rule's profile line.
  return locating(async (located) => {
    const r = await resolve(options, cleanup, known, false, located);
    await gate(options, hooks, r.derived, known.sessionId, []);
  }).finally(() => cleanup.unwind());
}

/**
 * Stages prepare, trust and policy only, with no launcher probed: the Policy an exporter compiles for
 * another engine (`sbx export`).
 */
export async function resolvePolicy(options: CompileOptions): Promise<Pick<Compiled, 'profile' | 'policy'>> {
  const known: KnownFacts = { sessionId: newSessionId(), profile: null };
  const cleanup = new CleanupStack();
  // Located as compile() does: a refusal while resolving the policy names its rule's profile line.
  return locating(async (located) => {
    const { pins, prepared, profile } = await trusted(options, cleanup, known, located);
    const derived = await derive({
      options,
      resolved: profile,
      prepared,
      pins,
      sessionId: known.sessionId,
      warm: false,
    });
    return { profile: describeProfile(profile), policy: derived.policy };
  }).finally(() => cleanup.unwind());
}

/** Stages secrets to report, on a resolved policy: everything a run creates is on `cleanup`. */
async function runResolved(
  r: Resolved,
  options: RunSettings,
  hooks: RunHooks,
  known: KnownFacts,
  trail: AuditTrail | undefined,
  cleanup: CleanupStack,
): Promise<Outcome> {
  const { policy, hash } = r.derived;
  hooks.checkPolicy?.(policy);
  throwIfAborted(options.signal);
  const audit = { profile: r.profile.name, policyHash: hash, backend: r.backend.name };
  const context = { ...audit, workspace: policy.workspace.host, secrets: [] as string[] };
  trail?.prepared(context, policy);
  const secretEnv = await loadRunSecrets(r.profile, r.derived, r.prepared);
  context.secrets.push(...Object.values(secretEnv));
  known.command = redactArgv(policy.command, context.secrets);
  await gate(options, hooks, r.derived, known.sessionId, context.secrets);
  // The approval may have taken a while.
  throwIfAborted(options.signal);
  const limits = await planRunLimits(policy);
  const session = openRunSession(r.prepared, known.sessionId, policy, secretEnv, cleanup);
  const proxy = await startEgress(policy, session, options, cleanup, r.backend.egressOn, r.prepared.uid);
  await startSshAgent(policy, session, r.prepared, cleanup);
  const { launch, limits: applied } = await compileRunLaunch(
    r.backend,
    r.derived,
    proxy?.ports ? { ...session, egressPorts: proxy.ports } : session,
    limits,
    r.prepared,
    cleanup,
  );
  // Said before the command starts, so it comes before anything the command could type.
  const warnings = terminalWarnings(policy.seccomp, r.derived.host.stdinIsTty);
  for (const warning of warnings) options.onNotice?.(`sbx: warning: ${warning}`);
  // Last check: the launch spawns synchronously, so an abort from here on reaches the running command.
  throwIfAborted(options.signal);
  const result = await execute(r.backend, launch, r.derived, session, options, r.pins, applied);
  const collected = applied ? await applied.collect() : { violations: [], peaks: {} };
  const egress = proxy?.stats();
  const ended = endingOf({
    status: result.status,
    timedOut: result.timedOut,
    interrupts: result.interrupts,
    observed: [...collected.violations, ...(egress?.violations ?? []), ...result.observed],
    limits: enforcedLimits(limits),
    seccomp: policy.seccomp.rules.length > 0,
  });
  const ending = { ...ended, violations: locateViolations(ended.violations, r.sources) };
  const approximations = await r.backend.approximations(policy);
  const profile = describeProfile(r.profile);
  const lifted = withExposed(liftedOf(r.derived, options), await r.backend.exposed(policy));
  const record = { sessionId: known.sessionId, profile, backend: r.backend.name, approximations, warnings, lifted };
  return outcomeOf({ ...record, derived: r.derived, secretEnv, limits, collected, egress, result, ending }, options);
}

/**
 * A whole run. Rejects with SbxError when sbx itself fails or refuses (bad profile, no sandbox, a
 * command rule, an abort before the start); the error's `run` names the session and what was known.
 */
export async function runPipeline(requested: RunOptions, hooks: RunHooks = {}): Promise<Outcome> {
  const options = runSettings(requested);
  const warm = hooks.warm ?? false;
  const started = nowMs();
  const known: KnownFacts = { sessionId: newSessionId(), profile: null };
  const trail = options.audit
    ? openAuditTrail(options.audit.file, known.sessionId, options.profile ?? 'default')
    : undefined;
  const cleanup = new CleanupStack();
  const located: Located = {};
  try {
    throwIfAborted(options.signal);
    const capture = options.stdio === 'capture' ? { tty: false } : {};
    const r = await resolve({ ...options, ...capture }, cleanup, known, warm, located);
    const outcome = await runResolved(r, options, hooks, known, trail, cleanup);
    await cleanup.unwind();
    trail?.ran(outcome);
    return outcome;
  } catch (error) {
    await cleanup.unwind().catch(() => {});
    if (isSbxError(error)) {
      error.run ??= { ...known, durationMs: nowMs() - started };
      if (located.sources) locateError(error, located.sources);
      // Refusals are the records an auditor looks for first.
      trail?.refused(error, options.shell !== undefined ? shellArgv(options.shell) : (options.command ?? []));
    }
    throw error;
  }
}
