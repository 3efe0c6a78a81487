// Copies of the fake cgroupfs trees in test/fixtures/cgroupfs, one per test, plus a stub bin dir.
import { chmodSync, cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES_DIR } from './paths.js';
import { makeTempDir } from './tmp.js';

export const V2_USER_PARENT =
  'sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice';
export const V1_MEMORY = 'sys/fs/cgroup/memory/user.slice/user-0.slice/session-1.scope';
export const V1_PIDS = 'sys/fs/cgroup/pids/user.slice/user-0.slice/session-1.scope';
export const V1_CPU = 'sys/fs/cgroup/cpu,cpuacct/user.slice';

/** A private copy of a fixture tree; removed when the test finishes. */
export function fakeCgroupfs(name: 'v2-user' | 'v1-root'): string {
  const root = makeTempDir(`sbx-cgroupfs-${name}-`);
  cpSync(join(FIXTURES_DIR, 'cgroupfs', name), root, { recursive: true });
  return root;
}

/** Let any uid create a session cgroup there: what systemd's Delegate= does with chown, without needing root. */
export function delegateToAnyone(dir: string): void {
  chmodSync(dir, 0o777);
  for (const f of ['cgroup.procs', 'cgroup.subtree_control']) chmodSync(join(dir, f), 0o666);
}

/** A directory holding executable shell scripts, for PATH. */
export function stubBin(scripts: Record<string, string>): string {
  const dir = makeTempDir('sbx-bin-');
  for (const [name, body] of Object.entries(scripts)) writeFileSync(join(dir, name), body, { mode: 0o755 });
  return dir;
}
