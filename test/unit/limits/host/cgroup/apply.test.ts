// prepareLimits against fake cgroupfs trees: the files written, the exact trampoline argv (and what it
// does when run for real with a harmless command), collect() parsing, cleanup and the stale sweep.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { SbxError } from '../../../../../src/errors.js';
import { parseLimits } from '../../../../../src/limits/parse-limits.js';
import { type LimitPlan, planLimits } from '../../../../../src/limits/plan.js';
import { planLimitsWrapper, prepareLimits, sweepStaleCgroups } from '../../../../../src/limits/host/cgroup/apply.js';
import { probeCgroupFacts } from '../../../../../src/limits/host/cgroup/probe.js';
import { makeTempDir } from '../../../../helpers/tmp.js';
import {
  delegateToAnyone,
  fakeCgroupfs,
  V1_CPU,
  V1_MEMORY,
  V1_PIDS,
  V2_USER_PARENT,
} from '../../../../helpers/fake-cgroupfs.js';

const LIMITS = parseLimits({ memory: '128MiB', pids: 64, cpus: 0.5, cpu_time: '60s', file_size: '8MiB', nofile: 256 });
const OWN_UID = process.getuid!();

const SCRIPT =
  'for f; do shift; [ "$f" = -- ] && break; echo 0 > "$f" || { echo "sbx: cannot move into cgroup $f" >&2; exit 125; }; done; ' +
  'ulimit -c 0 && ulimit -S -t 60 && ulimit -H -t 61 && ulimit -f 16384 && ulimit -n 256 || { echo "sbx: cannot set resource limits" >&2; exit 125; }; ' +
  'exec "$@"';

const read = (path: string) => readFileSync(path, 'utf8');
const session = (id: string) => ({ id, dir: makeTempDir('sbx-session-') });

function v2Setup() {
  const root = fakeCgroupfs('v2-user');
  const parent = join(root, V2_USER_PARENT);
  delegateToAnyone(parent);
  const plan = planLimits(LIMITS, probeCgroupFacts({ root, uid: 1000, env: {} }));
  return { root, parent, plan };
}

function v1Setup() {
  const root = fakeCgroupfs('v1-root');
  const plan = planLimits(LIMITS, probeCgroupFacts({ root, uid: OWN_UID, env: {} }));
  return { root, plan, memory: join(root, V1_MEMORY), pids: join(root, V1_PIDS), cpu: join(root, V1_CPU) };
}

/** A real process to find in a cgroup: cleanup must kill it. */
function sleeper(): ChildProcess {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  onTestFinished(() => {
    child.kill('SIGKILL');
  });
  return child;
}

