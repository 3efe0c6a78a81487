// The landlock backend: the helper configuration for the built-in profiles on the fixture hosts (golden,
// reviewed like argv), its invariants, and a refusal per gap that cannot be expressed without namespaces.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  describeLandlockGaps,
  landlockApproximations,
  landlockExposed,
} from '../../../../src/backend/landlock/assessment.js';
import {
  compileLandlock,
  expandLandlockLaunch,
  type LandlockHost,
  withLandlockCommandLimits,
} from '../../../../src/backend/landlock/compile.js';
import { landlock } from '../../../../src/backend/landlock/host/backend.js';
import { LANDLOCK_GAPS } from '../../../../src/backend/landlock/gaps.js';
import type { Launch } from '../../../../src/backend/launch.js';
import { SbxError } from '../../../../src/errors.js';
import { gitConfigView } from '../../../../src/host-state/guarded-state.js';
import type { Host } from '../../../../src/policy/host.js';
import type { Policy } from '../../../../src/policy/types.js';
import { expectGoldenText, landlockGoldenText } from '../../../helpers/golden.js';
import { WITH_CREDENTIALS } from '../../../helpers/credentials.js';
import { FIXTURE_SESSION, runPipeline } from '../../../helpers/hosts.js';
import { GOLDEN_DIR } from '../../../helpers/paths.js';

function fixtureHost(host: Host): LandlockHost {
  const { stdinIsTty, uid, gid } = host;
  return { path: '/usr/lib/sbx/dist/sbx-landlock', stdinIsTty, arch: 'x86_64', uid, gid };
}

/** The fixture workspace without its planted secrets and git repository: what landlock can express. */
function plainWorkspace(host: Host): void {
  host.sensitiveFiles = { masks: [], protect: [], views: [] };
}

function records(launch: Launch): string[] {
  const fd = launch.fds[0];
  if (fd?.purpose !== 'args') throw new Error('no configuration on fd 3');
  return new TextDecoder().decode(fd.data).split('\0').slice(0, -1);
}

function valuesOf(launch: Launch, key: string): string[] {
  return records(launch)
    .filter((r) => r.startsWith(`${key}=`))
    .map((r) => r.slice(key.length + 1));
}

async function compiled(profile: string, hostName: string, options: Parameters<typeof runPipeline>[2] = {}) {
  const p = await runPipeline(profile, hostName, { mutateHost: plainWorkspace, ...options });
  return { ...p, landlock: compileLandlock(p.policy, FIXTURE_SESSION, fixtureHost(p.host)) };
}

function refusalOf(policy: Policy, host: Host): SbxError {
  try {
    compileLandlock(policy, FIXTURE_SESSION, fixtureHost(host));
  } catch (e) {
    if (e instanceof SbxError) return e;
    throw e;
  }
  throw new Error('compiled; expected a refusal');
}

