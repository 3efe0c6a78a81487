// planLimits: for every kind of host, which mechanism enforces each limit, and when `required` refuses.
import { describe, expect, it } from 'vitest';
import { SbxError } from '../../../src/errors.js';
import { parseLimits } from '../../../src/limits/parse-limits.js';
import { mergeProfiles } from '../../../src/profile/merge.js';
import { sbxErrorOf } from '../../helpers/errors.js';
import {
  describePlan,
  type HostLimitFacts,
  type LimitPlan,
  type Limits,
  planLimits,
  v2SessionParent,
  WATCHDOG_FAST_INTERVAL_MS,
  WATCHDOG_INTERVAL_MS,
} from '../../../src/limits/plan.js';

const MiB = 1024 ** 2;

/** Every limit but address_space: 512MiB memory, 64 pids, half a CPU, 10m timeout, 60s CPU, 8MiB files, 256 fds. */
const ALL_INPUT = {
  memory: '512MiB',
  pids: 64,
  cpus: 0.5,
  timeout: '10m',
  cpu_time: '60s',
  file_size: '8MiB',
  nofile: 256,
} as const;
const ALL: Limits = parseLimits(ALL_INPUT);

const V2_ROOT: HostLimitFacts = {
  uid: 0,
  cgroup: {
    kind: 'v2',
    mount: '/sys/fs/cgroup',
    ownPath: '/user.slice/user-0.slice/session-1.scope',
    writable: true,
    controllers: ['cpuset', 'cpu', 'io', 'memory', 'pids'],
  },
  systemdRun: true,
};
const V2_DELEGATED: HostLimitFacts = {
  uid: 1000,
  cgroup: {
    kind: 'v2',
    mount: '/sys/fs/cgroup',
    ownPath: '/user.slice/user-1000.slice/user@1000.service/app.slice/run-u7.scope',
    writable: true,
    controllers: ['memory', 'pids', 'cpu'],
  },
  systemdRun: false,
};
const V2_SESSION_SYSTEMD: HostLimitFacts = {
  uid: 1000,
  cgroup: {
    kind: 'v2',
    mount: '/sys/fs/cgroup',
    ownPath: '/user.slice/user-1000.slice/session-3.scope',
    writable: false,
    controllers: ['memory', 'pids'],
  },
  systemdRun: true,
};
const V2_SESSION_NO_SYSTEMD: HostLimitFacts = { ...V2_SESSION_SYSTEMD, systemdRun: false };
const V1_CONTROLLERS = {
  memory: '/sys/fs/cgroup/memory/user.slice',
  pids: '/sys/fs/cgroup/pids/user.slice',
  cpu: '/sys/fs/cgroup/cpu,cpuacct/user.slice',
};
const V1_ROOT: HostLimitFacts = {
  uid: 0,
  cgroup: { kind: 'v1', controllers: V1_CONTROLLERS, writable: true },
  systemdRun: false,
};
const V1_USER: HostLimitFacts = {
  uid: 1000,
  cgroup: { kind: 'v1', controllers: V1_CONTROLLERS, writable: false },
  systemdRun: false,
};
const NONE_USER: HostLimitFacts = { uid: 1000, cgroup: { kind: 'none' }, systemdRun: false };
const NONE_ROOT: HostLimitFacts = { uid: 0, cgroup: { kind: 'none' }, systemdRun: false };

const mechanisms = (plan: LimitPlan) =>
  Object.fromEntries(plan.limits.map((l) => [l.name, `${l.mechanism}${l.exact ? '' : '~'}`]));

const EXACT_RLIMITS = [
  { resource: 'CPU', soft: 60, hard: 61 },
  { resource: 'FSIZE', soft: 8 * MiB, hard: 8 * MiB },
  { resource: 'NOFILE', soft: 256, hard: 256 },
];

function unenforceable(fn: () => unknown): SbxError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SbxError);
    expect((e as SbxError).code).toBe('LIMIT_UNENFORCEABLE');
    return e as SbxError;
  }
  throw new Error('expected LIMIT_UNENFORCEABLE');
}

