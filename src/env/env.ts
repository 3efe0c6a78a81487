// The sandbox environment: built from nothing, never copied (README "Keys", env). Pure.
import { SbxError } from '../errors.js';
import { keySource } from '../profile/positions.js';
import type { DroppedEnv } from '../policy/types.js';

/**
 * Credential-shaped names, matched on the upper-cased name. Dropped even when a keep pattern (`*`, `AWS_*`) matches them; only a
 * keep entry naming the variable exactly lets one through.
 */
const CREDENTIAL_PATTERNS: readonly RegExp[] = [
  /^AWS_/,
  /^GCP_/,
  /^GOOGLE_/,
  /^GCLOUD_/,
  /^AZURE_/,
  /^ARM_CLIENT_SECRET$/,
  /^DIGITALOCEAN_/,
  /^DO_API_/,
  /^HCLOUD_/,
  /^VAULT_/,
  /TOKEN/,
  /SECRET/,
  /PASSWORD/,
  /PASSWD/,
  /CREDENTIAL/,
  /_API_KEY$/,
  /_ACCESS_KEY/,
  /_PRIVATE_KEY/,
  /^DATABASE_URL$/,
  /^REDIS_URL$/,
  /^MONGO(DB)?_URL$/,
  /^SSH_AUTH_SOCK$/,
  /^SSH_AGENT_PID$/,
  /^GPG_AGENT_INFO$/,
  /^KUBECONFIG$/,
  /^DOCKER_AUTH_CONFIG$/,
  /^NPM_CONFIG__AUTH/,
];

export const RESERVED_PREFIX = 'SBX_';

export function isCredentialName(name: string): boolean {
  // Case-blind: `github_token` and `aws_secret_access_key` are as secret as their upper-case twins.
  const upper = name.toUpperCase();
  return CREDENTIAL_PATTERNS.some((re) => re.test(upper));
}

function patternToRegExp(pattern: string): RegExp {
  return new RegExp(
    '^' +
      pattern
        .split('*')
        .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*') +
      '$',
  );
}

export interface EnvInput {
  /** The invoking environment. */
  host: Record<string, string>;
  /** Keep patterns: profile env.keep plus --keep-env. */
  keep: readonly string[];
  /** Explicit values: profile env.set (expanded) then --env, later wins. */
  set: readonly [string, string][];
  /** Who set each name of `set` (`env.set.NAME`, `--env`), for the refusal of a reserved one. */
  setBy?: Readonly<Record<string, string>>;
  /** Variables sbx itself injects (SBX_*, HOME, ...): always last. */
  injected: Record<string, string>;
}

export interface EnvResult {
  vars: Record<string, string>;
  dropped: DroppedEnv[];
}

export function buildEnv(input: EnvInput): EnvResult {
  for (const [name] of input.set) {
    if (name.startsWith(RESERVED_PREFIX)) {
      const source = keySource(input.setBy?.[name] ?? '');
      throw new SbxError('ENV_RESERVED', `${name}: the ${RESERVED_PREFIX}* namespace is reserved for sbx`, {
        hint: 'choose another name; sbx sets SBX_SESSION_ID, SBX_PROFILE and SBX_WORKSPACE itself',
        ...(source ? { source } : {}),
      });
    }
  }
  const exact = new Set(input.keep.filter((p) => !p.includes('*')));
  const globs = input.keep.filter((p) => p.includes('*')).map(patternToRegExp);
  const vars: Record<string, string> = {};
  const dropped: DroppedEnv[] = [];
  for (const name of Object.keys(input.host).sort()) {
    const value = input.host[name]!;
    if (Object.hasOwn(input.injected, name)) continue;
    if (name.startsWith(RESERVED_PREFIX)) dropped.push({ name, reason: 'reserved' });
    else if (exact.has(name)) vars[name] = value;
    else if (!globs.some((re) => re.test(name))) dropped.push({ name, reason: 'not-allowed' });
    else if (isCredentialName(name)) dropped.push({ name, reason: 'credential' });
    else vars[name] = value;
  }
  for (const [name, value] of input.set) vars[name] = value;
  Object.assign(vars, input.injected);
  return { vars, dropped };
}
