// Per-architecture facts: the syscall table, the audit arch the kernel reports in seccomp_data,
// and whether the x32 ABI shares the native arch value.
import { SbxError } from '../errors.js';
import { SYSCALLS_AARCH64 } from './syscalls-aarch64.js';
import { SYSCALLS_X86_64 } from './syscalls-x86_64.js';
import type { SeccompArch, SeccompErrno } from './types.js';

interface ArchInfo {
  /** AUDIT_ARCH_* from <linux/audit.h>: EM_* | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE. */
  auditArch: number;
  syscalls: Readonly<Record<string, number>>;
  /**
   * x32 syscalls arrive with the native AUDIT_ARCH_X86_64 and nr | __X32_SYSCALL_BIT, so the arch
   * check alone does not keep them out (seccomp(2), "Caveats").
   */
  x32Bit: number | undefined;
}

const ARCHES: Readonly<Record<SeccompArch, ArchInfo>> = {
  x86_64: { auditArch: 0xc000003e, syscalls: SYSCALLS_X86_64, x32Bit: 0x40000000 },
  aarch64: { auditArch: 0xc00000b7, syscalls: SYSCALLS_AARCH64, x32Bit: undefined },
};

export const SECCOMP_ARCHES: readonly SeccompArch[] = ['x86_64', 'aarch64'];

export function archInfo(arch: SeccompArch): ArchInfo {
  return ARCHES[arch];
}

/** The syscall's number on `arch`, or undefined where the arch has no such syscall (ioperm on aarch64). */
export function syscallNumber(arch: SeccompArch, name: string): number | undefined {
  const table = ARCHES[arch].syscalls;
  // hasOwn, not `in`: a profile naming `constructor` must not find Object.prototype.
  return Object.hasOwn(table, name) ? table[name] : undefined;
}

/** Whether any supported arch knows the name. Profiles are portable, so validation uses the union. */
export function isKnownSyscall(name: string): boolean {
  return SECCOMP_ARCHES.some((arch) => syscallNumber(arch, name) !== undefined);
}

/** Every syscall name known on some supported arch, sorted (for "did you mean"). */
export function knownSyscallNames(): string[] {
  const names = new Set<string>();
  for (const arch of SECCOMP_ARCHES) for (const name of Object.keys(ARCHES[arch].syscalls)) names.add(name);
  return [...names].sort();
}

/** errno numbers: identical on x86_64 and aarch64, both use asm-generic/errno-base.h and errno.h. */
export const ERRNO_VALUES: Readonly<Record<SeccompErrno, number>> = {
  EPERM: 1,
  ENOSYS: 38,
  EAFNOSUPPORT: 97,
  EOPNOTSUPP: 95,
};

/** Maps Node's `process.arch` to a seccomp arch. Pure: the caller passes the value in. */
export function hostSeccompArch(nodeArch: string): SeccompArch {
  if (nodeArch === 'x64') return 'x86_64';
  if (nodeArch === 'arm64') return 'aarch64';
  throw new SbxError(
    'SECCOMP_UNSUPPORTED_ARCH',
    `sbx has no seccomp syscall table for the ${JSON.stringify(nodeArch)} architecture`,
    {
      hint: 'set seccomp.preset: off in the profile (no syscall filter), or run on x86_64 or aarch64',
    },
  );
}
