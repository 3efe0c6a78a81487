// The trampoline's shell text, run by each shell /bin/sh may be: dash (Debian, Ubuntu) and bash in
// POSIX mode (Fedora, Arch; bash started as "sh"). ulimit's units and its NPROC flag differ between
// them; the limits the final command sees must not.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Rlimit } from '../../../../../src/limits/plan.js';
import { rlimitCommand, shellTrampoline } from '../../../../../src/limits/host/cgroup/trampoline.js';

const SHELLS = ['/bin/dash', '/bin/bash'].filter((s) => existsSync(s));
const MiB = 1024 ** 2;

/**
 * 5000, or our own hard limit when it is lower (this suite run inside `sbx run -p untrusted`, whose
 * pids limit is an RLIMIT_NPROC): an unprivileged shell cannot raise a hard limit.
 */
const NPROC = Math.min(
  5000,
  Number(/^Max processes\s+\S+\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 5000),
);

const RLIMITS: Rlimit[] = [
  { resource: 'CORE', soft: 0, hard: 0 },
  { resource: 'AS', soft: 512 * MiB, hard: 512 * MiB },
  { resource: 'DATA', soft: 256 * MiB, hard: 256 * MiB },
  { resource: 'NPROC', soft: NPROC, hard: NPROC },
  { resource: 'CPU', soft: 60, hard: 61 },
  { resource: 'FSIZE', soft: 8 * MiB, hard: 8 * MiB },
  { resource: 'NOFILE', soft: 256, hard: 256 },
];

/** Soft and hard value of each /proc/self/limits row. */
function limitsOf(text: string): Record<string, [string, string]> {
  const out: Record<string, [string, string]> = {};
  for (const line of text.split('\n').slice(1)) {
    const m = /^(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)/.exec(line);
    if (m) out[m[1]!] = [m[2]!, m[3]!];
  }
  return out;
}

describe('rlimitCommand', () => {
  it('converts to the shell units and sets soft before hard', () => {
    expect(RLIMITS.map(rlimitCommand)).toEqual([
      'ulimit -c 0',
      'ulimit -v 524288',
      'ulimit -d 262144',
      `{ ulimit -u ${NPROC} 2>/dev/null || ulimit -p ${NPROC}; }`,
      'ulimit -S -t 60 && ulimit -H -t 61',
      'ulimit -f 16384',
      'ulimit -n 256',
    ]);
  });
});

describe.each(SHELLS)('the trampoline under %s as sh', (shell) => {
  it('gives the command exactly the planned limits', () => {
    const argv = shellTrampoline([], RLIMITS);
    const r = spawnSync(shell, [...argv.slice(1), '/bin/cat', '/proc/self/limits'], { encoding: 'utf8', argv0: 'sh' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const limits = limitsOf(r.stdout);
    expect(limits['Max core file size']).toEqual(['0', '0']);
    expect(limits['Max address space']).toEqual([String(512 * MiB), String(512 * MiB)]);
    expect(limits['Max data size']).toEqual([String(256 * MiB), String(256 * MiB)]);
    expect(limits['Max processes']).toEqual([String(NPROC), String(NPROC)]);
    expect(limits['Max cpu time']).toEqual(['60', '61']);
    expect(limits['Max file size']).toEqual([String(8 * MiB), String(8 * MiB)]);
    expect(limits['Max open files']).toEqual(['256', '256']);
  });

  it('control: without rlimits the command keeps ours', () => {
    const r = spawnSync(shell, [...shellTrampoline([], []).slice(1), '/bin/cat', '/proc/self/limits'], {
      encoding: 'utf8',
      argv0: 'sh',
    });
    expect(limitsOf(r.stdout)['Max open files']).not.toEqual(['256', '256']);
  });
});
