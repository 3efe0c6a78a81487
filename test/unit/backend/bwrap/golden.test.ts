// Golden argv: every built-in profile × every fixture host, through the real loader, derivePolicy
// and compileBwrap. The golden files are the security review surface; the invariant tests below
// re-check, per argv, the properties a reviewer looks for, so a regenerated golden cannot quietly
// accept a broken ordering or a leaked secret.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BWRAP_MAX_ARGS, compileBwrap, expandArgsFd, expandPinnedFds } from '../../../../src/backend/bwrap/compile.js';
import { SbxError } from '../../../../src/errors.js';
import { isCredentialName } from '../../../../src/env/env.js';
import type { Policy } from '../../../../src/policy/types.js';
import {
  hasFlag,
  hiddenMounts,
  mountOps,
  mountTarget,
  operandsOf,
  parseBwrapArgs,
  setenvMap,
} from '../../../helpers/bwrap-argv.js';
import {
  bwrapGoldenText,
  expectGolden,
  expectGoldenText,
  expectOnlyWorkspaceWritable,
  fromGoldenText,
  toGoldenText,
  UPDATE_GOLDEN,
} from '../../../helpers/golden.js';
import {
  builtinProfileNames,
  FIXTURE_BWRAP,
  FIXTURE_SESSION,
  hostFixtureNames,
  loadHost,
  runPipeline,
} from '../../../helpers/hosts.js';
import { GOLDEN_DIR } from '../../../helpers/paths.js';

const PROFILES = builtinProfileNames();
const HOSTS = hostFixtureNames();
const CASES = PROFILES.flatMap((profile) => HOSTS.map((host) => ({ profile, host })));

/** Host variables whose values must never reach the argv. */
const SECRET_NAMES = ['AWS_SECRET_ACCESS_KEY', 'GITHUB_TOKEN', 'SSH_AUTH_SOCK'];

describe('fixtures', () => {
  it('cover the built-in profiles and both kinds of host', () => {
    expect(PROFILES).toEqual(
      expect.arrayContaining(['agent', 'danger', 'default', 'network', 'read-only', 'untrusted']),
    );
    expect(HOSTS).toEqual(expect.arrayContaining(['alice', 'root']));
  });

  it.each(HOSTS)('%s carries the credentials the argv must not leak', (name) => {
    const host = loadHost(name);
    for (const secret of SECRET_NAMES)
      expect(host.env[secret], `${name}.json env.${secret}`).toEqual(expect.any(String));
  });

  it('alice has a merged /usr (/bin /lib /lib64 /sbin are symlinks) and ~/.ssh, ~/.aws', () => {
    const host = loadHost('alice');
    expect(host.uid).toBe(1000);
    for (const p of ['/bin', '/lib', '/lib64', '/sbin'])
      expect(host.paths[p]).toMatchObject({ exists: true, link: `usr${p}` });
    expect(host.paths['/home/alice/.ssh']).toMatchObject({ exists: true, type: 'dir' });
    expect(host.paths['/home/alice/.aws']).toMatchObject({ exists: true, type: 'dir' });
  });

  it('root runs as uid 0 and has root-only system files', () => {
    const host = loadHost('root');
    expect(host.uid).toBe(0);
    expect(host.rootOnly).toEqual(
      expect.arrayContaining([
        { path: '/etc/shadow', dir: false },
        { path: '/etc/ssl/private', dir: true },
      ]),
    );
  });
});

