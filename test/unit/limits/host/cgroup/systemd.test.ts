// The systemd path, with a fake systemd-run first on PATH: it records the argv (NUL-separated) and the
// XDG_RUNTIME_DIR it saw, then execs what follows `--`, as the real one does after creating the scope.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseLimits } from '../../../../../src/limits/parse-limits.js';
import { type HostLimitFacts, planLimits } from '../../../../../src/limits/plan.js';
import { prepareLimits } from '../../../../../src/limits/host/cgroup/apply.js';
import { makeTempDir } from '../../../../helpers/tmp.js';
import { stubBin } from '../../../../helpers/fake-cgroupfs.js';

const FAKE_SYSTEMD_RUN = `#!/bin/sh
printf '%s\\0' "$@" > "$SBX_FAKE_LOG"
printf '%s' "\${XDG_RUNTIME_DIR-unset}" > "$SBX_FAKE_LOG.xdg"
while [ $# -gt 0 ]; do a=$1; shift; [ "$a" = -- ] && break; done
exec "$@"
`;

const USER_HOST: HostLimitFacts = {
  uid: 1000,
  cgroup: {
    kind: 'v2',
    mount: '/sys/fs/cgroup',
    ownPath: '/user.slice/user-1000.slice/session-3.scope',
    writable: false,
    controllers: [],
  },
  systemdRun: true,
};
const LIMITS = parseLimits({ memory: '128MiB', pids: 64, cpus: 0.5, nofile: 256 });
const INNER_SCRIPT = (unset: boolean) =>
  `${unset ? 'unset XDG_RUNTIME_DIR; ' : ''}for f; do shift; [ "$f" = -- ] && break; echo 0 > "$f" || { echo "sbx: cannot move into cgroup $f" >&2; exit 125; }; done; ` +
  'ulimit -c 0 && ulimit -n 256 || { echo "sbx: cannot set resource limits" >&2; exit 125; }; exec "$@"';
const COMMAND = ['/bin/sh', '-c', 'echo "xdg=${XDG_RUNTIME_DIR-unset}"; ulimit -n'];