describe('cgroup v2 (fake)', () => {
  it('enables the missing controller, creates sbx-<id> beside our scope and writes every limit', async () => {
    const { root, parent, plan } = v2Setup();
    const limits = await prepareLimits(plan, session('t1'), { root });
    const dir = join(parent, 'sbx-t1');
    expect(limits.cgroupDirs).toEqual([dir]);
    // memory and pids were enabled already; the fake file keeps the one write, as the kernel would apply it.
    expect(read(join(parent, 'cgroup.subtree_control'))).toBe('+cpu');
    expect(read(join(dir, 'memory.max'))).toBe(String(128 * 1024 ** 2));
    expect(read(join(dir, 'memory.swap.max'))).toBe('0');
    expect(read(join(dir, 'memory.oom.group'))).toBe('1');
    expect(read(join(dir, 'pids.max'))).toBe('64');
    expect(read(join(dir, 'cpu.max'))).toBe('50000 100000');
    expect(read(join(dir, 'memory.events'))).toBe('');
    await limits.cleanup();
  });

  it('wraps the launcher in the trampoline, exactly', async () => {
    const { root, parent, plan } = v2Setup();
    const limits = await prepareLimits(plan, session('t1'), { root });
    expect(limits.wrap({ file: '/usr/bin/bwrap', args: ['--unshare-all', '--', 'true'] })).toEqual({
      file: '/bin/sh',
      args: [
        '-c',
        SCRIPT,
        'sbx-limits',
        join(parent, 'sbx-t1', 'cgroup.procs'),
        '--',
        '/usr/bin/bwrap',
        '--unshare-all',
        '--',
        'true',
      ],
    });
    await limits.cleanup();
  });

  it('the trampoline writes "0" to cgroup.procs, sets the rlimits and execs the command with its arguments intact', async () => {
    const { root, parent, plan } = v2Setup();
    const limits = await prepareLimits(plan, session('t1'), { root });
    const procs = join(parent, 'sbx-t1', 'cgroup.procs');
    const { file, args } = limits.wrap({
      file: '/bin/sh',
      args: ['-c', 'ulimit -c; ulimit -f; ulimit -n; ulimit -t; printf "[%s]" "$@"', 'x', 'a b', '--', '$HOME'],
    });
    const r = spawnSync(file, args, { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('0\n16384\n256\n60\n[a b][--][$HOME]');
    expect(r.status).toBe(0);
    expect(read(procs)).toBe('0\n');
    await limits.cleanup();
  });

  it("passes the launcher's extra descriptors through untouched (bwrap reads --args and --seccomp from them)", async () => {
    const { root, plan } = v2Setup();
    const limits = await prepareLimits(plan, session('t1'), { root });
    const { file, args } = limits.wrap({ file: '/bin/sh', args: ['-c', 'cat <&3; cat <&4'] });
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] });
    (child.stdio[3] as NodeJS.WritableStream).end('args-fd ');
    (child.stdio[4] as NodeJS.WritableStream).end('seccomp-fd');
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
    expect(await once(child, 'close')).toEqual([0, null]);
    expect(out).toBe('args-fd seccomp-fd');
    await limits.cleanup();
  });

  it('fails closed: when it cannot enter the cgroup the command never runs (exit 125)', async () => {
    const { root, parent, plan } = v2Setup();
    const limits = await prepareLimits(plan, session('t1'), { root });
    const procs = join(parent, 'sbx-t1', 'cgroup.procs');
    unlinkSync(procs);
    mkdirSync(procs); // EISDIR, even for root
    const { file, args } = limits.wrap({ file: '/bin/echo', args: ['command ran'] });
    const r = spawnSync(file, args, { encoding: 'utf8' });
    expect(r.status).toBe(125);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`sbx: cannot move into cgroup ${procs}`);
    rmSync(procs, { recursive: true });
    writeFileSync(procs, '');
    await limits.cleanup();
  });

  it('fails closed: a limit the shell cannot set stops the run (exit 125)', async () => {
    const plan: LimitPlan = {
      limits: [],
      cgroup: { kind: 'none' },
      rlimits: [{ resource: 'NOFILE', soft: 2 ** 40, hard: 2 ** 40 }],
    };
    const limits = await prepareLimits(plan, session('t9'), { root: makeTempDir() });
    const { file, args } = limits.wrap({ file: '/bin/echo', args: ['command ran'] });
    const r = spawnSync(file, args, { encoding: 'utf8' });
    expect(r.status).toBe(125);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('sbx: cannot set resource limits');
  });

  it('collect() reads oom kills, refused forks and peaks', async () => {
    const { root, parent, plan } = v2Setup();
    const limits = await prepareLimits(plan, session('t1'), { root });
    const dir = join(parent, 'sbx-t1');
    expect(await limits.collect()).toEqual({ violations: [], peaks: {} });
    writeFileSync(join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 31\noom 1\noom_kill 2\noom_group_kill 1\n');
    writeFileSync(join(dir, 'pids.events'), 'max 17\n');
    writeFileSync(join(dir, 'memory.peak'), '134217728\n');
    writeFileSync(join(dir, 'pids.peak'), '64\n');
    expect(await limits.collect()).toEqual({
      violations: [
        {
          phase: 'runtime',
          kind: 'oom',
          rule: 'limits.memory',
          limit: '128MiB',
          detail: 'out of memory: the kernel killed 2 processes at the 128MiB limit',
        },
        {
          phase: 'runtime',
          kind: 'pids',
          rule: 'limits.pids',
          limit: '64',
          detail: 'process limit reached: 17 forks refused at 64 tasks',
        },
      ],
      peaks: { memoryBytes: 134217728, pids: 64 },
    });
    await limits.cleanup();
  });

  it('control: events at zero are no violations', async () => {
    const { root, parent, plan } = v2Setup();
    const limits = await prepareLimits(plan, session('t1'), { root });
    writeFileSync(join(parent, 'sbx-t1', 'memory.events'), 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n');
    writeFileSync(join(parent, 'sbx-t1', 'pids.events'), 'max 0\n');
    expect((await limits.collect()).violations).toEqual([]);
    await limits.cleanup();
  });

  it('cleanup() kills what is left, removes the cgroup, and is idempotent', async () => {
    const { root, parent, plan } = v2Setup();
    const limits = await prepareLimits(plan, session('t1'), { root });
    const dir = join(parent, 'sbx-t1');
    const child = sleeper();
    writeFileSync(join(dir, 'cgroup.procs'), `${child.pid}\n`);
    const exited = once(child, 'exit');
    await limits.cleanup();
    expect(await exited).toEqual([null, 'SIGKILL']);
    expect(existsSync(dir)).toBe(false);
    await limits.cleanup();
    expect(await limits.collect()).toEqual({ violations: [], peaks: {} });
    expect(readdirSync(parent).filter((n) => n.startsWith('sbx-'))).toEqual([]);
  });

  it('refuses a session id that could name another directory', async () => {
    const { root, plan } = v2Setup();
    await expect(prepareLimits(plan, session('../escape'), { root })).rejects.toMatchObject({ code: 'SANDBOX_SETUP' });
  });
});

