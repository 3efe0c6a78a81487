// The watchdog's /proc side on real processes, no sandbox: which processes form the tree, how much
// memory they hold (a fork's shared copy-on-write heap counted once by the proportional figure), and
// that ending the tree kills every descendant and spares the root. Runs as root and as any user.
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryWatchdog } from '../../../src/limits/host/memory-watchdog.js';
import {
  childrenByScan,
  childrenFiles,
  endTree,
  processMemory,
  processTree,
} from '../../../src/limits/host/process-tree.js';
import { start, type Started } from '../../helpers/sbx-cli.js';

const MiB = 1024 ** 2;
const ENV = { PATH: '/usr/bin:/bin', LANG: 'C' };
const HAS_PYTHON = spawnSync('sh', ['-c', 'command -v python3']).status === 0;
if (!HAS_PYTHON) console.warn('[process-tree] memory tests SKIPPED: python3 is not installed');

const started: Started[] = [];
afterEach(() => {
  for (const s of started.splice(0)) s.child.kill('SIGKILL');
});

function run(script: string): Started {
  const s = start('/bin/sh', ['-c', script], { env: ENV, cwd: '/', timeoutMs: 30_000 });
  started.push(s);
  return s;
}

const alive = (s: Started) => () => s.child.exitCode === null && s.child.signalCode === null;
/** Neither gone nor a zombie (an orphan waits for init to reap it). */
const isLive = (pid: number) => {
  const stat = spawnSync('cat', [`/proc/${pid}/stat`], { encoding: 'utf8' }).stdout;
  return stat !== '' && !/^\S+ \(.*\) [ZX] /.test(stat);
};
const argvOf = (pid: number) => spawnSync('cat', [`/proc/${pid}/cmdline`], { encoding: 'utf8' }).stdout.split('\0')[0];

/** python3 holding `mib` MiB of touched anonymous memory for `seconds`; `forked`: after a fork, in parent and child alike. */
const HOLD = (mib: number, { forked = false, seconds = 30 } = {}) =>
  `python3 -c "import os, time; b = bytearray(${mib} << 20)${forked ? '; os.fork()' : ''}; print('ready', flush=True); time.sleep(${seconds})"`;

describe('processTree', () => {
  it('is the root and every descendant, grandchildren included', async () => {
    const s = run('sleep 30 & sh -c "sleep 31 & wait" & echo ready; wait');
    await s.line(/^ready$/);
    // The inner shell may not have forked its sleep yet: walk until it has (bounded by the safety timeout).
    let tree = processTree(s.child.pid!);
    while (tree.length < 4) tree = processTree(s.child.pid!);
    expect(tree.map((p) => argvOf(p.pid)).sort()).toEqual(['/bin/sh', 'sh', 'sleep', 'sleep']);
    expect(tree[0]!.pid).toBe(s.child.pid);
  });

  it('the /proc scan (kernels without children files) finds the same children as the children files', async () => {
    const s = run('sleep 30 & sleep 31 & echo ready; wait');
    await s.line(/^ready$/);
    let files = childrenFiles()(s.child.pid!);
    while (files.length < 2) files = childrenFiles()(s.child.pid!);
    expect(childrenByScan()(s.child.pid!).sort()).toEqual(files.sort());
    expect(files).toHaveLength(2);
  });

  it('control: an unrelated process is not in it', async () => {
    const other = run('echo ready; exec sleep 30');
    const s = run('echo ready; exec sleep 30');
    await Promise.all([other.line(/^ready$/), s.line(/^ready$/)]);
    expect(processTree(s.child.pid!).map((p) => p.pid)).toEqual([s.child.pid]);
  });
});

