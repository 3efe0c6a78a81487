// Runs the assembled programs in a BPF interpreter against synthetic seccomp_data.
import { describe, expect, it } from 'vitest';
import {
  type SeccompArch,
  type SeccompRule,
  type SeccompSettings,
  assembleSeccompFilter,
  resolveSeccompRules,
} from '../../../src/seccomp/index.js';
import { SYSCALLS_AARCH64 } from '../../../src/seccomp/syscalls-aarch64.js';
import { SYSCALLS_X86_64 } from '../../../src/seccomp/syscalls-x86_64.js';
import {
  ALLOW,
  AUDIT_ARCH,
  EAFNOSUPPORT,
  ENOSYS,
  EOPNOTSUPP,
  EPERM,
  KILL,
  type Verdict,
  execute,
  verdict,
} from './bpf-interpreter.js';

const TABLES: Record<SeccompArch, Readonly<Record<string, number>>> = {
  x86_64: SYSCALLS_X86_64,
  aarch64: SYSCALLS_AARCH64,
};
const ARCHES: SeccompArch[] = ['x86_64', 'aarch64'];
const NAMES_BY_NUMBER = {
  x86_64: new Map(Object.entries(SYSCALLS_X86_64).map(([name, nr]) => [nr, name])),
  aarch64: new Map(Object.entries(SYSCALLS_AARCH64).map(([name, nr]) => [nr, name])),
};

function settings(overrides: Partial<SeccompSettings> = {}): SeccompSettings {
  return { preset: 'default', add: [], remove: [], allowIoUring: false, ...overrides };
}

function filterFor(arch: SeccompArch, overrides: Partial<SeccompSettings> = {}): Uint8Array {
  return assembleSeccompFilter(resolveSeccompRules(settings(overrides)), arch);
}

/** Verdict for a named syscall on the filter's own arch. */
function call(program: Uint8Array, arch: SeccompArch, name: string, ...args: (bigint | number)[]): Verdict {
  const nr = TABLES[arch][name];
  if (nr === undefined) throw new Error(`${name} has no number on ${arch}`);
  return verdict(program, { nr, arch: AUDIT_ARCH[arch], args });
}

const CLONE_NEWUSER = 0x10000000;
const SIGCHLD = 17;
// What glibc's pthread_create passes: CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID.
const PTHREAD_CLONE_FLAGS = 0x3d0f00;
const TIOCSTI = 0x5412;
const TCGETS = 0x5401;