describe('default × carol (toolchains in HOME)', () => {
  /** The workspace plain, the toolchain scan's finding kept: a token in the nvm prefix's global npmrc. */
  const toolchainMasksOnly = (host: Host) => {
    host.sensitiveFiles = {
      masks: host.sensitiveFiles.masks.filter((m) => m.path.includes('/.nvm/')),
      protect: [],
      views: [],
    };
  };

  it('matches its golden configuration', async () => {
    const { landlock } = await compiled('default', 'carol', { mutateHost: toolchainMasksOnly });
    const text = landlockGoldenText(expandLandlockLaunch(landlock));
    expect(text).not.toMatch(/# NO REASON$/m);
    expectGoldenText(join(GOLDEN_DIR, 'default.carol.landlock.argv'), text);
  });

  it('grants each toolchain root read-only (never HOME), the npmrc inside excepted, and points PYENV_ROOT at it', async () => {
    const { landlock } = await compiled('default', 'carol', { mutateHost: toolchainMasksOnly });
    const roots = [
      '/home/carol/.nvm/versions/node/v20.11.1',
      '/home/carol/.pyenv',
      '/home/carol/.cargo/bin',
      '/home/carol/.rustup',
    ];
    expect(valuesOf(landlock, 'ro')).toEqual(expect.arrayContaining(roots));
    expect(valuesOf(landlock, 'ro')).not.toContain('/home/carol');
    expect(valuesOf(landlock, 'rw').some((p) => p.startsWith('/home/carol/.'))).toBe(false);
    expect(valuesOf(landlock, 'except')).toContain('/home/carol/.nvm/versions/node/v20.11.1/etc/npmrc');
    expect(valuesOf(landlock, 'env')).toEqual(
      expect.arrayContaining(['PYENV_ROOT=/home/carol/.pyenv', 'RUSTUP_HOME=/home/carol/.rustup']),
    );
  });
});

describe.each(['alice', 'root'])('default × %s', (hostName) => {
  it('matches its golden configuration', async () => {
    const { landlock } = await compiled('default', hostName);
    const text = landlockGoldenText(expandLandlockLaunch(landlock));
    expect(text).not.toMatch(/# NO REASON$/m);
    expectGoldenText(join(GOLDEN_DIR, `default.${hostName}.landlock.argv`), text);
  });

  it('grants writes only to the workspace and the session stand-ins for /tmp and HOME', async () => {
    const { landlock, policy } = await compiled('default', hostName);
    const session = FIXTURE_SESSION.dir;
    expect(valuesOf(landlock, 'rw')).toEqual([`${session}/tmp`, `${session}/home`, policy.workspace.host]);
    expect(valuesOf(landlock, 'ro')).toEqual(expect.arrayContaining(['/usr', '/etc', '/proc']));
    expect(valuesOf(landlock, 'ro').every((p) => !p.startsWith('/home') && p !== '/root' && p !== '/')).toBe(true);
    const devices = ['null', 'zero', 'full', 'random', 'urandom', 'tty'].map((n) => `/dev/${n}`);
    expect(valuesOf(landlock, 'dev')).toEqual(devices);
    expect(valuesOf(landlock, 'tcp')).toEqual([]);
    expect(valuesOf(landlock, 'net')).toEqual([]);
  });

  it('leaves TCP to the host network only when the policy shares it', async () => {
    const { landlock } = await compiled('network', hostName);
    expect(valuesOf(landlock, 'net')).toEqual(['host']);
  });

  it("passes exactly the policy's environment, with HOME, TMPDIR and XDG_RUNTIME_DIR in the session and PATH granted", async () => {
    const { landlock, policy } = await compiled('default', hostName);
    const split = (e: string) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)];
    const env = Object.fromEntries(valuesOf(landlock, 'env').map(split));
    const session = FIXTURE_SESSION.dir;
    // PATH entries in HOME that no grant shows are left out (under bwrap they are absent: HOME is a tmpfs).
    const granted = policy.env.vars.PATH!.split(':').filter((e) => !e.startsWith(policy.env.vars.HOME! + '/'));
    const PATH = granted.join(':');
    const tmp = `${session}/tmp`;
    expect(env).toEqual({ ...policy.env.vars, HOME: `${session}/home`, TMPDIR: tmp, XDG_RUNTIME_DIR: tmp, PATH });
    expect(launchEnvIsEmpty(landlock)).toBe(true);
  });

  it('always passes a seccomp filter that refuses unix sockets (and, with network none, inet ones)', async () => {
    const { landlock } = await compiled('default', hostName);
    expect(valuesOf(landlock, 'seccomp')).toEqual(['1']);
    const fd = landlock.fds[1];
    expect(fd?.purpose === 'seccomp' && fd.data.length > 0).toBe(true);
    expect(landlock.fds.slice(0, 3).map((f) => f.purpose)).toEqual(['args', 'seccomp', 'status']);
  });

  it('grants every bind source through its pinned descriptor, numbered from 6 in fd order', async () => {
    const { landlock, policy } = await compiled('default', hostName);
    const sources = [...new Set(policy.mounts.flatMap((m) => (m.kind === 'bind' ? [m.source] : [])))];
    expect(landlock.fds.slice(3)).toEqual(sources.map((source) => ({ purpose: 'bind', source })));
    expect(valuesOf(landlock, 'pin')).toEqual(sources.map((source, i) => `${6 + i}:${source}`));
  });
});

function launchEnvIsEmpty(launch: Launch): boolean {
  return Object.keys(launch.env).length === 0 && launch.args.length === 0;
}

