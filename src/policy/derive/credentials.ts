// The `credentials` key in the Policy (docs/DESIGN.md "Credentials"): the rules the proxy enforces,
// compiled against the run's allow-list; the mounts that show the run's CA inside (its directory, and
// the system CA bundle with it added over each bundle path the host has); the trust variables the
// common clients read; and the variable names whose placeholders only the runtime holds.
import { posix } from 'node:path';
import { SbxError } from '../../errors.js';
import { type CredentialPolicy, compileCredentials } from '../../network/credentials.js';
import {
  CA_BUNDLE_FILE,
  CA_SESSION_SUBDIR,
  JAVA_TRUST_STORE_FILE,
  JAVA_TRUST_STORE_PATHS,
  SANDBOX_CA_DIR,
  SYSTEM_BUNDLE_PATHS,
  trustVariables,
} from '../../network/credential-trust.js';
import type { Profile } from '../../profile/schema.js';
import { expandPath, type Variables } from '../../profile/variables.js';
import type { Host } from '../host.js';
import type { Mount, NetworkPolicy, Policy } from '../types.js';
import { fact } from './probe-plan.js';
import type { RunRequest } from './request.js';

/** The profile's credentials with the caller's over them (a name both give is the caller's). */
export function requestedCredentials(profile: Profile, request: RunRequest): NonNullable<Profile['credentials']> {
  return { ...(profile.credentials ?? {}), ...(request.credentials ?? {}) };
}

export interface DerivedCredentials {
  credentials?: CredentialPolicy;
  mounts: Mount[];
}

function extraCaCertsOf(profile: Profile, vars: Variables): string[] {
  const listed = typeof profile.network === 'object' ? (profile.network.extra_ca_certs ?? []) : [];
  return listed.map((p, i) => posix.resolve(vars.cwd, expandPath(p, vars, `network.extra_ca_certs[${i}]`)));
}

/** The rules and the CA's mounts, or nothing; refused when the network cannot carry them. */
export function deriveCredentials(
  profile: Profile,
  request: RunRequest,
  network: NetworkPolicy,
  host: Host,
  vars: Variables,
): DerivedCredentials {
  const entries = requestedCredentials(profile, request);
  const names = Object.keys(entries);
  const extraCaCerts = extraCaCertsOf(profile, vars);
  if (names.length === 0) {
    if (extraCaCerts.length === 0) return { mounts: [] };
    throw new SbxError(
      'PROFILE_INVALID',
      'network.extra_ca_certs: the proxy verifies certificates only for hosts a credential names, and there is no credential',
      {
        hint: 'remove network.extra_ca_certs, or add the credentials it is for',
        source: { key: 'network.extra_ca_certs' },
      },
    );
  }
  // The value goes in at sbx's proxy: without one between the sandbox and the host, a placeholder
  // would reach the host unreplaced (none) or the command would dial out past it (host).
  if (network.kind !== 'filtered')
    throw new SbxError(
      'PROFILE_INVALID',
      `credentials (${names.join(', ')}) need an allow-list network, and this run's network is ${network.kind}`,
      {
        hint: "set network: { allow: [...] } with each credential's hosts (and drop --network host or none)",
        source: { key: 'credentials' },
      },
    );
  const rules = compileCredentials(entries, network.rules).map((rule) =>
    'file' in rule.from
      ? {
          ...rule,
          from: {
            file: posix.resolve(vars.cwd, expandPath(rule.from.file, vars, `credentials.${rule.name}.from.file`)),
          },
        }
      : rule,
  );
  // Probed for every run with credentials (probe-plan.ts): each store the host has is covered inside.
  const present = (paths: readonly string[]) =>
    paths.map((p) => fact(host, p)).flatMap((f) => (f.exists && f.type === 'file' ? [f.real] : []));
  const bundles = present(SYSTEM_BUNDLE_PATHS);
  const javaStores = [...new Set(present(JAVA_TRUST_STORE_PATHS))];
  const systemBundle = bundles[0];
  const reason = "credentials: the run's CA, trusted for the hosts credentials name";
  const cover =
    (file: string, what: string) =>
    (target: string): Mount => ({
      kind: 'session-dir',
      target,
      subdir: `${CA_SESSION_SUBDIR}/${file}`,
      reason: `credentials: ${what} with the run's CA added`,
      role: 'trust',
    });
  const mounts: Mount[] = [
    { kind: 'session-dir', target: SANDBOX_CA_DIR, subdir: CA_SESSION_SUBDIR, reason, role: 'trust' },
    ...[...new Set(bundles)].map(cover(CA_BUNDLE_FILE, 'the system CA bundle')),
    ...javaStores.map(cover(JAVA_TRUST_STORE_FILE, "Java's trust store")),
  ];
  return {
    credentials: {
      rules,
      extraCaCerts,
      ...(systemBundle !== undefined ? { systemBundle } : {}),
      ...(javaStores.length > 0 ? { javaTrustStore: true as const } : {}),
    },
    mounts,
  };
}

/**
 * The environment with the credentials in: their variables left to the runtime (it sets each
 * placeholder), a secret of the same name refused (two values for one variable), the trust variables set.
 */
export function credentialEnv(env: Policy['env'], credentials: CredentialPolicy | undefined): Policy['env'] {
  if (!credentials) return env;
  const vars = { ...env.vars, ...trustVariables() };
  for (const { name } of credentials.rules) {
    if (env.secrets.includes(name))
      throw new SbxError(
        'PROFILE_INVALID',
        `credentials.${name}: ${name} is also a secret: the variable would hold both`,
        {
          hint: `keep ${name} in one of secrets and credentials`,
          source: { key: `credentials.${name}` },
        },
      );
    delete vars[name];
  }
  return { ...env, vars };
}