describe.each(ARCHES)('default filter on %s', (arch) => {
  const program = filterFor(arch);
  const rules = resolveSeccompRules(settings());

  it('denies every unconditional default rule with its errno', () => {
    const plain = rules.filter((rule) => rule.when === undefined && TABLES[arch][rule.syscall] !== undefined);
    expect(plain.length).toBeGreaterThan(40);
    for (const rule of plain) {
      const expected = rule.syscall === 'clone3' ? ENOSYS : EPERM;
      expect(call(program, arch, rule.syscall), rule.syscall).toEqual(expected);
    }
  });

  it.each([
    'mount',
    'umount2',
    'pivot_root',
    'move_mount',
    'open_tree',
    'fsopen',
    'fsconfig',
    'fsmount',
    'fspick',
    'mount_setattr',
    'ptrace',
    'process_vm_readv',
    'process_vm_writev',
    'kexec_load',
    'kexec_file_load',
    'init_module',
    'finit_module',
    'delete_module',
    'bpf',
    'perf_event_open',
    'userfaultfd',
    'keyctl',
    'add_key',
    'request_key',
    'setns',
    'swapon',
    'swapoff',
    'reboot',
    'acct',
    'quotactl',
    'quotactl_fd',
    'open_by_handle_at',
    'name_to_handle_at',
    'syslog',
    'io_uring_setup',
    'io_uring_enter',
    'io_uring_register',
  ])('%s → EPERM', (name) => {
    expect(call(program, arch, name)).toEqual(EPERM);
  });

  it('clone3 → ENOSYS, so libc falls back to clone', () => {
    expect(call(program, arch, 'clone3')).toEqual(ENOSYS);
  });

  it('clone with a namespace flag → EPERM; fork- and thread-style clone → ALLOW', () => {
    expect(call(program, arch, 'clone', CLONE_NEWUSER | SIGCHLD)).toEqual(EPERM);
    for (const flag of [0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000]) {
      expect(call(program, arch, 'clone', flag | SIGCHLD), flag.toString(16)).toEqual(EPERM);
    }
    expect(call(program, arch, 'clone', SIGCHLD)).toEqual(ALLOW);
    expect(call(program, arch, 'clone', PTHREAD_CLONE_FLAGS)).toEqual(ALLOW);
    // The kernel only reads the low 32 bits of clone's flags.
    expect(call(program, arch, 'clone', 0xffffffff00000000n | BigInt(SIGCHLD))).toEqual(ALLOW);
    expect(call(program, arch, 'clone', 0xffffffff00000000n | BigInt(CLONE_NEWUSER))).toEqual(EPERM);
  });

  it('unshare with a namespace flag (time included) → EPERM; unshare(CLONE_FILES) → ALLOW', () => {
    expect(call(program, arch, 'unshare', CLONE_NEWUSER)).toEqual(EPERM);
    expect(call(program, arch, 'unshare', 0x80)).toEqual(EPERM);
    expect(call(program, arch, 'unshare', 0x400)).toEqual(ALLOW);
  });

  it('ioctl TIOCSTI and TIOCLINUX → EPERM, also with junk in the high 32 bits (CVE-2019-10063)', () => {
    expect(call(program, arch, 'ioctl', 0, TIOCSTI)).toEqual(EPERM);
    expect(call(program, arch, 'ioctl', 0, 0x100005412n)).toEqual(EPERM);
    expect(call(program, arch, 'ioctl', 0, 0xffffffff00005412n)).toEqual(EPERM);
    expect(call(program, arch, 'ioctl', 0, 0x541c)).toEqual(EPERM);
    expect(call(program, arch, 'ioctl', 0, TCGETS)).toEqual(ALLOW);
    expect(call(program, arch, 'ioctl', 0, 0x5423)).toEqual(ALLOW);
    // The request is arg 1; the same value in arg 0 or arg 2 is just a number.
    expect(call(program, arch, 'ioctl', TIOCSTI, TCGETS, TIOCSTI)).toEqual(ALLOW);
  });

  it("personality: Docker's values → ALLOW, anything else → EPERM", () => {
    for (const value of [0, 8, 0x20000, 0x20008, 0xffffffff])
      expect(call(program, arch, 'personality', value)).toEqual(ALLOW);
    expect(call(program, arch, 'personality', 0x0040000)).toEqual(EPERM); // ADDR_NO_RANDOMIZE
    expect(call(program, arch, 'personality', 0x0400000)).toEqual(EPERM); // READ_IMPLIES_EXEC
  });

  it('ordinary syscalls → ALLOW', () => {
    for (const name of [
      'read',
      'write',
      'openat',
      'close',
      'execve',
      'exit_group',
      'mmap',
      'futex',
      'socket',
      'chroot',
      'getpid',
    ]) {
      expect(call(program, arch, name), name).toEqual(ALLOW);
    }
  });

  it('another arch → KILL_PROCESS', () => {
    const other = arch === 'x86_64' ? AUDIT_ARCH.aarch64 : AUDIT_ARCH.x86_64;
    for (const foreign of [other, AUDIT_ARCH.i386, AUDIT_ARCH.arm, 0]) {
      expect(verdict(program, { nr: 0, arch: foreign })).toEqual(KILL);
    }
  });
});

describe('x32 on x86_64', () => {
  const program = filterFor('x86_64');
  it('kills any nr with the x32 bit, allowed syscalls included', () => {
    for (const nr of [0, 39, 165, 512, 547])
      expect(verdict(program, { nr: 0x40000000 + nr, arch: AUDIT_ARCH.x86_64 })).toEqual(KILL);
  });
  it('lets nr = -1 through (a tracer skipping a call; the kernel answers ENOSYS)', () => {
    expect(verdict(program, { nr: -1, arch: AUDIT_ARCH.x86_64 })).toEqual(ALLOW);
  });
  it('aarch64 has no x32 range: a large nr is just unknown', () => {
    expect(verdict(filterFor('aarch64'), { nr: 0x40000000, arch: AUDIT_ARCH.aarch64 })).toEqual(ALLOW);
  });
});