describe('root-only files under read-only trees', () => {
  it('are excepted (the helper grants their siblings), and the report says /etc cannot be listed', async () => {
    const { landlock, policy, host } = await compiled('default', 'root');
    const rootOnly = host.rootOnly.map((r) => r.path).filter((p) => p.startsWith('/etc/') || p.startsWith('/usr/'));
    expect(rootOnly.length).toBeGreaterThan(0);
    expect(valuesOf(landlock, 'except')).toEqual(expect.arrayContaining(rootOnly));
    expect(landlockApproximations(policy).map((a) => a.split(':')[0])).toContain('mounts.masked-parents');
    expect(landlockApproximations(policy).map((a) => a.split(':')[0])).toContain('identity.root');
  });
});

describe('refusals: what landlock cannot express is refused by name, never dropped', () => {
  const refused = async (profile: string, hostName: string, options: Parameters<typeof runPipeline>[2] = {}) => {
    const p = await runPipeline(profile, hostName, { mutateHost: plainWorkspace, ...options });
    const error = refusalOf(p.policy, p.host);
    expect(error.code).toBe('BACKEND_UNSUPPORTED');
    return error.message;
  };

  it('every secret inside the read-write workspace, in one refusal naming each', async () => {
    const p = await runPipeline('default', 'alice');
    const error = refusalOf(p.policy, p.host);
    expect(error.code).toBe('BACKEND_UNSUPPORTED');
    expect(error.message).toContain('3 secrets would be readable by the command');
    expect(error.hint).toContain('--expose-workspace-secrets');
    expect(error.details.slice(0, 3)).toEqual([
      'exposed: /home/alice/proj/.env (sensitive file)',
      'exposed: /home/alice/proj/certs (sensitive file)',
      'exposed: /home/alice/proj/config/settings.secret.yaml (sensitive file)',
    ]);
  });

  it('a git config whose view withholds credentials is a secret too', async () => {
    const view = gitConfigView('/home/alice/proj/.git/config', '[user]\n', ['credential.helper']);
    const views = { masks: [], protect: [], views: [view] };
    const message = await refused('default', 'alice', { mutateHost: (h) => (h.sensitiveFiles = views) });
    expect(message).toContain('/home/alice/proj/.git/config (credentials: credential.helper) would be readable');
  });

  it('a read-only bind inside the workspace that is not git state or .sbx', async () => {
    const request = { binds: [{ source: '/home/alice/proj/vendor', access: 'ro' as const }] };
    const message = await refused('default', 'alice', {
      request,
      mutateHost: (h) => {
        plainWorkspace(h);
        const fact = { exists: true, real: '/home/alice/proj/vendor', type: 'dir', uid: 1000 };
        h.paths['/home/alice/proj/vendor'] = fact as Host['paths'][string];
      },
    });
    expect(message).toContain(
      '/home/alice/proj/vendor must stay read-only inside the read-write tree /home/alice/proj',
    );
  });

  it('a bind to another target (--bind SRC:DEST)', async () => {
    const request = { binds: [{ source: '/opt', target: '/mnt/opt', access: 'ro' as const }] };
    const message = await refused('default', 'alice', {
      request,
      mutateHost: (h) => {
        plainWorkspace(h);
        h.paths['/opt'] = { exists: true, real: '/opt', type: 'dir' } as Host['paths'][string];
      },
    });
    expect(message).toContain('/opt is bound at /mnt/opt');
  });

  it('credentials, by name (not as a session-dir mount: the CA mounts are theirs)', async () => {
    const message = await refused('default', 'alice', {
      ...WITH_CREDENTIALS,
      mutateHost: (h) => {
        plainWorkspace(h);
        WITH_CREDENTIALS.mutateHost?.(h);
      },
    });
    expect(message).toContain('credentials (GITHUB_TOKEN)');
    expect(message).not.toContain('session directory');
  });

  it('user: root as a normal user', async () => {
    const message = await refused('default', 'alice', { profile: { user: 'root' } });
    expect(message).toContain('the policy runs the command as 0:0, the caller is 1000:1000');
  });

  it("an allow-list network where the helper's network judge cannot work, naming the step", async () => {
    const p = await runPipeline('default', 'alice', {
      request: { allowDomains: ['example.com'] },
      mutateHost: plainWorkspace,
    });
    const host = { ...fixtureHost(p.host), judgeUnavailable: 'pidfd_getfd: Operation not permitted' };
    expect(() => compileLandlock(p.policy, FIXTURE_SESSION, host)).toThrow(
      "an allow-list network needs the helper's network judge, which cannot work here: pidfd_getfd: Operation not permitted",
    );
  });

  it('network.unix_sockets (no unix socket can be created)', async () => {
    const message = await refused('default', 'alice', {
      profile: { network: { allow: ['example.com'], unix_sockets: ['/run/user/1000/docker.sock'] } },
      mutateHost: (h) => {
        plainWorkspace(h);
        h.paths['/run/user/1000/docker.sock'] = {
          exists: true,
          real: '/run/user/1000/docker.sock',
          type: 'socket',
        } as Host['paths'][string];
      },
    });
    expect(message).toContain('network.unix_sockets (/run/user/1000/docker.sock)');
  });

  it('mode: danger', async () => {
    expect(await refused('danger', 'alice')).toContain('mode: danger');
  });

  it('a variable value with NUL', async () => {
    const message = await refused('default', 'alice', { request: { env: { BAD: 'a\0b' } } });
    expect(message).toContain('environment variable "BAD"');
  });

  it('explain lists the refusals and approximations without compiling', async () => {
    const p = await runPipeline('default', 'alice', { request: { allowDomains: ['example.com'] } });
    const gaps = describeLandlockGaps(p.policy);
    expect(gaps.some((g) => g.startsWith('weaker network.filtered:'))).toBe(true);
    expect(gaps.some((g) => g.startsWith('refused network.kind:'))).toBe(false);
    expect(gaps.some((g) => g.startsWith('refused mounts.mask:'))).toBe(true);
  });
});

