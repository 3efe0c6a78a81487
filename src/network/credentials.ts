// Credentials the command never holds (profile `credentials`, docs/DESIGN.md "Credentials"): which
// variable holds a placeholder, where sbx reads the value, and the hosts the value may go to. Pure:
// the rules as the Policy carries them, compiled once by derivePolicy, and the one question the proxy
// asks of them: is this destination one a credential names? The values and placeholders never enter
// these types; they live in the proxy's memory for one run (network/host/credential-broker.ts).
import { SbxError } from '../errors.js';
import type { CredentialEntry } from '../profile/schema-credentials.js';
import { compileHostPattern, decideHost, type EgressRules, type HostPattern, matchesHostPattern } from './egress.js';

/** Where the runtime reads a value: names and paths only, never the value. */
export type CredentialSource = { env: string } | { file: string } | { command: string[] };

/** One credential as the Policy holds it. */
export interface CredentialRule {
  /** The variable the command sees, holding the placeholder. */
  name: string;
  from: CredentialSource;
  /** The destinations where the placeholder is replaced by the value, compiled like network.allow. */
  hosts: HostPattern[];
  /** Replace only in this request header (as written; compared without case); absent: any request header. */
  header?: string;
}

/** The credentials of a run, and the CAs the proxy trusts besides the host's for their hosts. */
export interface CredentialPolicy {
  rules: CredentialRule[];
  /** network.extra_ca_certs, absolute host paths. */
  extraCaCerts: string[];
  /** The host's CA bundle the proxy verifies upstreams with and the sandbox's bundle starts from; absent: Node's bundled roots. */
  systemBundle?: string;
  /** The host has a Java trust store: the sandbox's is the same roots and the run's CA, as PKCS#12. */
  javaTrustStore?: true;
}

/** A credential's host key path, for refusals and violations. */
export const hostsKey = (name: string) => `credentials.${name}.hosts`;

/** A name that stands for every name of a `*.domain` pattern when it is checked against network.allow. */
const SUFFIX_PROBE_LABEL = 'sbx-credential-check';

function compileHosts(name: string, hosts: readonly string[], rules: EgressRules): HostPattern[] {
  return hosts.map((text, i) => {
    const key = `${hostsKey(name)}[${i}]`;
    const pattern = compileHostPattern(text, key, { key });
    // A value for every destination is a value the command may send anywhere: the point is the list.
    if (pattern.kind === 'any')
      throw new SbxError('PROFILE_INVALID', `${key}: "*" would send ${name} to every host`, {
        hint: 'name the hosts the credential is for, e.g. api.github.com or *.example.com',
        source: { key },
      });
    const probe = pattern.kind === 'suffix' ? `${SUFFIX_PROBE_LABEL}.${pattern.host}` : pattern.host;
    const decision = decideHost(rules, probe, pattern.port ?? 443);
    if (!decision.allowed)
      throw new SbxError('PROFILE_INVALID', `${key}: ${text} is not reachable: ${decision.detail}`, {
        hint: `add ${text} to network.allow (the proxy dials only allowed hosts)`,
        source: { key },
      });
    return pattern;
  });
}

/** The profile's (and the caller's) `credentials`, checked against the network they go through. */
export function compileCredentials(entries: Record<string, CredentialEntry>, rules: EgressRules): CredentialRule[] {
  return Object.entries(entries).map(([name, entry]) => {
    const from = entry.from as Partial<Record<'env' | 'file' | 'command', unknown>>;
    // `extends` replaces a source whole (profile/merge.ts); a merged map with two sources is still refused here.
    if (Object.keys(from).length !== 1)
      throw new SbxError('PROFILE_INVALID', `credentials.${name}.from: give exactly one of env, file or command`, {
        hint: `write from: { env: ${name} }, from: { file: PATH } or from: { command: [argv...] }`,
        source: { key: `credentials.${name}.from` },
      });
    return {
      name,
      from: entry.from,
      hosts: compileHosts(name, [...new Set(entry.hosts)], rules),
      ...(entry.header !== undefined ? { header: entry.header } : {}),
    };
  });
}

/** Whether `host` (normal form) at `port` is one of `rule`'s destinations. */
export function isListedFor(rule: Pick<CredentialRule, 'hosts'>, host: string, port: number): boolean {
  return rule.hosts.some((p) => matchesHostPattern(p, host, port));
}

/** Whether the proxy terminates TLS for `host:port`: some credential names it. Every other host stays a tunnel. */
export function isIntercepted(rules: readonly Pick<CredentialRule, 'hosts'>[], host: string, port: number): boolean {
  return rules.some((r) => isListedFor(r, host, port));
}
