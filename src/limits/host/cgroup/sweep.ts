// Removes session cgroups a crashed sbx left behind, so that nothing outlives the next run.
//
// A dead sbx normally leaves an *empty* cgroup: bwrap runs with --die-with-parent, its death ends the
// pid namespace, and the kernel kills everything in it. What stays is the directory. Stale is "empty
// and older than a grace period"; the grace spares a live session's cgroup in the instant between its
// creation and the trampoline moving in. A cgroup with processes is never touched: it may belong to a
// running sbx this one cannot see (another user's in a shared delegated subtree, root's with another
// XDG_RUNTIME_DIR or in another pid namespace), and killing it would end that sandbox mid-run. What an
// orphaned sandbox leaves (nsjail, which outlives a SIGKILLed sbx) is swept once it has exited.
import { type Dirent, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { v2SessionParent } from '../../plan.js';
import { probeCgroupFacts, type ProbeOptions } from './probe.js';
import { listProcs, removeCgroup } from './tree.js';

export interface SweepOptions extends ProbeOptions {
  /** How old an empty session cgroup must be to count as stale. Default 60s. */
  graceMs?: number;
}

const DEFAULT_GRACE_MS = 60_000;
const SESSION_CGROUP = /^sbx-[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$/;

/** Where this host's session cgroups live (same rule as planLimits). */
function sessionParents(opts: ProbeOptions): string[] {
  const { cgroup } = probeCgroupFacts(opts);
  if (cgroup.kind === 'v2') return [v2SessionParent(cgroup.mount, cgroup.ownPath)];
  if (cgroup.kind === 'v1') return Object.values(cgroup.controllers).filter((d): d is string => d !== null);
  return [];
}

/** Remove stale (empty, past the grace period) `sbx-<session>` cgroups. Returns how many directories went. */
export async function sweepStaleCgroups(opts: SweepOptions = {}): Promise<number> {
  const fake = opts.root !== undefined;
  const grace = opts.graceMs ?? DEFAULT_GRACE_MS;
  let removed = 0;
  for (const parent of sessionParents(opts)) {
    let entries: Dirent[];
    try {
      entries = readdirSync(parent, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      if (!entry.isDirectory() || !SESSION_CGROUP.test(entry.name)) continue;
      const dir = join(parent, entry.name);
      let ageMs: number;
      try {
        ageMs = Date.now() - statSync(dir).mtimeMs;
      } catch {
        continue;
      }
      if (ageMs <= grace || listProcs(dir).length > 0) continue;
      try {
        await removeCgroup(dir, fake);
        removed++;
      } catch {
        // Left for the next sweep; a sweep never fails the run that triggered it.
      }
    }
  }
  return removed;
}