describe.skipIf(!HAS_PYTHON)('processMemory', () => {
  it('counts touched anonymous memory, and a forked heap once by proportion, twice by the upper bound', async () => {
    const s = run(`${HOLD(64, { forked: true })}; wait`);
    await s.line(/^ready$/);
    await s.line(/^ready$/);
    const tree = processTree(s.child.pid!);
    const upper = tree.reduce((sum, p) => sum + processMemory(p, false), 0);
    const precise = tree.reduce((sum, p) => sum + processMemory(p, true), 0);
    expect(upper).toBeGreaterThanOrEqual(128 * MiB);
    expect(precise).toBeGreaterThanOrEqual(64 * MiB);
    expect(precise).toBeLessThan(100 * MiB);
  });

  it('control: a shell holds next to nothing', async () => {
    const s = run('echo ready; exec sleep 30');
    await s.line(/^ready$/);
    expect(processMemory(processTree(s.child.pid!)[0]!, true)).toBeLessThan(4 * MiB);
  });
});

describe('endTree', () => {
  it('kills every descendant and spares the root, which sees them die', async () => {
    const s = run('sleep 30 & sh -c "sleep 31" & echo ready; wait; echo waited; exec sleep 30');
    await s.line(/^ready$/);
    let before = processTree(s.child.pid!);
    while (before.length < 4) before = processTree(s.child.pid!);
    await endTree(s.child.pid!, alive(s));
    await s.line(/^waited$/);
    expect(before.slice(1).filter((p) => isLive(p.pid))).toEqual([]);
    expect(isLive(s.child.pid!)).toBe(true);
  });

  it('does nothing once the root is reaped (its pid may name another process)', async () => {
    const s = run('echo ready; sleep 30; true');
    await s.line(/^ready$/);
    // "ready" comes before the shell forks sleep: wait for the child to be there.
    let tree = processTree(s.child.pid!);
    for (let i = 0; i < 100 && tree.length < 2; i++) {
      await new Promise((ok) => setTimeout(ok, 20));
      tree = processTree(s.child.pid!);
    }
    await endTree(s.child.pid!, () => false);
    expect(isLive(tree[1]!.pid)).toBe(true);
  });
});

describe.skipIf(!HAS_PYTHON)('memoryWatchdog', () => {
  const limit = { memoryBytes: 128 * MiB, intervalMs: 20, fastIntervalMs: 10, display: '128MiB' };

  it('ends a tree whose sum passes the limit, though each process is under it', async () => {
    // The outer shell stands in for the launcher (bwrap, the landlock helper): spared, it reports.
    const s = run(`(${HOLD(50)} & ${HOLD(50)} & ${HOLD(50)} & wait; echo survived); echo launcher-done`);
    const watchdog = memoryWatchdog(limit);
    watchdog.start(s.child.pid!, alive(s));
    const ran = await s.done;
    await watchdog.stop();
    expect(ran.out).not.toMatch(/survived/);
    expect(ran.out).toMatch(/launcher-done/);
    const { violations, peakBytes } = watchdog.result();
    expect(violations).toEqual([
      {
        phase: 'runtime',
        kind: 'oom',
        rule: 'limits.memory',
        limit: '128MiB',
        detail: expect.stringMatching(
          /^out of memory \(approximate: per-process data limit \+ tree watchdog\): the sandbox's processes held [\d.]+MiB, past the 128MiB limit, and sbx ended them all$/,
        ),
      },
    ]);
    expect(peakBytes).toBeGreaterThan(128 * MiB);
  });

  it('control: two of them fit, nothing is killed, the peak is kept', async () => {
    const s = run(`${HOLD(50, { seconds: 1 })} & ${HOLD(50, { seconds: 1 })} & wait; echo survived`);
    const watchdog = memoryWatchdog(limit);
    watchdog.start(s.child.pid!, alive(s));
    const ran = await s.done;
    await watchdog.stop();
    expect(ran.out).toMatch(/survived/);
    expect(watchdog.result().violations).toEqual([]);
    expect(watchdog.result().peakBytes).toBeLessThanOrEqual(128 * MiB);
  });
});
