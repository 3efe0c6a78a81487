// A path derivePolicy needs but the policy stage never probed is a bug in sbx, never an absence: for a
// sensitive root "absent" means "nothing to keep out", so reading it as absent would fail open (issue
// 23). Each case removes one fact from a fully probed fixture, beside the control that keeps it.
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../../../src/errors.js';
import { derivePolicy } from '../../../../src/policy/derive/index.js';
import type { RunRequest } from '../../../../src/policy/derive/request.js';
import type { Mount, Policy } from '../../../../src/policy/types.js';
import type { Profile } from '../../../../src/profile/schema.js';
import { sbxErrorOf } from '../../../helpers/errors.js';
import { fixturePlan, loadHost, withHostState, withProbePlan } from '../../../helpers/hosts.js';

/** derivePolicy on alice's fixture with the whole probe plan filled, less the `unprobed` paths. */
function deriveWithout(profile: Profile, request: RunRequest, unprobed: readonly string[]): Policy {
  const host = withHostState(loadHost('alice'));
  host.sensitiveFiles = { masks: [], protect: [], views: [] };
  const plan = fixturePlan(host, profile, request);
  withProbePlan(host, plan);
  for (const path of unprobed) delete host.paths[path];
  return derivePolicy({ profileName: 'test', profileHash: 'h', profile, request, host, plan });
}

const maskTargets = (policy: Policy) =>
  policy.mounts.filter((m): m is Extract<Mount, { kind: 'mask' }> => m.kind === 'mask').map((m) => m.target);

describe('a path the policy stage never probed', () => {
  // Danger mode binds the host root, so a credential store is kept out by its mask alone.
  const danger: [Profile, RunRequest] = [{ mode: 'danger' }, { command: ['true'], danger: true }];

  it('control: a probed credential store inside a bind is masked', () => {
    expect(maskTargets(deriveWithout(...danger, []))).toContain('/home/alice/.ssh');
  });

  it('an unprobed credential store refuses the run (INTERNAL, 125) instead of going unmasked', () => {
    const error = sbxErrorOf(() => deriveWithout(...danger, ['/home/alice/.ssh']));
    expect(error.code).toBe('INTERNAL');
    expect(error.exitCode).toBe(ExitCode.SETUP);
    expect(error.message).toBe(
      'internal error: the policy needs /home/alice/.ssh, which the host probe never looked at',
    );
    expect(error.hint).toContain('please report');
  });

  it("an unprobed bind source or workspace is INTERNAL too, not BIND_SOURCE_MISSING's or WORKSPACE_INVALID's guess", () => {
    const profile: Profile = { read_only: [{ path: '/srv/data', optional: true }] };
    const request: RunRequest = { command: ['true'] };
    // Control: probed and absent, an optional bind is left out.
    expect(deriveWithout(profile, request, []).mounts.some((m) => m.target === '/srv/data')).toBe(false);
    expect(sbxErrorOf(() => deriveWithout(profile, request, ['/srv/data'])).code).toBe('INTERNAL');
    expect(sbxErrorOf(() => deriveWithout({}, request, ['/home/alice/proj'])).code).toBe('INTERNAL');
  });
});
