// compileNsjail beyond the golden files: host options, the mapping of each limit, the environment
// split, and every refusal (BACKEND_UNSUPPORTED by name, never a silently weaker sandbox).
import { describe, expect, it } from 'vitest';
import { compileNsjail, describeNsjailGaps } from '../../../../src/backend/nsjail/compile.js';
import { NSJAIL_GAPS } from '../../../../src/backend/nsjail/gaps.js';
import { SbxError } from '../../../../src/errors.js';
import type { Mount, Policy } from '../../../../src/policy/types.js';
import { FIXTURE_SESSION, runPipeline } from '../../../helpers/hosts.js';
import { fixtureNsjailHost } from './nsjail-fixtures.js';
import { hasFlag, mountOps, parseNsjailArgs, valuesOf } from './nsjail-argv.js';

/** The Policy alone (runPipeline compiles it for bwrap, which refuses none of what is tested here). */
async function policyFor(
  profile = 'default',
  host = 'alice',
  options: Parameters<typeof runPipeline>[2] = {},
): Promise<Policy> {
  return (await runPipeline(profile, host, options)).policy;
}

function compile(policy: Policy, uid = 1000, extra: Partial<ReturnType<typeof fixtureNsjailHost>> = {}) {
  return compileNsjail(policy, FIXTURE_SESSION, { ...fixtureNsjailHost(uid), ...extra });
}

function parsed(policy: Policy, uid = 1000) {
  return parseNsjailArgs(compile(policy, uid).args);
}

function refusal(fn: () => unknown): SbxError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SbxError);
    expect((e as SbxError).code).toBe('BACKEND_UNSUPPORTED');
    return e as SbxError;
  }
  throw new Error('expected BACKEND_UNSUPPORTED');
}

