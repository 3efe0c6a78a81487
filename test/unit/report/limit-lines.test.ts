// The summary names the limit that ended or broke a run; hints point at a limit that was close; the
// notice says which limits this host does not enforce.
import { describe, expect, it } from 'vitest';
import { limitNotices } from '../../../src/report/limit-lines.js';
import { type Report, summaryLines } from '../../../src/report/report.js';

const GiB = 1024 ** 3;
const MEMORY_V1 = { name: 'memory', value: '2GiB', base: 2 * GiB, mechanism: 'cgroup-v1', exact: true, enforced: true };
const PIDS_V1 = { name: 'pids', value: '512', base: 512, mechanism: 'cgroup-v1', exact: true, enforced: true };
const HEAD = '[profile untrusted, session s1, 1.5 s]';

function report(over: Partial<Report>): Report {
  return {
    format: 1,
    sessionId: 's1',
    profile: { name: 'untrusted', file: '/p/untrusted.yaml', hash: 'h' },
    backend: 'bwrap',
    command: ['node', 'hog.js'],
    exitCode: 0,
    setBy: 'child',
    durationMs: 1500,
    violations: [],
    ...over,
  };
}

describe('summaryLines names the limit', () => {
  it('an OOM kill: the memory limit, its value and mechanism', () => {
    const r = report({
      exitCode: 137,
      signal: 'SIGKILL',
      limits: [MEMORY_V1],
      violations: [
        {
          phase: 'runtime',
          kind: 'oom',
          rule: 'limits.memory',
          limit: '2GiB',
          detail: 'out of memory: the kernel killed 1 process at the 2GiB limit',
        },
      ],
    });
    expect(summaryLines(r)).toEqual([
      `sbx: node was killed by the memory limit (2GiB, cgroup-v1; SIGKILL, exit 137) ${HEAD}`,
      'sbx:   runtime oom (limits.memory): out of memory: the kernel killed 1 process at the 2GiB limit',
    ]);
  });

  it('an OOM kill of a child, the command exiting by itself', () => {
    const r = report({
      exitCode: 1,
      limits: [MEMORY_V1],
      violations: [{ phase: 'runtime', kind: 'oom', rule: 'limits.memory', limit: '2GiB', detail: 'x' }],
    });
    expect(summaryLines(r)[0]).toBe(
      `sbx: node exited 1 after the memory limit (2GiB, cgroup-v1) killed a process ${HEAD}`,
    );
  });

  it('refused forks: the task limit', () => {
    const r = report({
      exitCode: 2,
      limits: [PIDS_V1],
      violations: [{ phase: 'runtime', kind: 'pids', rule: 'limits.pids', limit: '512', detail: 'x' }],
    });
    expect(summaryLines(r)[0]).toBe(`sbx: node exited 2 after exceeding the 512-task limit (cgroup-v1) ${HEAD}`);
  });

  it('SIGXCPU and SIGXFSZ: the cpu-time and file-size limits', () => {
    const cpu = { name: 'cpu-time', value: '20m', base: 1200, mechanism: 'rlimit', exact: true, enforced: true };
    const r = report({
      exitCode: 152,
      signal: 'SIGXCPU',
      limits: [cpu],
      violations: [{ phase: 'runtime', kind: 'cpu-time', rule: 'limits.cpu_time', limit: '20m', detail: 'x' }],
    });
    expect(summaryLines(r)[0]).toBe(
      `sbx: node was killed by the cpu-time limit (20m, rlimit; SIGXCPU, exit 152) ${HEAD}`,
    );
    const fsize = { name: 'file-size', value: '1GiB', base: GiB, mechanism: 'rlimit', exact: true, enforced: true };
    const f = report({
      exitCode: 153,
      signal: 'SIGXFSZ',
      limits: [fsize],
      violations: [{ phase: 'runtime', kind: 'file-size', rule: 'limits.file_size', limit: '1GiB', detail: 'x' }],
    });
    expect(summaryLines(f)[0]).toBe(
      `sbx: node was killed by the file-size limit (1GiB, rlimit; SIGXFSZ, exit 153) ${HEAD}`,
    );
  });

  it('the timeout', () => {
    const t = { name: 'timeout', value: '30m', base: 1_800_000, mechanism: 'wall-clock', exact: true, enforced: true };
    const r = report({
      exitCode: 124,
      setBy: 'sbx',
      limits: [t],
      violations: [{ phase: 'runtime', kind: 'timeout', rule: 'limits.timeout', limit: '30m', detail: 'x' }],
    });
    expect(summaryLines(r)[0]).toBe(`sbx: node timed out: the 30m timeout ended the sandbox (exit 124) ${HEAD}`);
  });

  it('control: a plain failure or signal names no limit', () => {
    expect(summaryLines(report({ exitCode: 1, limits: [MEMORY_V1], peaks: { memoryBytes: GiB } }))).toEqual([
      `sbx: node exited 1 ${HEAD}`,
    ]);
    const killed = report({
      exitCode: 137,
      signal: 'SIGKILL',
      violations: [{ phase: 'runtime', kind: 'signal', rule: 'signal', detail: 'the command was killed by SIGKILL' }],
    });
    expect(summaryLines(killed)[0]).toBe(`sbx: node was killed by SIGKILL (exit 137) ${HEAD}`);
  });
});

