// The watchdog's count of memory no resident set shows, on real processes, no sandbox (issue 30):
// a thread group whose leader exited, memfds and tmpfs files held by a descriptor (each counted once),
// and a mapped memfd counted once by the precise sum. Runs as root and as any user.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { endTree, processMemory, processMemoryAt, processTree } from '../../../src/limits/host/process-tree.js';
import { countedMappings, heldShmem, ownMounts } from '../../../src/limits/host/shmem-held.js';
import { REPO_ROOT } from '../../helpers/paths.js';
import { start, type Started } from '../../helpers/sbx-cli.js';

const MiB = 1024 ** 2;
const ENV = { PATH: '/usr/bin:/bin', LANG: 'C' };
const HOLD_PY = join(REPO_ROOT, 'test', 'fixtures', 'memory', 'hold.py');
const HAS_PYTHON = spawnSync('sh', ['-c', 'command -v python3']).status === 0;
if (!HAS_PYTHON) console.warn('[shmem-held] SKIPPED: python3 is not installed');

const started: Started[] = [];
afterEach(() => {
  for (const s of started.splice(0)) s.child.kill('SIGKILL');
});
const shm = mkdtempSync('/dev/shm/sbx-shmem-held-');
afterAll(() => rmSync(shm, { recursive: true, force: true }));

/** `python3 -c CODE` under a shell (the shell stands in for the launcher); resolves once it printed `held`. */
async function python(args: string[]): Promise<Started> {
  const s = start('/bin/sh', ['-c', 'python3 "$@"; echo exited', 'sh', ...args], {
    env: ENV,
    cwd: '/',
    timeoutMs: 60_000,
  });
  started.push(s);
  await s.line(/^held\b/);
  return s;
}
const alive = (s: Started) => () => s.child.exitCode === null && s.child.signalCode === null;
const held = (s: Started) => heldShmem(processTree(s.child.pid!), ownMounts());
const resident = (s: Started) => processTree(s.child.pid!).reduce((sum, p) => sum + processMemory(p, false), 0);

describe.skipIf(!HAS_PYTHON)('a thread group whose leader exited', () => {
  it('counts through a live thread, and endTree ends it', async () => {
    const s = await python([HOLD_PY, 'leaderless', '64', '60']);
    const tree = processTree(s.child.pid!);
    const group = tree[1]!;
    // Its leader is a zombie: /proc/PID/status has no Rss lines (what the sum read before, as 0).
    expect(
      spawnSync('grep', ['-c', '^RssShmem', `/proc/${group.pid}/status`])
        .stdout.toString()
        .trim(),
    ).toBe('0');
    expect(processMemory(group, false)).toBeGreaterThanOrEqual(64 * MiB);
    expect(processMemory(group, true)).toBeGreaterThanOrEqual(64 * MiB);
    await endTree(s.child.pid!, alive(s));
    expect((await s.done).out).toMatch(/exited/);
  });

  it('control: a live process reads the same as before (its own /proc directory)', async () => {
    const s = await python([HOLD_PY, 'memfd', '1', '60']);
    const p = processTree(s.child.pid!)[1]!;
    expect(processMemoryAt(p, false).dir).toBe(`/proc/${p.pid}`);
  });
});

describe.skipIf(!HAS_PYTHON)('heldShmem', () => {
  it('counts an unmapped memfd, which no resident set shows', async () => {
    const s = await python([HOLD_PY, 'memfd', '64', '60']);
    expect(resident(s)).toBeLessThan(32 * MiB);
    const h = held(s);
    expect(h.bytes).toBeGreaterThanOrEqual(64 * MiB);
    expect(h.files.size).toBe(1);
  });

  it('counts a memfd two processes hold once (by device and inode)', async () => {
    const code =
      "import os, time; fd = os.memfd_create('x'); [os.write(fd, b'1' * (1 << 20)) for _ in range(64)]; " +
      "pid = os.fork(); print('held', flush=True) if pid else None; time.sleep(60)";
    const s = await python(['-c', code]);
    let tree = processTree(s.child.pid!);
    while (tree.length < 3) tree = processTree(s.child.pid!);
    const h = heldShmem(tree, ownMounts());
    expect(h.files.size).toBe(1);
    expect(h.bytes).toBeGreaterThanOrEqual(64 * MiB);
    expect(h.bytes).toBeLessThan(72 * MiB);
  });

  it('counts a host tmpfs file open for writing, and not one only read (control)', async () => {
    const writing = await python([HOLD_PY, 'file', join(shm, 'w'), '32', '60', 'open']);
    expect(held(writing).bytes).toBeGreaterThanOrEqual(32 * MiB);
    const code = `import time; f = open('${join(shm, 'w')}', 'rb'); print('held', flush=True); time.sleep(60)`;
    const reading = await python(['-c', code]);
    expect(held(reading).bytes).toBe(0);
  });

  it('a mapped memfd: the upper bound counts it twice, the precise sum once', async () => {
    const code =
      "import mmap, os, time; fd = os.memfd_create('x'); os.ftruncate(fd, 64 << 20); m = mmap.mmap(fd, 64 << 20); " +
      "[m.__setitem__(slice(o, o + 4096), b'1' * 4096) for o in range(0, 64 << 20, 4096)]; print('held', flush=True); time.sleep(60)";
    const s = await python(['-c', code]);
    const tree = processTree(s.child.pid!);
    const h = heldShmem(tree, ownMounts());
    const upper = resident(s) + h.bytes;
    const precise = tree.reduce((sum, p) => {
      const at = processMemoryAt(p, true);
      return sum + at.bytes - (at.dir ? countedMappings(at.dir, h) : 0);
    }, h.bytes);
    expect(upper).toBeGreaterThanOrEqual(128 * MiB);
    expect(precise).toBeGreaterThanOrEqual(64 * MiB);
    expect(precise).toBeLessThan(96 * MiB);
  });
});