describe('cgroup v1 (fake)', () => {
  it('creates sbx-<id> under our cgroup in each controller and writes the v1 files', async () => {
    const { root, plan, memory, pids, cpu } = v1Setup();
    const limits = await prepareLimits(plan, session('t2'), { root });
    expect(limits.cgroupDirs).toEqual([join(memory, 'sbx-t2'), join(pids, 'sbx-t2'), join(cpu, 'sbx-t2')]);
    expect(read(join(memory, 'sbx-t2/memory.limit_in_bytes'))).toBe('134217728');
    expect(read(join(memory, 'sbx-t2/memory.memsw.limit_in_bytes'))).toBe('134217728');
    expect(read(join(pids, 'sbx-t2/pids.max'))).toBe('64');
    expect(read(join(cpu, 'sbx-t2/cpu.cfs_period_us'))).toBe('100000');
    expect(read(join(cpu, 'sbx-t2/cpu.cfs_quota_us'))).toBe('50000');
    expect(limits.wrap({ file: 'bwrap', args: ['true'] }).args).toEqual([
      '-c',
      SCRIPT,
      'sbx-limits',
      join(memory, 'sbx-t2/cgroup.procs'),
      join(pids, 'sbx-t2/cgroup.procs'),
      join(cpu, 'sbx-t2/cgroup.procs'),
      '--',
      'bwrap',
      'true',
    ]);
    await limits.cleanup();
    expect(limits.cgroupDirs.filter((d) => existsSync(d))).toEqual([]);
  });

  it('without swap accounting there is no memsw file to write', async () => {
    const { root, plan, memory } = v1Setup();
    unlinkSync(join(memory, 'memory.memsw.limit_in_bytes'));
    const limits = await prepareLimits(plan, session('t2'), { root });
    expect(existsSync(join(memory, 'sbx-t2/memory.memsw.limit_in_bytes'))).toBe(false);
    expect(read(join(memory, 'sbx-t2/memory.limit_in_bytes'))).toBe('134217728');
    await limits.cleanup();
  });

  it('collect() reads memory.oom_control, pids.events and the peaks', async () => {
    const { root, plan, memory, pids } = v1Setup();
    const limits = await prepareLimits(plan, session('t2'), { root });
    writeFileSync(join(memory, 'sbx-t2/memory.oom_control'), 'oom_kill_disable 0\nunder_oom 0\noom_kill 1\n');
    writeFileSync(join(memory, 'sbx-t2/memory.max_usage_in_bytes'), '134217728\n');
    writeFileSync(join(pids, 'sbx-t2/pids.events'), 'max 3\n');
    writeFileSync(join(pids, 'sbx-t2/pids.peak'), '64\n');
    expect(await limits.collect()).toEqual({
      violations: [
        {
          phase: 'runtime',
          kind: 'oom',
          rule: 'limits.memory',
          limit: '128MiB',
          detail: 'out of memory: the kernel killed 1 process at the 128MiB limit',
        },
        {
          phase: 'runtime',
          kind: 'pids',
          rule: 'limits.pids',
          limit: '64',
          detail: 'process limit reached: 3 forks refused at 64 tasks',
        },
      ],
      peaks: { memoryBytes: 134217728, pids: 64 },
    });
    await limits.cleanup();
  });

  it('a controller that cannot be set up fails the whole prepare and leaves nothing behind', async () => {
    const { root, plan, memory, pids, cpu } = v1Setup();
    rmSync(cpu, { recursive: true });
    const err = await prepareLimits(plan, session('t3'), { root }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).code).toBe('LIMIT_UNENFORCEABLE');
    expect((err as SbxError).message).toMatch(
      new RegExp(
        `^cannot set up the session cgroup ${join(cpu, 'sbx-t3').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: ENOENT`,
      ),
    );
    expect([join(memory, 'sbx-t3'), join(pids, 'sbx-t3')].filter(existsSync)).toEqual([]);
  });

  it('an existing cgroup of the same name is not reused', async () => {
    const { root, plan, memory } = v1Setup();
    mkdirSync(join(memory, 'sbx-t4'));
    await expect(prepareLimits(plan, session('t4'), { root })).rejects.toMatchObject({
      code: 'LIMIT_UNENFORCEABLE',
      message: expect.stringMatching(/EEXIST/),
    });
  });
});

