// The landlock backend: the helper configuration for the built-in profiles on the fixture hosts (golden,
// reviewed like argv), its invariants, and a refusal per gap that cannot be expressed without namespaces.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  compileLandlock,
  describeLandlockGaps,
  expandLandlockLaunch,
  landlockApproximations,
  type LandlockHost,
} from '../../../src/backend/landlock.js';
import { LANDLOCK_GAPS } from '../../../src/backend/landlock-gaps.js';
import type { Launch } from '../../../src/backend/launch.js';
import { SbxError } from '../../../src/errors.js';
import type { Host } from '../../../src/policy/host.js';
import type { Policy } from '../../../src/policy/types.js';
import { expectGoldenText, landlockGoldenText } from '../../helpers/golden.js';
import { FIXTURE_SESSION, runPipeline } from '../../helpers/hosts.js';
import { GOLDEN_DIR } from '../../helpers/paths.js';

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

  it("passes exactly the policy's environment, with HOME and TMPDIR moved to the session", async () => {
    const { landlock, policy } = await compiled('default', hostName);
    const split = (e: string) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)];
    const env = Object.fromEntries(valuesOf(landlock, 'env').map(split));
    const session = FIXTURE_SESSION.dir;
    expect(env).toEqual({ ...policy.env.vars, HOME: `${session}/home`, TMPDIR: `${session}/tmp` });
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

  it('a sensitive file masked inside the read-write workspace', async () => {
    const p = await runPipeline('default', 'alice');
    const error = refusalOf(p.policy, p.host);
    expect(error.code).toBe('BACKEND_UNSUPPORTED');
    expect([error.message, ...error.details]).toContain(
      '/home/alice/proj/.env (sensitive file) lies inside the read-write tree /home/alice/proj: ' +
        'Landlock cannot deny one path beneath a granted directory',
    );
  });

  it('git hooks kept read-only inside the workspace', async () => {
    const hooks = { masks: [], protect: ['/home/alice/proj/.git/hooks'], views: [] };
    const message = await refused('default', 'alice', { mutateHost: (h) => (h.sensitiveFiles = hooks) });
    expect(message).toContain(
      '/home/alice/proj/.git/hooks must stay read-only inside the read-write tree /home/alice/proj:',
    );
  });

  it('a generated file over a granted path (.git/config without credentials)', async () => {
    const reason = 'git config without credentials';
    const view = { path: '/home/alice/proj/.git/config', content: '[user]\n', reason };
    const views = { masks: [], protect: [], views: [view] };
    const message = await refused('default', 'alice', { mutateHost: (h) => (h.sensitiveFiles = views) });
    expect(message).toContain(
      '/home/alice/proj/.git/config (git config without credentials) would be replaced by a generated file',
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

  it('a hostname', async () => {
    const message = await refused('default', 'alice', { profile: { hostname: 'box' } });
    expect(message).toContain('hostname: box needs a UTS namespace');
  });

  it('a variable value with NUL', async () => {
    const message = await refused('default', 'alice', { request: { env: { BAD: 'a\0b' } } });
    expect(message).toContain('environment variable "BAD"');
  });

  it('explain lists the refusals and approximations without compiling', async () => {
    const p = await runPipeline('default', 'alice', { request: { allowDomains: ['example.com'] } });
    const gaps = describeLandlockGaps(p.policy);
    expect(gaps.some((g) => g.startsWith('approximated network.filtered:'))).toBe(true);
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
    const features = LANDLOCK_GAPS.map((g) => g.feature);
    expect(new Set(features).size).toBe(features.length);
  });
});