describe.each(CASES)('$profile × $host', ({ profile, host }) => {
  it('matches its golden argv', async () => {
    const { argv, policy } = await runPipeline(profile, host);
    expectGoldenText(join(GOLDEN_DIR, `${profile}.${host}.bwrap.argv`), bwrapGoldenText(argv, policy.mounts));
  });

  it('keeps the security invariants', async () => {
    const { argv, host: h, policy, launch } = await runPipeline(profile, host);
    expect(argv[0]).toBe('/usr/bin/bwrap');
    // Every host bind is a pinned descriptor, each used once; only sbx's own session files go by path,
    // and the kernel's state under /proc, read-only over the fresh procfs (policy/derive/kernel.ts).
    const raw = parseBwrapArgs(argv.slice(1));
    const byPath = mountOps(raw).filter((m) => m.flag === '--bind' || m.flag === '--ro-bind');
    const kernel = byPath.filter((m) => m.flag === '--ro-bind' && m.operands[0] === m.operands[1]);
    expect(kernel.map((m) => m.operands[1])).toEqual([
      '/proc/bus',
      '/proc/fs',
      '/proc/irq',
      '/proc/sys',
      '/proc/sysrq-trigger',
    ]);
    expect(Math.min(...kernel.map((m) => m.index))).toBeGreaterThan(
      mountOps(raw).find((m) => m.flag === '--proc')!.index,
    );
    const others = byPath.filter((m) => !kernel.includes(m));
    expect(others.filter((m) => !m.operands[0]!.startsWith(`${FIXTURE_SESSION.dir}/`))).toEqual([]);
    const fdsUsed = mountOps(raw)
      .filter((m) => m.flag.endsWith('-fd'))
      .map((m) => Number(m.operands[0]));
    expect(new Set(fdsUsed).size).toBe(fdsUsed.length);
    expect(fdsUsed.map((fd) => launch.fds[fd - 3]?.purpose)).toEqual(fdsUsed.map(() => 'bind'));
    expect(launch.fds.filter((f) => f.purpose === 'bind')).toHaveLength(fdsUsed.length);
    // The rest reads the binds by the paths the descriptors hold.
    const parsed = parseBwrapArgs(expandPinnedFds(argv.slice(1), launch));
    expect(parsed.command).toEqual(['sh', '-c', 'echo hi']);

    // Namespaces and process isolation.
    for (const flag of [
      '--unshare-user',
      '--disable-userns',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--die-with-parent',
      '--new-session',
      '--clearenv',
    ]) {
      expect(hasFlag(parsed, flag), flag).toBe(true);
    }
    expect(operandsOf(parsed, '--cap-drop')).toEqual([['ALL']]);
    const sharesNetwork = profile === 'network' || profile === 'danger';
    expect(hasFlag(parsed, '--unshare-net'), '--unshare-net').toBe(!sharesNetwork);

    // Identity: a root host never hands uid 0 to the child.
    const expectedUid = h.uid === 0 ? '65534' : String(h.uid);
    expect(operandsOf(parsed, '--uid')).toEqual([[expectedUid]]);
    expect(operandsOf(parsed, '--gid')).toEqual([[h.uid === 0 ? '65534' : String(h.gid)]]);

    // Mount order: every mount comes after the mounts of its parents (else it would be hidden), and
    // masks / remounts come after every bind they could be covered by.
    const mounts = mountOps(parsed);
    expect(hiddenMounts(mounts)).toEqual([]);
    if (profile !== 'danger') {
      const last = mounts.at(-1)!;
      expect([last.flag, ...last.operands]).toEqual(['--remount-ro', '/']);
      // Nothing writable is bound from the host except the workspace, and directories inside it bound
      // over themselves (the parents of protected git state: pinned so they cannot be renamed).
      expectOnlyWorkspaceWritable(operandsOf(parsed, '--bind'), policy.workspace, profile === 'read-only');
      // Private /tmp and HOME.
      expect(mounts.filter((m) => m.flag === '--tmpfs').map(mountTarget)).toEqual(
        expect.arrayContaining(['/tmp', h.home]),
      );
    } else {
      expect(operandsOf(parsed, '--bind')).toEqual([['/', '/']]);
    }
    expect(operandsOf(parsed, '--ro-bind-try')).toEqual([]);
    expect(operandsOf(parsed, '--bind-try')).toEqual([]);
    expect(operandsOf(parsed, '--dev-bind')).toEqual([]);

    // Credential stores that exist on the host and are reachable through a bind are masked by a
    // read-only empty tmpfs, placed after every bind.
    const masked = new Set<string>();
    mounts.forEach((m, j) => {
      if (m.flag === '--tmpfs' && m.modifiers['--perms'] === '0555') {
        const next = mounts[j + 1];
        expect(next && [next.flag, ...next.operands], `mask of ${m.operands[0]} is remounted read-only`).toEqual([
          '--remount-ro',
          m.operands[0],
        ]);
        masked.add(m.operands[0]!);
      }
      if (m.flag === '--ro-bind' && m.operands[0] === FIXTURE_SESSION.emptyFile) masked.add(m.operands[1]!);
    });
    // Generated files (git config views, unreadable stand-ins) are bound from the session directory.
    const fromSession = (m: (typeof mounts)[number]) =>
      m.flag === '--ro-bind' && m.operands[0]!.startsWith(`${FIXTURE_SESSION.dir}/`);
    const lastBind = Math.max(
      ...mounts
        .filter((m) => m.flag === '--bind' || m.flag === '--ro-bind')
        .filter((m) => !fromSession(m))
        .map((m) => mounts.indexOf(m)),
    );
    // The kernel's masks go right over the fresh /proc instead: nothing else is ever mounted in it.
    const inProc = (m: (typeof mounts)[number]) => mountTarget(m).startsWith('/proc/');
    const readOnlyKernel = new Set(kernel.map((m) => m.operands[1]));
    expect(
      mounts.filter(inProc).filter((m) => !masked.has(mountTarget(m)) && !readOnlyKernel.has(mountTarget(m))),
    ).toEqual([]);
    mounts.forEach((m, j) => {
      if (inProc(m)) return;
      if (masked.has(mountTarget(m)) && (m.flag === '--tmpfs' || m.operands[0] === FIXTURE_SESSION.emptyFile))
        expect(j, `mask ${mountTarget(m)} after the binds`).toBeGreaterThan(lastBind);
    });
    if (profile === 'danger') {
      for (const store of ['.ssh', '.aws']) {
        const path = `${h.home}/${store}`;
        if (h.paths[path]?.exists) expect([...masked], `${path} masked`).toContain(path);
      }
    }
    if (h.uid === 0 && profile !== 'danger') {
      for (const { path } of h.rootOnly) expect([...masked], `${path} masked`).toContain(path);
    }
    // The fixture's secret-looking files in the workspace are masked; its git hooks bound read-only.
    const generated = mounts.filter(fromSession).map((m) => m.operands[1]);
    for (const { path, tracked } of h.sensitiveFiles.masks)
      expect(tracked ? generated : [...masked], `${path} masked`).toContain(path);
    for (const { path } of h.sensitiveFiles.views) expect(generated, `${path} generated`).toContain(path);
    for (const hooks of h.sensitiveFiles.protect) {
      expect(
        mounts.filter((m) => m.flag === '--ro-bind' && m.operands[0] === hooks).map((m) => m.operands[1]),
        `${hooks} read-only`,
      ).toEqual([hooks]);
    }

    // Environment: built from nothing, credentials never in the argv (names nor values).
    const env = setenvMap(parsed);
    expect(env.HOME).toBe(h.home);
    expect(env.SBX_PROFILE).toBe(profile);
    expect(env.SBX_SESSION_ID).toBe('test-session');
    const credentials = [...new Set([...SECRET_NAMES, ...Object.keys(h.env).filter(isCredentialName)])];
    expect(credentials.length).toBeGreaterThanOrEqual(SECRET_NAMES.length);
    for (const name of credentials) {
      expect(Object.keys(env)).not.toContain(name);
      const value = h.env[name]!;
      expect(
        argv.filter((arg) => arg.includes(value)),
        `value of ${name}`,
      ).toEqual([]);
    }
    expect(operandsOf(parsed, '--chdir')).toEqual([[policy.cwd]]);
    expect(operandsOf(parsed, '--json-status-fd')).toEqual([['3']]);
  });
});