describe('planLimitsWrapper: what compile() shows, with nothing created', () => {
  const LAUNCH = { file: '/usr/bin/bwrap', args: ['--args', '4', '--', 'true'] };

  it.each([
    ['v2', v2Setup],
    ['v1', v1Setup],
  ] as const)('%s: the same wrapper and cgroups prepareLimits then makes, none made before', async (_kind, setup) => {
    const { root, plan } = setup();
    const planned = planLimitsWrapper(plan, 't9', { root });
    expect(planned.cgroupDirs.length).toBeGreaterThan(0);
    for (const dir of planned.cgroupDirs) expect(existsSync(dir), dir).toBe(false);
    const limits = await prepareLimits(plan, session('t9'), { root });
    expect(limits.cgroupDirs).toEqual(planned.cgroupDirs);
    for (const dir of limits.cgroupDirs) expect(existsSync(dir), dir).toBe(true);
    expect(limits.wrap(LAUNCH)).toEqual(planned.wrap(LAUNCH));
    await limits.cleanup();
  });

  it('refuses a session id that could name another directory, as prepareLimits does', () => {
    const { plan } = v2Setup();
    expect(() => planLimitsWrapper(plan, '../escape')).toThrow(SbxError);
  });
});

describe('rlimits', () => {
  it('are clamped to the hard limits sbx itself runs under', async () => {
    const root = makeTempDir();
    mkdirSync(join(root, 'proc/self'), { recursive: true });
    writeFileSync(
      join(root, 'proc/self/limits'),
      [
        'Limit                     Soft Limit           Hard Limit           Units     ',
        'Max cpu time              unlimited            unlimited            seconds   ',
        'Max file size             unlimited            unlimited            bytes     ',
        'Max core file size        0                    unlimited            bytes     ',
        'Max processes             3000                 3000                 processes ',
        'Max open files            1024                 4096                 files     ',
        '',
      ].join('\n'),
    );
    const plan = planLimits(parseLimits({ nofile: 65536, file_size: '1GiB' }), {
      uid: 1000,
      cgroup: { kind: 'none' },
      systemdRun: false,
    });
    const limits = await prepareLimits(plan, session('t6'), { root });
    expect(limits.rlimits).toEqual([
      { resource: 'CORE', soft: 0, hard: 0 },
      { resource: 'FSIZE', soft: 1024 ** 3, hard: 1024 ** 3 },
      { resource: 'NOFILE', soft: 4096, hard: 4096 },
    ]);
  });

  it("RLIMIT_NPROC gets the uid's running tasks on top", async () => {
    const root = makeTempDir();
    const proc = (pid: number, uid: number, threads: number) => {
      mkdirSync(join(root, 'proc', String(pid)), { recursive: true });
      writeFileSync(
        join(root, 'proc', String(pid), 'status'),
        `Name:\tx\nUid:\t${uid}\t${uid}\t${uid}\t${uid}\nThreads:\t${threads}\n`,
      );
    };
    proc(100, 1000, 1);
    proc(101, 1000, 12);
    proc(102, 0, 40);
    proc(103, 1001, 2);
    const plan = planLimits(parseLimits({ pids: 64 }), { uid: 1000, cgroup: { kind: 'none' }, systemdRun: false });
    const limits = await prepareLimits(plan, session('t7'), { root });
    expect(limits.rlimits).toEqual([
      { resource: 'CORE', soft: 0, hard: 0 },
      { resource: 'NPROC', soft: 77, hard: 77, uid: 1000 },
    ]);
    expect(limits.wrap({ file: 'bwrap', args: [] }).args[1]).toBe(
      'for f; do shift; [ "$f" = -- ] && break; echo 0 > "$f" || { echo "sbx: cannot move into cgroup $f" >&2; exit 125; }; done; ' +
        'ulimit -c 0 && { ulimit -u 77 2>/dev/null || ulimit -p 77; } || { echo "sbx: cannot set resource limits" >&2; exit 125; }; exec "$@"',
    );
  });
});