function setup() {
  const bin = stubBin({ 'systemd-run': FAKE_SYSTEMD_RUN });
  const log = join(makeTempDir(), 'argv');
  // `root` only keeps /proc/self/limits out of it, so the rlimits are the plan's exactly.
  const opts = { root: makeTempDir(), env: { PATH: `/nonexistent:${bin}`, XDG_RUNTIME_DIR: '/run/user/1000' } };
  const run = (file: string, args: string[]) =>
    spawnSync(file, args, { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', SBX_FAKE_LOG: log } });
  const recorded = () => readFileSync(log, 'utf8').split('\0').slice(0, -1);
  return { bin, log, opts, run, recorded };
}

describe('systemd-scope', () => {
  it('passes exactly MemoryMax, MemorySwapMax, TasksMax and CPUQuota, lends XDG_RUNTIME_DIR and takes it back', async () => {
    const { bin, log, opts, run, recorded } = setup();
    const plan = planLimits(LIMITS, USER_HOST);
    const limits = await prepareLimits(plan, { id: 't5', dir: makeTempDir() }, opts);
    expect(limits.cgroupDirs).toEqual([]);
    const wrapped = limits.wrap({ file: COMMAND[0]!, args: COMMAND.slice(1), env: { PATH: '/usr/bin:/bin' } });
    const systemdArgs = [
      '--user',
      '--scope',
      '--quiet',
      '--collect',
      '--unit=sbx-t5.scope',
      '-p',
      'MemoryMax=134217728',
      '-p',
      'MemorySwapMax=0',
      '-p',
      'TasksMax=64',
      '-p',
      'CPUQuota=50%',
      '--',
      '/bin/sh',
      '-c',
      INNER_SCRIPT(true),
      'sbx-limits',
      '--',
      ...COMMAND,
    ];
    expect(wrapped).toEqual({
      file: '/usr/bin/env',
      args: ['XDG_RUNTIME_DIR=/run/user/1000', join(bin, 'systemd-run'), ...systemdArgs],
    });

    const r = run(wrapped.file, wrapped.args);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('xdg=unset\n256\n');
    expect(recorded()).toEqual(systemdArgs);
    expect(readFileSync(`${log}.xdg`, 'utf8')).toBe('/run/user/1000');
    expect(await limits.collect()).toEqual({ violations: [], peaks: {} });
    await limits.cleanup();
  });

  it('leaves XDG_RUNTIME_DIR alone when the launcher has its own', async () => {
    const { bin, opts } = setup();
    const limits = await prepareLimits(planLimits(LIMITS, USER_HOST), { id: 't5', dir: makeTempDir() }, opts);
    const wrapped = limits.wrap({
      file: '/bin/sh',
      args: ['-c', 'echo "xdg=$XDG_RUNTIME_DIR"'],
      env: { XDG_RUNTIME_DIR: '/run/user/1000' },
    });
    expect(wrapped.file).toBe(join(bin, 'systemd-run'));
    expect(wrapped.args.slice(0, 6)).toEqual([
      '--user',
      '--scope',
      '--quiet',
      '--collect',
      '--unit=sbx-t5.scope',
      '-p',
    ]);
    expect(wrapped.args).toContain(INNER_SCRIPT(false));
    const r = spawnSync(wrapped.file, wrapped.args, {
      encoding: 'utf8',
      env: { SBX_FAKE_LOG: join(makeTempDir(), 'argv'), XDG_RUNTIME_DIR: '/run/user/1000' },
    });
    expect(r.stdout).toBe('xdg=/run/user/1000\n');
  });

  it('root talks to the system manager: no --user, nothing lent', async () => {
    const { bin, opts } = setup();
    const limits = await prepareLimits(
      planLimits(parseLimits({ pids: 100 }), { ...USER_HOST, uid: 0 }),
      { id: 't6', dir: makeTempDir() },
      opts,
    );
    expect(limits.wrap({ file: 'bwrap', args: ['true'] })).toEqual({
      file: join(bin, 'systemd-run'),
      args: [
        '--scope',
        '--quiet',
        '--collect',
        '--unit=sbx-t6.scope',
        '-p',
        'TasksMax=100',
        '--',
        '/bin/sh',
        '-c',
        'for f; do shift; [ "$f" = -- ] && break; echo 0 > "$f" || { echo "sbx: cannot move into cgroup $f" >&2; exit 125; }; done; ' +
          'ulimit -c 0 || { echo "sbx: cannot set resource limits" >&2; exit 125; }; exec "$@"',
        'sbx-limits',
        '--',
        'bwrap',
        'true',
      ],
    });
  });

  it('CPUQuota is a whole percent, at least 1%', async () => {
    const { opts } = setup();
    const quota = async (cpus: number) => {
      const limits = await prepareLimits(
        planLimits({ cpus, required: [] }, USER_HOST),
        { id: 't7', dir: makeTempDir() },
        opts,
      );
      return limits.wrap({ file: 'x', args: [] }).args.find((a) => a.startsWith('CPUQuota='));
    };
    expect(await quota(2)).toBe('CPUQuota=200%');
    expect(await quota(0.333)).toBe('CPUQuota=33%');
    expect(await quota(0.01)).toBe('CPUQuota=1%');
  });

  it('without systemd-run on PATH the plan cannot be applied', async () => {
    await expect(
      prepareLimits(
        planLimits(LIMITS, USER_HOST),
        { id: 't8', dir: makeTempDir() },
        { root: makeTempDir(), env: { PATH: makeTempDir() } },
      ),
    ).rejects.toMatchObject({
      code: 'LIMIT_UNENFORCEABLE',
      message: 'systemd-run is not on PATH, but the limit plan needs a systemd scope',
    });
  });
});
