// The memory limit where no cgroup can hold it (limits/plan.ts, mechanism `watchdog`): every
// interval, the memory of the session's whole process tree is summed (each thread group's resident
// anonymous and shared pages, the shared-memory files it holds open, the sandbox's own tmpfs mounts),
// and past the limit the tree is ended, every process SIGKILLed, as a cgroup's OOM kill with
// memory.oom.group would. Between two polls each process is capped by RLIMIT_DATA at the same limit
// (the trampoline sets it), so a burst is bounded per process; docs/SECURITY.md ("Memory without a
// cgroup") says what the sum cannot see. The same polls count the tree's tasks where RLIMIT_NPROC holds
// the pids limit: a refused fork is only an EAGAIN to the command, and no counter records it.
import { MEMORY_APPROXIMATION } from '../plan.js';
import { formatSize } from '../units.js';
import type { Violation } from '../../policy/violation.js';
import { nowMs } from '../../host/clock.js';
import { countTasksOf } from './cgroup/rlimits.js';
import { endTree, processMemory, processMemoryAt, processTree, type TreeProcess, taskCount } from './process-tree.js';
import { countedMappings, heldShmem, type OwnMounts, ownMounts } from './shmem-held.js';

export interface WatchdogLimit {
  memoryBytes: number;
  intervalMs: number;
  /** The interval near the limit (limits/plan.ts WATCHDOG_FAST_INTERVAL_MS). */
  fastIntervalMs: number;
  /** As the user wrote it (`256MiB`), for the violation. */
  display: string;
  /** The pids limit RLIMIT_NPROC holds (limits/plan.ts), and how it was written. */
  tasks?: number;
  tasksDisplay?: string | undefined;
  /** RLIMIT_NPROC as the trampoline set it, and whose tasks it counts (the uid's, all of them). */
  nproc?: { soft: number; uid: number };
}

/**
 * From this many tasks in the tree (or half the task limit, if less) a poll also counts the uid's
 * tasks (a walk of /proc, so not on every poll): RLIMIT_NPROC refuses a fork when they reach its
 * value, and the user's other processes share it. The trampoline set it to the limit plus the uid's
 * tasks at launch; processes the user starts during the run take from the sandbox's share, so the
 * tree can be refused far short of its limit: a test runner's workers start hundreds of threads, and
 * a share of the limit (half, once) is never reached when they take more than the other half. A tree
 * of this size that finds the uid at the limit cannot grow, whoever took the rest, and is cheap to walk.
 */
const NEAR_TASKS = 32;

/**
 * A poll waits at least this many times as long as the last one took: reading every descriptor of a
 * large tree costs milliseconds (68 processes with 932 descriptors: about 15ms), and a 10ms interval
 * must not turn sbx into a busy loop; the watchdog keeps to about a fifth of one core at most.
 */
const POLL_COST_FACTOR = 4;

export interface MemoryWatchdog {
  /** Watch the tree under the launcher's pid until `stop`. `alive` turns false once sbx has reaped it. */
  start(launcherPid: number, alive: () => boolean): void;
  /** Stop polling (the launcher exited) and wait for an ending in progress. Idempotent. */
  stop(): Promise<void>;
  /** The violations (the tree ended, the task limit reached), the highest sum and task count it saw. */
  result(): { violations: Violation[]; peakBytes?: number; peakTasks?: number };
}

/**
 * The tree's memory now: the cheap upper bound (a shared page counted in every process, a mapped
 * memfd both in RssShmem and as a held file), and only when that passes the limit the proportional
 * share, which walks page tables (tens of ms for GiBs) and leaves out the mappings of files already
 * counted whole: the tree is ended on that figure, never on a page counted twice.
 */