describe('v2SessionParent', () => {
  it('puts the session beside our own cgroup, or below the root of the hierarchy', () => {
    expect(
      v2SessionParent('/sys/fs/cgroup', '/user.slice/user-1000.slice/user@1000.service/app.slice/run-u7.scope'),
    ).toBe('/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice');
    expect(v2SessionParent('/sys/fs/cgroup', '/')).toBe('/sys/fs/cgroup');
    expect(v2SessionParent('/sys/fs/cgroup', '/init.scope')).toBe('/sys/fs/cgroup');
    expect(v2SessionParent('/tmp/fake/sys/fs/cgroup', '/a/b/')).toBe('/tmp/fake/sys/fs/cgroup/a');
  });
});

describe('planLimits', () => {
  it('v2 as root: every cgroup limit in one v2 cgroup beside ours, the rest as exact rlimits', () => {
    const plan = planLimits(ALL, V2_ROOT);
    expect(mechanisms(plan)).toEqual({
      memory: 'cgroup-v2',
      pids: 'cgroup-v2',
      cpus: 'cgroup-v2',
      timeout: 'wall-clock',
      'cpu-time': 'rlimit',
      'file-size': 'rlimit',
      nofile: 'rlimit',
    });
    expect(plan.cgroup).toEqual({
      kind: 'cgroup-v2',
      parent: '/sys/fs/cgroup/user.slice/user-0.slice',
      controllers: ['memory', 'pids', 'cpu'],
      settings: { memoryBytes: 512 * MiB, pids: 64, cpus: 0.5 },
    });
    expect(plan.rlimits).toEqual([{ resource: 'CORE', soft: 0, hard: 0 }, ...EXACT_RLIMITS]);
    expect(plan.timeoutMs).toBe(600_000);
  });

  it('v2 delegated to a user: the delegated subtree, no systemd needed', () => {
    const plan = planLimits(ALL, V2_DELEGATED);
    expect(plan.cgroup).toMatchObject({
      kind: 'cgroup-v2',
      parent: '/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice',
    });
    expect(mechanisms(plan)).toMatchObject({ memory: 'cgroup-v2', pids: 'cgroup-v2', cpus: 'cgroup-v2' });
  });

  it('v2 delegated without the cpu controller: cpus is not enforced, and says why', () => {
    const host: HostLimitFacts = {
      ...V2_DELEGATED,
      cgroup: { ...V2_DELEGATED.cgroup, controllers: ['memory', 'pids'] } as HostLimitFacts['cgroup'],
    };
    const plan = planLimits(ALL, host);
    expect(mechanisms(plan)).toMatchObject({ memory: 'cgroup-v2', pids: 'cgroup-v2', cpus: 'none~' });
    expect(plan.cgroup).toMatchObject({
      kind: 'cgroup-v2',
      controllers: ['memory', 'pids'],
      settings: { memoryBytes: 512 * MiB, pids: 64 },
    });
    expect(plan.limits.find((l) => l.name === 'cpus')!.note).toBe(
      'not enforced, the cpu controller is not enabled for /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice; no rlimit can cap CPU bandwidth',
    );
  });

  it('v2 delegated without cpu but with systemd: the scope covers all three, so it wins', () => {
    const host: HostLimitFacts = {
      ...V2_DELEGATED,
      systemdRun: true,
      cgroup: { ...V2_DELEGATED.cgroup, controllers: ['memory', 'pids'] } as HostLimitFacts['cgroup'],
    };
    expect(planLimits(ALL, host).cgroup).toEqual({
      kind: 'systemd-scope',
      manager: 'user',
      settings: { memoryBytes: 512 * MiB, pids: 64, cpus: 0.5 },
    });
  });

  it('v2 not delegated, systemd user manager: a transient scope', () => {
    const plan = planLimits(ALL, V2_SESSION_SYSTEMD);
    expect(plan.cgroup).toEqual({
      kind: 'systemd-scope',
      manager: 'user',
      settings: { memoryBytes: 512 * MiB, pids: 64, cpus: 0.5 },
    });
    expect(mechanisms(plan)).toMatchObject({ memory: 'systemd-scope', pids: 'systemd-scope', cpus: 'systemd-scope' });
    expect(plan.rlimits).toEqual([{ resource: 'CORE', soft: 0, hard: 0 }, ...EXACT_RLIMITS]);
  });

  it('v2 not writable as root, systemd present: the system manager', () => {
    const host: HostLimitFacts = { ...V2_SESSION_SYSTEMD, uid: 0 };
    expect(planLimits(ALL, host).cgroup).toMatchObject({ kind: 'systemd-scope', manager: 'system' });
  });

  it('v1 as root: one directory per controller', () => {
    const plan = planLimits(ALL, V1_ROOT);
    expect(plan.cgroup).toEqual({
      kind: 'cgroup-v1',
      parents: V1_CONTROLLERS,
      settings: { memoryBytes: 512 * MiB, pids: 64, cpus: 0.5 },
    });
    expect(mechanisms(plan)).toMatchObject({ memory: 'cgroup-v1', pids: 'cgroup-v1', cpus: 'cgroup-v1' });
  });

  it('v1 with the pids controller not mounted: memory and cpu in v1, pids falls back (not for root)', () => {
    const host: HostLimitFacts = {
      ...V1_ROOT,
      cgroup: { kind: 'v1', controllers: { ...V1_CONTROLLERS, pids: null }, writable: true },
    };
    const plan = planLimits(ALL, host);
    expect(plan.cgroup).toMatchObject({
      kind: 'cgroup-v1',
      parents: { memory: V1_CONTROLLERS.memory, cpu: V1_CONTROLLERS.cpu },
    });
    expect(plan.cgroup.kind === 'cgroup-v1' && Object.keys(plan.cgroup.parents)).toEqual(['memory', 'cpu']);
    expect(mechanisms(plan)).toMatchObject({ pids: 'none~' });
    expect(plan.limits.find((l) => l.name === 'pids')!.note).toBe(
      'not enforced, the cgroup v1 pids controller is not mounted, and RLIMIT_NPROC does not bind root',
    );
  });

  it('v1 as a user: memory approximated (RLIMIT_DATA + the watchdog), cpus not enforced, pids approximated, and they say so', () => {
    const plan = planLimits(ALL, V1_USER);
    expect(plan.cgroup).toEqual({ kind: 'none' });
    expect(mechanisms(plan)).toEqual({
      memory: 'watchdog~',
      pids: 'rlimit~',
      cpus: 'none~',
      timeout: 'wall-clock',
      'cpu-time': 'rlimit',
      'file-size': 'rlimit',
      nofile: 'rlimit',
    });
    expect(plan.rlimits).toEqual([
      { resource: 'CORE', soft: 0, hard: 0 },
      { resource: 'DATA', soft: 512 * MiB, hard: 512 * MiB },
      { resource: 'NPROC', soft: 64, hard: 64, uid: 1000 },
      ...EXACT_RLIMITS,
    ]);
    // The same polls count the tree's tasks: RLIMIT_NPROC refuses forks without a trace.
    expect(plan.watchdog).toEqual({
      memoryBytes: 512 * MiB,
      intervalMs: WATCHDOG_INTERVAL_MS,
      fastIntervalMs: WATCHDOG_FAST_INTERVAL_MS,
      tasks: 64,
    });
    const notes = Object.fromEntries(plan.limits.map((l) => [l.name, l.note]));
    expect(notes.memory).toBe(
      'approximate: per-process data limit + tree watchdog, cgroup v1 is not writable by uid 1000: RLIMIT_DATA 512MiB per ' +
        "process, and sbx ends the whole sandbox when its processes' memory (anonymous and shared, proportional; " +
        'memfds and tmpfs files they hold; its own tmpfs mounts) passes 512MiB, sampled every 100ms (10ms near the ' +
        'limit), so a shorter burst may pass unseen; page cache is not counted',
    );
    expect(plan.limits[0]!.gap).toBe(
      'approximate: per-process data limit + tree watchdog (cgroup v1 is not writable by uid 1000)',
    );
    expect(notes.pids).toMatch(
      /^approximate, cgroup v1 is not writable by uid 1000: RLIMIT_NPROC counts every task of uid 1000/,
    );
  });

  it('no cgroups at all: a user gets RLIMIT_NPROC for pids, root no pids limit (RLIMIT_NPROC does not bind root)', () => {
    expect(mechanisms(planLimits(ALL, NONE_USER))).toMatchObject({
      memory: 'watchdog~',
      pids: 'rlimit~',
      cpus: 'none~',
    });
    const root = planLimits(ALL, NONE_ROOT);
    expect(mechanisms(root)).toMatchObject({ memory: 'watchdog~', pids: 'none~', cpus: 'none~' });
    expect(root.rlimits.map((r) => r.resource)).toEqual(['CORE', 'DATA', 'CPU', 'FSIZE', 'NOFILE']);
  });

  it('v2 not writable, no systemd: like no cgroups, with the reason', () => {
    const plan = planLimits({ memoryBytes: 256 * MiB, required: [] }, V2_SESSION_NO_SYSTEMD);
    expect(plan.cgroup).toEqual({ kind: 'none' });
    expect(plan.limits[0]!.note).toMatch(
      /^approximate: per-process data limit \+ tree watchdog, cgroup v2 is not writable by uid 1000 at \/sys\/fs\/cgroup\/user.slice\/user-1000.slice and no systemd manager is reachable:/,
    );
  });

  it('no limits but the exact ones: no cgroup, RLIMIT_CORE still 0', () => {
    const plan = planLimits({ nofile: 128, required: [] }, V2_ROOT);
    expect(plan.cgroup).toEqual({ kind: 'none' });
    expect(plan.rlimits).toEqual([
      { resource: 'CORE', soft: 0, hard: 0 },
      { resource: 'NOFILE', soft: 128, hard: 128 },
    ]);
    expect(planLimits({ required: [] }, NONE_USER)).toEqual({
      limits: [],
      cgroup: { kind: 'none' },
      rlimits: [{ resource: 'CORE', soft: 0, hard: 0 }],
    });
  });

  it('is plain JSON data', () => {
    for (const host of [V2_ROOT, V2_DELEGATED, V2_SESSION_SYSTEMD, V1_ROOT, V1_USER, NONE_ROOT]) {
      const plan = planLimits(ALL, host);
      expect(JSON.parse(JSON.stringify(plan))).toEqual(plan);
    }
  });

  it('describePlan gives one line per limit for doctor', () => {
    expect(describePlan(planLimits({ ...ALL, required: ['memory'] }, V2_ROOT)).slice(0, 2)).toEqual([
      'memory 512MiB → cgroup-v2 [required]: memory.max, swap included (memory.swap.max=0); an OOM kill ends the whole sandbox (memory.oom.group)',
      'pids 64 → cgroup-v2: pids.max: every task in the sandbox, threads included',
    ]);
    expect(describePlan(planLimits(ALL, NONE_ROOT))[1]).toMatch(/^pids 64 → none \(not enforced\): /);
    expect(describePlan(planLimits(ALL, NONE_ROOT))[0]).toMatch(
      /^memory 512MiB → watchdog \(approximate\): approximate: per-process data limit \+ tree watchdog, /,
    );
    expect(describePlan(planLimits(ALL, NONE_USER))[1]).toMatch(/^pids 64 → rlimit \(approximate\): /);
  });
});