describe('an allow-list network: the helper judges connect() and reaches only the proxy and host ports', () => {
  const allowList = { request: { allowDomains: ['example.com'] }, mutateHost: plainWorkspace };
  const session = { ...FIXTURE_SESSION, egressPorts: { http: 41001, socks: 41002 } };

  it("connects the command to the proxy's loopback ports only, with the proxy variables the bridge sets", async () => {
    const p = await runPipeline('default', 'alice', allowList);
    const launch = compileLandlock(p.policy, session, fixtureHost(p.host));
    expect(valuesOf(launch, 'net')).toEqual(['filtered']);
    expect(valuesOf(launch, 'connect')).toEqual(['41001', '41002']);
    expect(valuesOf(launch, 'tcp')).toEqual([]);
    const env = valuesOf(launch, 'env');
    expect(env).toContain('HTTPS_PROXY=http://127.0.0.1:41001');
    expect(env).toContain('ALL_PROXY=socks5h://127.0.0.1:41002');
    expect(env).toContain('NO_PROXY=localhost,127.0.0.1,::1');
  });

  it("grants nothing of bwrap's bridge (its node, script and session sockets)", async () => {
    const p = await runPipeline('default', 'alice', {
      ...allowList,
      mutateHost: (h) => {
        plainWorkspace(h);
        h.bridge = { node: '/usr/bin/node', script: '/usr/lib/sbx/dist/bridge.cjs' };
      },
    });
    const launch = compileLandlock(p.policy, session, fixtureHost(p.host));
    const bridge = p.policy.mounts.filter((m) => m.target.startsWith('/run/sbx/'));
    expect(bridge.map((m) => m.kind)).toEqual(['bind', 'bind', 'session-dir']);
    const sources = bridge.flatMap((m) => (m.kind === 'bind' ? [m.source] : []));
    const granted = [...valuesOf(launch, 'ro'), ...valuesOf(launch, 'rw'), ...valuesOf(launch, 'pin')];
    expect(granted.filter((g) => sources.some((s) => g.endsWith(s)) || g.includes('/run/sbx'))).toEqual([]);
  });

  it('adds host_ports to the ports the judge connects, without a proxy when there is no allow list', async () => {
    const p = await runPipeline('default', 'alice', {
      profile: { network: { host_ports: [5432] } },
      mutateHost: plainWorkspace,
    });
    const launch = compileLandlock(p.policy, FIXTURE_SESSION, fixtureHost(p.host));
    expect(valuesOf(launch, 'net')).toEqual(['filtered']);
    expect(valuesOf(launch, 'connect')).toEqual(['5432']);
    expect(valuesOf(launch, 'env').some((e) => e.startsWith('HTTP_PROXY='))).toBe(false);
  });

  it('shows placeholders for the ports of a planned session (explain), which the helper refuses', async () => {
    const p = await runPipeline('default', 'alice', allowList);
    const launch = compileLandlock(p.policy, FIXTURE_SESSION, fixtureHost(p.host));
    expect(valuesOf(launch, 'connect')).toEqual(['<proxy-http-port>', '<proxy-socks-port>']);
  });

  it('approximates network.filtered, and keeps the fastopen rule (Landlock still governs TCP)', async () => {
    const p = await runPipeline('default', 'alice', allowList);
    const approximations = landlockApproximations(p.policy).map((a) => a.slice(0, a.indexOf(':')));
    expect(approximations).toEqual(expect.arrayContaining(['network.filtered', 'network.tcp-fastopen']));
  });
});

