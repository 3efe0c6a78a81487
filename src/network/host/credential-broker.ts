// What the egress proxy holds of a run's credentials while it lasts: the values and placeholders
// (network/credential-scan.ts LiveCredential), the tracer that finds them in requests, the run's CA,
// and the roots upstream certificates must chain to. One per proxy; nothing of it is written anywhere
// but the CA's certificate.
import { randomInt } from 'node:crypto';
import { createSecureContext, type SecureContext } from 'node:tls';
import { type LiveCredential, type Tracer, tracerOf } from '../credential-scan.js';
import { type CredentialRule, isIntercepted } from '../credentials.js';
import { placeholderFor } from '../placeholder.js';
import { createRunCa, permittedNames } from './credential-ca.js';
import { type TrustMaterial, writeTrustFiles } from './trust-files.js';

export interface CredentialBroker {
  readonly live: readonly LiveCredential[];
  readonly tracer: Tracer;
  /** Whether the proxy terminates TLS for `host:port` (normal form): some credential names it. */
  intercepts(host: string, port: number): boolean;
  /** The run CA's leaf for `host` (its chain and key, PEM), for the TLS server that presents it. */
  leafFor(host: string): { cert: string; key: string };
  /**
   * The context upstream connections verify with: the host's CA bundle and network.extra_ca_certs
   * (PEM), an upstream's certificate must chain to one of them. Made once: parsing a bundle per
   * connection would cost more than the handshake.
   */
  upstreamContext(): SecureContext;
}

/** Each rule with its value and a fresh placeholder: what the proxy and the session hold, for one run. */
export function liveCredentials(
  rules: readonly CredentialRule[],
  values: ReadonlyMap<string, string>,
): LiveCredential[] {
  return rules.map((rule) => {
    const value = values.get(rule.name) as string;
    return {
      name: rule.name,
      hosts: rule.hosts,
      ...(rule.header !== undefined ? { header: rule.header } : {}),
      placeholder: placeholderFor(value, (n) => randomInt(n)),
      value,
    };
  });
}

/**
 * The run's CA made (its key in this process only), its certificate written to the session directory
 * for the sandbox to trust, and the broker the proxy consults.
 */
export function openCredentialBroker(init: {
  live: readonly LiveCredential[];
  trust: TrustMaterial;
  sessionDir: string;
  /** Write a Java trust store too (the host has one: policy.credentials.javaTrustStore). */
  java?: boolean;
}): CredentialBroker {
  const { live, trust } = init;
  const ca = createRunCa(permittedNames(live.flatMap((c) => c.hosts)), new Date());
  writeTrustFiles(init.sessionDir, ca.certPem, trust.roots, init.java ?? false);
  let upstream: SecureContext | undefined;
  return {
    live,
    tracer: tracerOf(live),
    intercepts: (host, port) => isIntercepted(live, host, port),
    leafFor: (host) => ca.leafFor(host),
    upstreamContext() {
      upstream ??= createSecureContext({ ca: [trust.roots, ...trust.extra] });
      return upstream;
    },
  };
}