describe('required', () => {
  it('is satisfied by cgroups, exact rlimits and the wall clock', () => {
    const required: Limits['required'] = ['memory', 'pids', 'cpus', 'timeout', 'cpu-time', 'file-size', 'nofile'];
    expect(() => planLimits({ ...ALL, required }, V2_ROOT)).not.toThrow();
    expect(() => planLimits({ ...ALL, required }, V1_ROOT)).not.toThrow();
    expect(() => planLimits({ ...ALL, required }, V2_SESSION_SYSTEMD)).not.toThrow();
    expect(() =>
      planLimits({ ...ALL, required: ['timeout', 'cpu-time', 'file-size', 'nofile'] }, NONE_USER),
    ).not.toThrow();
  });

  it('refuses memory without a cgroup, naming the limit, the reason and the fix', () => {
    const e = unenforceable(() => planLimits({ ...ALL, required: ['memory'] }, V1_USER));
    expect(e.message).toBe(
      'limits.memory (512MiB) is required but cgroup v1 is not writable by uid 1000: it could only be approximated (per-process data limit + tree watchdog)',
    );
    expect(e.hint).toBe(
      'run as root (cgroup v1 cannot be delegated safely), or boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1) and systemd; or drop it from limits.required',
    );
    expect(e.details).toEqual([]);
  });

  it('refuses pids for root without a pids controller: nothing can enforce it', () => {
    const e = unenforceable(() => planLimits({ ...ALL, required: ['pids'] }, NONE_ROOT));
    expect(e.message).toBe(
      'limits.pids (64) is required but no cgroup filesystem is mounted: nothing on this host can enforce it',
    );
    expect(e.hint).toBe(
      'mount cgroup2 (mount -t cgroup2 none /sys/fs/cgroup), or run on a host with systemd; or drop it from limits.required',
    );
  });

  it('on a non-delegated v2 without systemd, points at root, delegation and systemd', () => {
    const e = unenforceable(() => planLimits({ ...ALL, required: ['cpus'] }, V2_SESSION_NO_SYSTEMD));
    expect(e.message).toMatch(/^limits\.cpus \(0\.5\) is required but cgroup v2 is not writable by uid 1000/);
    expect(e.hint).toMatch(
      /^run as root, or start sbx in a delegated cgroup \(systemd-run --user --scope -p Delegate=yes sbx …\), or install systemd/,
    );
  });

  it('names a missing v2 controller and how to enable it', () => {
    const host: HostLimitFacts = {
      ...V2_ROOT,
      systemdRun: false,
      cgroup: { ...V2_ROOT.cgroup, controllers: ['memory'] } as HostLimitFacts['cgroup'],
    };
    const e = unenforceable(() => planLimits({ ...ALL, required: ['pids'] }, host));
    expect(e.message).toBe(
      'limits.pids (64) is required but the pids controller is not enabled for /sys/fs/cgroup/user.slice/user-0.slice: nothing on this host can enforce it',
    );
    expect(e.hint).toBe(
      'enable it as root: echo +pids > /sys/fs/cgroup/user.slice/user-0.slice/cgroup.subtree_control; or drop it from limits.required',
    );
  });

  it('reports every refused limit: the first in the message, the rest as details', () => {
    const e = unenforceable(() => planLimits({ ...ALL, required: ['memory', 'pids', 'cpus', 'nofile'] }, V1_USER));
    expect(e.message).toMatch(/^limits\.memory /);
    expect(e.details).toEqual([
      'limits.pids (64) is required but cgroup v1 is not writable by uid 1000: it could only be approximated with an rlimit',
      'limits.cpus (0.5) is required but cgroup v1 is not writable by uid 1000: nothing on this host can enforce it',
    ]);
  });

  it('control: the same limits, not required, plan without throwing', () => {
    expect(() => planLimits(ALL, V1_USER)).not.toThrow();
  });
});