describe('LANDLOCK_GAPS', () => {
  it('names each feature once', () => {
    const features = LANDLOCK_GAPS.map((g) => g.key);
    expect(new Set(features).size).toBe(features.length);
  });
});

describe('git state inside the workspace: guarded, not refused', () => {
  const gitState = (h: Host) => {
    const config = gitConfigView('/home/alice/proj/.git/config', '[user]\n', []);
    h.sensitiveFiles = { masks: [], protect: ['/home/alice/proj/.git/hooks'], views: [config] };
  };

  it('hooks and the config view become guard records, the hooks leave the read-only grants', async () => {
    const { landlock, policy } = await compiled('default', 'alice', { mutateHost: gitState });
    // commondir is absent in a main gitdir: guarded so that none can be created (it redirects config and hooks).
    expect(valuesOf(landlock, 'guard')).toEqual([
      '/home/alice/proj/.git/hooks',
      '/home/alice/proj/.git/config',
      '/home/alice/proj/.git/commondir',
    ]);
    expect(valuesOf(landlock, 'ro')).not.toContain('/home/alice/proj/.git/hooks');
    // .git is bound over itself for bwrap (pinParents); the guard watches its identity instead.
    expect(valuesOf(landlock, 'rw').filter((p) => !p.startsWith(FIXTURE_SESSION.dir))).toEqual(['/home/alice/proj']);
    const guarded = landlockApproximations(policy).find((a) => a.startsWith('mounts.guarded:'));
    expect(guarded).toMatch(
      /: \/home\/alice\/proj\/\.git\/hooks, \/home\/alice\/proj\/\.git\/config, \/home\/alice\/proj\/\.git\/commondir$/,
    );
  });

  it('a repository without a hooks directory: the absent hooks path is guarded too', async () => {
    const noHooks = (h: Host) => {
      gitState(h);
      h.sensitiveFiles.protect = [];
    };
    const { landlock } = await compiled('default', 'alice', { mutateHost: noHooks });
    expect(valuesOf(landlock, 'guard')).toEqual([
      '/home/alice/proj/.git/config',
      '/home/alice/proj/.git/hooks',
      '/home/alice/proj/.git/commondir',
    ]);
  });

  it('in read-only mode nothing needs guarding (the workspace is not writable)', async () => {
    const { landlock } = await compiled('read-only', 'alice', { mutateHost: gitState });
    expect(valuesOf(landlock, 'guard')).toEqual([]);
  });
});