describe('hints when a limit may be the cause', () => {
  it('memory or tasks near the limit at the peak', () => {
    const r = report({ exitCode: 1, limits: [MEMORY_V1, PIDS_V1], peaks: { memoryBytes: 1.9 * GiB, pids: 500 } });
    expect(summaryLines(r).slice(1)).toEqual([
      'sbx: hint: memory peaked at 1.9GiB of the 2GiB limit (cgroup-v1): the failure may come from it; raise it with --memory SIZE (or --memory none)',
      'sbx: hint: 500 tasks ran at the peak, of the 512-task limit (cgroup-v1): the failure may come from it; raise it with --pids N (or --pids none)',
    ]);
  });

  it('SIGKILL under a systemd scope with a memory limit (its OOM counter is gone)', () => {
    const r = report({ exitCode: 137, signal: 'SIGKILL', limits: [{ ...MEMORY_V1, mechanism: 'systemd-scope' }] });
    expect(summaryLines(r).at(-1)).toBe(
      'sbx: hint: SIGKILL under a systemd scope with a 2GiB memory limit is most likely that limit; raise it with --memory SIZE (or --memory none)',
    );
  });

  it("a failure under the watchdog: RLIMIT_DATA fails allocations in the program's own words", () => {
    const watched = { ...MEMORY_V1, mechanism: 'watchdog', exact: false };
    const hint =
      'sbx: hint: memory 2GiB is approximated here: each process may hold at most 2GiB of data (RLIMIT_DATA), so "out of memory" or MemoryError may come from it; raise it with --memory SIZE (or --memory none)';
    // Evidence: a sampled peak at half the limit or more, a signal a failed allocation ends a process
    // with, or a shell's 128+N for one.
    const sampled = (bytes: number) => ({ memoryBytes: bytes, memorySampledEveryMs: 100 });
    expect(summaryLines(report({ exitCode: 1, limits: [watched], peaks: sampled(GiB) })).at(-1)).toBe(hint);
    for (const signal of ['SIGABRT', 'SIGSEGV', 'SIGBUS', 'SIGKILL', 'SIGTRAP'] as const) {
      const code = { SIGTRAP: 133, SIGABRT: 134, SIGBUS: 135, SIGKILL: 137, SIGSEGV: 139 }[signal];
      expect(summaryLines(report({ exitCode: code, signal, limits: [watched] })).at(-1)).toBe(hint);
      expect(summaryLines(report({ exitCode: code, limits: [watched] })).at(-1)).toBe(hint);
    }
    // No evidence: `false` (exit 1, a small peak), exit 2, SIGTERM, SIGINT's 130: no hint.
    for (const r of [
      report({ exitCode: 1, limits: [watched], peaks: sampled(GiB - 1) }),
      report({ exitCode: 1, limits: [watched] }),
      report({ exitCode: 2, limits: [watched], peaks: sampled(4 << 20) }),
      report({ exitCode: 143, signal: 'SIGTERM', limits: [watched] }),
      report({ exitCode: 130, limits: [watched] }),
    ]) {
      expect(summaryLines(r).filter((l) => l.startsWith('sbx: hint:'))).toEqual([]);
    }
    // A peak near the limit says it was sampled.
    expect(summaryLines(report({ exitCode: 1, limits: [watched], peaks: sampled(1.9 * GiB) })).at(-1)).toBe(
      'sbx: hint: memory peaked at 1.9GiB of the 2GiB limit (watchdog, sampled every 100ms): the failure may come from it; raise it with --memory SIZE (or --memory none)',
    );
    // The watchdog's own kill is named by the verdict, not hinted at.
    const killed = report({
      exitCode: 137,
      signal: 'SIGKILL',
      limits: [watched],
      violations: [{ phase: 'runtime', kind: 'oom', rule: 'limits.memory', limit: '2GiB', detail: 'x' }],
    });
    expect(summaryLines(killed)[0]).toBe(
      `sbx: node was killed by the memory limit (2GiB, watchdog; SIGKILL, exit 137) ${HEAD}`,
    );
    expect(summaryLines(killed).some((l) => l.startsWith('sbx: hint:'))).toBe(false);
  });

  it('an address-space limit the profile asked for', () => {
    const as = {
      name: 'address-space',
      value: '4GiB',
      base: 4 * GiB,
      mechanism: 'rlimit',
      exact: true,
      enforced: true,
    };
    expect(summaryLines(report({ exitCode: 1, limits: [as] })).at(-1)).toBe(
      'sbx: hint: address_space 4GiB (RLIMIT_AS) was set: "out of memory" from V8, WebAssembly or the JVM may come from it; lift it with --address-space none',
    );
  });

  it('control: no hint on success, far from the limit, or when a limit already fired', () => {
    expect(summaryLines(report({ exitCode: 0, limits: [MEMORY_V1], peaks: { memoryBytes: 2 * GiB } }))).toHaveLength(1);
    expect(summaryLines(report({ exitCode: 1, limits: [MEMORY_V1], peaks: { memoryBytes: 1.7 * GiB } }))).toHaveLength(
      1,
    );
    const oom = report({
      exitCode: 137,
      signal: 'SIGKILL',
      limits: [MEMORY_V1],
      peaks: { memoryBytes: 2 * GiB },
      violations: [{ phase: 'runtime', kind: 'oom', rule: 'limits.memory', detail: 'x' }],
    });
    expect(summaryLines(oom).filter((l) => l.includes('hint'))).toEqual([]);
    // not enforced: a peak (from nowhere) is no evidence
    expect(
      summaryLines(
        report({ exitCode: 1, limits: [{ ...MEMORY_V1, mechanism: 'none', exact: false, enforced: false }] }),
      ),
    ).toHaveLength(1);
  });
});

describe('limitNotices', () => {
  it('one line per reason for the limits nothing enforces', () => {
    const gap = 'cgroup v1 is not writable by uid 1000';
    const r = report({
      limits: [
        { ...MEMORY_V1, mechanism: 'none', exact: false, enforced: false, reason: gap },
        { ...PIDS_V1, mechanism: 'rlimit', exact: false, enforced: true, reason: gap },
        { name: 'cpus', value: '2', base: 2, mechanism: 'none', exact: false, enforced: false, reason: gap },
      ],
    });
    expect(limitNotices(r)).toEqual([`memory limit 2GiB and cpus limit 2 not enforced: ${gap} (see sbx doctor)`]);
  });

  it('control: nothing when every limit is enforced, or there are none', () => {
    expect(limitNotices(report({ limits: [MEMORY_V1, PIDS_V1] }))).toEqual([]);
    expect(limitNotices(report({}))).toEqual([]);
  });
});
