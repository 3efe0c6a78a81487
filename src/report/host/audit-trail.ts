// One run's records in the audit ledger: where it may live (never where the sandbox can rewrite it),
// and the record written when the run ends or is refused. The approval records are written by
// command-gate.ts as answers arrive.
import { mkdirSync, realpathSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { type RunFacts, SbxError } from '../../errors.js';
import { isWithin } from '../../path-within.js';
import type { Policy } from '../../policy/types.js';
import type { AuditRecord } from '../ledger-line.js';
import { appendAuditRecordOrWarn, redactArgv } from './ledger.js';
import type { Outcome } from '../outcome.js';

/** What is known of the run once its policy is resolved. */
export interface AuditContext {
  profile: string;
  policyHash: string;
  backend: string;
  workspace: string;
}

export interface AuditTrail {
  /** Checks the ledger's place against the policy (throws AUDIT_FILE) and remembers the context. */
  prepared(context: AuditContext, policy: Policy): void;
  /** The secret values, once read: every argv recorded from then on has them redacted. */
  redact(secrets: readonly string[]): void;
  ran(outcome: Outcome): void;
  refused(error: SbxError, argv: readonly string[]): void;
}

/**
 * A ledger the sandboxed command can rewrite is no audit trail: refused when it lies in a writable
 * bind, unless a mask hides it there (the default one sits in a masked sensitive root).
 */
function checkLedgerOutside(file: string, policy: Policy): void {
  let dir = resolve(dirname(file));
  try {
    dir = realpathSync(dir);
  } catch {
    // Not created: its literal path is what the first append creates.
  }
  const path = join(dir, basename(file));
  const masks = policy.mounts.flatMap((m) => (m.kind === 'mask' ? [m.target] : []));
  for (const m of policy.mounts) {
    if (m.kind !== 'bind' || m.access !== 'rw' || !isWithin(path, m.source)) continue;
    if (masks.some((t) => isWithin(join(m.target, relative(m.source, path)), t))) continue;
    throw new SbxError(
      'AUDIT_FILE',
      `the audit ledger ${path} lies in ${m.source}, which the sandbox can write: the command could rewrite its own record`,
      {
        hint: 'keep the ledger outside the workspace (--audit-file or SBX_AUDIT_FILE), or pass --no-audit',
      },
    );
  }
}

/**
 * `sessionId` is the run's from its first stage: a refusal before the policy exists is recorded under
 * it too, so `sbx log --session` finds it by the id its report and error carry.
 */
export function openAuditTrail(
  file: string,
  sessionId: string,
  requestedProfile: string,
  notice: ((line: string) => void) | undefined,
): AuditTrail {
  // Created before the host is probed: the default ledger's directory is a sensitive root, masked in
  // the sandbox only if it exists (a workspace of $HOME must not reach it on the first run).
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  } catch {
    // appendAuditRecord says why when it writes.
  }
  const time = new Date().toISOString();
  let context: AuditContext | undefined;
  let secrets: readonly string[] = [];
  // Before prepared(), what the run had learnt when it was refused (SbxError.run) stands in.
  const base = (argv: readonly string[], known?: RunFacts) => ({
    v: 1 as const,
    time,
    type: 'run' as const,
    sessionId,
    profile: context?.profile ?? known?.profile?.name ?? requestedProfile,
    policyHash: context?.policyHash ?? known?.policyHash ?? '',
    backend: context?.backend ?? known?.backend ?? '',
    workspace: context?.workspace ?? '',
    argv: redactArgv(argv, secrets),
  });
  const append = (record: AuditRecord) => appendAuditRecordOrWarn(file, record, notice);
  return {
    prepared(c, policy) {
      context = c;
      checkLedgerOutside(file, policy);
    },
    redact(values) {
      secrets = [...values];
    },
    ran(outcome) {
      append({
        ...base(outcome.command),
        exitCode: outcome.exitCode,
        ...(outcome.signal ? { signal: outcome.signal } : {}),
        setBy: outcome.setBy,
        durationMs: Math.round(outcome.durationMs * 10) / 10,
        violations: outcome.violations,
      });
    },
    refused(error, argv) {
      append({
        ...base(argv, error.run),
        exitCode: error.exitCode,
        setBy: 'sbx',
        violations: error.violations,
        error: { code: error.code, message: error.message, ...(error.source ? { source: error.source } : {}) },
      });
    },
  };
}
