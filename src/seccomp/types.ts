// The seccomp data model shared by the resolver, the BPF compiler and the Kafel renderer.
// Plain JSON: rules travel in the Policy IR and `sbx explain` prints them.

export type SeccompArch = 'x86_64' | 'aarch64';
export type SeccompPreset = 'default' | 'strict' | 'off';

export interface SeccompSettings {
  preset: SeccompPreset;
  /** Extra syscalls to deny outright with EPERM. */
  add: string[];
  /** Syscalls whose preset rules are dropped. */
  remove: string[];
  /** Lets io_uring_setup/enter/register through (denied by default and strict). */
  allowIoUring: boolean;
}

/** The errnos a denial can return. Values are the same on x86_64 and aarch64 (asm-generic/errno*.h). */
export type SeccompErrno = 'EPERM' | 'ENOSYS' | 'EAFNOSUPPORT' | 'EOPNOTSUPP';

/**
 * An argument test. Every op reads only the low 32 bits of the argument: each argument sbx inspects
 * is truncated to 32 bits by the kernel (ioctl's `unsigned int cmd`, personality's `unsigned int`,
 * socket's `int family`, clone's `lower_32_bits(clone_flags)` in kernel/fork.c), so testing the high
 * half would let a caller slip past with junk high bits (CVE-2019-10063, Flatpak's TIOCSTI filter).
 * - `masked-any`: denied when `low32(arg) & value` is non-zero (`value` is a mask).
 * - `eq-low32`: denied when `low32(arg)` equals `value`, or any of them if a list.
 * - `ne-list`: denied when `low32(arg)` equals none of `value` (an allowlist of values).
 */
export interface SeccompArgTest {
  /** 0-based argument index, 0..5. */
  arg: number;
  op: 'masked-any' | 'eq-low32' | 'ne-list';
  value: number | number[];
}

/** One denied syscall, optionally only for some argument values; plain JSON data (goes into the Policy IR and `sbx explain`). */
export interface SeccompRule {
  syscall: string;
  errno: SeccompErrno;
  when?: SeccompArgTest;
}
