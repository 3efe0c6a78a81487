// The run, stage by stage: context → trust → policy → secrets → credentials → gate → limits → session → egress →
// ssh-agent → launch → exec → ending → report. Each stage is a module of this directory with one job
// and one argument (the frozen RunContext and what earlier stages produced); this file only sequences
// them, appends what each learnt to the run's record (every refusal carries it), and owns the one
// cleanup stack that undoes whatever the stages created. docs/ARCHITECTURE.md draws the same line.
import { nowMs } from '../host/clock.js';
import { isSbxError, SbxError } from '../errors.js';
import { shellArgv } from '../policy/command-line.js';
import type { ResolvedProfile } from '../profile/host/load.js';
import { redactArgv } from '../report/host/ledger.js';
import type { Outcome } from '../report/outcome.js';
import { type AuditTrail, openAuditTrail } from '../report/host/audit-trail.js';
import { decideCommandOnHost } from '../commands/host/command-gate.js';
import { openPins, type Pins } from '../host/pins.js';
import { newSessionId, plannedSession } from '../host/session.js';
import { type ChosenBackend, chooseBackend } from '../backend/host/registry.js';
import { captureWarning } from '../backend/shared/bridge.js';
import { CleanupStack } from './cleanup.js';
import { startEgress } from './egress-stage.js';
import { startSshAgent } from './ssh-agent-stage.js';
import { endingOf } from '../report/ending.js';
import { execute } from './exec-stage.js';
import { gate } from './gate-stage.js';
import { auditRunGitState, recordGitState } from './git-audit-stage.js';
import { compileRunLaunch, plannedLaunch } from './launch-stage.js';
import { enforcedLimits, planRunLimits } from './limits-stage.js';
import type { CompileOptions, Compiled, ProfileInfo, RunHooks, RunOptions } from './run-options.js';
import { outcomeOf } from './outcome-stage.js';
import { type Derived, derive, liftedOf, withExposed } from './policy-stage.js';
import { type RunContext, runContext, runSettings } from './context-stage.js';
import { RunRecord } from './record.js';
import { loadRunCredentials } from './credentials-stage.js';
import { loadRunSecrets } from './secrets-stage.js';
import { openRunSession } from './session-stage.js';
import { terminalWarnings } from './terminal.js';
import { pathWarning, writablePathEntries } from '../host-state/host/path-entries.js';
import { locateAnswer, locateError, locateViolations, ruleSourcesOf } from './sources.js';
import { whyCommand, whyHost, whyPath, type WhyAnswer } from '../policy/why.js';
import type { Policy } from '../policy/types.js';
import type { NetworkRequest } from '../network/network-asks.js';
import { describeProfile, trustProfile } from './trust-stage.js';
import type { RuleSources } from '../profile/positions.js';