describe('sweepStaleCgroups (fake)', () => {
  it('removes empty session cgroups past the grace period, spares fresh and busy ones (whoever runs them) and non-sbx ones', async () => {
    const root = fakeCgroupfs('v2-user');
    const parent = join(root, V2_USER_PARENT);
    delegateToAnyone(parent);
    const old = Date.now() / 1000 - 600;
    const make = (name: string, procs: string, mtime?: number) => {
      mkdirSync(join(parent, name));
      writeFileSync(join(parent, name, 'cgroup.procs'), procs);
      if (mtime !== undefined) utimesSync(join(parent, name), mtime, mtime);
    };
    const busy = sleeper();
    make('sbx-old', '', old);
    make('sbx-new', '');
    make('sbx-busy', `${busy.pid}\n`, old);
    make('other-old', '', old);
    expect(await sweepStaleCgroups({ root, uid: 1000, env: {} })).toBe(1);
    expect(
      readdirSync(parent)
        .filter((n) => !n.includes('.'))
        .sort(),
    ).toEqual(['other-old', 'sbx-busy', 'sbx-new']);
    // Busy may be another sbx's sandbox, one this sbx cannot see (another XDG_RUNTIME_DIR, another
    // user): it keeps running however old its cgroup is.
    expect(busy.exitCode).toBeNull();
    expect(busy.signalCode).toBeNull();
    // Once it has exited, its empty cgroup goes with the next sweep.
    const exited = once(busy, 'exit');
    busy.kill('SIGTERM');
    await exited;
    writeFileSync(join(parent, 'sbx-busy', 'cgroup.procs'), '');
    expect(await sweepStaleCgroups({ root, uid: 1000, env: {} })).toBe(1);
    expect(
      readdirSync(parent)
        .filter((n) => !n.includes('.'))
        .sort(),
    ).toEqual(['other-old', 'sbx-new']);
  });

  it('sweeps every v1 controller', async () => {
    const { root, memory, pids, cpu } = v1Setup();
    const old = Date.now() / 1000 - 600;
    for (const dir of [memory, pids, cpu]) {
      mkdirSync(join(dir, 'sbx-gone'));
      writeFileSync(join(dir, 'sbx-gone/cgroup.procs'), '');
      utimesSync(join(dir, 'sbx-gone'), old, old);
    }
    expect(await sweepStaleCgroups({ root, uid: OWN_UID, env: {} })).toBe(3);
    expect([memory, pids, cpu].filter((d) => existsSync(join(d, 'sbx-gone')))).toEqual([]);
  });
});

