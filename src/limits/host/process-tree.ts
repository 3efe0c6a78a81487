// A session's process tree as the host sees it, read from /proc: who is in it, how much memory it
// holds, and how to end it. The memory watchdog (memory-watchdog.ts) is its user.
//
// The tree is the launcher's pid and its descendants, walked through /proc/<pid>/task/<tid>/children
// (proc(5); every thread's list, since a child belongs to the thread that forked it). That works from
// the host's pid view across bwrap's and nsjail's pid namespaces, and nothing escapes it by
// double-forking: an orphan is reparented to the namespace's pid 1 (bwrap, nsjail) or to the landlock
// helper's monitor, a subreaper (native/sbx-landlock.c), all inside the tree. Kernels built without
// CONFIG_PROC_CHILDREN have no children file: then one /proc scan by parent pid per walk.
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { nowMs } from '../../host/clock.js';

export interface TreeProcess {
  pid: number;
  /** The process it was listed under (undefined for the root): checked again before a kill. */
  parent?: number;
}

interface Stat {
  ppid: number;
  state: string;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** /proc/<pid>/stat, parsed after the last ")": the command name may hold spaces and parentheses. */
function statOf(pid: number): Stat | undefined {
  const text = read(`/proc/${pid}/stat`);
  const fields = text?.slice(text.lastIndexOf(')') + 2).split(' ');
  if (!fields || fields.length < 2) return undefined;
  // After the name: state (field 3), ppid (4).
  return { state: fields[0]!, ppid: Number(fields[1]) };
}

const numbers = (text: string | undefined) => (text ?? '').split(/\s+/).filter(Boolean).map(Number);

function numericEntries(dir: string): number[] {
  try {
    return readdirSync(dir)
      .filter((n) => /^\d+$/.test(n))
      .map(Number);
  } catch {
    return [];
  }
}

/** Every process's children, from one /proc scan: only where the kernel has no children files. */
export function childrenByScan(): (pid: number) => number[] {
  const byParent = new Map<number, number[]>();
  for (const pid of numericEntries('/proc')) {
    const ppid = statOf(pid)?.ppid;
    if (ppid !== undefined) byParent.set(ppid, [...(byParent.get(ppid) ?? []), pid]);
  }
  return (pid) => byParent.get(pid) ?? [];
}

/** A process's children from its threads' children files (CONFIG_PROC_CHILDREN). */
export function childrenFiles(): (pid: number) => number[] {
  return (pid) =>
    numericEntries(`/proc/${pid}/task`).flatMap((tid) => numbers(read(`/proc/${pid}/task/${tid}/children`)));
}

/**
 * `root` and its descendants, each with the process it was found under; zombies included (the poll
 * finds no memory in them, endTree skips them). A process that forks while the walk reads is found by
 * the next walk. One read per thread of each process, no stat: this runs every poll.
 */
export function processTree(root: number): TreeProcess[] {
  const hasChildrenFiles = read(`/proc/${root}/task/${root}/children`) !== undefined;
  const childrenOf = hasChildrenFiles ? childrenFiles() : childrenByScan();
  const out: TreeProcess[] = [{ pid: root }];
  const seen = new Set<number>([root]);
  for (let i = 0; i < out.length; i++) {
    const parent = out[i]!.pid;
    for (const pid of childrenOf(parent)) {
      if (seen.has(pid)) continue;
      seen.add(pid);
      out.push({ pid, parent });
    }
  }
  return out;
}

/** A process's tasks (its threads), as RLIMIT_NPROC and pids.max count them; 0 once it is gone. */
export function taskCount(pid: number): number {
  const m = /^Threads:\s+(\d+)/m.exec(read(`/proc/${pid}/status`) ?? '');
  return m ? Number(m[1]) : 0;
}

/** `Name:   123 kB` lines of /proc/<pid>/status or smaps_rollup, in bytes; 0 for a missing line. */
function kiB(text: string, name: string): number {
  const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text);
  return m ? Number(m[1]) * 1024 : 0;
}

/**
 * Where a process's memory can be read: its own /proc directory, or, when its leader thread has exited
 * (`pthread_exit` in main, SYS_exit) while other threads run, one of those threads' task directory. The
 * zombie leader has no mm, so its status has no Rss lines and its smaps_rollup is empty, but the thread
 * group still holds every page: read through a live thread, or the group would count 0.
 */
