// The memory limit where no cgroup can hold it (limits/plan.ts, mechanism `watchdog`): every
// interval, the resident memory of the session's whole process tree is summed, and past the limit
// the tree is ended, every process SIGKILLed, as a cgroup's OOM kill with memory.oom.group would.
// Between two polls each process is capped by RLIMIT_DATA at the same limit (the trampoline sets it),
// so a burst is bounded per process; docs/SECURITY.md says what the sum cannot see.
import { MEMORY_APPROXIMATION } from '../limits/plan.js';
import { formatSize } from '../limits/units.js';
import type { Violation } from '../policy/violation.js';
import { endTree, processMemory, processTree } from './process-tree.js';

export interface WatchdogLimit {
  memoryBytes: number;
  intervalMs: number;
  /** As the user wrote it (`256MiB`), for the violation. */
  display: string;
}

export interface MemoryWatchdog {
  /** Watch the tree under the launcher's pid until `stop`. `alive` turns false once sbx has reaped it. */
  start(launcherPid: number, alive: () => boolean): void;
  /** Stop polling (the launcher exited) and wait for an ending in progress. Idempotent. */
  stop(): Promise<void>;
  /** The violation if the watchdog ended the tree, and the highest sum it saw. */
  result(): { violations: Violation[]; peakBytes?: number };
}

/**
 * The tree's memory now: the cheap upper bound (a shared page counted in every process), and only
 * when that passes the limit the proportional share, which walks page tables (tens of ms for GiBs):
 * the tree is ended on the proportional figure, never on a page counted twice.
 */
function treeMemory(launcherPid: number, limitBytes: number): number {
  const tree = processTree(launcherPid);
  const upper = tree.reduce((sum, p) => sum + processMemory(p, false), 0);
  if (upper <= limitBytes) return upper;
  return tree.reduce((sum, p) => sum + processMemory(p, true), 0);
}

export function memoryWatchdog(limit: WatchdogLimit): MemoryWatchdog {
  let timer: NodeJS.Timeout | undefined;
  let peakBytes: number | undefined;
  let fired: number | undefined;
  let ending: Promise<void> | undefined;
  const stopPolling = () => {
    clearInterval(timer);
    timer = undefined;
  };
  return {
    start(launcherPid, alive) {
      const poll = () => {
        if (!alive()) return stopPolling();
        const bytes = treeMemory(launcherPid, limit.memoryBytes);
        peakBytes = Math.max(peakBytes ?? 0, bytes);
        if (bytes <= limit.memoryBytes) return;
        fired = bytes;
        stopPolling();
        ending = endTree(launcherPid, alive);
      };
      // Not unref'd: while the launcher runs sbx waits for it anyway; stop() clears it on its exit.
      timer = setInterval(poll, limit.intervalMs);
    },
    async stop() {
      stopPolling();
      await ending;
    },
    result() {
      const violations: Violation[] =
        fired === undefined
          ? []
          : [
              {
                phase: 'runtime',
                kind: 'oom',
                rule: 'limits.memory',
                limit: limit.display,
                detail:
                  `out of memory (${MEMORY_APPROXIMATION}): the sandbox's processes held ${formatSize(fired)}, ` +
                  `past the ${limit.display} limit, and sbx ended them all`,
              },
            ];
      return { violations, ...(peakBytes !== undefined ? { peakBytes } : {}) };
    },
  };
}
