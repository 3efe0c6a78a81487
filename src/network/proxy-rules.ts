// The rules `sbx proxy` serves, and the argv that hands them to it (what `sbx export k8s` writes into
// the proxy's Deployment). Pure.
//
// The lists are compiled by compileEgressRules, the one compiler `sbx run` uses
// (policy/derive/network.ts): a profile's network.allow, network.deny and network.allow_private, then
// the flags on top, in the order derive appends --allow-domain and --allow-private. Without a profile the flags are the whole policy: that is
// how the exported proxy runs, with no profile file to find, trust or keep in step with its rules.
import { SbxError } from '../errors.js';
import type { Profile } from '../profile/schema.js';
import { compileEgressRules, type EgressRules } from './egress.js';

/** The port `sbx proxy` listens on and an exported workload's HTTP_PROXY names unless told otherwise (squid's, 3128). */
export const DEFAULT_PROXY_PORT = 3128;

export interface ProxyRuleFlags {
  allowDomains: readonly string[];
  denyDomains: readonly string[];
  allowPrivate: readonly string[];
}

/**
 * `network`: the profile's key (undefined without -p). Host networks and lists with nothing allowed are
 * refused: a proxy serving them would either widen nothing or pretend to be the profile's policy.
 */
export function proxyRulesOf(
  network: Profile['network'] | undefined,
  profileName: string | undefined,
  flags: ProxyRuleFlags,
): EgressRules {
  if (network === 'host')
    throw new SbxError(
      'PROXY_NO_ALLOW_LIST',
      `profile ${profileName} has network: host: it has no allow-list to serve`,
      {
        hint: 'use a profile with network: { allow: [...] }, or name the destinations with --allow-domain and no -p',
      },
    );
  const spec = typeof network === 'object' ? network : {};
  const allow = [...(spec.allow ?? []), ...flags.allowDomains];
  if (allow.length === 0) {
    const what =
      profileName === undefined ? 'no profile and no --allow-domain' : `profile ${profileName} allows no destination`;
    throw new SbxError('PROXY_NO_ALLOW_LIST', `${what}: there is nothing for sbx proxy to serve`, {
      hint: 'use -p with a profile whose network has an allow list, or add --allow-domain NAME[:PORT]',
    });
  }
  return compileEgressRules({
    allow,
    deny: [...(spec.deny ?? []), ...flags.denyDomains],
    allowPrivate: [...(spec.allow_private ?? []), ...flags.allowPrivate],
    flagsFrom: allow.length - flags.allowDomains.length,
  });
}

/** The `sbx proxy` flags that make exactly `rules`, as written (compiling them again yields `rules`). */
export function proxyRuleArgs(rules: EgressRules): string[] {
  return [
    ...rules.allow.flatMap((p) => ['--allow-domain', p.text]),
    ...rules.deny.flatMap((p) => ['--deny-domain', p.text]),
    ...rules.allowPrivate.flatMap((p) => ['--allow-private', p.text]),
  ];
}