describe('compileNsjail options', () => {
  it('a TTY on stdin adds --skip_setsid and nothing else', async () => {
    const policy = await policyFor();
    const without = compile(policy).args;
    const withTty = compile(policy, 1000, { stdinIsTty: true }).args;
    expect(without).not.toContain('--skip_setsid');
    expect(withTty.filter((a) => a !== '--skip_setsid')).toEqual(without);
    expect(withTty.filter((a) => a === '--skip_setsid')).toHaveLength(1);
  });

  it('limits: time limit rounded up plus one second, CPU in seconds, FSIZE in MiB, NOFILE as is; memory, pids, cpus left to the LimitPlan', async () => {
    const policy = await policyFor('default', 'alice', {
      request: {
        command: ['sh'],
        limits: {
          timeout: '1500ms',
          cpu_time: '90s',
          file_size: '64MiB',
          nofile: 256,
          memory: '1GiB',
          pids: 64,
          cpus: 0.5,
        },
      },
    });
    const p = parsed(policy);
    expect(valuesOf(p, '--time_limit')).toEqual(['3']);
    expect(valuesOf(p, '--rlimit_cpu')).toEqual(['90']);
    expect(valuesOf(p, '--rlimit_fsize')).toEqual(['64']);
    expect(valuesOf(p, '--rlimit_nofile')).toEqual(['256']);
    expect(valuesOf(p, '--rlimit_as')).toEqual(['hard']);
    expect(valuesOf(p, '--rlimit_nproc')).toEqual(['hard']);
    expect(valuesOf(p, '--rlimit_core')).toEqual(['0']);
    expect(
      compile(policy).args.filter((a) => a.startsWith('--cgroup') || a === '--max_cpus' || a === '--use_cgroupv2'),
    ).toEqual([]);
    const whole = parsed(
      await policyFor('default', 'alice', { request: { command: ['sh'], limits: { timeout: '2s' } } }),
    );
    expect(valuesOf(whole, '--time_limit')).toEqual(['3']);
  });

  it("environment: only in the config on fd 4 (text format, escaped), never on the argv nor in nsjail's own environment", async () => {
    const policy = await policyFor('default', 'alice', {
      request: {
        command: ['sh'],
        env: { LD_PRELOAD: '/w/evil.so', MY_VALUE: 's3cr3t-v4lue', WEIRD: 'a "q" \\ é\nline2' },
      },
    });
    const launch = compile(policy);
    expect(launch.env).toEqual({});
    expect(
      launch.args.filter(
        (a) => a.includes('s3cr3t-v4lue') || a.includes('evil.so') || a === '--env' || a === '--keep_env',
      ),
    ).toEqual([]);
    expect(launch.args.slice(0, 4)).toEqual(['--log_fd', '3', '--config', '/proc/self/fd/4']);
    const fd = launch.fds[1]!;
    if (fd.purpose !== 'args') throw new Error('fd 4 is the config');
    const config = new TextDecoder().decode(fd.data).split('\n');
    expect(config[0]).toBe("# sbx: the command's environment");
    expect(config).toContain('envar: "LD_PRELOAD=/w/evil.so"');
    expect(config).toContain('envar: "MY_VALUE=s3cr3t-v4lue"');
    expect(config).toContain('envar: "WEIRD=a \\"q\\" \\\\ \\303\\251\\012line2"');
    expect(config.filter((l) => l.startsWith('envar: '))).toHaveLength(Object.keys(policy.env.vars).length);
  });

  it('a bare command needs execPath (--exec_file); a path runs as given; argv[0] is unchanged', async () => {
    const policy = await policyFor('default', 'alice', { request: { command: ['make', 'all'] } });
    const launch = compile(policy, 1000, { execPath: '/usr/bin/make' });
    const p = parseNsjailArgs(launch.args);
    expect(valuesOf(p, '--exec_file')).toEqual(['/usr/bin/make']);
    expect(p.command).toEqual(['make', 'all']);
    const e = refusal(() => compile(policy, 1000, { execPath: undefined }));
    expect(e.message).toMatch(/absolute path of "make"/);
    const scripted = parseNsjailArgs(
      compile({ ...policy, command: ['./build.sh'] }, 1000, { execPath: undefined }).args,
    );
    expect(hasFlag(scripted, '--exec_file')).toBe(false);
    expect(scripted.command).toEqual(['./build.sh']);
  });

  it('filtered network: own namespace, the egress bridge is the command, the session dir read-only', async () => {
    const bridge = { node: '/usr/bin/node', script: '/opt/sbx/dist/bridge.cjs' };
    const policy = await policyFor('default', 'alice', {
      request: { command: ['curl', 'x'], allowDomains: ['example.com'] },
      mutateHost: (h) => (h.bridge = bridge),
    });
    const p = parsed(policy);
    expect(hasFlag(p, '--disable_clone_newnet')).toBe(false);
    expect(p.command.slice(0, 2)).toEqual(['/run/sbx/node', '/run/sbx/bridge.cjs']);
    expect(p.command.slice(-3)).toEqual(['--', 'curl', 'x']);
    expect(hasFlag(p, '--exec_file')).toBe(false);
    expect(mountOps(p).filter((m) => m.target === '/run/sbx/session')).toEqual([
      { flag: '--bindmount_ro', source: FIXTURE_SESSION.dir, target: '/run/sbx/session' },
    ]);
  });

  it("transparent capture: the judge is the first process and gets sbx's filter (BPF) in place of nsjail's seccomp string", async () => {
    const bridge = { node: '/usr/bin/node', script: '/opt/sbx/dist/bridge.cjs', judge: '/opt/sbx/dist/sbx-landlock' };
    const policy = await policyFor('default', 'alice', {
      request: { command: ['curl', 'x'], allowDomains: ['example.com'] },
      mutateHost: (h) => (h.bridge = bridge),
    });
    const launch = compile(policy);
    const p = parseNsjailArgs(launch.args);
    expect(hasFlag(p, '--seccomp_string')).toBe(false);
    expect(valuesOf(p, '--pass_fd')).toEqual(['5', '6']);
    expect(launch.fds.map((f) => f.purpose)).toEqual(['status', 'args', 'seccomp', 'status']);
    expect(p.command.slice(0, 9)).toEqual([
      '/run/sbx/sbx-landlock',
      '--judge',
      '5',
      '6',
      '3',
      '--',
      '/run/sbx/node',
      '/run/sbx/bridge.cjs',
      '--announce',
    ]);
    // The resolver files and the judge are mounted as under bwrap.
    const targets = mountOps(p).map((m) => m.target);
    expect(targets).toEqual(expect.arrayContaining(['/etc/resolv.conf', '/etc/hosts', '/run/sbx/sbx-landlock']));
  });

  it("remount-ro of a mount makes that mount read-only; of / keeps nsjail's read-only root", async () => {
    const policy = await policyFor('read-only');
    const p = parsed(policy);
    expect(mountOps(p).find((m) => m.target === '/home/alice')).toMatchObject({
      fstype: 'tmpfs',
      options: 'size=536870912,mode=0755,ro',
    });
    expect(hasFlag(p, '--rw')).toBe(false);
    const noRootRemount = {
      ...policy,
      mounts: policy.mounts.filter((m) => !(m.kind === 'remount-ro' && m.target === '/')),
    };
    expect(hasFlag(parsed(noRootRemount), '--rw')).toBe(true);
  });

  it('no seccomp string and no proc mount when the policy has none', async () => {
    const policy = await policyFor();
    const withoutProc = { ...policy, mounts: policy.mounts.filter((m) => m.kind !== 'proc') };
    const p = parsed(withoutProc);
    expect(hasFlag(p, '--disable_proc')).toBe(true);
    expect(hasFlag(p, '--proc_path')).toBe(false);
    expect(hasFlag(parsed(policy), '--disable_proc')).toBe(false);
  });
});

