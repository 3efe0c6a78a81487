// The kernel's host-global state under /proc (src/policy/derive/kernel.ts): what is covered and how.
import { describe, expect, it } from 'vitest';
import type { PathFact } from '../../../../src/policy/host.js';
import { KERNEL_PATHS, kernelCovers } from '../../../../src/policy/derive/kernel.js';

const dir = (path: string): PathFact => ({ exists: true, real: path, type: 'dir', uid: 0 });
const file = (path: string): PathFact => ({ exists: true, real: path, type: 'file', uid: 0 });

describe('kernelCovers', () => {
  it('makes the knobs read-only and masks the leaks, each as the kernel has it (file or directory)', () => {
    const host: Record<string, PathFact> = {
      '/proc/sys': dir('/proc/sys'),
      '/proc/sysrq-trigger': file('/proc/sysrq-trigger'),
      '/proc/acpi': dir('/proc/acpi'),
      '/proc/kcore': file('/proc/kcore'),
    };
    const covers = kernelCovers((p) => host[p] ?? { exists: false });
    expect(covers.map((m) => (m.kind === 'kernel' ? [m.target, m.cover, m.what] : []))).toEqual([
      ['/proc/sys', 'read-only', 'dir'],
      ['/proc/sysrq-trigger', 'read-only', 'file'],
      ['/proc/acpi', 'masked', 'dir'],
      ['/proc/kcore', 'masked', 'file'],
    ]);
  });

  it('lists every path it may cover for the probe plan, runc read-only paths among them', () => {
    expect(KERNEL_PATHS).toEqual(
      expect.arrayContaining(['/proc/sys', '/proc/sysrq-trigger', '/proc/irq', '/proc/bus', '/proc/fs', '/proc/keys']),
    );
  });

  it('refuses a host whose /proc has no /proc/sys (subset=pid): the fresh procfs would have one, uncovered', () => {
    expect(() => kernelCovers(() => ({ exists: false }))).toThrow(
      expect.objectContaining({ code: 'HOST_SETUP', message: expect.stringContaining('/proc/sys') }),
    );
  });
});
