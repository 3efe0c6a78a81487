// Before the launch: whether the command can push keystrokes into the caller's terminal with TIOCSTI
// (CVE-2017-5226). A run whose stdin is a terminal keeps that terminal's session for job control (bwrap
// without --new-session, nsjail --skip_setsid, landlock without setsid: backend/*.ts), so only the
// seccomp filter's TIOCSTI rule stops it (seccomp/sets.ts). A run without that rule is told, unless
// the kernel itself refuses TIOCSTI.
import { readFileSync } from 'node:fs';
import type { Policy } from '../policy/types.js';

/** <asm-generic/ioctls.h>, the same on x86_64 and aarch64 (the value seccomp/sets.ts denies). */
const TIOCSTI = 0x5412;

export const TIOCSTI_WARNING =
  'terminal.tiocsti: no seccomp filter blocks TIOCSTI and stdin is your terminal, so the command can type ' +
  'into it (what it types runs after sbx exits); keep seccomp on (default or strict), or run without a ' +
  'terminal on stdin (< /dev/null)';

function blocksTiocsti(seccomp: Policy['seccomp']): boolean {
  return seccomp.rules.some(
    (r) =>
      r.syscall === 'ioctl' &&
      (r.when === undefined || (r.when.op === 'eq-low32' && [r.when.value].flat().includes(TIOCSTI))),
  );
}

/**
 * dev.tty.legacy_tiocsti=0 (Linux 6.2+) makes the kernel refuse TIOCSTI without CAP_SYS_ADMIN, which
 * no sandboxed command has; absent (older kernels) or unreadable, TIOCSTI is taken to work.
 */
function kernelAllowsTiocsti(): boolean {
  try {
    return readFileSync('/proc/sys/dev/tty/legacy_tiocsti', 'utf8').trim() !== '0';
  } catch {
    return true;
  }
}

/**
 * The warnings a run gets (one line each, "topic: detail"): printed by the CLI, listed in the report.
 * `stdinIsTty` is the Host's fact, the one the backends decide the session by.
 */
export function terminalWarnings(
  seccomp: Policy['seccomp'],
  stdinIsTty: boolean,
  kernelAllows = kernelAllowsTiocsti,
): string[] {
  return stdinIsTty && !blocksTiocsti(seccomp) && kernelAllows() ? [TIOCSTI_WARNING] : [];
}