/** Everything up to the policy: what both run() and compile() do. */
interface Resolved {
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

/** One run's own state besides its context: what it has learnt, what undoes it, where its rules were written. */
interface Run {
  ctx: RunContext;
  record: RunRecord;
  cleanup: CleanupStack;
  located: Located;
}

/** Stage trust: the pins and the trusted profile with its rule sources. */
async function trusted({ ctx, record, cleanup, located }: Run) {
  // The pinned mount sources live as long as the run, whatever ends it.
  const pins = openPins();
  cleanup.defer(() => pins.close());
  const { resolved, profile } = await trustProfile({ ctx });
  record.append({ profile });
  const sources = ruleSourcesOf(ctx.options, resolved.positions);
  located.sources = sources;
  return { pins, resolved, sources };
}

/** Stages trust and policy; the backend is chosen once the profile (which may name one) is known. */
async function resolve(run: Run): Promise<Resolved> {
  const { ctx, record } = run;
  const { pins, resolved, sources } = await trusted(run);
  const choice = ctx.options.backend ?? resolved.profile.backend ?? 'bwrap';
  const exposed = ctx.search.trust?.exposed ?? [];
  const probe = { env: ctx.env, cacheDir: ctx.search.cacheDir, uid: ctx.uid, choice, exposed };
  const backend = await chooseBackend(probe);
  record.append({ backend: backend.name });
  const derived = await derive({ ctx, resolved, pins });
  record.append({ policyHash: derived.hash });
  return { profile: resolved, backend, derived, pins, sources };
}

/** A run that records nothing and runs nothing (compile, admit, resolvePolicy): its context, a record and a cleanup stack. */
async function dryRun<T>(requested: CompileOptions, hooks: RunHooks, body: (run: Run) => Promise<T>): Promise<T> {
  const record = new RunRecord(newSessionId());
  const cleanup = new CleanupStack();
  return locating(async (located) => {
    const ctx = runContext(requested, hooks, record.sessionId);
    return body({ ctx, record, cleanup, located });
  }).finally(() => cleanup.unwind());
}

/** Resolve and compile without running: the policy and the exact launcher argv. */
export async function compileRun(requested: CompileOptions): Promise<Compiled> {
  return dryRun(requested, {}, async (run) => {
    const { ctx } = run;
    const r = await resolve(run);
    const session = plannedSession(ctx.env, ctx.uid, ctx.sessionId);
    const launches = await plannedLaunch({ ctx, backend: r.backend, derived: r.derived, session });
    const { policy, host } = r.derived;
    const decided = decideCommandOnHost(policy, host, ctx.options.allowDenylistedCommands);
    // `sbx explain --json` names each refusing rule's line, as a run's report would.
    const commandDecision =
      decided.verdict === 'deny'
        ? { ...decided, violations: locateViolations(decided.violations, r.sources) }
        : decided;
    const profile = describeProfile(r.profile);
    const lifted = withExposed(liftedOf(r.derived, ctx.options), await r.backend.exposed(policy));
    const launcher = r.backend.launcher;
    const remembered = await rememberedFor(run, policy);
    return { sessionId: ctx.sessionId, profile, policy, ...launches, launcher, commandDecision, lifted, remembered };
  });
}

/**
 * The destinations answered `always` for this profile in earlier runs, which a run under an allow list
 * adds to it (network/host/run-questions.ts); none for another network.
 */
async function rememberedFor(run: Run, policy: Policy): Promise<NetworkRequest[]> {
  if (policy.network.kind !== 'filtered') return [];
  const store = { stateHome: run.ctx.dirs.stateHome, uid: run.ctx.uid, workspace: policy.workspace.host };
  const notice = (line: string) => run.ctx.options.onNotice?.(line);
  const { rememberedDestinations } = await import('../network/host/run-questions.js');
  return rememberedDestinations(store, policy.profile.name, notice);
}

/**
 * Stages context, trust, policy and the gate, with no approver and no ledger: returns when run() with
 * these options would pass its gate (a remembered approval included), with the workspace it would
 * sandbox (its real path), and throws the refusal otherwise. Nothing is created or run. `sbx hook`
 * answers an agent with it; the wrapped `sbx run` judges again.
 */
export async function admitRun(requested: CompileOptions, hooks: RunHooks): Promise<{ workspace: string }> {
  // Located as compile() and run() do, so the hook's deny names the rule's profile line.
  return dryRun(requested, hooks, async (run) => {
    const r = await resolve(run);
    await gate({ ctx: run.ctx, derived: r.derived, secrets: [] });
    return { workspace: r.derived.policy.workspace.host };
  });
}

/**
 * Stages context, trust and policy only, with no launcher probed: the Policy an exporter compiles for
 * another engine (`sbx export`).
 */
export async function resolvePolicy(requested: CompileOptions): Promise<Pick<Compiled, 'profile' | 'policy'>> {
  // Located as compile() does: a refusal while resolving the policy names its rule's profile line.
  return dryRun(requested, {}, async (run) => {
    const { pins, resolved } = await trusted(run);
    const derived = await derive({ ctx: run.ctx, resolved, pins });
    return { profile: describeProfile(resolved), policy: derived.policy };
  });
}

/** What `sbx why` asks about: a host path (as the caller named it, and resolved), a host, or the request's command. */
export type WhyTarget =
  | { kind: 'path'; target: string; hostPath: string }
  | { kind: 'host'; target: string }
  | { kind: 'command' };

/**
 * Stages context, trust and policy, with no launcher probed, then each target judged over the Policy
 * (policy/why.ts; the command by the gate's own verdict, with the path facts it probes) and its rule
 * located in the profile. Nothing is created or run, nothing asked or recorded.
 */
export async function whyRun(
  requested: CompileOptions,
  targets: readonly WhyTarget[],
): Promise<{ profile: ProfileInfo; answers: WhyAnswer[] }> {
  return dryRun(requested, {}, async (run) => {
    const { pins, resolved, sources } = await trusted(run);
    const { policy, host, plan } = await derive({ ctx: run.ctx, resolved, pins });
    const facts = { policy, profile: resolved.profile, plan, host };
    const remembered = await rememberedFor(run, policy);
    const answers = targets.map((t) => {
      if (t.kind === 'path') return whyPath(facts, t.target, t.hostPath);
      if (t.kind === 'host') return whyHost(policy, t.target, remembered, requested.allowDomains?.length ?? 0);
      const decided = decideCommandOnHost(policy, host, run.ctx.options.allowDenylistedCommands, true);
      return whyCommand(policy.shell === undefined ? policy.command : [policy.shell], decided);
    });
    return { profile: describeProfile(resolved), answers: answers.map((a) => locateAnswer(a, sources)) };
  });
}

/** Stages secrets to report, on a resolved policy: everything a run creates is on `cleanup`. */
async function runResolved(
  r: Resolved,
  { ctx, record, cleanup }: Run,
  trail: AuditTrail | undefined,
): Promise<Outcome> {
  const { options } = ctx;
  const { policy, hash } = r.derived;
  ctx.checkPolicy?.(policy);
  throwIfAborted(options.signal);
  trail?.prepared(
    { profile: r.profile.name, policyHash: hash, backend: r.backend.name, workspace: policy.workspace.host },
    policy,
  );
  const secretEnv = await loadRunSecrets({ ctx, resolved: r.profile, derived: r.derived });
  const credentials = await loadRunCredentials({ ctx, policy, secretEnv, trail });
  const secrets = [...Object.values(secretEnv), ...(credentials?.values ?? [])];
  trail?.redact(secrets);
  const command = redactArgv(policy.command, secrets);
  record.append({ command });
  await gate({ ctx, derived: r.derived, secrets });
  // The approval may have taken a while.
  throwIfAborted(options.signal);
  const limits = await planRunLimits({ ctx, policy });
  // The placeholders are set inside as secrets are; their values stay with the proxy.
  const opened = openRunSession({ ctx, policy, secretEnv: { ...secretEnv, ...credentials?.placeholders }, cleanup });
  const proxy = await startEgress({ ctx, policy, session: opened, backend: r.backend, credentials, command, cleanup });
  await startSshAgent({ ctx, policy, session: opened, cleanup });
  const session = proxy?.ports ? { ...opened, egressPorts: proxy.ports } : opened;
  const { backend, derived, pins } = r;
  const { launch, limits: applied } = await compileRunLaunch({
    ctx,
    backend,
    derived,
    session,
    planned: limits,
    cleanup,
  });
  // Said before the command starts, so it comes before anything the command could type.
  const warnings = [
    ...terminalWarnings(policy.seccomp, derived.host.stdinIsTty),
    ...pathWarning(writablePathEntries(ctx.env.PATH, ctx.cwd, policy)),
    ...captureWarning(policy),
  ];
  for (const warning of warnings) options.onNotice?.(`sbx: warning: ${warning}`);
  // Last check: the launch spawns synchronously, so an abort from here on reaches the running command.
  throwIfAborted(options.signal);
  const gitState = recordGitState({ ctx, policy, cleanup });
  ctx.onLaunch?.(ctx.sessionId);
  const result = await execute({ ctx, backend, launch, derived, session, pins, limits: applied });
  const git = auditRunGitState(gitState);
  const collected = applied ? await applied.collect() : { violations: [], peaks: {} };
  const egress = proxy?.stats();
  const ended = endingOf({
    status: result.status,
    timedOut: result.timedOut,
    interrupts: result.interrupts,
    observed: [...collected.violations, ...(egress?.violations ?? []), ...result.observed, ...git.violations],
    limits: enforcedLimits(limits),
    seccomp: policy.seccomp.rules.length > 0,
  });
  const ending = git.ended({ ...ended, violations: locateViolations(ended.violations, r.sources) });
  const approximations = await backend.approximations(policy);
  const profile = describeProfile(r.profile);
  const lifted = withExposed(liftedOf(derived, options), await backend.exposed(policy));
  return outcomeOf({
    ctx,
    profile,
    backend: backend.name,
    approximations,
    warnings,
    lifted,
    derived,
    secrets,
    limits,
    collected,
    egress,
    result,
    ending,
  });
}

/**
 * A whole run. Rejects with SbxError when sbx itself fails or refuses (bad profile, no sandbox, a
 * command rule, an abort before the start); the error's `run` names the session and what was known.
 */
export async function runPipeline(requested: RunOptions, hooks: RunHooks = {}): Promise<Outcome> {
  const started = nowMs();
  const record = new RunRecord(newSessionId());
  // The ledger opens before the context: a refusal while building it (a malformed trusted hash) is recorded too.
  const settings = runSettings(requested);
  const { audit } = settings;
  const trail = audit ? openAuditTrail(audit.file, record.sessionId, settings.profile, requested.onNotice) : undefined;
  const cleanup = new CleanupStack();
  const located: Located = {};
  try {
    throwIfAborted(requested.signal);
    const ctx = runContext(requested, hooks, record.sessionId, settings);
    const run = { ctx, record, cleanup, located };
    const r = await resolve(run);
    const outcome = await runResolved(r, run, trail);
    await cleanup.unwind();
    trail?.ran(outcome);
    return outcome;
  } catch (error) {
    await cleanup.unwind().catch(() => {});
    if (isSbxError(error)) {
      error.run ??= { ...record.known(), durationMs: nowMs() - started };
      if (located.sources) locateError(error, located.sources);
      // Refusals are the records an auditor looks for first.
      trail?.refused(error, requested.shell !== undefined ? shellArgv(requested.shell) : (requested.command ?? []));
    }
    throw error;
  }
}