describe('invariant checks (controls: each sees a broken argv fail)', () => {
  const tail = ['--', 'true'];
  it('hiddenMounts flags a parent mounted after its child', () => {
    const ok = mountOps(
      parseBwrapArgs(['--tmpfs', '/home/a', '--bind', '/w', '/home/a/w', '--remount-ro', '/', ...tail]),
    );
    expect(hiddenMounts(ok)).toEqual([]);
    const broken = mountOps(parseBwrapArgs(['--bind', '/w', '/home/a/w', '--tmpfs', '/home/a', ...tail]));
    expect(hiddenMounts(broken)).toEqual(['--bind /home/a/w (argv 0) is hidden by the later --tmpfs /home/a (argv 3)']);
    const maskFirst = mountOps(parseBwrapArgs(['--ro-bind', '/e', '/home/a/.ssh', '--bind', '/', '/', ...tail]));
    expect(hiddenMounts(maskFirst)).toHaveLength(1);
  });

  it('parseBwrapArgs refuses unknown options, a stray --size and a missing --', () => {
    expect(() => parseBwrapArgs(['--bind-data', '3', '/x', ...tail])).toThrow(/unexpected bwrap argument/);
    expect(() => parseBwrapArgs(['--size', '1', '--bind', '/a', '/a', ...tail])).toThrow(
      /--size must be followed by --tmpfs/,
    );
    expect(() => parseBwrapArgs(['--unshare-net'])).toThrow(/no "--"/);
    expect(() => parseBwrapArgs(['--bind', '/a'])).toThrow(/lacks operands/);
  });
});

