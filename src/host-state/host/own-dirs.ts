// Directories sbx creates before a run so that no sandbox can: its own config, state and cache
// directories when a mounted tree holds where they would be, and the workspace's `.sbx`. Each is
// probed (pinned) as it is made, so the policy holds it read-only or masked like an existing one.
import { mkdirSync } from 'node:fs';
import { posix } from 'node:path';
import { SbxError } from '../../errors.js';
import { isWithin } from '../../path-within.js';
import type { ProbePlan } from '../../policy/derive/probe-plan.js';
import type { Host } from '../../policy/host.js';
import type { Pins } from '../../host/pins.js';

/**
 * sbx's own directories that do not exist yet but lie in a tree the sandbox will mount: created now
 * (private, they are sbx's), so that they are masked or read-only inside instead of creatable by the
 * sandbox (a planted ~/.config/sbx/profiles/default.yaml would be the next run's policy).
 */
export function createOwnDirs(dirs: string[], mountedTrees: string[], pins: Pins, paths: Host['paths']): void {
  for (const dir of dirs) {
    if (paths[dir]?.exists || !mountedTrees.some((tree) => isWithin(dir, tree))) continue;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (cause) {
      const message = `cannot create ${dir}, which the sandbox could otherwise create: ${(cause as Error).message}`;
      throw new SbxError('SESSION_DIR', message, { cause, hint: `create it yourself: mkdir -m 700 -p ${dir}` });
    }
    paths[dir] = pins.probe(dir);
  }
}

/**
 * The workspace's `.sbx` when it does not exist yet: created empty (0755, a project directory) before
 * the run, so that it is held read-only inside like an existing one (overlay.ts bindReadOnly; the
 * landlock backend guards it). Otherwise a sandbox plants `.sbx/profiles/agent.yaml`, and every later
 * call that resolves the name from here is refused until the user notices. It stays after the run,
 * empty, as `git init` leaves `.git/hooks`: removing it would detach the read-only bind of a
 * concurrent run in the same workspace that found it made (rmdir of a mount point in another mount
 * namespace detaches it), or fail that run's mount outright, and an export's engine binds it later.
 * One made meanwhile by a concurrent run (EEXIST) is probed as it is now. A `.sbx` that is a file or
 * a dangling link stays as it is: a profile found through it is a project profile, pinned. Where sbx
 * may not create it, neither may the sandbox, which runs as the same user.
 */
export function createProjectPolicyDirs(plan: ProbePlan, mode: string, pins: Pins, paths: Host['paths']): void {
  if (mode === 'read-only' || mode === 'danger') return;
  // Only the workspace's: profiles are looked up from where sbx runs, a project. Another writable
  // root's existing `.sbx` is held read-only all the same (plan.ownPolicy), but none is made there.
  for (const dir of plan.ownPolicy.filter((p) => p === posix.join(plan.vars.workspace, '.sbx'))) {
    if (paths[dir]?.exists) continue;
    try {
      mkdirSync(dir, { mode: 0o755 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') continue;
    }
    paths[dir] = pins.probe(dir);
  }
}
