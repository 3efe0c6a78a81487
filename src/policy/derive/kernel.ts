// The kernel's host-global state under the sandbox's /proc, covered in every sandbox as runc's and
// Docker's defaults cover a container's: read-only where it is a knob (sysctls, the SysRq trigger, IRQ
// affinity, bus and filesystem settings), hidden where it only leaks (kernel memory, keys, timers).
//
// Why sbx needs it and bwrap alone does not give it: a root caller's sandbox runs the command as the
// host's kuid 0 (identity.ts: the workspace belongs to root, and what the command writes there must
// too). It has no capability, but the kernel lets kuid 0 write a sysctl on the file's owner bits
// alone (proc_sys_permission), and /proc/sysrq-trigger likewise: kernel.core_pattern set to
// `|/workspace/x` runs x as full root at the next crash. bwrap covers /proc/sys itself only when
// access(W_OK) on the 0555 directory succeeds, which it never does, so the cover is skipped
// (bubblewrap.c, SETUP_MOUNT_PROC). docs/SECURITY.md, "Root callers", has the whole model.
import { SbxError } from '../../errors.js';
import type { PathFact } from '../host.js';
import type { Mount } from '../types.js';

/** Knobs of the whole machine: readable inside, never writable (runc's and Docker's readonlyPaths). */
const READ_ONLY = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

/** What only leaks the host's state (Docker's maskedPaths below /proc; sbx mounts no /sys). */
const MASKED = [
  '/proc/acpi',
  '/proc/asound',
  '/proc/interrupts',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/proc/timer_list',
  '/proc/timer_stats',
];

const REASON = { 'read-only': 'host-global kernel state: read-only', masked: 'host kernel state: hidden' } as const;
const COVERS: readonly (readonly [string, keyof typeof REASON])[] = [
  ...READ_ONLY.map((path) => [path, 'read-only'] as const),
  ...MASKED.map((path) => [path, 'masked'] as const),
];

/**
 * Every path covered, for the probe plan: which of them a kernel has depends on its configuration
 * (/proc/acpi, /proc/sched_debug, ...), and a cover needs its mount point to exist inside the new
 * procfs, which shows what the host's /proc shows of the same kernel.
 */
export const KERNEL_PATHS: readonly string[] = COVERS.map(([path]) => path);

/** The covers over a fresh /proc, in order, for each path this kernel has (`factOf`: the probe plan's facts). */
export function kernelCovers(factOf: (path: string) => PathFact): Mount[] {
  // Every procfs has /proc/sys; the host's view lacks it only when /proc is mounted with subset=pid
  // (systemd's ProcSubset=pid). The sandbox's fresh procfs would still have one, with nothing to
  // cover it from: refuse rather than leave it writable.
  if (!factOf('/proc/sys').exists)
    throw new SbxError('HOST_SETUP', "this host's /proc has no /proc/sys, so sbx cannot make the sandbox's read-only", {
      hint: 'run sbx where /proc is a full procfs (not subset=pid: systemd ProcSubset=pid, ProtectProc)',
    });
  return COVERS.flatMap(([target, cover]): Mount[] => {
    const f = factOf(target);
    if (!f.exists) return [];
    const what = f.type === 'dir' ? 'dir' : 'file';
    return [{ kind: 'kernel', target, cover, what, reason: REASON[cover], role: 'kernel' }];
  });
}