/** An allow list on a host where the network judge was built: transparent capture (backend/shared/bridge.ts). */
const CAPTURE_BRIDGE = {
  node: '/usr/bin/node',
  script: '/opt/sbx/dist/bridge.cjs',
  judge: '/opt/sbx/dist/sbx-landlock',
};
const captured = () =>
  runPipeline('default', 'alice', {
    request: { allowDomains: ['example.com'] },
    mutateHost: (h) => {
      h.bridge = CAPTURE_BRIDGE;
    },
  });

describe('an allow list with transparent capture × alice', () => {
  it('matches its golden argv', async () => {
    const { argv, policy } = await captured();
    expectGoldenText(join(GOLDEN_DIR, 'allow-list.alice.bwrap.argv'), bwrapGoldenText(argv, policy.mounts));
  });

  it('hands the seccomp filter to the judge, which starts the bridge; the resolver files send every name to sbx', async () => {
    const { argv, launch, policy } = await captured();
    const parsed = parseBwrapArgs(expandPinnedFds(argv.slice(1), launch));
    // The filter is the judge's to install in its child: bwrap's --seccomp would put the judge itself under it.
    expect(hasFlag(parsed, '--seccomp')).toBe(false);
    expect(launch.fds.map((f) => f.purpose).slice(0, 4)).toEqual(['status', 'args', 'seccomp', 'status']);
    expect(parsed.command.slice(0, 7)).toEqual([
      '/run/sbx/sbx-landlock',
      '--judge',
      '5',
      '6',
      '3',
      '--',
      '/run/sbx/node',
    ]);
    expect(parsed.command.slice(7, 10)).toEqual(['/run/sbx/bridge.cjs', '--announce', '3']);
    expect(parsed.command.slice(-4)).toEqual(['--', 'sh', '-c', 'echo hi']);
    const files = policy.mounts.flatMap((m) => (m.kind === 'file' && m.role === 'capture' ? [m] : []));
    expect(files.map((m) => [m.target, m.content])).toEqual([
      ['/etc/resolv.conf', expect.stringContaining('nameserver 198.18.0.1\noptions use-vc\n')],
      ['/etc/hosts', '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n127.0.1.1 sbx\n'],
    ]);
  });

  it('without the judge (no C compiler built it) capture is off, and says why; bwrap installs the filter', async () => {
    const { argv, policy } = await runPipeline('default', 'alice', {
      request: { allowDomains: ['example.com'] },
      mutateHost: (h) => {
        h.bridge = { node: CAPTURE_BRIDGE.node, script: CAPTURE_BRIDGE.script };
      },
    });
    expect(policy.network).toMatchObject({ capture: { kind: 'off', why: expect.stringContaining('not built') } });
    expect(argv).toContain('--seccomp');
    expect(argv).not.toContain('/run/sbx/sbx-landlock');
    expect(policy.mounts.filter((m) => m.kind === 'file' && m.role === 'capture')).toEqual([]);
  });
});