describe('--expose-workspace-secrets', () => {
  it('runs with the secrets readable and lists each one', async () => {
    const p = await runPipeline('default', 'alice', { request: { exposeWorkspaceSecrets: true } });
    const launch = compileLandlock(p.policy, FIXTURE_SESSION, fixtureHost(p.host));
    expect(valuesOf(launch, 'except')).not.toContain('/home/alice/proj/.env');
    const exposed = landlockApproximations(p.policy).find((a) => a.startsWith('mounts.mask.exposed:'));
    expect(exposed).toContain('/home/alice/proj/.env (sensitive file), /home/alice/proj/certs (sensitive file)');
    expect(landlockExposed(p.policy)).toEqual([
      '/home/alice/proj/.env',
      '/home/alice/proj/certs',
      '/home/alice/proj/config/settings.secret.yaml',
    ]);
  });

  it('lists nothing without the option (the run is refused instead)', async () => {
    const p = await runPipeline('default', 'alice');
    expect(landlockExposed(p.policy)).toEqual([]);
  });
});

describe('approximated instead of refused', () => {
  it("a profile's hostname: the host's shows", async () => {
    const { policy } = await compiled('default', 'alice', { profile: { hostname: 'box' } });
    expect(landlockApproximations(policy).find((a) => a.startsWith('hostname:'))).toMatch(/: box$/);
  });

  it('PATH entries outside every grant are dropped and listed; a merged-/usr link is followed', async () => {
    const { policy, host } = await compiled('default', 'alice');
    const withPath = {
      ...policy,
      env: { ...policy.env, vars: { ...policy.env.vars, PATH: '/opt/nowhere:/bin:/usr/bin' } },
    };
    const launch = compileLandlock(withPath, FIXTURE_SESSION, fixtureHost(host));
    expect(valuesOf(launch, 'env').find((e) => e.startsWith('PATH='))).toBe('PATH=/bin:/usr/bin');
    expect(landlockApproximations(withPath).find((a) => a.startsWith('env.path:'))).toMatch(/: \/opt\/nowhere$/);
  });

  it('states plainly that host processes and their command lines are visible', async () => {
    const { policy } = await compiled('default', 'alice');
    const proc = landlockApproximations(policy).find((a) => a.startsWith('mounts.proc-host:'));
    expect(proc).toContain("other processes' command lines are readable");
  });
});

describe("the command's limits are the helper's child's alone (issue 30)", () => {
  const LIMITS = {
    rlimits: [
      { resource: 'CORE' as const, soft: 0, hard: 0 },
      { resource: 'CPU' as const, soft: 2, hard: 3 },
      { resource: 'NOFILE' as const, soft: 64, hard: 64 },
      { resource: 'AS' as const, soft: 1 << 30, hard: 1 << 30 },
    ],
    cgroupProcs: ['/sys/fs/cgroup/sbx-s1/cgroup.procs'],
  };

  it('puts the cgroups first and the rlimits before the fixed RLIMIT_CORE 0, each once; nothing else moves', async () => {
    const { landlock } = await compiled('default', 'alice');
    const before = records(landlock);
    const after = records(withLandlockCommandLimits(landlock, LIMITS));
    expect(after[0]).toBe('cgroup=/sys/fs/cgroup/sbx-s1/cgroup.procs');
    const core = after.indexOf('rlimit=4:0:0');
    expect(after.slice(core - 3, core + 1)).toEqual([
      'rlimit=0:2:3',
      'rlimit=7:64:64',
      `rlimit=9:${1 << 30}:${1 << 30}`,
      'rlimit=4:0:0',
    ]);
    expect(after.filter((r) => r === 'rlimit=4:0:0')).toHaveLength(1);
    expect(after.filter((r) => !/^(cgroup|rlimit)=/.test(r))).toEqual(before.filter((r) => !/^rlimit=/.test(r)));
    expect(withLandlockCommandLimits(landlock, LIMITS).fds.slice(1)).toEqual(landlock.fds.slice(1));
  });

  it('control: without limits the launch is the same configuration', async () => {
    const { landlock } = await compiled('default', 'alice');
    expect(records(withLandlockCommandLimits(landlock, { rlimits: [], cgroupProcs: [] }))).toEqual(records(landlock));
  });

  it('the unit hands every rlimit resource and the cgroup to the helper', () => {
    expect([...landlock.commandLimits!.applies.rlimits].sort()).toEqual(
      ['AS', 'CORE', 'CPU', 'DATA', 'FSIZE', 'NOFILE', 'NPROC'].sort(),
    );
    expect(landlock.commandLimits!.applies.cgroup).toBe(true);
  });
});