describe("a launcher's share: what it applies to the command alone stays out of the trampoline (issue 30)", () => {
  const LAUNCH = { file: '/usr/lib/sbx/sbx-landlock', args: [] };

  it.each([
    ['v2', v2Setup],
    ['v1', v1Setup],
  ] as const)(
    '%s: every limit to the launcher: no wrapper at all, the cgroups and rlimits handed over',
    async (_kind, setup) => {
      const { root, plan } = setup();
      const launcher = { rlimits: ['CORE', 'CPU', 'FSIZE', 'NOFILE', 'AS', 'DATA', 'NPROC'] as const, cgroup: true };
      const limits = await prepareLimits(plan, session('t7'), { root, launcher });
      expect(limits.wrap(LAUNCH)).toEqual(LAUNCH);
      expect(limits.rlimits).toEqual([]);
      expect(limits.command.cgroupProcs).toEqual(limits.cgroupDirs.map((d) => join(d, 'cgroup.procs')));
      expect(limits.command.rlimits.map((r) => r.resource)).toEqual(['CORE', 'CPU', 'FSIZE', 'NOFILE']);
      expect(limits.command.rlimits.find((r) => r.resource === 'CPU')).toMatchObject({ soft: 60, hard: 61 });
      await limits.cleanup();
    },
  );

  it('some rlimits to the launcher: the trampoline keeps the cgroups and the rest', async () => {
    const { root, parent, plan } = v2Setup();
    const launcher = { rlimits: ['CPU', 'FSIZE', 'NOFILE'] as const, cgroup: false };
    const limits = await prepareLimits(plan, session('t8'), { root, launcher });
    const { args } = limits.wrap(LAUNCH);
    expect(args[1]).toBe(
      'for f; do shift; [ "$f" = -- ] && break; echo 0 > "$f" || { echo "sbx: cannot move into cgroup $f" >&2; exit 125; }; done; ' +
        'ulimit -c 0 || { echo "sbx: cannot set resource limits" >&2; exit 125; }; exec "$@"',
    );
    expect(args[3]).toBe(join(parent, 'sbx-t8', 'cgroup.procs'));
    expect(limits.command).toEqual({
      rlimits: [
        { resource: 'CPU', soft: 60, hard: 61 },
        { resource: 'FSIZE', soft: 8 * 1024 ** 2, hard: 8 * 1024 ** 2 },
        { resource: 'NOFILE', soft: 256, hard: 256 },
      ],
      cgroupProcs: [],
    });
    await limits.cleanup();
  });

  it('control: without a launcher share the trampoline sets everything and hands nothing over', async () => {
    const { root, plan } = v2Setup();
    const limits = await prepareLimits(plan, session('t9'), { root });
    expect(limits.wrap(LAUNCH).args[1]).toBe(SCRIPT);
    expect(limits.command).toEqual({ rlimits: [], cgroupProcs: [] });
    await limits.cleanup();
  });
});