describe('golden files', () => {
  it('exist only for current profile × host pairs (no orphans to review)', () => {
    const expected = [
      ...CASES.map(({ profile, host }) => `${profile}.${host}.bwrap.argv`),
      'allow-list.alice.bwrap.argv',
    ].sort();
    const present = readdirSync(GOLDEN_DIR)
      .filter((f) => f.endsWith('.bwrap.argv'))
      .sort();
    expect(present).toEqual(expected);
  });

  it.skipIf(UPDATE_GOLDEN)('a missing golden file fails instead of being written', () => {
    expect(() => expectGolden(join(GOLDEN_DIR, 'no-such-profile.nohost.bwrap.argv'), ['/usr/bin/bwrap'])).toThrow(
      /missing golden file/,
    );
    expect(readdirSync(GOLDEN_DIR)).not.toContain('no-such-profile.nohost.bwrap.argv');
  });

  it('hold one bwrap operation per line with its reason, every mount reasoned by the Policy', async () => {
    const { argv, policy } = await runPipeline('default', 'alice');
    const lines = bwrapGoldenText(argv, policy.mounts).trimEnd().split('\n');
    expect(lines[0]).toBe('/usr/bin/bwrap');
    expect(lines.at(-1)).toMatch(/^-- /);
    for (const line of lines.slice(1, -1)) expect(line).toMatch(/^--\S+.* # \S/);
    expect(lines.join('\n')).not.toContain('NO POLICY MOUNT');
    expect(lines).toContain(`${'--unshare-net'.padEnd(60)} # own network namespace: loopback only`);
  });

  it('(nsjail, landlock) hold one argument per line and refuse arguments with line breaks', () => {
    expect(fromGoldenText(toGoldenText(['a', '', 'b c']))).toEqual(['a', '', 'b c']);
    expect(() => toGoldenText(['a\nb'])).toThrow(/line break/);
  });
});

describe('compileBwrap options', () => {
  it('a TTY on stdin drops --new-session and nothing else', async () => {
    const withTty = await runPipeline('default', 'alice', { bwrap: { stdinIsTty: true } });
    const without = await runPipeline('default', 'alice');
    expect(without.argv).toContain('--new-session');
    expect(withTty.argv).not.toContain('--new-session');
    expect(withTty.argv).toEqual(without.argv.filter((a) => a !== '--new-session'));
  });

  it('refuses a bwrap that cannot size a tmpfs (BACKEND_UNSUPPORTED), rather than dropping the limit', async () => {
    const features = { tmpfsSize: false, disableUserns: true, bindFd: true };
    const run = runPipeline('default', 'alice', { bwrap: { features } });
    await expect(run).rejects.toBeInstanceOf(SbxError);
    await expect(run).rejects.toMatchObject({ code: 'BACKEND_UNSUPPORTED' });
  });

  it('omits --disable-userns when bwrap lacks it', async () => {
    const features = { tmpfsSize: true, disableUserns: false, bindFd: true };
    const { argv } = await runPipeline('default', 'alice', { bwrap: { features } });
    expect(argv).not.toContain('--disable-userns');
    expect(argv).toContain('--unshare-user');
  });

  it('numbers its descriptors 3 (status), 4 (options), 5 (seccomp), then pinned mount sources; no env', async () => {
    const { launch, policy } = await runPipeline('default', 'alice');
    const binds = policy.mounts.flatMap((m) => (m.kind === 'bind' ? [{ purpose: 'bind', source: m.source }] : []));
    expect(binds.length).toBeGreaterThan(2);
    expect(launch.fds.slice(0, 3).map((f) => f.purpose)).toEqual(['status', 'args', 'seccomp']);
    expect(launch.fds.slice(3)).toEqual(binds);
    const expanded = expandArgsFd(launch);
    const first = expanded.indexOf('--ro-bind-fd');
    expect(expanded.slice(first, first + 3)).toEqual(['--ro-bind-fd', '6', '/usr']);
    expect(launch.env).toEqual({});
    const { launch: noFilter } = await runPipeline('default', 'alice', { profile: { seccomp: { preset: 'off' } } });
    expect(noFilter.fds.slice(0, 3).map((f) => f.purpose)).toEqual(['status', 'args', 'bind']);
    expect(expandArgsFd(noFilter)).not.toContain('--seccomp');
    expect(expandArgsFd(noFilter)).toContain('5');
  });

  it('refuses a bwrap without --bind-fd (BACKEND_UNSUPPORTED) rather than bind paths it resolves again', async () => {
    const features = { tmpfsSize: true, disableUserns: true, bindFd: false };
    const run = runPipeline('default', 'alice', { bwrap: { features } });
    const message = expect.stringContaining('--bind-fd needs bubblewrap 0.8');
    await expect(run).rejects.toMatchObject({ code: 'BACKEND_UNSUPPORTED', message });
  });

  it("refuses a launch past bwrap's argument limit (LAUNCH_TOO_LARGE), naming the count, limit and fix", async () => {
    const { policy } = await runPipeline('default', 'alice');
    type Mask = Extract<Policy['mounts'][number], { kind: 'mask' }>;
    const mask = (i: number): Mask => ({
      kind: 'mask',
      target: `/p/k${i}.pem`,
      what: 'file',
      reason: 'sensitive',
      role: 'secret',
    });
    const masks = Array.from({ length: 3000 }, (_, i) => mask(i));
    const manyMasks: Policy = { ...policy, mounts: [...policy.mounts.slice(0, -1), ...masks, policy.mounts.at(-1)!] };
    const masked = (() => {
      try {
        compileBwrap(manyMasks, FIXTURE_SESSION, FIXTURE_BWRAP);
      } catch (e) {
        return e;
      }
    })();
    expect(masked).toMatchObject({ code: 'LAUNCH_TOO_LARGE', hint: expect.stringContaining('sensitive.skip') });
    const limit = `more than bubblewrap's limit of ${BWRAP_MAX_ARGS}`;
    const counted = new RegExp(`needs \\d+ bwrap arguments, ${limit} \\(30\\d\\d masked paths`);
    expect((masked as Error).message).toMatch(counted);
    const longArgv: Policy = { ...policy, command: ['echo', ...Array.from({ length: BWRAP_MAX_ARGS }, () => 'x')] };
    const tooLong = expect.objectContaining({ code: 'LAUNCH_TOO_LARGE', hint: expect.stringContaining('xargs') });
    expect(() => compileBwrap(longArgv, FIXTURE_SESSION, FIXTURE_BWRAP)).toThrow(tooLong);
    // Control: the largest launch bwrap accepts still compiles.
    const fits = compileBwrap(policy, FIXTURE_SESSION, FIXTURE_BWRAP);
    // bwrap counts its argv after argv[0] (`--args 4 -- CMD...`) plus the options read from fd 4.
    const room = BWRAP_MAX_ARGS - (expandArgsFd(fits).length + 2);
    const atLimit: Policy = { ...policy, command: [...policy.command, ...Array.from({ length: room }, () => 'x')] };
    expect(() => compileBwrap(atLimit, FIXTURE_SESSION, FIXTURE_BWRAP)).not.toThrow();
    const overLimit: Policy = { ...policy, command: [...atLimit.command, 'x'] };
    const tooLarge = expect.objectContaining({ code: 'LAUNCH_TOO_LARGE' });
    expect(() => compileBwrap(overLimit, FIXTURE_SESSION, FIXTURE_BWRAP)).toThrow(tooLarge);
  });

  it("passes every option on fd 4 (--args 4), NUL-separated: no env value or host path in bwrap's argv", async () => {
    const { policy, launch } = await runPipeline('default', 'alice');
    expect(launch.file).toBe('/usr/bin/bwrap');
    expect(launch.args).toEqual(['--args', '4', '--', ...policy.command]);
    expect(launch.fds.slice(0, 3).map((f) => f.purpose)).toEqual(['status', 'args', 'seccomp']);
    const fd = launch.fds[1]!;
    if (fd.purpose !== 'args') throw new Error('unreachable');
    const text = new TextDecoder().decode(fd.data);
    expect(text.endsWith('\0')).toBe(true);
    const options = text.slice(0, -1).split('\0');
    expect(options.slice(-4)).toEqual(['--json-status-fd', '3', '--seccomp', '5']);
    for (const value of Object.values(policy.env.vars)) expect(launch.args).not.toContain(value);
    expect(expandArgsFd(launch)).toEqual([...options, '--', ...policy.command]);
  });

  it('carries a policy far beyond ARG_MAX-per-string limits on the pipe', async () => {
    const { policy } = await runPipeline('default', 'alice');
    const big: Policy = { ...policy, env: { ...policy.env, vars: { ...policy.env.vars } } };
    for (let i = 0; i < 2000; i++) big.env.vars[`BIG_${String(i).padStart(4, '0')}`] = 'x'.repeat(64);
    const launch = compileBwrap(big, FIXTURE_SESSION, FIXTURE_BWRAP);
    expect(launch.args).toEqual(['--args', '4', '--', ...policy.command]);
    const options = expandArgsFd(launch);
    const at = options.indexOf('BIG_1999');
    expect(options.slice(at - 1, at + 2)).toEqual(['--setenv', 'BIG_1999', 'x'.repeat(64)]);
    expect(options.filter((o) => o === '--setenv')).toHaveLength(Object.keys(big.env.vars).length);
  });
});