describe('compileNsjail refusals', () => {
  it('a shared user namespace', async () => {
    const policy = await policyFor();
    expect(refusal(() => compile({ ...policy, namespaces: { ...policy.namespaces, user: false } })).message).toMatch(
      /requires a user namespace/,
    );
  });

  it('seccomp that leaves nested user namespaces open (preset off, or unshare removed)', async () => {
    const off = await policyFor('default', 'alice', { profile: { seccomp: { preset: 'off' } } });
    expect(refusal(() => compile(off)).message).toMatch(/nested user namespaces/);
    const removed = await policyFor('default', 'alice', { profile: { seccomp: { remove: ['unshare'] } } });
    expect(refusal(() => compile(removed)).message).toMatch(/nested user namespaces/);
    expect(() => compile(off)).toThrow(/preset off/);
  });

  it("a path with ':' (nsjail's separator)", async () => {
    const policy = await policyFor();
    const bad: Mount = {
      kind: 'bind',
      source: '/opt/a:b',
      target: '/opt/a:b',
      access: 'ro',
      optional: false,
      reason: 'test',
      role: 'user-ro',
    };
    expect(
      refusal(() => compile({ ...policy, mounts: [...policy.mounts.slice(0, -1), bad, policy.mounts.at(-1)!] }))
        .message,
    ).toMatch(/contains ':'/);
    expect(
      refusal(() =>
        compileNsjail(
          policy,
          { ...FIXTURE_SESSION, dir: '/run/a:b', emptyFile: '/run/a:b/empty' },
          fixtureNsjailHost(1000),
        ),
      ).message,
    ).toMatch(/session directory/);
  });

  it('a mount whose mount point nsjail would create inside a host bind', async () => {
    const policy = await policyFor();
    const at = policy.mounts.findIndex((m) => m.kind === 'bind' && m.target === '/usr');
    const inside: Mount = {
      kind: 'tmpfs',
      target: '/usr/local/scratch',
      sizeBytes: 1 << 20,
      mode: 0o755,
      reason: 'test',
      role: 'private',
    };
    const e = refusal(() =>
      compile({ ...policy, mounts: [...policy.mounts.slice(0, at + 1), inside, ...policy.mounts.slice(at + 1)] }),
    );
    expect(e.message).toMatch(
      /\/usr\/local\/scratch .* inside the host bind of \/usr: nsjail would create its mount point on the host/,
    );
    // A bind of a host path at its own place inside a bind of its parent is fine: the mount point is itself.
    const self: Mount = {
      kind: 'bind',
      source: '/usr/local',
      target: '/usr/local',
      access: 'ro',
      optional: false,
      reason: 'test',
      role: 'user-ro',
    };
    expect(() =>
      compile({ ...policy, mounts: [...policy.mounts.slice(0, at + 1), self, ...policy.mounts.slice(at + 1)] }),
    ).not.toThrow();
    const elsewhere: Mount = { ...self, target: '/usr/other' };
    refusal(() =>
      compile({ ...policy, mounts: [...policy.mounts.slice(0, at + 1), elsewhere, ...policy.mounts.slice(at + 1)] }),
    );
  });

  it('a file size limit that is not a whole number of MiB', async () => {
    const policy = await policyFor('default', 'alice', {
      request: { command: ['sh'], limits: { file_size: '1536KiB' } },
    });
    const e = refusal(() => compile(policy));
    expect(e.message).toMatch(/not a whole number of MiB/);
    expect(e.hint).toMatch(/2MiB/);
  });

  it('procfs with something mounted below it', async () => {
    const policy = await policyFor();
    const below: Mount = {
      kind: 'tmpfs',
      target: '/proc/driver',
      sizeBytes: 4096,
      mode: 0o555,
      reason: 'test',
      role: 'private',
    };
    expect(refusal(() => compile({ ...policy, mounts: [...policy.mounts, below] })).message).toMatch(
      /mounts procfs last/,
    );
  });

  it('remount-ro of a path that is not a mount point', async () => {
    const policy = await policyFor();
    expect(
      refusal(() =>
        compile({
          ...policy,
          mounts: [...policy.mounts, { kind: 'remount-ro', target: '/etc/ssl', reason: 'test', role: 'system' }],
        }),
      ).message,
    ).toMatch(/not a mount point/);
  });

  it('a policy derived for another kind of caller (root vs not)', async () => {
    const policy = await policyFor('default', 'root');
    expect(refusal(() => compile(policy, 1000)).message).toMatch(/derived for a root caller/);
    expect(() => compile(policy, 0)).not.toThrow();
  });

  it('several refusals: the first is the message, the rest are details', async () => {
    const off = await policyFor('default', 'alice', { profile: { seccomp: { preset: 'off' } } });
    const e = refusal(() => compile({ ...off, namespaces: { ...off.namespaces, user: false } }));
    expect(e.details).toHaveLength(1);
  });
});

