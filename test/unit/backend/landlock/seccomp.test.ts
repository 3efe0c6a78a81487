// The landlock backend's own seccomp rules, run in the BPF interpreter on the filter compileLandlock
// passes on fd 4: io_uring and sends with MSG_FASTOPEN are denied whatever the preset (io_uring also
// with `io_uring: true`), beside the socket family rule, and the report and explain say so.
import { describe, expect, it } from 'vitest';
import { describeLandlockGaps, landlockApproximations } from '../../../../src/backend/landlock/assessment.js';
import { compileLandlock } from '../../../../src/backend/landlock/compile.js';
import { HOST_IPC_SYSCALLS, landlockSeccompRules } from '../../../../src/backend/landlock/seccomp-rules.js';
import type { Launch } from '../../../../src/backend/launch.js';
import type { Profile } from '../../../../src/profile/schema.js';
import type { SeccompArch } from '../../../../src/seccomp/index.js';
import { SYSCALLS_AARCH64 } from '../../../../src/seccomp/syscalls-aarch64.js';
import { SYSCALLS_X86_64 } from '../../../../src/seccomp/syscalls-x86_64.js';
import { FIXTURE_SESSION, runPipeline } from '../../../helpers/hosts.js';
import {
  ALLOW,
  AUDIT_ARCH,
  EAFNOSUPPORT,
  ENOSYS,
  EOPNOTSUPP,
  EPERM,
  type Verdict,
  verdict,
} from '../../seccomp/bpf-interpreter.js';

const TABLES: Record<SeccompArch, Readonly<Record<string, number>>> = {
  x86_64: SYSCALLS_X86_64,
  aarch64: SYSCALLS_AARCH64,
};
/** <linux/socket.h>: the same on both arches. */
const MSG_FASTOPEN = 0x20000000;
const MSG_DONTWAIT = 0x40;
const [AF_UNIX, AF_INET, AF_NETLINK] = [1, 2, 16];

type Seccomp = NonNullable<Profile['seccomp']>;
const PRESETS: Record<string, Seccomp> = {
  default: { preset: 'default' },
  strict: { preset: 'strict' },
  off: { preset: 'off' },
  'io_uring: true': { preset: 'default', io_uring: true },
};

async function landlockFor(profile: string, seccomp: Seccomp | undefined, arch: SeccompArch) {
  const p = await runPipeline(profile, 'alice', {
    mutateHost: (h) => (h.sensitiveFiles = { masks: [], protect: [], views: [] }),
    ...(seccomp ? { profile: { seccomp } } : {}),
  });
  const launch = compileLandlock(p.policy, FIXTURE_SESSION, {
    path: '/usr/lib/sbx/dist/sbx-landlock',
    ...{ stdinIsTty: false, arch, uid: p.host.uid, gid: p.host.gid },
  });
  return { policy: p.policy, call: caller(filterOf(launch), arch) };
}

function filterOf(launch: Launch): Uint8Array {
  const fd = launch.fds[1];
  if (fd?.purpose !== 'seccomp') throw new Error('no filter on fd 4');
  return fd.data;
}

function caller(program: Uint8Array, arch: SeccompArch) {
  return (name: string, ...args: (number | bigint)[]): Verdict => {
    const nr = TABLES[arch][name];
    if (nr === undefined) throw new Error(`${name} has no number on ${arch}`);
    return verdict(program, { nr, arch: AUDIT_ARCH[arch], args });
  };
}