describe('settings', () => {
  it('io_uring is allowed only with allowIoUring', () => {
    for (const arch of ARCHES) {
      const open = filterFor(arch, { allowIoUring: true });
      for (const name of ['io_uring_setup', 'io_uring_enter', 'io_uring_register']) {
        expect(call(filterFor(arch), arch, name)).toEqual(EPERM);
        expect(call(open, arch, name)).toEqual(ALLOW);
      }
      expect(call(open, arch, 'mount')).toEqual(EPERM);
    }
  });

  it('remove: [ptrace] lets ptrace through and nothing else', () => {
    const program = filterFor('x86_64', { remove: ['ptrace'] });
    expect(call(program, 'x86_64', 'ptrace')).toEqual(ALLOW);
    expect(call(program, 'x86_64', 'process_vm_readv')).toEqual(EPERM);
  });

  it('add denies with EPERM, and a syscall missing on the arch is skipped', () => {
    const x86 = filterFor('x86_64', { add: ['chmod', 'getppid'] });
    expect(call(x86, 'x86_64', 'chmod')).toEqual(EPERM);
    expect(call(x86, 'x86_64', 'getppid')).toEqual(EPERM);
    // ioperm only exists on x86; on aarch64 its x86 number (173) is getppid and must stay allowed.
    const arm = filterFor('aarch64');
    expect(TABLES.aarch64.getppid).toBe(173);
    expect(call(arm, 'aarch64', 'getppid')).toEqual(ALLOW);
  });

  it('strict adds its own denials and keeps networking', () => {
    for (const arch of ARCHES) {
      const program = filterFor(arch, { preset: 'strict' });
      expect(call(program, arch, 'chroot')).toEqual(EPERM);
      expect(call(program, arch, 'pkey_alloc')).toEqual(ENOSYS);
      expect(call(program, arch, 'ioctl', 0, 0x5423)).toEqual(EPERM); // TIOCSETD
      expect(call(program, arch, 'ioctl', 0, TIOCSTI)).toEqual(EPERM);
      // socket's family is an int: junk above bit 31 does not change what the kernel sees.
      for (const family of [1, 2, 10, 16, 0x100000002n])
        expect(call(program, arch, 'socket', family, 1, 0)).toEqual(ALLOW);
      for (const family of [0, 17, 38, 40]) expect(call(program, arch, 'socket', family, 1, 0)).toEqual(EAFNOSUPPORT);
    }
    expect(call(filterFor('x86_64', { preset: 'strict' }), 'x86_64', 'modify_ldt')).toEqual(EPERM);
  });

  it('EOPNOTSUPP on a flag bit (the landlock backend on MSG_FASTOPEN); an outright denial of the call wins', () => {
    const fastOpen: SeccompRule = {
      syscall: 'sendto',
      errno: 'EOPNOTSUPP',
      when: { arg: 3, op: 'masked-any', value: 0x20000000 },
    };
    for (const arch of ARCHES) {
      const program = assembleSeccompFilter([fastOpen], arch);
      expect(call(program, arch, 'sendto', 3, 0, 8, 0x20000040)).toEqual(EOPNOTSUPP);
      expect(call(program, arch, 'sendto', 3, 0, 8, 0x40)).toEqual(ALLOW);
      const both = assembleSeccompFilter([fastOpen, { syscall: 'sendto', errno: 'EPERM' }], arch);
      expect(call(both, arch, 'sendto', 3, 0, 8, 0x20000000)).toEqual(EPERM);
    }
  });

  it('off gives a filter that only guards the ABI', () => {
    const program = filterFor('x86_64', { preset: 'off' });
    expect(call(program, 'x86_64', 'mount')).toEqual(ALLOW);
    expect(verdict(program, { nr: 0, arch: AUDIT_ARCH.i386 })).toEqual(KILL);
  });
});