describe('gaps', () => {
  it('every refusal the compiler raises is listed as refused', () => {
    const refused = NSJAIL_GAPS.filter((g) => g.effect === 'refused').map((g) => g.key);
    expect(refused).toEqual(
      expect.arrayContaining([
        'namespaces.user',
        'nsjail.nested-userns',
        'mounts.paths',
        'mounts.host-mountpoint',
        'limits.fileSizeBytes',
      ]),
    );
    const features = NSJAIL_GAPS.map((g) => g.key);
    expect(new Set(features).size).toBe(features.length);
  });

  it('describeNsjailGaps lists the weaker points that apply and what would be refused', async () => {
    const plain = describeNsjailGaps(await policyFor());
    expect(plain.every((l) => l.startsWith('weaker '))).toBe(true);
    expect(plain.some((l) => l.startsWith('weaker nsjail.die-with-parent:'))).toBe(true);
    expect(plain.some((l) => l.includes('limits.cpuTimeSec'))).toBe(false);
    const untrusted = describeNsjailGaps(await policyFor('untrusted'));
    expect(untrusted.some((l) => l.startsWith('weaker limits.cpuTimeSec:'))).toBe(true);
    const off = describeNsjailGaps(await policyFor('default', 'alice', { profile: { seccomp: { preset: 'off' } } }));
    expect(off[0]).toMatch(/^refused nsjail.nested-userns: /);
  });
});
