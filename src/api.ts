// The library door (`import { run, compile } from 'sbx-sandbox'`): options checked by a strict schema
// (api-options.ts), then the pipeline (pipeline/run.ts) that sbx's own CLI also uses.
import type { Outcome } from './report/outcome.js';
import type { Compiled, CompileOptions, ProfileInfo, RunHooks, RunOptions } from './pipeline/run-options.js';
import type { WhyAnswer } from './policy/why.js';
import { admitRun, compileRun, resolvePolicy, runPipeline, whyRun, type WhyTarget } from './pipeline/run.js';

export { SbxError, ExitCode } from './errors.js';
export type { Policy, Mount, MountRole } from './policy/types.js';
export type { Violation } from './policy/violation.js';
export type { WhyAnswer } from './policy/why.js';
export type { WhyTarget } from './pipeline/run.js';
export type { Outcome } from './report/outcome.js';
export type { Launch } from './backend/launch.js';
export type { RunRequest } from './policy/derive/request.js';
export type { CredentialEntry, Credentials } from './profile/schema-credentials.js';
export type { ApprovalAnswer, ApprovalRequest, Approver } from './commands/host/command-gate.js';
export type { NetworkAnswer, NetworkAsker, NetworkRequest } from './network/network-asks.js';
export type { RunFacts } from './errors.js';
export type { CommandDecision } from './commands/command-rules.js';
export type { BackendChoice, Launcher } from './backend/host/registry.js';
export type { Compiled, CompileOptions, ProfileInfo, RunHooks, RunOptions } from './pipeline/run-options.js';
export { DEFAULT_CAPTURE_LIMIT_BYTES } from './pipeline/run-options.js';
export { landlockHelperPath } from './backend/landlock/host/backend.js';
export { profileSearch } from './profile/host/profile-search.js';
export { VERSION } from './version.js';
export { appendAuditRecord, readAuditRecords, ledgerPath } from './report/host/ledger.js';
export type { AuditRecord } from './report/ledger-line.js';

/**
 * Run a command in the sandbox. Rejects with SbxError when sbx itself fails (bad options, bad profile,
 * no sandbox, a refusal, an abort before the start); the error's `run` names the session.
 */
export async function run(options: RunOptions): Promise<Outcome> {
  const checked = (await import('./api-options.js')).checkRunOptions(options);
  // A library caller is long-lived: host walks stay warm between its runs (host/warm-cache.ts), unless
  // SBX_NO_CACHE (in hostEnv or this process's environment) asks for every cache off.
  const warm = !checked.hostEnv?.SBX_NO_CACHE && !process.env.SBX_NO_CACHE;
  return runPipeline(checked, { warm });
}

/**
 * run() without the option check: for sbx's own CLI, whose options come from its typed parser
 * (src/cli/run-flags.ts) and which cannot afford zod on every launch. Library callers use run().
 */
export function runUnchecked(options: RunOptions, hooks: RunHooks = {}): Promise<Outcome> {
  return runPipeline(options, { door: 'cli', ...hooks });
}

/**
 * Whether `sbx run` with these options would pass its gate (nothing asked, nothing recorded, nothing
 * run), and the workspace it would sandbox: for sbx's own `sbx hook`, whose options come from its
 * parser. Throws the refusal. `warm`: the warm server, long-lived, keeps host walks as the library does.
 */
export function admitUnchecked(options: CompileOptions, warm = false): Promise<{ workspace: string }> {
  return admitRun(options, { door: 'cli', warm });
}

/**
 * compile() without the option check: for sbx's own `sbx mcp`, which compiles once before it answers
 * its client and whose options come from its parser (src/cli/mcp/mcp.ts says when it calls this).
 */
export function compileUnchecked(options: CompileOptions): Promise<Compiled> {
  return compileRun(options);
}

/**
 * Whether the policy `sbx run` with these options would build lets in each target (a host path, a
 * host, the options' command), and the profile line that decides: for sbx's own `sbx why`, whose
 * options come from its parser. Nothing is created, run, asked or recorded.
 */
export function whyUnchecked(
  options: CompileOptions,
  targets: readonly WhyTarget[],
): Promise<{ profile: ProfileInfo; answers: WhyAnswer[] }> {
  return whyRun(options, targets);
}

/** Resolve and compile without running: the policy and the exact launcher argv. */
export async function compile(options: CompileOptions): Promise<Compiled> {
  return compileRun((await import('./api-options.js')).checkCompileOptions(options));
}

/** Resolve the profile and derive its Policy without probing a launcher: what `sbx export` compiles for other engines. */
export async function derive(options: CompileOptions): Promise<Pick<Compiled, 'profile' | 'policy'>> {
  return resolvePolicy((await import('./api-options.js')).checkCompileOptions(options));
}
