// Spot checks against the kernel's tables (arch/x86/entry/syscalls/syscall_64.tbl and the
// asm-generic table arm64 uses). test/integration/seccomp/tables.test.ts compares every entry with
// the host's headers.
import { describe, expect, it } from 'vitest';
import { SYSCALLS_AARCH64 } from '../../../src/seccomp/syscalls-aarch64.js';
import { SYSCALLS_X86_64, X32_RENUMBERED } from '../../../src/seccomp/syscalls-x86_64.js';

describe('x86_64 table', () => {
  it.each([
    ['read', 0],
    ['ioctl', 16],
    ['clone', 56],
    ['ptrace', 101],
    ['personality', 135],
    ['mount', 165],
    ['openat', 257],
    ['unshare', 272],
    ['setns', 308],
    ['bpf', 321],
    ['uretprobe', 335],
    ['io_uring_setup', 425],
    ['open_tree', 428],
    ['clone3', 435],
    ['mount_setattr', 442],
    ['landlock_create_ruleset', 444],
    ['memfd_secret', 447],
    ['mseal', 462],
    ['open_tree_attr', 467],
    ['listns', 470],
  ] as const)('%s = %i', (name, nr) => {
    expect(SYSCALLS_X86_64[name]).toBe(nr);
  });
  it('x32 renumbering covers the 512..547 range once each', () => {
    const numbers = Object.values(X32_RENUMBERED)
      .filter((n): n is number => n !== null)
      .sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 36 }, (_, i) => 512 + i));
    for (const name of Object.keys(X32_RENUMBERED)) expect(Object.hasOwn(SYSCALLS_X86_64, name), name).toBe(true);
  });
});

describe('aarch64 table', () => {
  it.each([
    ['io_setup', 0],
    ['renameat', 38],
    ['ioctl', 29],
    ['mount', 40],
    ['openat', 56],
    ['read', 63],
    ['personality', 92],
    ['unshare', 97],
    ['ptrace', 117],
    ['getrlimit', 163],
    ['clone', 220],
    ['setns', 268],
    ['bpf', 280],
    ['io_uring_setup', 425],
    ['clone3', 435],
    ['memfd_secret', 447],
    ['mseal', 462],
    ['listns', 470],
  ] as const)('%s = %i', (name, nr) => {
    expect(SYSCALLS_AARCH64[name]).toBe(nr);
  });
  it('has none of the legacy calls arm64 never had', () => {
    for (const name of [
      'open',
      'fork',
      'stat',
      'ioperm',
      'iopl',
      'modify_ldt',
      'arch_prctl',
      'uselib',
      'epoll_create',
    ]) {
      expect(Object.hasOwn(SYSCALLS_AARCH64, name), name).toBe(false);
    }
  });
});

describe.each([
  ['x86_64', SYSCALLS_X86_64],
  ['aarch64', SYSCALLS_AARCH64],
] as const)('%s table integrity', (_arch, table) => {
  it('numbers are unique non-negative integers below the x32 range', () => {
    const numbers = Object.values(table);
    expect(new Set(numbers).size).toBe(numbers.length);
    for (const n of numbers) expect(Number.isInteger(n) && n >= 0 && n < 512).toBe(true);
  });
  it('names look like syscall names', () => {
    for (const name of Object.keys(table)) expect(name).toMatch(/^_?[a-z][a-z0-9_]*$/);
  });
});