describe('against a reference model of the rules', () => {
  /** What the rules mean, evaluated directly: one resolved rule per syscall. */
  function expected(rules: SeccompRule[], arch: SeccompArch, nr: number, args: bigint[]): Verdict {
    const name = NAMES_BY_NUMBER[arch].get(nr);
    const rule = rules.find((r) => r.syscall === name);
    if (rule === undefined) return ALLOW;
    const deny = {
      action: 'errno' as const,
      errno: { EPERM: 1, ENOSYS: 38, EAFNOSUPPORT: 97, EOPNOTSUPP: 95 }[rule.errno],
    };
    if (rule.when === undefined) return deny;
    const low = Number(BigInt.asUintN(32, args[rule.when.arg] ?? 0n));
    const values = ([] as number[]).concat(rule.when.value);
    const holds =
      rule.when.op === 'masked-any'
        ? (low & values[0]!) !== 0
        : rule.when.op === 'eq-low32'
          ? values.includes(low)
          : !values.includes(low);
    return holds ? deny : ALLOW;
  }

  const samples = [
    0n,
    1n,
    8n,
    17n,
    0x80n,
    0x5412n,
    0x541cn,
    0x5423n,
    0x20008n,
    0x40000n,
    0x10000011n,
    0xffffffffn,
    0x100005412n,
    0xffffffff00000000n,
  ];
  const cases: [string, Partial<SeccompSettings>][] = [
    ['default', {}],
    ['strict', { preset: 'strict' }],
    [
      'strict, io_uring, edits',
      { preset: 'strict', allowIoUring: true, remove: ['ptrace', 'personality'], add: ['chmod', 'ioctl'] },
    ],
  ];

  it.each(ARCHES.flatMap((arch) => cases.map(([label, s]) => [arch, label, s] as const)))(
    '%s %s: every syscall number agrees',
    (arch, _label, s) => {
      const rules = resolveSeccompRules(settings(s));
      const program = assembleSeccompFilter(rules, arch);
      for (let nr = 0; nr < 480; nr++) {
        for (const a0 of samples) {
          for (const a1 of [0n, 0x5412n, 0x100005412n]) {
            const args = [a0, a1];
            expect(verdict(program, { nr, arch: AUDIT_ARCH[arch], args }), `nr ${nr} args ${args}`).toEqual(
              expected(rules, arch, nr, args),
            );
          }
        }
      }
    },
  );
});

describe('program shape', () => {
  it('is deterministic and independent of rule order', () => {
    const rules = resolveSeccompRules(settings({ preset: 'strict' }));
    const a = assembleSeccompFilter(rules, 'x86_64');
    const b = assembleSeccompFilter([...rules].reverse(), 'x86_64');
    expect(Buffer.from(b).equals(Buffer.from(a))).toBe(true);
  });

  it('stays small: a search tree, not one compare per syscall on the hot path', () => {
    const program = filterFor('x86_64');
    expect(program.length / 8).toBeLessThan(120);
    // The tree keeps the path for read() far shorter than the ~60 rules.
    const { steps } = execute(program, { nr: 0, arch: AUDIT_ARCH.x86_64 });
    expect(steps).toBeLessThan(15);
  });

  it('handles a program longer than 255 instructions (far jumps) correctly', () => {
    // Deny nearly everything: the dispatch tree alone then spans hundreds of instructions.
    const keep = new Set(['read', 'write', 'exit_group', 'ioctl', 'clone']);
    const add = Object.keys(SYSCALLS_X86_64).filter((name) => !keep.has(name));
    const program = filterFor('x86_64', { add });
    const insns = program.length / 8;
    expect(insns).toBeGreaterThan(300);
    const codes = Array.from({ length: insns }, (_, i) => new DataView(program.buffer).getUint16(i * 8, true));
    expect(codes).toContain(0x05); // at least one ja was needed
    for (const name of add) expect(call(program, 'x86_64', name), name).toEqual(name === 'clone3' ? ENOSYS : EPERM);
    for (const name of ['read', 'write', 'exit_group']) expect(call(program, 'x86_64', name)).toEqual(ALLOW);
    expect(call(program, 'x86_64', 'ioctl', 0, TIOCSTI)).toEqual(EPERM);
    expect(call(program, 'x86_64', 'clone', SIGCHLD)).toEqual(ALLOW);
  });
});