describe('parseLimits', () => {
  it('turns profile values into base units', () => {
    expect(
      parseLimits({
        memory: '2GiB',
        pids: '128',
        cpus: '1.5',
        timeout: '1h30m',
        cpu_time: '2m',
        file_size: 1048576,
        nofile: '1024',
        required: ['memory', 'cpu_time', 'file-size'],
      }),
    ).toEqual({
      memoryBytes: 2 * 1024 ** 3,
      pids: 128,
      cpus: 1.5,
      timeoutMs: 5_400_000,
      cpuTimeSec: 120,
      fileSizeBytes: MiB,
      nofile: 1024,
      required: ['memory', 'cpu-time', 'file-size'],
    });
    expect(parseLimits({})).toEqual({ required: [] });
  });

  it.each([
    [{ memory: '3 potatoes' }, 'limits.memory: "3 potatoes" is not a size; use e.g. 512MiB or 2GiB'],
    [{ memory: '100' }, 'limits.memory: "100" is below the minimum of 1MiB; use e.g. 512MiB or 2GiB'],
    [{ pids: 2 }, 'limits.pids: 2 is below the minimum of 4; use e.g. 256'],
    [{ nofile: 3 }, 'limits.nofile: 3 is below the minimum of 16; use e.g. 1024'],
    [{ cpus: 0 }, 'limits.cpus: 0 is below the minimum of 0.01; use e.g. 2 or 0.5'],
    [{ timeout: '30y' }, 'limits.timeout: "30y" is not a duration; use e.g. 30s, 10m or 1h30m'],
    [{ cpu_time: '500ms' }, 'limits.cpu_time: "500ms" is below the minimum of 1s; use e.g. 60s or 10m'],
    [{ cpu_time: '1500ms' }, 'limits.cpu_time: "1500ms" is not a whole number of seconds; use e.g. 60s or 10m'],
    [{ file_size: '1PB1' }, 'limits.file_size: "1PB1" is not a size; use e.g. 64MiB or 1GiB'],
    [
      { required: ['disk'] },
      'limits.required[0]: "disk" is not a limit; use one of memory, pids, cpus, timeout, cpu_time, file_size, nofile, address_space',
    ],
    [
      { memory: '1GiB', required: ['memory', 'pids'] },
      'limits.required[1]: "pids" is required but limits.pids is not set',
    ],
  ])('%j is refused: %s', (input, message) => {
    try {
      parseLimits(input);
      throw new Error('expected a throw');
    } catch (e) {
      expect((e as SbxError).code).toBe('LIMIT_INVALID');
      expect((e as SbxError).message).toBe(message);
    }
  });
});

