// The rlimits a plan asks for, adjusted to this moment: RLIMIT_NPROC gets the uid's running tasks on
// top (it counts all of them), and nothing exceeds the hard limits sbx itself runs under.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LimitPlan, Rlimit, RlimitResource } from '../../plan.js';

/** /proc/self/limits row names. */
const PROC_LIMIT_ROWS: Record<RlimitResource, string> = {
  CORE: 'Max core file size',
  AS: 'Max address space',
  DATA: 'Max data size',
  NPROC: 'Max processes',
  CPU: 'Max cpu time',
  FSIZE: 'Max file size',
  NOFILE: 'Max open files',
};

/** Our own hard limits: the trampoline inherits them, and an unprivileged shell cannot raise one (EPERM). */
function ownHardLimits(root: string): Partial<Record<RlimitResource, number>> {
  let text: string;
  try {
    text = readFileSync(join(root, '/proc/self/limits'), 'utf8');
  } catch {
    return {};
  }
  const out: Partial<Record<RlimitResource, number>> = {};
  for (const [resource, row] of Object.entries(PROC_LIMIT_ROWS) as [RlimitResource, string][]) {
    const hard = new RegExp(`^${row}\\s+\\S+\\s+(\\S+)`, 'm').exec(text)?.[1];
    if (hard && /^\d+$/.test(hard)) out[resource] = Number(hard);
  }
  return out;
}

/** Tasks (threads) the uid runs now: RLIMIT_NPROC counts them all, the sandbox gets its limit on top. */
export function countTasksOf(root: string, uid: number): number {
  let count = 0;
  let names: string[];
  try {
    names = readdirSync(join(root, '/proc'));
  } catch {
    return 0;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(join(root, '/proc', name, 'status'), 'utf8');
      // RLIMIT_NPROC is charged to the real uid, the first of the four on the Uid: line.
      if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) === uid)
        count += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
    } catch {
      // exited meanwhile
    }
  }
  return count;
}

export function effectiveRlimits(plan: LimitPlan, root: string): Rlimit[] {
  const own = ownHardLimits(root);
  return plan.rlimits.map((r) => {
    let { soft, hard } = r;
    if (r.resource === 'NPROC' && r.uid !== undefined) {
      const running = countTasksOf(root, r.uid);
      soft += running;
      hard += running;
    }
    // Never more than sbx has: raising is EPERM for a user, and for root it would undo the host's limit.
    const cap = own[r.resource];
    if (cap !== undefined) {
      hard = Math.min(hard, cap);
      soft = Math.min(soft, hard);
    }
    return { ...r, soft, hard };
  });
}
