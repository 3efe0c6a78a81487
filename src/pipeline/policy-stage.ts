// Stage 3, policy: the host probed for exactly what the profile touches (policy/host/probe-host.ts:
// each path pinned as it is probed, so every check runs on the descriptor that will be mounted; the
// mounted trees walked for secret-looking files), then the Policy derived from profile, request and
// host (policy/derive/). The core names what to probe in one plan (policy/derive/probe-plan.ts).
import { createHash } from 'node:crypto';
import { SbxError } from '../errors.js';
import { createProjectPolicyDirs } from '../host-state/host/own-dirs.js';
import type { Pins } from '../host/pins.js';
import { compileEgressRules } from '../network/egress.js';
import { derivePolicy } from '../policy/derive/index.js';
import type { ProbePlan } from '../policy/derive/probe-plan.js';
import type { Host } from '../policy/host.js';
import { probeHost } from '../policy/host/probe-host.js';
import type { Policy } from '../policy/types.js';
import type { ResolvedProfile } from '../profile/host/load.js';
import type { RunContext } from './context-stage.js';
import type { CompileOptions, Lifted } from './run-options.js';

export interface Derived {
  policy: Policy;
  host: Host;
  /** What the host was probed for: the bind specs and the roots kept out, which `sbx why` names the keys of. */
  plan: ProbePlan;
  /** sha256 (16 hex) of the Policy: two runs with the same hash had the same sandbox. */
  hash: string;
}

/** What the policy stage works from: the request, its resolved profile, and the run so far. */
export interface PolicyInput {
  ctx: RunContext;
  resolved: ResolvedProfile;
  pins: Pins;
}

export function policyHash(policy: Policy): string {
  return createHash('sha256').update(JSON.stringify(policy)).digest('hex').slice(0, 16);
}

/**
 * --allow-private checked as a flag before anything is probed: its entries are compiled with the
 * profile's allow_private (network/egress.ts), whose error would name a profile key the user never wrote.
 */
function checkAllowPrivate(given: readonly string[]): void {
  for (const entry of given) {
    try {
      compileEgressRules({ allow: [], deny: [], allowPrivate: [entry] });
    } catch {
      throw new SbxError('USAGE', `--allow-private ${entry}: not an IP address with optional port`, {
        hint: 'write 10.0.0.5, 10.0.0.5:5432, fd00::5 or [fd00::5]:5432 (host names are not accepted here)',
      });
    }
  }
}

/** An allow-list network is the only one whose proxy reads allow_private: elsewhere the flag would be silently dropped. */
function refuseIdleAllowPrivate(policy: Policy, given: readonly string[]): void {
  const net = policy.network;
  if (given.length === 0 || (net.kind === 'filtered' && net.rules.allow.length > 0)) return;
  // A filtered network without an allow list (only unix_sockets, host_ports or publish) runs no proxy either.
  const why =
    net.kind === 'host' ? 'shares the host network' : net.kind === 'filtered' ? 'has no allow list' : 'has no network';
  throw new SbxError('USAGE', `--allow-private ${given.join(' ')}: this run ${why}, so there is no proxy to allow it`, {
    hint: 'name the destination too, e.g. --allow-domain 10.0.0.5:5432 --allow-private 10.0.0.5:5432',
  });
}

/** What this run lets in that sbx keeps out by default (sbx explain and the report): files and private addresses, by whom. */
export function liftedOf(derived: Derived, options: CompileOptions): Lifted {
  const net = derived.policy.network;
  const given = new Set(options.allowPrivate ?? []);
  return {
    unmasked: derived.host.sensitiveFiles.unmasked ?? [],
    allowPrivate:
      net.kind === 'filtered'
        ? net.rules.allowPrivate.map((e) => ({ address: e.text, by: given.has(e.text) ? 'request' : 'profile' }))
        : [],
  };
}

/** The files a backend could not mask, let in by the run's --expose-workspace-secrets. */
export function withExposed(lifted: Lifted, exposed: readonly string[]): Lifted {
  return { ...lifted, unmasked: [...lifted.unmasked, ...exposed.map((path) => ({ path, by: 'exposed' as const }))] };
}

export async function derive(input: PolicyInput): Promise<Derived> {
  const { ctx, resolved, pins } = input;
  const { options } = ctx;
  checkAllowPrivate(options.allowPrivate ?? []);
  const { host, plan } = await probeHost(input);
  createProjectPolicyDirs(plan, resolved.profile.mode ?? 'workspace-write', pins, host.paths);
  const policy = derivePolicy({
    profileName: resolved.name,
    profileHash: resolved.hash,
    profile: resolved.profile,
    request: options,
    host,
    plan,
  });
  refuseIdleAllowPrivate(policy, options.allowPrivate ?? []);
  // The mount sources nothing probed (git hooks the scan found, the egress bridge's files): pinned
  // now, and refused if they no longer resolve to themselves.
  for (const m of policy.mounts) {
    if (m.kind === 'bind' && pins.fdOf(m.source) === undefined) pins.pinExact(m.source, m.reason);
  }
  return { policy, host, plan, hash: policyHash(policy) };
}
