// Fixture hosts (test/fixtures/hosts/*.json) and the fixed session/bwrap facts the golden tests use,
// plus the whole pure pipeline (real loader → derivePolicy → compileBwrap) over them.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BwrapHost } from '../../src/backend/bwrap/compile.js';
import { compileBwrap, expandArgsFd } from '../../src/backend/bwrap/compile.js';
import type { Launch, Session } from '../../src/backend/launch.js';
import { derivePolicy } from '../../src/policy/derive/index.js';
import { type ProbePlan, probePlanOf } from '../../src/policy/derive/probe-plan.js';
import type { RunRequest } from '../../src/policy/derive/request.js';
import { requestedWorkspace, runVariables } from '../../src/policy/derive/workspace.js';
import type { Host } from '../../src/policy/host.js';
import { hostStatePaths, type PathChain } from '../../src/host-state/host-state.js';
import type { Policy } from '../../src/policy/types.js';
import { loadProfile, type ResolvedProfile } from '../../src/profile/host/load.js';
import type { Profile } from '../../src/profile/schema.js';
import type { Variables } from '../../src/profile/variables.js';
import { BUILTIN_PROFILES_DIR, FIXTURES_DIR } from './paths.js';

export const HOSTS_DIR = join(FIXTURES_DIR, 'hosts');

export const FIXTURE_SESSION: Session = {
  id: 'test-session',
  dir: '/run/user/1000/sbx/test-session.1',
  emptyFile: '/run/user/1000/sbx/test-session.1/empty',
};

export const FIXTURE_BWRAP: BwrapHost = {
  path: '/usr/bin/bwrap',
  features: { tmpfsSize: true, disableUserns: true, bindFd: true },
  stdinIsTty: false,
  arch: 'x86_64',
};

export function hostFixtureNames(): string[] {
  return readdirSync(HOSTS_DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -'.json'.length))
    .sort();
}

export function builtinProfileNames(): string[] {
  return readdirSync(BUILTIN_PROFILES_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -'.yaml'.length))
    .sort();
}

/** A fresh copy of a fixture Host (tests may mutate it). */
export function loadHost(name: string): Host {
  return JSON.parse(readFileSync(join(HOSTS_DIR, `${name}.json`), 'utf8')) as Host;
}

/**
 * A fixture's chain of a path, by its prefixes as identities: what host/path-chain.ts finds on a
 * host without symlinks or second mounts. Existence is the fixture's own `paths` fact.
 */
function lexicalChain(host: Host, path: string): PathChain {
  const parts = path.split('/').filter(Boolean);
  const prefixes = ['/', ...parts.map((_, i) => `/${parts.slice(0, i + 1).join('/')}`)];
  const exists = host.paths[path]?.exists ?? false;
  return { ids: exists ? prefixes : prefixes.slice(0, -1), exists };
}

/**
 * Fills what the policy stage probes for the host-state check (pipeline/policy-stage.ts), from the
 * fixture's paths as they are after a test's edits: every existing real path's chain, and the
 * state paths of the fixture's home.
 */
export function withHostState(host: Host): Host {
  host.chains = {};
  for (const f of Object.values(host.paths)) {
    if (f.exists) host.chains[f.real] = lexicalChain(host, f.real);
  }
  host.hostState = hostStatePaths([host.home], host.env).map((s) => ({ ...s, chain: lexicalChain(host, s.path) }));
  return host;
}

/**
 * The fixture as the disk the policy stage probes (pipeline/policy-stage.ts): a path of the probe plan the
 * fixture does not name is absent there. Any other path derivePolicy asks for throws INTERNAL, as at
 * run time, so a derivation that reads past the plan fails these tests too.
 */
export function withProbePlan(host: Host, plan: ProbePlan): Host {
  for (const path of plan.paths) host.paths[path] ??= { exists: false };
  return host;
}

/**
 * derivePolicy on the `alice` fixture (or `hostName`) with no scan results, as a policy test sets it
 * up: `host` edits the fixture before the host-state facts are filled, `after` edits those facts.
 */
