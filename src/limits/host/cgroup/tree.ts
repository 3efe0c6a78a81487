// Small cgroupfs operations: create a session cgroup, write and read its files, empty and remove it.
//
// `fake` is a plain directory standing in for cgroupfs (tests): there the kernel does not create the
// interface files on mkdir nor let rmdir remove them, so a fake mkdir copies the parent's file names
// (empty) and a fake removal deletes the files first. Everything else is the same code.
import { nowMs } from '../../../host/clock.js';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

/** How long cleanup keeps killing and retrying rmdir before it gives up. */
const REMOVE_DEADLINE_MS = 5_000;
const REMOVE_RETRY_MS = 5;

export function readCgroupFile(dir: string, name: string): string | undefined {
  try {
    return readFileSync(join(dir, name), 'utf8');
  } catch {
    return undefined;
  }
}

/** Write one interface file. On real cgroupfs a missing file is an error (O_CREAT cannot create one). */
export function writeCgroupFile(dir: string, name: string, value: string): void {
  writeFileSync(join(dir, name), value);
}

export function hasCgroupFile(dir: string, name: string): boolean {
  return existsSync(join(dir, name));
}

/** `key value` lines (memory.events, pids.events, memory.oom_control) → numbers. */
export function parseKeyed(text: string | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of (text ?? '').split('\n')) {
    const m = /^(\S+)\s+(\d+)$/.exec(line.trim());
    if (m) out[m[1]!] = Number(m[2]);
  }
  return out;
}

/** A single number file (memory.peak); undefined when absent, empty or "max". */
export function parseNumber(text: string | undefined): number | undefined {
  const t = text?.trim();
  return t && /^\d+$/.test(t) ? Number(t) : undefined;
}

export function listProcs(dir: string): number[] {
  return (readCgroupFile(dir, 'cgroup.procs') ?? '')
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((pid) => Number.isInteger(pid) && pid > 0);
}

export function makeCgroup(dir: string, fake: boolean): void {
  // No `recursive`: EEXIST must surface, a cgroup of the same name is not ours to reuse.
  mkdirSync(dir, { mode: 0o755 });
  if (!fake) return;
  const parent = dirname(dir);
  for (const entry of readdirSync(parent, { withFileTypes: true })) {
    if (entry.isFile()) writeFileSync(join(dir, entry.name), '');
  }
}

function removeDir(dir: string, fake: boolean): void {
  if (fake) rmSync(dir, { recursive: true });
  else rmdirSync(dir);
}

/**
 * Kill everything in `dir` and remove it; done when it is gone. v2 has cgroup.kill (Linux 5.14), which
 * also catches forks in flight; elsewhere SIGKILL every listed pid and retry until rmdir stops saying
 * EBUSY, since a fork can race the listing (with pids.max it cannot race for long). Gives up after a
 * deadline, so a wedged cgroup is reported instead of hanging sbx.
 */
export async function removeCgroup(dir: string, fake: boolean): Promise<void> {
  const deadline = nowMs() + REMOVE_DEADLINE_MS;
  for (;;) {
    if (!existsSync(dir)) return;
    if (hasCgroupFile(dir, 'cgroup.kill')) {
      try {
        writeCgroupFile(dir, 'cgroup.kill', '1');
      } catch {
        // Older kernels list the file nowhere; a failing write leaves the kill loop to do the work.
      }
    }
    for (const pid of listProcs(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // ESRCH: gone already.
      }
    }
    try {
      removeDir(dir, fake);
      return;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if ((code !== 'EBUSY' && code !== 'ENOTEMPTY') || nowMs() > deadline) {
        const left = listProcs(dir).length;
        throw new Error(
          `cannot remove cgroup ${dir}: ${(e as Error).message}${left > 0 ? ` (${left} processes still inside after SIGKILL)` : ''}`,
          { cause: e },
        );
      }
    }
    await delay(REMOVE_RETRY_MS);
  }
}