function treeMemory(tree: readonly TreeProcess[], limitBytes: number, own: OwnMounts): number {
  const held = heldShmem(tree, own);
  const upper = tree.reduce((sum, p) => sum + processMemory(p, false), held.bytes);
  if (upper <= limitBytes) return upper;
  return tree.reduce((sum, p) => {
    const at = processMemoryAt(p, true);
    return sum + Math.max(0, at.bytes - (at.dir ? countedMappings(at.dir, held) : 0));
  }, held.bytes);
}

export function memoryWatchdog(limit: WatchdogLimit): MemoryWatchdog {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let peakBytes: number | undefined;
  let peakTasks: number | undefined;
  /** A poll saw the uid's tasks at RLIMIT_NPROC: forks were being refused. */
  let refusing = false;
  let fired: number | undefined;
  let ending: Promise<void> | undefined;
  const stopPolling = () => {
    stopped = true;
    clearTimeout(timer);
    timer = undefined;
  };
  return {
    start(launcherPid, alive) {
      // sbx's own mounts, read once: a tmpfs the sandbox shares with sbx is the host's, not its own.
      const own = ownMounts();
      let last = 0;
      const poll = () => {
        if (stopped || !alive()) return stopPolling();
        const began = nowMs();
        const tree = processTree(launcherPid);
        const bytes = treeMemory(tree, limit.memoryBytes, own);
        if (limit.tasks !== undefined) {
          const tasks = tree.reduce((n, p) => n + taskCount(p.pid), 0);
          peakTasks = Math.max(peakTasks ?? 0, tasks);
          const nproc = limit.nproc;
          const near = Math.min(NEAR_TASKS, limit.tasks / 2);
          if (nproc && tasks >= near && countTasksOf('', nproc.uid) >= nproc.soft) refusing = true;
        }
        const tookMs = nowMs() - began;
        peakBytes = Math.max(peakBytes ?? 0, bytes);
        if (bytes > limit.memoryBytes) {
          fired = bytes;
          stopPolling();
          ending = endTree(launcherPid, alive);
          return;
        }
        // Near the limit, or growing fast, poll faster: processes that each stay under RLIMIT_DATA
        // can pass the limit together between two polls (a burst), and a slow poll also
        // reports their peak too low. Far below it, the slow interval keeps the cost small.
        const near = bytes > limit.memoryBytes / 2 || bytes - last > limit.memoryBytes / 8;
        last = bytes;
        const intervalMs = near ? limit.fastIntervalMs : limit.intervalMs;
        timer = setTimeout(poll, Math.max(intervalMs, POLL_COST_FACTOR * tookMs));
      };
      // Not unref'd: while the launcher runs sbx waits for it anyway; stop() clears it on its exit.
      timer = setTimeout(poll, limit.intervalMs);
    },
    async stop() {
      stopPolling();
      await ending;
    },
    result() {
      const violations: Violation[] = [];
      if (fired !== undefined)
        violations.push({
          phase: 'runtime',
          kind: 'oom',
          rule: 'limits.memory',
          limit: limit.display,
          detail:
            `out of memory (${MEMORY_APPROXIMATION}): the sandbox's processes held ${formatSize(fired)}, ` +
            `past the ${limit.display} limit, and sbx ended them all`,
        });
      // Seen at a poll: the tree at its task limit, or the uid's tasks at RLIMIT_NPROC; a shorter spike
      // between two polls goes unseen.
      if (limit.tasks !== undefined && peakTasks !== undefined && (refusing || peakTasks >= limit.tasks)) {
        const display = limit.tasksDisplay ?? String(limit.tasks);
        violations.push({
          phase: 'runtime',
          kind: 'pids',
          rule: 'limits.pids',
          limit: display,
          detail: `process limit reached (approximate: RLIMIT_NPROC, seen by sbx's watchdog): the sandbox held up to ${peakTasks} tasks against its ${display}, and forks were refused`,
        });
      }
      return {
        violations,
        ...(peakBytes !== undefined ? { peakBytes } : {}),
        ...(peakTasks !== undefined ? { peakTasks } : {}),
      };
    },
  };
}