export function deriveOnFixture(profile: Profile, options: FixtureOptions = {}): Policy {
  return derivedOnFixture(profile, options).policy;
}

export interface FixtureOptions {
  request?: Partial<RunRequest>;
  host?: (host: Host) => void;
  after?: (host: Host) => void;
  hostName?: string;
}

/** deriveOnFixture's Policy with the host and plan it was derived from (what `sbx why` reads: policy/why.ts). */
export function derivedOnFixture(
  profile: Profile,
  options: FixtureOptions = {},
): { policy: Policy; host: Host; plan: ProbePlan } {
  const host = loadHost(options.hostName ?? 'alice');
  host.sensitiveFiles = { masks: [], protect: [], views: [] };
  options.host?.(host);
  withHostState(host);
  options.after?.(host);
  const request: RunRequest = { command: ['true'], ...options.request };
  const plan = fixturePlan(host, profile, request);
  withProbePlan(host, plan);
  const policy = derivePolicy({ profileName: 'test', profileHash: 'h', profile, request, host, plan });
  return { policy, host, plan };
}

/** Variables as the policy stage builds them (pipeline/policy-stage.ts): workspace is the realpath of the requested one. */
export function fixtureVars(
  host: Host,
  profile: Profile,
  request: RunRequest,
  session = FIXTURE_SESSION.id,
): Variables {
  const base = { home: host.home, cwd: host.cwd, session };
  const requested = requestedWorkspace(profile, request, base);
  return runVariables(base, requested, host.paths[requested] ?? { exists: false });
}

/** The probe plan the policy stage would make for this fixture (probe-plan.ts), on fixtureVars. */
export function fixturePlan(host: Host, profile: Profile, request: RunRequest): ProbePlan {
  return probePlanOf(profile, request, fixtureVars(host, profile, request), host.env);
}

/** Load a built-in profile through the real loader, with empty project/user dirs and no cache. */
export async function loadBuiltin(name: string): Promise<ResolvedProfile> {
  const empty = mkdtempSync(join(tmpdir(), 'sbx-golden-'));
  try {
    return await loadProfile(
      name,
      { cwd: empty, configHome: empty, builtinDir: BUILTIN_PROFILES_DIR, cacheDir: undefined },
      'test',
    );
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
}

export function requestFor(profileName: string, extra: Partial<RunRequest> = {}): RunRequest {
  return { command: ['sh', '-c', 'echo hi'], ...(profileName === 'danger' ? { danger: true } : {}), ...extra };
}

export interface Pipeline {
  resolved: ResolvedProfile;
  host: Host;
  request: RunRequest;
  plan: ProbePlan;
  policy: Policy;
  launch: Launch;
  /** `[file, ...args]`: what a golden file holds. */
  argv: string[];
}

export async function runPipeline(
  profileName: string,
  hostName: string,
  options: {
    request?: Partial<RunRequest>;
    bwrap?: Partial<BwrapHost>;
    mutateHost?: (host: Host) => void;
    profile?: Partial<Profile>;
  } = {},
): Promise<Pipeline> {
  const builtin = await loadBuiltin(profileName);
  const resolved = options.profile ? { ...builtin, profile: { ...builtin.profile, ...options.profile } } : builtin;
  const host = loadHost(hostName);
  options.mutateHost?.(host);
  withHostState(host);
  const request = requestFor(profileName, options.request);
  const plan = fixturePlan(host, resolved.profile, request);
  withProbePlan(host, plan);
  const policy = derivePolicy({
    profileName: resolved.name,
    profileHash: resolved.hash,
    profile: resolved.profile,
    request,
    host,
    plan,
  });
  const launch = compileBwrap(policy, FIXTURE_SESSION, {
    ...FIXTURE_BWRAP,
    stdinIsTty: host.stdinIsTty,
    ...options.bwrap,
  });
  return { resolved, host, request, plan, policy, launch, argv: [launch.file, ...expandArgsFd(launch)] };
}
