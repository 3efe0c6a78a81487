// The probe plan (src/policy/derive/probe-plan.ts) is the whole of what derivePolicy may know of the
// disk: every built-in profile on every fixture host derives its golden Policy from a host holding the
// plan's paths and nothing else, reads no other path, and an unprobed plan path is never guessed
// absent (INTERNAL, or a path this case did not need). derivePolicy mounts the plan's own bind specs.
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../../../src/errors.js';
import { type DeriveInput, derivePolicy } from '../../../../src/policy/derive/index.js';
import type { Host } from '../../../../src/policy/host.js';
import type { Policy } from '../../../../src/policy/types.js';
import { sbxErrorOf } from '../../../helpers/errors.js';
import {
  builtinProfileNames,
  deriveOnFixture,
  fixturePlan,
  hostFixtureNames,
  loadHost,
  runPipeline,
  withHostState,
  withProbePlan,
} from '../../../helpers/hosts.js';

const CASES = builtinProfileNames().flatMap((profile) => hostFixtureNames().map((host) => ({ profile, host })));

/** The golden case's derive input, on a host that holds exactly the plan's paths (fixture facts, else absent). */
async function planOnly(profile: string, hostName: string): Promise<{ input: DeriveInput; golden: Policy }> {
  const run = await runPipeline(profile, hostName);
  const paths = Object.fromEntries(run.plan.paths.map((path) => [path, run.host.paths[path]!]));
  const input: DeriveInput = {
    profileName: run.resolved.name,
    profileHash: run.resolved.hash,
    profile: run.resolved.profile,
    request: run.request,
    host: { ...run.host, paths },
    plan: run.plan,
  };
  return { input, golden: run.policy };
}

/** derivePolicy on `host`, with every path key it looked up. */
function deriveRecording(input: DeriveInput, host: Host): { policy: Policy; read: Set<string> } {
  const read = new Set<string>();
  const paths = new Proxy(host.paths, {
    get(target, key, receiver) {
      if (typeof key === 'string') read.add(key);
      return Reflect.get(target, key, receiver);
    },
  });
  return { policy: derivePolicy({ ...input, host: { ...host, paths } }), read };
}

describe.each(CASES)('probe plan: $profile × $host', ({ profile, host }) => {
  it('derives the golden Policy from a host holding only the plan, reading no path outside it', async () => {
    const { input, golden } = await planOnly(profile, host);
    const { policy, read } = deriveRecording(input, input.host);
    expect(policy).toEqual(golden);
    expect([...read].filter((path) => !input.plan.paths.includes(path))).toEqual([]);
  });

  it('never guesses an unprobed plan path absent: INTERNAL (125), unless this case never reads it', async () => {
    const { input, golden } = await planOnly(profile, host);
    const { read } = deriveRecording(input, input.host);
    let refused = 0;
    for (const path of input.plan.paths) {
      const { [path]: _left, ...rest } = input.host.paths;
      const without = { ...input, host: { ...input.host, paths: rest } };
      if (!read.has(path)) {
        // Control: a path this case never looks up changes nothing.
        expect(derivePolicy(without), path).toEqual(golden);
        continue;
      }
      const error = sbxErrorOf(() => derivePolicy(without));
      expect([path, error.code, error.exitCode]).toEqual([path, 'INTERNAL', ExitCode.SETUP]);
      refused++;
    }
    // The workspace and the sensitive roots are read in every mode.
    expect(refused).toBeGreaterThan(input.plan.keepOut.length);
  });
});

describe('derivePolicy consumes the plan', () => {
  const profile = { read_only: ['/srv/data'], writable_roots: ['/srv/out'] };
  const dir = (real: string) => ({ exists: true as const, real, type: 'dir' as const, uid: 1000 });

  function derive(edit: (input: DeriveInput) => void): Policy {
    const host = loadHost('alice');
    host.sensitiveFiles = { masks: [], protect: [], views: [] };
    host.paths['/srv/data'] = dir('/srv/data');
    host.paths['/srv/out'] = dir('/srv/out');
    withHostState(host);
    const request = { command: ['true'] };
    const plan = fixturePlan(host, profile, request);
    withProbePlan(host, plan);
    const input: DeriveInput = { profileName: 'test', profileHash: 'h', profile, request, host, plan };
    edit(input);
    return derivePolicy(input);
  }
  const targets = (policy: Policy) => policy.mounts.map((m) => m.target);

  it('control: the plan as made mounts both binds, as deriveOnFixture does', () => {
    const policy = derive(() => {});
    expect(targets(policy)).toEqual(expect.arrayContaining(['/srv/data', '/srv/out']));
    expect(policy).toEqual(
      deriveOnFixture(profile, {
        host: (h) => Object.assign(h.paths, { '/srv/data': dir('/srv/data') }, { '/srv/out': dir('/srv/out') }),
      }),
    );
  });

  it("mounts the plan's bind specs, not a second reading of the profile", () => {
    const policy = derive((input) => {
      input.plan = { ...input.plan, binds: { ...input.plan.binds, readOnly: [] } };
    });
    expect(targets(policy)).not.toContain('/srv/data');
    expect(targets(policy)).toContain('/srv/out');
  });

  it("keeps out the plan's roots: one the plan adds is masked wherever a bind shows it", () => {
    const policy = derive((input) => {
      input.plan = { ...input.plan, keepOut: [...input.plan.keepOut, '/srv/out/secret'] };
      input.host.paths['/srv/out/secret'] = dir('/srv/out/secret');
    });
    expect(policy.mounts).toContainEqual({
      kind: 'mask',
      target: '/srv/out/secret',
      what: 'dir',
      reason: 'sensitive root',
      role: 'mask',
    });
  });
});