function memoryDir(pid: number): { dir: string; status: string } | undefined {
  const status = read(`/proc/${pid}/status`);
  if (status === undefined) return undefined;
  if (/^RssAnon:/m.test(status)) return { dir: `/proc/${pid}`, status };
  for (const tid of numericEntries(`/proc/${pid}/task`)) {
    const dir = `/proc/${pid}/task/${tid}`;
    const taskStatus = read(`${dir}/status`);
    if (taskStatus && /^RssAnon:/m.test(taskStatus)) return { dir, status: taskStatus };
  }
  return undefined;
}

/**
 * Memory a process holds that a memory cgroup would charge and nothing else frees: anonymous pages and
 * shared memory (shmem, memfd, tmpfs mappings). Not its mapped files (binaries, libraries): the page
 * cache is shared with the host and reclaimable. `precise` reads smaps_rollup's proportional share
 * (Pss_*, Linux 5.9+), which splits pages shared by several processes (a fork's copy-on-write heap,
 * one shared mapping) among them; it walks the page tables, so the watchdog asks only past the limit.
 * Without it, RssAnon + RssShmem from status (constant time) counts a shared page in every process:
 * never less than the truth. `dir` is where it was read (a live thread's, for a leaderless group).
 */
export function processMemory(p: TreeProcess, precise: boolean): number {
  return processMemoryAt(p, precise).bytes;
}

export function processMemoryAt(p: TreeProcess, precise: boolean): { bytes: number; dir?: string } {
  // A zombie whose threads are all gone has no Rss lines anywhere: 0.
  const at = memoryDir(p.pid);
  if (!at) return { bytes: 0 };
  if (precise) {
    const rollup = read(`${at.dir}/smaps_rollup`);
    if (rollup && /^Pss_Anon:/m.test(rollup))
      return { bytes: kiB(rollup, 'Pss_Anon') + kiB(rollup, 'Pss_Shmem'), dir: at.dir };
  }
  return { bytes: kiB(at.status, 'RssAnon') + kiB(at.status, 'RssShmem'), dir: at.dir };
}

const isZombie = (stat: Stat) => stat.state === 'Z' || stat.state === 'X';

/**
 * Whether a thread group still runs: its leader, or (a zombie leader, see memoryDir) any other thread.
 * Such a group is still signalled through the leader's pid: kill(2) reaches the whole group.
 */
function isGroupLive(pid: number, leader: Stat): boolean {
  if (!isZombie(leader)) return true;
  return numericEntries(`/proc/${pid}/task`).some((tid) => {
    if (tid === pid) return false;
    const text = read(`/proc/${pid}/task/${tid}/stat`);
    const state = text?.slice(text.lastIndexOf(')') + 2).split(' ')[0];
    return state !== undefined && state !== 'Z' && state !== 'X';
  });
}

/**
 * The descendants still to kill: alive, and still children of the process they were listed under. A
 * pid whose parent changed was reaped and reused by a stranger (or reparented inside the tree: the
 * next walk finds it under its new parent), so it is never signalled on this walk's word.
 */
function liveDescendants(tree: readonly TreeProcess[]): TreeProcess[] {
  return tree.filter((p) => {
    const stat = p.parent === undefined ? undefined : statOf(p.pid);
    return stat !== undefined && stat.ppid === p.parent && isGroupLive(p.pid, stat);
  });
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // ESRCH: gone already.
  }
}

/** How long endTree keeps killing before it gives up (a process stuck in uninterruptible sleep stays listed). */
const END_DEADLINE_MS = 5_000;
const END_RETRY_MS = 5;

/**
 * SIGKILL every descendant of `root`, walk again, and repeat until none is left alive. A process
 * killed in one round cannot fork after it, and what it forked in between is reparented inside the
 * tree (see above) and found by the next round, so this ends. `root` (the launcher: bwrap's monitor,
 * nsjail, the landlock helper) is left to report its command's end, unless the deadline passes.
 * `alive` is false once sbx has reaped `root`: its pid may then name another process.
 */
export async function endTree(root: number, alive: () => boolean): Promise<void> {
  const deadline = nowMs() + END_DEADLINE_MS;
  while (alive()) {
    const below = liveDescendants(processTree(root));
    if (below.length === 0) return;
    for (const p of below) kill(p.pid);
    // The launcher is our own child, not yet reaped (alive()): its pid is still its own.
    if (nowMs() > deadline) return kill(root);
    await delay(END_RETRY_MS);
  }
}