describe.each(['x86_64', 'aarch64'] as const)('the filter on %s', (arch) => {
  describe.each(Object.keys(PRESETS))('network none, seccomp %s', (preset) => {
    const compiled = () => landlockFor('default', PRESETS[preset], arch);

    it('denies io_uring_setup, io_uring_enter and io_uring_register with EPERM', async () => {
      const { call } = await compiled();
      for (const name of ['io_uring_setup', 'io_uring_enter', 'io_uring_register']) expect(call(name)).toEqual(EPERM);
    });

    it('denies sends with MSG_FASTOPEN in the flags argument (EOPNOTSUPP), and only those', async () => {
      const { call } = await compiled();
      // sendto(fd, buf, len, flags, addr, addrlen), sendmsg(fd, msg, flags), sendmmsg(fd, vec, vlen, flags).
      const flagged = (flags: number | bigint) => ({
        sendto: call('sendto', 3, 0, 8, flags, 0, 16),
        sendmsg: call('sendmsg', 3, 0, flags),
        sendmmsg: call('sendmmsg', 3, 0, 1, flags),
      });
      const all = (v: Verdict) => ({ sendto: v, sendmsg: v, sendmmsg: v });
      expect(flagged(MSG_FASTOPEN)).toEqual(all(EOPNOTSUPP));
      expect(flagged(MSG_FASTOPEN | MSG_DONTWAIT)).toEqual(all(EOPNOTSUPP));
      // The kernel reads flags as a 32-bit int: junk in the high half does not hide the bit.
      expect(flagged((0xffffffffn << 32n) | BigInt(MSG_FASTOPEN))).toEqual(all(EOPNOTSUPP));
      expect(flagged(MSG_DONTWAIT)).toEqual(all(ALLOW));
      expect(flagged(0)).toEqual(all(ALLOW));
      // The bit in another argument (a length of 512 MiB) is not the flags.
      expect(call('sendto', 3, 0, MSG_FASTOPEN, 0, 0, 16)).toEqual(ALLOW);
      expect(call('sendmmsg', 3, 0, MSG_FASTOPEN, 0)).toEqual(ALLOW);
    });

    it('refuses datagram (and raw) socketpairs with EOPNOTSUPP; stream and seqpacket pairs pass', async () => {
      const { call } = await compiled();
      // socketpair(domain, type, protocol, sv): SOCK_STREAM 1, SOCK_DGRAM 2, SOCK_RAW 3, SOCK_SEQPACKET 5.
      const SOCK_NONBLOCK = 0o4000;
      const SOCK_CLOEXEC = 0o2000000;
      for (const type of [2, 3, 2 | SOCK_CLOEXEC | SOCK_NONBLOCK])
        expect(call('socketpair', 1, type, 0, 0)).toEqual(EOPNOTSUPP);
      expect(call('socketpair', 1, (0xffffffffn << 32n) | 2n, 0, 0)).toEqual(EOPNOTSUPP);
      for (const type of [1, 5, 1 | SOCK_CLOEXEC, 5 | SOCK_NONBLOCK])
        expect(call('socketpair', 1, type, 0, 0)).toEqual(ALLOW);
    });

    it("refuses SysV IPC and POSIX message queues with ENOSYS: no IPC namespace, their objects are the host's (issue 30)", async () => {
      const { call } = await compiled();
      for (const name of HOST_IPC_SYSCALLS) expect(call(name, 0, 1 << 20, 0o1600), name).toEqual(ENOSYS);
      // POSIX shared memory is a file in /dev/shm (Landlock); the calls around it are untouched.
      for (const name of ['mmap', 'memfd_create', 'ftruncate']) expect(call(name, 0, 0, 0), name).toEqual(ALLOW);
    });

    it('refuses every socket family but netlink', async () => {
      const { call } = await compiled();
      expect([AF_UNIX, AF_INET, AF_NETLINK].map((family) => call('socket', family, 1, 0))).toEqual([
        EAFNOSUPPORT,
        EAFNOSUPPORT,
        ALLOW,
      ]);
    });
  });

  it("network host: io_uring and unix sockets stay denied, Fast Open is the host's", async () => {
    const { call } = await landlockFor('network', { preset: 'off' }, arch);
    expect(call('io_uring_setup')).toEqual(EPERM);
    expect(call('socket', AF_UNIX, 1, 0)).toEqual(EAFNOSUPPORT);
    expect(call('socket', AF_INET, 1, 0)).toEqual(ALLOW);
    expect(call('sendto', 3, 0, 8, MSG_FASTOPEN, 0, 16)).toEqual(ALLOW);
  });

  it('keeps an unconditional denial the profile adds for a call the backend also filters', async () => {
    const { call } = await landlockFor('default', { preset: 'default', add: ['socket', 'sendto'] }, arch);
    expect(call('socket', AF_NETLINK, 3, 0)).toEqual(EPERM);
    expect(call('sendto', 3, 0, 8, 0, 0, 16)).toEqual(EPERM);
  });
});

describe('what the report and explain say of these rules', () => {
  const features = async (profile: string, seccomp: Seccomp) => {
    const { policy } = await landlockFor(profile, seccomp, 'x86_64');
    return landlockApproximations(policy).map((a) => a.split(':')[0]);
  };

  it('seccomp.io_uring is named exactly when the profile lets io_uring through', async () => {
    expect(await features('default', { preset: 'off' })).toContain('seccomp.io_uring');
    expect(await features('default', { preset: 'default', io_uring: true })).toContain('seccomp.io_uring');
    expect(await features('default', { preset: 'default', remove: ['io_uring_enter'] })).toContain('seccomp.io_uring');
    expect(await features('default', { preset: 'default' })).not.toContain('seccomp.io_uring');
    expect(await features('default', { preset: 'strict' })).not.toContain('seccomp.io_uring');
  });

  it('network.tcp-fastopen is named whenever Landlock governs TCP', async () => {
    expect(await features('default', { preset: 'default' })).toContain('network.tcp-fastopen');
    expect(await features('network', { preset: 'default' })).not.toContain('network.tcp-fastopen');
  });

  it('explain lists them among the approximations', async () => {
    const { policy } = await landlockFor('default', { preset: 'off' }, 'x86_64');
    const gaps = describeLandlockGaps(policy);
    expect(gaps.filter((g) => /^weaker (seccomp\.io_uring|network\.tcp-fastopen):/.test(g))).toHaveLength(2);
  });

  it('the rules the backend adds, in the order explain prints their syscalls', async () => {
    const names = async (profile: string) => {
      const { policy } = await landlockFor(profile, { preset: 'off' }, 'x86_64');
      return landlockSeccompRules(policy).map((r) => r.syscall);
    };
    const always = [
      ...['socket', 'socketpair', 'prlimit64', 'io_uring_setup', 'io_uring_enter', 'io_uring_register'],
      ...HOST_IPC_SYSCALLS,
    ];
    expect(await names('default')).toEqual([...always, 'sendto', 'sendmsg', 'sendmmsg']);
    expect(await names('network')).toEqual(always);
  });

  it('SysV and POSIX mq calls are refused only where the policy asks for an IPC namespace', async () => {
    const { policy } = await landlockFor('default', { preset: 'off' }, 'x86_64');
    const shared = { ...policy, namespaces: { ...policy.namespaces, ipc: false } };
    expect(landlockSeccompRules(policy).filter((r) => HOST_IPC_SYSCALLS.includes(r.syscall))).toHaveLength(18);
    expect(landlockSeccompRules(shared).filter((r) => HOST_IPC_SYSCALLS.includes(r.syscall))).toEqual([]);
  });

  it('namespaces.ipc says so, in the report and in explain', async () => {
    expect(await features('default', { preset: 'default' })).toContain('namespaces.ipc');
    const { policy } = await landlockFor('default', { preset: 'default' }, 'x86_64');
    const ipc = describeLandlockGaps(policy).find((g) => g.startsWith('weaker namespaces.ipc:'));
    expect(ipc).toMatch(/SysV IPC .* ENOSYS/);
  });
});