describe('each host kind × each limit: mechanism, exact, enforced', () => {
  const EVERY: Limits = parseLimits({ ...ALL_INPUT, address_space: '16GiB' });
  /** [mechanism, exact, enforced] per limit; the four that never need a cgroup are the same everywhere. */
  const ALWAYS = {
    timeout: ['wall-clock', true, true],
    'cpu-time': ['rlimit', true, true],
    'file-size': ['rlimit', true, true],
    nofile: ['rlimit', true, true],
    'address-space': ['rlimit', true, true],
  };
  const table = (plan: LimitPlan) =>
    Object.fromEntries(plan.limits.map((l) => [l.name, [l.mechanism, l.exact, l.enforced]]));

  it.each([
    ['cgroup v1, root', V1_ROOT, 'cgroup-v1'],
    ['cgroup v2, a subtree delegated to the user', V2_DELEGATED, 'cgroup-v2'],
    ['cgroup v2, not delegated, a systemd user manager', V2_SESSION_SYSTEMD, 'systemd-scope'],
  ] as const)('%s: memory, pids and cpus exact in one %s, required accepted', (_, host, kind) => {
    const plan = planLimits(EVERY, host);
    expect(table(plan)).toEqual({
      memory: [kind, true, true],
      pids: [kind, true, true],
      cpus: [kind, true, true],
      ...ALWAYS,
    });
    expect(plan.cgroup.kind).toBe(kind);
    expect(plan.rlimits.map((r) => r.resource)).toEqual(['CORE', 'CPU', 'FSIZE', 'NOFILE', 'AS']);
    expect(() => planLimits({ ...EVERY, required: ['memory', 'pids', 'cpus', 'address-space'] }, host)).not.toThrow();
  });

  it.each([
    ['cgroup v1, a user (this CI host)', V1_USER, 'cgroup v1 is not writable by uid 1000'],
    [
      'cgroup v2 not writable, no systemd',
      V2_SESSION_NO_SYSTEMD,
      'cgroup v2 is not writable by uid 1000 at /sys/fs/cgroup/user.slice/user-1000.slice and no systemd manager is reachable',
    ],
    ['no cgroup filesystem', NONE_USER, 'no cgroup filesystem is mounted'],
  ] as const)(
    'nothing writable (%s): memory approximated by RLIMIT_DATA + the watchdog, cpus not enforced, pids approximated, no RLIMIT_AS',
    (_, host, gap) => {
      const plan = planLimits(EVERY, host);
      expect(table(plan)).toEqual({
        memory: ['watchdog', false, true],
        pids: ['rlimit', false, true],
        cpus: ['none', false, false],
        ...ALWAYS,
      });
      // The only AS is the one the profile asked for by name, at its own value.
      expect(plan.rlimits.filter((r) => r.resource === 'AS')).toEqual([
        { resource: 'AS', soft: 16 * 1024 * MiB, hard: 16 * 1024 * MiB },
      ]);
      expect(plan.rlimits.filter((r) => r.resource === 'DATA')).toEqual([
        { resource: 'DATA', soft: 512 * MiB, hard: 512 * MiB },
      ]);
      expect(plan.limits.filter((l) => !l.exact).map((l) => [l.name, l.gap])).toEqual([
        ['memory', `approximate: per-process data limit + tree watchdog (${gap})`],
        ['pids', gap],
        ['cpus', gap],
      ]);
      expect(plan.limits.filter((l) => l.exact).map((l) => l.gap)).toEqual([
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
      ]);
      expect(() =>
        planLimits({ ...EVERY, required: ['timeout', 'cpu-time', 'file-size', 'nofile', 'address-space'] }, host),
      ).not.toThrow();
      for (const name of ['memory', 'pids', 'cpus'] as const) {
        const e = unenforceable(() => planLimits({ ...EVERY, required: [name] }, host));
        expect(e.message).toMatch(
          new RegExp(`^limits\\.${name} \\(.+\\) is required but ${gap.replace(/[.()/]/g, '\\$&')}: `),
        );
      }
    },
  );

  it('without address_space, memory alone never becomes an RLIMIT_AS (the WebAssembly/V8 breakage)', () => {
    for (const host of [V1_ROOT, V2_DELEGATED, V2_SESSION_SYSTEMD]) {
      const plan = planLimits(parseLimits({ memory: '2GiB' }), host);
      expect(plan.rlimits.map((r) => r.resource)).toEqual(['CORE']);
      expect(plan.watchdog).toBeUndefined();
    }
    // Without a cgroup: RLIMIT_DATA (writable private mappings only), never AS.
    for (const host of [V1_USER, V2_SESSION_NO_SYSTEMD, NONE_USER, NONE_ROOT]) {
      const plan = planLimits(parseLimits({ memory: '2GiB' }), host);
      expect(plan.rlimits.map((r) => r.resource)).toEqual(['CORE', 'DATA']);
      expect(plan.watchdog).toEqual({
        memoryBytes: 2 * 1024 * MiB,
        intervalMs: WATCHDOG_INTERVAL_MS,
        fastIntervalMs: WATCHDOG_FAST_INTERVAL_MS,
      });
    }
  });
});

