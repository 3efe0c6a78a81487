// Stage 4b, credentials: each credential's value read from its source (a failing one refuses the run,
// before anything is created), refused when the sandbox would hold it anyway, given a fresh
// placeholder, and the roots its hosts are verified with read. Values go to the audit trail's
// redaction at once and otherwise only to the proxy (network/host/credential-broker.ts). Loads only
// for runs with credentials.
import type { Policy } from '../policy/types.js';
import type { LiveCredential } from '../network/credential-scan.js';
import type { TrustMaterial } from '../network/host/trust-files.js';
import type { AuditTrail } from '../report/host/audit-trail.js';
import type { RunContext } from './context-stage.js';

export interface RunCredentials {
  live: LiveCredential[];
  /** Variable → placeholder: set in the sandbox as a secret's value is (Session.secretEnv). */
  placeholders: Record<string, string>;
  /** The values, for redaction and scrubbing: never printed. */
  values: string[];
  trust: TrustMaterial;
}

export async function loadRunCredentials({
  ctx,
  policy,
  secretEnv,
  trail,
}: {
  ctx: RunContext;
  policy: Policy;
  secretEnv: Record<string, string>;
  trail: AuditTrail | undefined;
}): Promise<RunCredentials | undefined> {
  const credentials = policy.credentials;
  if (!credentials) return undefined;
  const [{ readCredentialValues, refuseExposed }, { liveCredentials }, { readTrustMaterial }] = await Promise.all([
    import('../network/host/credential-values.js'),
    import('../network/host/credential-broker.js'),
    import('../network/host/trust-files.js'),
  ]);
  const values = await readCredentialValues(credentials.rules, { env: ctx.env, cwd: ctx.cwd, uid: ctx.uid, policy });
  // Before any refusal below: the ledger's record of a refused run carries its argv.
  trail?.redact([...values.values()]);
  refuseExposed(values, policy, secretEnv);
  const trust = readTrustMaterial(credentials, policy, ctx.uid);
  const live = liveCredentials(credentials.rules, values);
  return {
    live,
    placeholders: Object.fromEntries(live.map((c) => [c.name, c.placeholder])),
    values: [...values.values()],
    trust,
  };
}
