// The untrusted profile's limits, planned on each kind of host as the probe finds it in a fake cgroupfs:
// cgroup v1 as root, a cgroup v2 subtree delegated to the user, cgroup v2 with a systemd user manager,
// and nothing writable. What enforces each limit, whether it is enforced at all, and what `required`
// and `none` do there.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseLimits } from '../../../src/limits/parse-limits.js';
import { type HostLimitFacts, planLimits } from '../../../src/limits/plan.js';
import { probeCgroupFacts } from '../../../src/limits/host/cgroup/probe.js';
import { sbxErrorOf } from '../../helpers/errors.js';
import { delegateToAnyone, fakeCgroupfs, stubBin, V2_USER_PARENT } from '../../helpers/fake-cgroupfs.js';

const UNTRUSTED = {
  memory: '2GiB',
  pids: 512,
  cpus: 2,
  timeout: '30m',
  cpu_time: '20m',
  file_size: '1GiB',
  nofile: 4096,
};
const OWN_UID = process.getuid!();
/** A uid the fake tree is not delegated to (the fixture's files belong to whoever runs the tests). */
const STRANGER = 4242;
const EXACT_ELSEWHERE = { timeout: 'wall-clock', 'cpu-time': 'rlimit', 'file-size': 'rlimit', nofile: 'rlimit' };

type Kind = 'v1 as root' | 'v2 delegated subtree' | 'v2 with a systemd user manager' | 'nothing writable';

function host(kind: Kind): HostLimitFacts {
  switch (kind) {
    case 'v1 as root':
      return probeCgroupFacts({ root: fakeCgroupfs('v1-root'), uid: OWN_UID, env: {} });
    case 'v2 delegated subtree': {
      const root = fakeCgroupfs('v2-user');
      delegateToAnyone(join(root, V2_USER_PARENT));
      return probeCgroupFacts({ root, uid: 1000, env: { PATH: '' } });
    }
    case 'v2 with a systemd user manager': {
      const root = fakeCgroupfs('v2-user');
      const bin = stubBin({ 'systemd-run': '#!/bin/sh\nexit 0\n' });
      return probeCgroupFacts({
        root,
        uid: STRANGER,
        env: { PATH: bin, XDG_RUNTIME_DIR: join(root, 'run/user/1000') },
      });
    }
    case 'nothing writable':
      return probeCgroupFacts({ root: fakeCgroupfs('v2-user'), uid: STRANGER, env: { PATH: '' } });
  }
}

const summary = (facts: HostLimitFacts, input: object) =>
  Object.fromEntries(
    planLimits(parseLimits(input), facts).limits.map((l) => [
      l.name,
      l.enforced ? `${l.mechanism}${l.exact ? '' : '~'}` : 'NOT ENFORCED',
    ]),
  );

describe('the untrusted limits on each kind of host', () => {
  it.each([
    ['v1 as root', 'cgroup-v1'],
    ['v2 delegated subtree', 'cgroup-v2'],
    ['v2 with a systemd user manager', 'systemd-scope'],
  ] as const)('%s: memory, pids and cpus exact (%s); required: [memory, pids, cpus] accepted', (kind, mechanism) => {
    const facts = host(kind);
    expect(summary(facts, UNTRUSTED)).toEqual({
      memory: mechanism,
      pids: mechanism,
      cpus: mechanism,
      ...EXACT_ELSEWHERE,
    });
    expect(summary(facts, { ...UNTRUSTED, required: ['memory', 'pids', 'cpus'] })).toMatchObject({ memory: mechanism });
  });

  it('nothing writable: memory approximated by the watchdog, cpus not enforced, pids approximated; required memory refused', () => {
    const facts = host('nothing writable');
    expect(summary(facts, UNTRUSTED)).toEqual({
      memory: 'watchdog~',
      pids: 'rlimit~',
      cpus: 'NOT ENFORCED',
      ...EXACT_ELSEWHERE,
    });
    const e = sbxErrorOf(() => planLimits(parseLimits({ ...UNTRUSTED, required: ['memory'] }), facts));
    expect(e.code).toBe('LIMIT_UNENFORCEABLE');
    expect(e.exitCode).toBe(125);
    expect(e.message).toMatch(
      /^limits\.memory \(2GiB\) is required but cgroup v2 is not writable by uid 4242 at .* and no systemd manager is reachable: it could only be approximated \(per-process data limit \+ tree watchdog\)$/,
    );
  });

  it.each(['v1 as root', 'v2 delegated subtree', 'v2 with a systemd user manager', 'nothing writable'] as const)(
    '%s: --memory none and --cpus none lift them; the rest stays as planned',
    (kind) => {
      const facts = host(kind);
      const lifted = summary(facts, { ...UNTRUSTED, memory: 'none', cpus: 'none' });
      expect(Object.keys(lifted)).toEqual(['pids', 'timeout', 'cpu-time', 'file-size', 'nofile']);
      expect(
        planLimits(parseLimits(UNTRUSTED, { memory: 'none', cpus: 'none' }), facts).limits.map((l) => l.name),
      ).toEqual(Object.keys(lifted));
    },
  );
});