describe('none lifts a limit', () => {
  it('in a profile and as a flag (the flag wins over the profile in both directions)', () => {
    expect(parseLimits({ memory: 'none', pids: 64 })).toEqual({ pids: 64, required: [] });
    expect(parseLimits({ memory: '2GiB', pids: 64 }, { memory: 'none' })).toEqual({ pids: 64, required: [] });
    expect(parseLimits({ memory: 'none' }, { memory: '1GiB' })).toEqual({ memoryBytes: 1024 * MiB, required: [] });
    const lifted = parseLimits(ALL_INPUT, {
      memory: 'none',
      pids: 'none',
      cpus: 'none',
      timeout: 'none',
      cpu_time: 'none',
      file_size: 'none',
      nofile: 'none',
    });
    expect(lifted).toEqual({ required: [] });
    expect(planLimits(lifted, V1_USER)).toEqual({
      limits: [],
      cgroup: { kind: 'none' },
      rlimits: [{ resource: 'CORE', soft: 0, hard: 0 }],
    });
  });

  it('a flag naming a required limit is a usage error that names the conflict', () => {
    const e = sbxErrorOf(() => parseLimits({ memory: '2GiB', pids: 64, required: ['memory'] }, { memory: 'none' }));
    expect(e.code).toBe('USAGE');
    expect(e.exitCode).toBe(2);
    expect(e.message).toBe('--memory none: the profile lists memory in limits.required, so its limit cannot be lifted');
    expect(e.hint).toBe(
      'give --memory a value instead (e.g. --memory 512MiB), or use a profile that does not require it',
    );
    expect(
      sbxErrorOf(() => parseLimits({ cpu_time: '1m', required: ['cpu_time'] }, { cpu_time: 'none' })).message,
    ).toMatch(/^--cpu-time none: /);
    // control: another limit, or a value, is fine
    expect(parseLimits({ memory: '2GiB', pids: 64, required: ['memory'] }, { pids: 'none', memory: '4GiB' })).toEqual({
      memoryBytes: 4096 * MiB,
      required: ['memory'],
    });
  });

  it('a child profile cannot lift what its parent requires (required lists are inherited whole)', () => {
    const { profile } = mergeProfiles([
      { name: 'untrusted', profile: { limits: { memory: '2GiB', pids: 512, required: ['memory'] } } },
      { name: 'child', profile: { extends: 'untrusted', limits: { memory: 'none', pids: 'none' } } },
    ]);
    expect(profile.limits).toEqual({ memory: 'none', pids: 'none', required: ['memory'] });
    const e = sbxErrorOf(() => parseLimits(profile.limits!));
    expect(e.code).toBe('LIMIT_INVALID');
    expect(e.message).toBe('limits.required[0]: "memory" is required but limits.memory is none');
    expect(e.hint).toBe(
      'give limits.memory a value: a limit in limits.required (inherited ones included) cannot be lifted',
    );
  });

  it('a child profile lifts an inherited limit that is not required', () => {
    const { profile } = mergeProfiles([
      { name: 'untrusted', profile: { limits: { memory: '2GiB', timeout: '30m' } } },
      { name: 'child', profile: { extends: 'untrusted', limits: { timeout: 'none' } } },
    ]);
    expect(parseLimits(profile.limits!)).toEqual({ memoryBytes: 2048 * MiB, required: [] });
  });

  it('bad flag values are named by the flag, profile values by their key', () => {
    expect(sbxErrorOf(() => parseLimits({}, { memory: 'lots' })).message).toBe(
      '--memory: "lots" is not a size; use e.g. 512MiB or 2GiB',
    );
    expect(sbxErrorOf(() => parseLimits({ memory: 'lots' })).message).toBe(
      'limits.memory: "lots" is not a size; use e.g. 512MiB or 2GiB',
    );
    expect(sbxErrorOf(() => parseLimits({}, { address_space: '1MiB' })).message).toBe(
      '--address-space: "1MiB" is below the minimum of 16MiB; use e.g. 16GiB',
    );
    // `none` is a word, not a prefix: anything else is still refused
    expect(sbxErrorOf(() => parseLimits({ memory: 'None' })).code).toBe('LIMIT_INVALID');
  });
});
