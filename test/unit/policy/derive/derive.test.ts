// Profile + request + Host → Policy: variables, the environment filter, the refusals, the cwd
// mapping and the sandbox-path → host-path walk. All pure; the hosts are fixtures.
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../../../src/errors.js';
import { probePlanOf } from '../../../../src/policy/derive/probe-plan.js';
import type { RunRequest } from '../../../../src/policy/derive/request.js';
import { requestedWorkspace, workspaceRealPath } from '../../../../src/policy/derive/workspace.js';
import { buildEnv, isCredentialName, type EnvInput } from '../../../../src/env/env.js';
import type { Host } from '../../../../src/policy/host.js';
import { hostPathOf } from '../../../../src/policy/sandbox-path.js';
import { isWithin } from '../../../../src/path-within.js';
import type { Mount, Policy } from '../../../../src/policy/types.js';
import type { Profile } from '../../../../src/profile/schema.js';
import { expandPath, expandVariables, type Variables } from '../../../../src/profile/variables.js';
import { deriveOnFixture } from '../../../helpers/hosts.js';
import { sbxErrorOf } from '../../../helpers/errors.js';

const VARS: Variables = {
  workspace: '/home/alice/proj',
  home: '/home/alice',
  session: 'sess-1',
  cwd: '/home/alice/proj/src',
};

const dir = (real: string, extra: Partial<{ link: string; uid: number }> = {}) => ({
  exists: true as const,
  real,
  type: 'dir' as const,
  uid: 1000,
  ...extra,
});
const file = (real: string) => ({ exists: true as const, real, type: 'file' as const, uid: 1000 });

const derive = deriveOnFixture;

const targetsOf = (policy: Policy, kind: Mount['kind']) =>
  policy.mounts.filter((m) => m.kind === kind).map((m) => m.target);
const masksOf = (policy: Policy) =>
  policy.mounts.filter((m): m is Extract<Mount, { kind: 'mask' }> => m.kind === 'mask').map((m) => [m.target, m.what]);

describe('variables', () => {
  it('expands ${workspace} ${home} ${session} ${cwd}', () => {
    expect(expandVariables('${workspace}/a:${home}:${session}:${cwd}', VARS, 'k')).toBe(
      '/home/alice/proj/a:/home/alice:sess-1:/home/alice/proj/src',
    );
  });

  it('$$ is a literal $, and $NAME is not a variable', () => {
    expect(expandVariables('a$$b', VARS, 'k')).toBe('a$b');
    expect(expandVariables('$${home}', VARS, 'k')).toBe('${home}');
    expect(expandVariables('$HOME/x', VARS, 'k')).toBe('$HOME/x');
  });

  it('an unknown variable is PROFILE_VARIABLE naming where it was and the known ones', () => {
    const error = sbxErrorOf(() => expandVariables('${worksapce}/x', VARS, 'read_only[2]'));
    expect(error.code).toBe('PROFILE_VARIABLE');
    expect(error.exitCode).toBe(ExitCode.SETUP);
    expect(error.message).toBe('read_only[2]: unknown variable ${worksapce}');
    expect(error.hint).toContain('${workspace}');
    expect(sbxErrorOf(() => expandVariables('${}', VARS, 'k')).code).toBe('PROFILE_VARIABLE');
    expect(sbxErrorOf(() => expandVariables('${HOME}', VARS, 'k')).code).toBe('PROFILE_VARIABLE');
  });

  it('an unterminated ${ is an error, not a literal', () => {
    expect(sbxErrorOf(() => expandVariables('${home/x', VARS, 'k')).code).toBe('PROFILE_VARIABLE');
  });

  it('~ and ~/ mean HOME; ~user and a ~ elsewhere do not', () => {
    expect(expandPath('~', VARS, 'k')).toBe('/home/alice');
    expect(expandPath('~/x/y', VARS, 'k')).toBe('/home/alice/x/y');
    expect(expandPath('~bob/x', VARS, 'k')).toBe('~bob/x');
    expect(expandPath('/a/~/b', VARS, 'k')).toBe('/a/~/b');
    expect(expandPath('${home}/x', VARS, 'k')).toBe('/home/alice/x');
  });

  it('the workspace may not refer to itself; relative and ~ workspaces resolve', () => {
    const base = { home: '/home/alice', cwd: '/home/alice/proj', session: 's' };
    expect(
      sbxErrorOf(() => requestedWorkspace({ workspace: { path: '${workspace}/x' } }, { command: [] }, base)).code,
    ).toBe('PROFILE_VARIABLE');
    expect(requestedWorkspace({}, { command: [] }, base)).toBe('/home/alice/proj');
    expect(requestedWorkspace({ workspace: { path: '~/w' } }, { command: [] }, base)).toBe('/home/alice/w');
    expect(requestedWorkspace({ workspace: { path: '~/w' } }, { command: [], workspace: '../other' }, base)).toBe(
      '/home/alice/other',
    );
  });
});

describe('buildEnv', () => {
  const HOST_ENV = {
    PATH: '/usr/bin:/bin',
    LANG: 'en_US.UTF-8',
    LC_ALL: 'C',
    LC_CTYPE: 'en_US.UTF-8',
    XLC_FOO: 'x',
    TERM: 'xterm',
    HOME: '/home/alice',
    EDITOR: 'vim',
    AWS_REGION: 'eu-west-1',
    AWS_SECRET_ACCESS_KEY: 'aws-secret-value',
    GITHUB_TOKEN: 'gh-token-value',
    SSH_AUTH_SOCK: '/run/agent.sock',
    MY_API_KEY: 'api-key-value',
    DB_PASSWORD: 'db-password-value',
    SBX_PROFILE: 'host-value',
  };
  const SECRET_VALUES = ['aws-secret-value', 'gh-token-value', '/run/agent.sock', 'api-key-value', 'db-password-value'];
  const INJECTED = { HOME: '/home/alice', SBX_SESSION_ID: 's', SBX_PROFILE: 'p', SBX_WORKSPACE: '/w' };
  const env = (input: Partial<EnvInput>) =>
    buildEnv({ host: HOST_ENV, keep: [], set: [], injected: INJECTED, ...input });

  it('starts from nothing: only kept names and injected variables', () => {
    expect(env({ keep: ['PATH', 'TERM'] }).vars).toEqual({ PATH: '/usr/bin:/bin', TERM: 'xterm', ...INJECTED });
    expect(env({}).vars).toEqual(INJECTED);
  });

  it('keep patterns are globs over the whole name (LC_*)', () => {
    expect(Object.keys(env({ keep: ['LC_*'] }).vars).sort()).toEqual([
      'HOME',
      'LC_ALL',
      'LC_CTYPE',
      'SBX_PROFILE',
      'SBX_SESSION_ID',
      'SBX_WORKSPACE',
    ]);
  });

  it('drops credential-like names even under keep: ["*"], unless one is named exactly', () => {
    const all = env({ keep: ['*'] });
    for (const name of [
      'AWS_REGION',
      'AWS_SECRET_ACCESS_KEY',
      'GITHUB_TOKEN',
      'SSH_AUTH_SOCK',
      'MY_API_KEY',
      'DB_PASSWORD',
    ]) {
      expect(Object.keys(all.vars), name).not.toContain(name);
      expect(all.dropped, name).toContainEqual({ name, reason: 'credential' });
    }
    expect(all.vars).toMatchObject({ EDITOR: 'vim', XLC_FOO: 'x', LANG: 'en_US.UTF-8' });

    const named = env({ keep: ['*', 'GITHUB_TOKEN', 'AWS_*'] });
    expect(named.vars.GITHUB_TOKEN).toBe('gh-token-value');
    expect(Object.keys(named.vars)).not.toContain('AWS_REGION');
    expect(Object.keys(named.vars)).not.toContain('AWS_SECRET_ACCESS_KEY');
  });

  it('never passes SBX_* from the host, even named exactly', () => {
    const result = env({ keep: ['*', 'SBX_PROFILE'] });
    expect(result.vars.SBX_PROFILE).toBe('p');
    // The host value is shadowed by the injected one (not listed as dropped: sbx sets the name).
    expect(Object.values(result.vars)).not.toContain('host-value');
    const other = buildEnv({ host: { SBX_OTHER: 'x' }, keep: ['*', 'SBX_OTHER'], set: [], injected: {} });
    expect(other).toEqual({ vars: {}, dropped: [{ name: 'SBX_OTHER', reason: 'reserved' }] });
  });

  it('refuses SBX_* in env.set or --env (ENV_RESERVED)', () => {
    const error = sbxErrorOf(() => env({ set: [['SBX_WORKSPACE', '/evil']] }));
    expect(error.code).toBe('ENV_RESERVED');
    expect(error.exitCode).toBe(ExitCode.DENIED);
    expect(error.message).not.toContain('/evil');
  });

  it('set wins over the host (later set over earlier); injected wins over everything', () => {
    const result = env({
      keep: ['EDITOR', 'HOME'],
      set: [
        ['EDITOR', 'nano'],
        ['EDITOR', 'ed'],
        ['HOME', '/evil'],
        ['NEW', '1'],
      ],
    });
    expect(result.vars).toEqual({ EDITOR: 'ed', NEW: '1', ...INJECTED });
  });

  it('lists every dropped name with its reason, sorted, and never a value', () => {
    const { dropped } = env({ keep: ['PATH', 'LC_*'] });
    expect(dropped).toEqual([
      { name: 'AWS_REGION', reason: 'not-allowed' },
      { name: 'AWS_SECRET_ACCESS_KEY', reason: 'not-allowed' },
      { name: 'DB_PASSWORD', reason: 'not-allowed' },
      { name: 'EDITOR', reason: 'not-allowed' },
      { name: 'GITHUB_TOKEN', reason: 'not-allowed' },
      { name: 'LANG', reason: 'not-allowed' },
      { name: 'MY_API_KEY', reason: 'not-allowed' },
      { name: 'SSH_AUTH_SOCK', reason: 'not-allowed' },
      { name: 'TERM', reason: 'not-allowed' },
      { name: 'XLC_FOO', reason: 'not-allowed' },
    ]);
    const all = env({ keep: ['*'] }).dropped;
    for (const d of all) {
      expect(Object.keys(d).sort()).toEqual(['name', 'reason']);
      expect(SECRET_VALUES).not.toContain(d.name);
    }
  });

  it('recognises credential-shaped names', () => {
    for (const name of [
      'AWS_SESSION_TOKEN',
      'GOOGLE_APPLICATION_CREDENTIALS',
      'NPM_TOKEN',
      'npm_config__auth',
      'STRIPE_SECRET',
      'OPENAI_API_KEY',
      'KUBECONFIG',
      'DATABASE_URL',
    ]) {
      expect(isCredentialName(name), name).toBe(true);
    }
    for (const name of ['PATH', 'LANG', 'TERM', 'EDITOR', 'HOME', 'LC_ALL'])
      expect(isCredentialName(name), name).toBe(false);
  });

  it('filters a host variable named like an Object.prototype member like any other', () => {
    const result = buildEnv({ host: { constructor: 'x', toString: 'y' }, keep: [], set: [], injected: {} });
    expect(result.dropped).toEqual([
      { name: 'constructor', reason: 'not-allowed' },
      { name: 'toString', reason: 'not-allowed' },
    ]);
  });
});

describe('derivePolicy: refusals', () => {
  it('mode: danger needs request.danger (DANGER_NOT_ALLOWED)', () => {
    const error = sbxErrorOf(() => derive({ mode: 'danger' }));
    expect(error.code).toBe('DANGER_NOT_ALLOWED');
    expect(error.exitCode).toBe(ExitCode.DENIED);
    expect(error.hint).toContain('--danger');
    expect(derive({ mode: 'danger' }, { request: { danger: true } }).mode).toBe('danger');
  });

  it('a workspace that resolves to / or a system directory is WORKSPACE_INVALID', () => {
    for (const real of ['/', '/usr', '/etc', '/var']) {
      // The runtime probes the realpath too (vars.workspace is it), so both facts exist.
      const error = sbxErrorOf(() =>
        derive({}, { host: (h) => void (h.paths['/home/alice/proj'] = h.paths[real] = dir(real, { link: real })) }),
      );
      expect(error.code, real).toBe('WORKSPACE_INVALID');
      expect(error.message).toBe(`workspace ${real} resolves to ${real}, a system directory`);
    }
  });

  it('a workspace anywhere in /proc, /sys or /dev is WORKSPACE_INVALID (checked before the scan); danger mode takes it', () => {
    const cases = [
      ['/proc/self', '/proc/4242', '/proc'],
      ['/home/alice/proc-link/self', '/proc/4242', '/proc'],
      ['/sys/kernel', '/sys/kernel', '/sys'],
      ['/dev/shm', '/dev/shm', '/dev'],
    ];
    for (const [given, real, tree] of cases) {
      const paths = { [given!]: dir(real!) };
      const error = sbxErrorOf(() => workspaceRealPath({ paths }, { workspace: given! }, 'workspace-write'));
      expect(error.code, given).toBe('WORKSPACE_INVALID');
      expect(error.exitCode).toBe(ExitCode.SETUP);
      expect(error.message).toBe(`workspace ${given} resolves to ${real}, inside ${tree} (a kernel interface)`);
      expect(error.hint).toBe('run sbx from a project directory or pass --workspace DIR');
      expect(workspaceRealPath({ paths }, { workspace: given! }, 'danger')).toBe(real);
    }
    // A name that only begins like a kernel tree is an ordinary directory.
    const procedures = { '/procedures': dir('/procedures') };
    expect(workspaceRealPath({ paths: procedures }, { workspace: '/procedures' }, 'read-only')).toBe('/procedures');
    // derivePolicy asks the same of the whole host.
    const real = '/proc/4242';
    const error = sbxErrorOf(() =>
      derive({}, { host: (h) => void (h.paths['/home/alice/proj'] = h.paths[real] = dir(real, { link: real })) }),
    );
    expect(error.message).toBe(`workspace ${real} resolves to ${real}, inside /proc (a kernel interface)`);
  });

  it('a missing workspace, or a file, is WORKSPACE_INVALID', () => {
    expect(
      sbxErrorOf(() => derive({}, { host: (h) => void (h.paths['/home/alice/proj'] = { exists: false }) })).code,
    ).toBe('WORKSPACE_INVALID');
    expect(
      sbxErrorOf(() => derive({}, { host: (h) => void (h.paths['/home/alice/proj'] = file('/home/alice/proj')) })).code,
    ).toBe('WORKSPACE_INVALID');
  });

  it('a missing bind source is BIND_SOURCE_MISSING naming the entry; an optional one is skipped', () => {
    const error = sbxErrorOf(() =>
      derive(
        { read_only: ['/opt/tools', '/opt/missing'] },
        { host: (h) => void (h.paths['/opt/tools'] = dir('/opt/tools')) },
      ),
    );
    expect(error.code).toBe('BIND_SOURCE_MISSING');
    expect(error.message).toBe('read_only[1]: /opt/missing does not exist');
    expect(error.hint).toContain('optional: true');

    const policy = derive(
      { read_only: ['/opt/tools', { path: '/opt/missing', optional: true }] },
      { host: (h) => void (h.paths['/opt/tools'] = dir('/opt/tools')) },
    );
    expect(targetsOf(policy, 'bind')).toContain('/opt/tools');
    expect(targetsOf(policy, 'bind')).not.toContain('/opt/missing');
    expect(sbxErrorOf(() => derive({}, { request: { binds: [{ source: '/nope', access: 'ro' }] } })).code).toBe(
      'BIND_SOURCE_MISSING',
    );
  });

  it('refuses to bind a credential store or anything inside one', () => {
    const cases: { profile: Profile; request?: Partial<RunRequest> }[] = [
      { profile: { read_only: ['~/.ssh'] } },
      { profile: { read_only: ['~/.aws/credentials'] } },
      { profile: { writable_roots: ['${home}/.ssh'] } },
      { profile: { read_only: [{ path: '~/.ssh', mountAt: '/keys' }] } },
      { profile: {}, request: { binds: [{ source: '/home/alice/.ssh', access: 'ro' }] } },
    ];
    for (const { profile, request } of cases) {
      const error = sbxErrorOf(() =>
        derive(profile, {
          ...(request ? { request } : {}),
          host: (h) => void (h.paths['/home/alice/.aws/credentials'] = file('/home/alice/.aws/credentials')),
        }),
      );
      expect(error.code, JSON.stringify(profile)).toBe('DANGER_NOT_ALLOWED');
    }
  });

  it('refuses a symlink whose realpath is inside ~/.ssh', () => {
    const error = sbxErrorOf(() =>
      derive(
        { read_only: ['~/proj/keys'] },
        {
          host: (h) => void (h.paths['/home/alice/proj/keys'] = dir('/home/alice/.ssh/keys', { link: '../.ssh/keys' })),
        },
      ),
    );
    expect(error.code).toBe('DANGER_NOT_ALLOWED');
    expect(error.message).toContain('/home/alice/proj/keys');
  });

  it('refuses a credential store reached through a symlinked HOME component', () => {
    // ~/.ssh itself is a symlink to a dotfiles checkout: its realpath is the store.
    const error = sbxErrorOf(() =>
      derive(
        { read_only: ['/srv/dotfiles/ssh/config'] },
        {
          host: (h) => {
            h.paths['/home/alice/.ssh'] = dir('/srv/dotfiles/ssh', { link: '/srv/dotfiles/ssh' });
            h.paths['/srv/dotfiles/ssh/config'] = file('/srv/dotfiles/ssh/config');
          },
        },
      ),
    );
    expect(error.code).toBe('DANGER_NOT_ALLOWED');
  });

  it('refuses a writable bind of /etc or another system root, even through a symlink; read-only is fine', () => {
    expect(sbxErrorOf(() => derive({ writable_roots: ['/etc'] })).code).toBe('BIND_TARGET_INVALID');
    expect(sbxErrorOf(() => derive({}, { request: { binds: [{ source: '/usr', access: 'rw' }] } })).code).toBe(
      'BIND_TARGET_INVALID',
    );
    const viaLink = sbxErrorOf(() =>
      derive(
        { writable_roots: ['~/etc'] },
        { host: (h) => void (h.paths['/home/alice/etc'] = dir('/etc', { link: '/etc' })) },
      ),
    );
    expect(viaLink.code).toBe('BIND_TARGET_INVALID');
    expect(viaLink.message).toContain('resolves to /etc');
    expect(
      derive({ read_only: ['/etc'] })
        .mounts.filter((m) => m.kind === 'bind' && m.target === '/etc')
        .map((m) => m.kind === 'bind' && m.access),
    ).toEqual(['ro', 'ro']);
  });

  it('refuses a relative or ".." mountAt (BIND_TARGET_INVALID)', () => {
    const host = (h: Host) => void (h.paths['/opt/tools'] = dir('/opt/tools'));
    for (const mountAt of ['tools', './tools', '/opt/../etc', '~/../../etc']) {
      expect(sbxErrorOf(() => derive({ read_only: [{ path: '/opt/tools', mountAt }] }, { host })).code, mountAt).toBe(
        'BIND_TARGET_INVALID',
      );
    }
    expect(sbxErrorOf(() => derive({ workspace: { mountAt: 'work' } })).code).toBe('BIND_TARGET_INVALID');
    expect(
      sbxErrorOf(() =>
        derive({}, { host, request: { binds: [{ source: '/opt/tools', target: 'rel', access: 'ro' }] } }),
      ).code,
    ).toBe('BIND_TARGET_INVALID');
  });

  it('an unknown variable in a bind or env.set value is PROFILE_VARIABLE', () => {
    expect(sbxErrorOf(() => derive({ read_only: ['${tools}/bin'] })).message).toBe(
      'read_only[0]: unknown variable ${tools}',
    );
    expect(sbxErrorOf(() => derive({ env: { set: { X: '${nope}' } } })).message).toBe(
      'env.set.X: unknown variable ${nope}',
    );
  });

  it('SBX_* in env.set or --env is ENV_RESERVED', () => {
    expect(sbxErrorOf(() => derive({ env: { set: { SBX_PROFILE: 'x' } } })).code).toBe('ENV_RESERVED');
    expect(sbxErrorOf(() => derive({}, { request: { env: { SBX_SESSION_ID: 'x' } } })).code).toBe('ENV_RESERVED');
  });

  it('refuses a /tmp size below 1MiB or unparsable (LIMIT_INVALID)', () => {
    for (const size of ['1k', 'lots', '-5MiB', 1000])
      expect(sbxErrorOf(() => derive({ tmp: { size } })).code, String(size)).toBe('LIMIT_INVALID');
    const tmp = derive({ tmp: { size: '256MiB' } }).mounts.find((m) => m.target === '/tmp');
    expect(tmp).toMatchObject({ kind: 'tmpfs', sizeBytes: 256 * 1024 * 1024, mode: 0o1777 });
  });
});

describe('derivePolicy: what it builds', () => {
  it('maps a cwd inside the workspace through mountAt', () => {
    const policy = derive(
      { workspace: { path: '~/proj', mountAt: '/work' } },
      { host: (h) => void (h.cwd = '/home/alice/proj/src/lib') },
    );
    expect(policy.workspace).toEqual({ host: '/home/alice/proj', sandbox: '/work', access: 'rw' });
    expect(policy.cwd).toBe('/work/src/lib');
    expect(policy.mounts).toContainEqual(
      expect.objectContaining({ kind: 'bind', source: '/home/alice/proj', target: '/work', access: 'rw' }),
    );
    expect(policy.env.vars.SBX_WORKSPACE).toBe('/work');
  });

  it('a cwd outside the workspace starts in the workspace', () => {
    const policy = derive(
      {},
      { request: { workspace: '/home/alice/proj' }, host: (h) => void (h.cwd = '/home/alice') },
    );
    expect(policy.cwd).toBe('/home/alice/proj');
  });

  it('chdir moves only the start directory, through mountAt; outside the workspace it is refused, never replaced', () => {
    const at = (chdir: string) =>
      derive(
        { workspace: { path: '~/proj', mountAt: '/work' } },
        { request: { chdir }, host: (h) => void (h.cwd = '/home/alice/proj') },
      );
    expect(at('/home/alice/proj/sub').cwd).toBe('/work/sub');
    expect(at('/home/alice/proj').cwd).toBe('/work');
    for (const chdir of ['/home/alice', '/home/alice/proj/../other', '/home/alice/project', 'sub'])
      expect(sbxErrorOf(() => at(chdir)).code, chdir).toBe('USAGE');
  });

  it('binds the realpath of a symlinked workspace, at its realpath', () => {
    const policy = derive(
      {},
      {
        host: (h) => {
          h.paths['/home/alice/proj'] = dir('/data/proj', { link: '/data/proj' });
          h.paths['/data/proj'] = dir('/data/proj');
        },
      },
    );
    expect(policy.workspace).toEqual({ host: '/data/proj', sandbox: '/data/proj', access: 'rw' });
  });

  it('read-only mode: workspace and writable_roots read-only, HOME remounted read-only before /', () => {
    const policy = derive(
      { mode: 'read-only', writable_roots: ['/opt/cache'] },
      { host: (h) => void (h.paths['/opt/cache'] = dir('/opt/cache')) },
    );
    const binds = policy.mounts.filter((m): m is Extract<Mount, { kind: 'bind' }> => m.kind === 'bind');
    expect(binds.every((b) => b.access === 'ro')).toBe(true);
    expect(policy.workspace.access).toBe('ro');
    expect(policy.mounts.slice(-2).map((m) => [m.kind, m.target])).toEqual([
      ['remount-ro', '/home/alice'],
      ['remount-ro', '/'],
    ]);
  });

  it('orders mounts parents first whatever the profile order', () => {
    const policy = derive(
      { read_only: ['/opt/a/b/c', '/opt/a'], writable_roots: ['~/cache'] },
      {
        host: (h) => {
          h.paths['/opt/a'] = dir('/opt/a');
          h.paths['/opt/a/b/c'] = dir('/opt/a/b/c');
          h.paths['/home/alice/cache'] = dir('/home/alice/cache');
        },
      },
    );
    const targets = policy.mounts.map((m) => m.target);
    expect(targets.indexOf('/opt/a')).toBeLessThan(targets.indexOf('/opt/a/b/c'));
    expect(targets.indexOf('/home/alice')).toBeLessThan(targets.indexOf('/home/alice/cache'));
    expect(targets.at(-1)).toBe('/');
  });

  it('masks every existing credential store when the workspace is HOME (read-only mode), after the binds', () => {
    const policy = derive(
      { mode: 'read-only' },
      {
        host: (h) => {
          h.cwd = '/home/alice';
          h.paths['/home/alice'] = dir('/home/alice');
        },
      },
    );
    expect(masksOf(policy)).toEqual([
      ['/home/alice/.ssh', 'dir'],
      ['/home/alice/.aws', 'dir'],
      ['/home/alice/.netrc', 'file'],
    ]);
    const lastBind = policy.mounts.map((m) => m.kind).lastIndexOf('bind');
    const firstMask = policy.mounts.findIndex((m) => m.kind === 'mask');
    expect(firstMask).toBeGreaterThan(lastBind);
  });

  it("masks sbx's own secret store and state (approvals, ledger) when they are reachable", () => {
    const policy = derive(
      { mode: 'read-only' },
      {
        host: (h) => {
          h.cwd = '/home/alice';
          h.paths['/home/alice'] = dir('/home/alice');
          h.paths['/home/alice/.config/sbx/secrets.yaml'] = file('/home/alice/.config/sbx/secrets.yaml');
          h.paths['/home/alice/.local/state/sbx'] = dir('/home/alice/.local/state/sbx');
        },
      },
    );
    expect(masksOf(policy)).toEqual(
      expect.arrayContaining([
        ['/home/alice/.config/sbx/secrets.yaml', 'file'],
        ['/home/alice/.local/state/sbx', 'dir'],
      ]),
    );
  });

  it("--allow-sensitive-roots unmasks credential stores, never sbx's own state", () => {
    const policy = derive(
      { mode: 'read-only' },
      {
        request: { allowSensitiveRoots: true },
        host: (h) => {
          h.cwd = '/home/alice';
          h.paths['/home/alice'] = dir('/home/alice');
          h.paths['/home/alice/.local/state/sbx'] = dir('/home/alice/.local/state/sbx');
        },
      },
    );
    expect(masksOf(policy)).toEqual([['/home/alice/.local/state/sbx', 'dir']]);
  });

  it('masks sensitive files found by the scan at every sandbox path, and binds git hooks read-only before the masks', () => {
    const policy = derive(
      { read_only: [{ path: '/home/alice/proj', mountAt: '/src' }] },
      {
        host: (h) => {
          h.sensitiveFiles = {
            masks: [
              { path: '/home/alice/proj/.env', dir: false },
              { path: '/home/alice/proj/keys', dir: true },
            ],
            protect: ['/home/alice/proj/.git/hooks'],
            views: [],
          };
        },
      },
    );
    expect(
      masksOf(policy)
        .filter(([t]) => !String(t).includes('/.ssh') && !String(t).includes('/.aws') && !String(t).includes('.netrc'))
        .sort(),
    ).toEqual([
      ['/home/alice/proj/.env', 'file'],
      ['/home/alice/proj/keys', 'dir'],
      ['/src/.env', 'file'],
      ['/src/keys', 'dir'],
    ]);
    const hooks = policy.mounts.filter((m) => m.kind === 'bind' && m.source === '/home/alice/proj/.git/hooks');
    expect(hooks.map((m) => [m.target, m.kind === 'bind' && m.access]).sort()).toEqual([
      ['/home/alice/proj/.git/hooks', 'ro'],
      ['/src/.git/hooks', 'ro'],
    ]);
    const lastHooks = policy.mounts.findLastIndex(
      (m) => m.kind === 'bind' && m.source === '/home/alice/proj/.git/hooks',
    );
    expect(policy.mounts.findIndex((m) => m.kind === 'mask')).toBeGreaterThan(lastHooks);
  });

  it('secrets: names in env.secrets (values never in the policy), replacing a kept or set variable of the same name', () => {
    const policy = derive({
      secrets: [{ name: 'ANTHROPIC_API_KEY' }, { name: 'GH', from: 'env', as: 'GITHUB_TOKEN' }],
      env: { set: { ANTHROPIC_API_KEY: 'placeholder' } },
    });
    expect(policy.env.secrets).toEqual(['ANTHROPIC_API_KEY', 'GITHUB_TOKEN']);
    expect(policy.env.vars).not.toHaveProperty('ANTHROPIC_API_KEY');
    expect(policy.env.vars).not.toHaveProperty('GITHUB_TOKEN');
  });

  it('masks a credential store under a bound parent at its sandbox path (mountAt)', () => {
    const policy = derive(
      { read_only: [{ path: '/home', mountAt: '/hosthome' }] },
      { host: (h) => void (h.paths['/home'] = dir('/home')) },
    );
    expect(masksOf(policy)).toEqual([
      ['/hosthome/alice/.ssh', 'dir'],
      ['/hosthome/alice/.aws', 'dir'],
      ['/hosthome/alice/.netrc', 'file'],
    ]);
  });

  it('masks a credential store at every sandbox path that exposes it (danger + extra bind of HOME)', () => {
    const policy = derive(
      { mode: 'danger' },
      {
        request: { danger: true, binds: [{ source: '/home/alice', target: '/mnt/home', access: 'ro' }] },
        host: (h) => void (h.paths['/home/alice'] = dir('/home/alice')),
      },
    );
    const masked = masksOf(policy).map(([target]) => target);
    expect(masked).toEqual(
      expect.arrayContaining(['/home/alice/.ssh', '/home/alice/.aws', '/mnt/home/.ssh', '/mnt/home/.aws']),
    );
  });

  it('masks a credential store at every sandbox path that exposes it (two read_only binds)', () => {
    const policy = derive(
      {
        read_only: [
          { path: '~', mountAt: '/h1' },
          { path: '/home', mountAt: '/h2' },
        ],
      },
      {
        host: (h) => {
          h.paths['/home/alice'] = dir('/home/alice');
          h.paths['/home'] = dir('/home');
        },
      },
    );
    expect(masksOf(policy).map(([target]) => target)).toEqual(expect.arrayContaining(['/h1/.ssh', '/h2/alice/.ssh']));
  });

  it('danger mode binds / read-write, shares the network, and still masks the stores', () => {
    const policy = derive({ mode: 'danger', network: 'host' }, { request: { danger: true } });
    expect(policy.mounts.slice(0, 3).map((m) => [m.kind, m.target])).toEqual([
      ['bind', '/'],
      ['dev', '/dev'],
      ['proc', '/proc'],
    ]);
    expect(masksOf(policy).map(([t]) => t)).toEqual(['/home/alice/.ssh', '/home/alice/.aws', '/home/alice/.netrc']);
    // Only /dev, an unsized tmpfs of bwrap's: danger lends the host's files, not unbounded memory.
    expect(targetsOf(policy, 'remount-ro')).toEqual(['/dev']);
    expect(policy.namespaces).toEqual({ user: true, pid: true, ipc: true, uts: true, net: false, cgroup: true });
  });

  it('a root host runs the child as nobody and masks root-only system files', () => {
    const policy = derive({}, { hostName: 'root' });
    expect(policy.identity).toEqual({ uid: 65534, gid: 65534, hostRoot: true });
    expect(masksOf(policy)).toEqual([
      ['/etc/shadow', 'file'],
      ['/etc/gshadow', 'file'],
      ['/etc/ssl/private', 'dir'],
      ['/etc/sudoers.d', 'dir'],
    ]);
    expect(policy.mounts.at(-1)).toMatchObject({ kind: 'remount-ro', target: '/' });
  });

  it('an unprivileged host keeps its uid; user: root is uid 0 inside without host root', () => {
    expect(derive({}).identity).toEqual({ uid: 1000, gid: 1000, hostRoot: false });
    expect(derive({ user: 'root' }).identity).toEqual({ uid: 0, gid: 0, hostRoot: false });
  });

  it('network: the request overrides the profile; none unshares the net namespace', () => {
    expect(derive({}).namespaces.net).toBe(true);
    expect(derive({ network: 'host' }).namespaces.net).toBe(false);
    expect(derive({ network: 'host' }, { request: { network: 'none' } }).network).toEqual({ kind: 'none' });
    expect(derive({ network: 'host' }, { request: { network: 'none' } }).namespaces.net).toBe(true);
  });

  it('system binds: merged-/usr links become symlinks; a custom list replaces the default', () => {
    const policy = derive({});
    expect(
      policy.mounts.filter((m) => m.kind === 'symlink').map((m) => m.kind === 'symlink' && [m.target, m.linkTo]),
    ).toEqual([
      ['/bin', 'usr/bin'],
      ['/sbin', 'usr/sbin'],
      ['/lib', 'usr/lib'],
      ['/lib64', 'usr/lib64'],
    ]);
    const custom = derive({ system: ['/usr'] });
    expect(targetsOf(custom, 'bind')).toEqual(['/usr', '/home/alice/proj']);
    expect(targetsOf(custom, 'symlink')).toEqual([]);
    expect(sbxErrorOf(() => derive({ system: ['/opt/nonexistent'] })).code).toBe('BIND_SOURCE_MISSING');
  });

  it('env: profile keep + --keep-env, env.set expanded, then --env; PATH defaults when not kept', () => {
    const policy = derive(
      { env: { keep: ['LANG'], set: { WS: '${workspace}', A: 'profile' } } },
      { request: { keepEnv: ['EDITOR'], env: { A: 'flag' } } },
    );
    expect(policy.env.vars).toEqual({
      LANG: 'en_US.UTF-8',
      EDITOR: 'vim',
      WS: '/home/alice/proj',
      A: 'flag',
      HOME: '/home/alice',
      SBX_SESSION_ID: 'test-session',
      SBX_PROFILE: 'test',
      SBX_WORKSPACE: '/home/alice/proj',
      PATH: '/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin',
    });
    expect(policy.env.dropped).toContainEqual({ name: 'GITHUB_TOKEN', reason: 'not-allowed' });
  });

  it('the probe plan names the workspace, every bind source and the credential stores', () => {
    const { paths } = probePlanOf(
      { read_only: ['~/tools'], writable_roots: [{ path: '${cwd}/out', optional: true }] },
      { command: [], binds: [{ source: 'rel', access: 'ro' }] },
      VARS,
      { SSH_AUTH_SOCK: '/tmp/ssh-x/agent.1' },
    );
    expect(paths).toContain('/tmp/ssh-x/agent.1');
    expect(paths).toEqual(
      expect.arrayContaining([
        '/home/alice/proj',
        '/usr',
        '/etc',
        '/bin',
        '/home/alice/tools',
        '/home/alice/proj/src/out',
        '/home/alice/proj/src/rel',
        '/home/alice/.ssh',
        '/home/alice/.aws',
      ]),
    );
    expect(new Set(paths).size).toBe(paths.length);
  });
});

describe('hostPathOf', () => {
  const alice = derive(
    { read_only: [{ path: '/opt/tools', mountAt: '/tools' }] },
    { host: (h) => void (h.paths['/opt/tools'] = dir('/opt/tools')) },
  );
  const root = derive({}, { hostName: 'root' });

  it('walks binds, including mountAt', () => {
    expect(hostPathOf(alice.mounts, '/usr/bin/env')).toBe('/usr/bin/env');
    expect(hostPathOf(alice.mounts, '/home/alice/proj/run.sh')).toBe('/home/alice/proj/run.sh');
    expect(hostPathOf(alice.mounts, '/tools/bin/x')).toBe('/opt/tools/bin/x');
    expect(hostPathOf(alice.mounts, '/etc')).toBe('/etc');
  });

  it('follows the merged-/usr symlinks (/bin → usr/bin)', () => {
    expect(hostPathOf(alice.mounts, '/bin/ls')).toBe('/usr/bin/ls');
    expect(hostPathOf(alice.mounts, '/bin')).toBe('/usr/bin');
    expect(hostPathOf(alice.mounts, '/lib64/ld-linux-x86-64.so.2')).toBe('/usr/lib64/ld-linux-x86-64.so.2');
    expect(hostPathOf(alice.mounts, '/binary')).toBeUndefined();
  });

  it('follows an absolute symlink target', () => {
    const mounts: Mount[] = [
      {
        kind: 'bind',
        source: '/nix/store/abc',
        target: '/nix/store/abc',
        access: 'ro',
        optional: false,
        reason: '',
        role: 'system',
      },
      { kind: 'symlink', target: '/usr/bin/python', linkTo: '/nix/store/abc/bin/python3', reason: '', role: 'system' },
    ];
    expect(hostPathOf(mounts, '/usr/bin/python')).toBe('/nix/store/abc/bin/python3');
  });

  it('is undefined for tmpfs, proc, dev, masks and unmounted paths', () => {
    expect(hostPathOf(alice.mounts, '/tmp/x')).toBeUndefined();
    expect(hostPathOf(alice.mounts, '/home/alice/.bashrc')).toBeUndefined();
    expect(hostPathOf(alice.mounts, '/proc/self/exe')).toBeUndefined();
    expect(hostPathOf(alice.mounts, '/dev/null')).toBeUndefined();
    expect(hostPathOf(alice.mounts, '/opt/tools/x')).toBeUndefined();
    expect(hostPathOf(root.mounts, '/etc/shadow')).toBeUndefined();
    expect(hostPathOf(root.mounts, '/etc/ssl/private/key.pem')).toBeUndefined();
    expect(hostPathOf(root.mounts, '/etc/passwd')).toBe('/etc/passwd');
  });

  it('ignores remount-ro (it changes flags, not contents)', () => {
    const policy = derive({ mode: 'read-only' });
    expect(policy.mounts.at(-1)).toMatchObject({ kind: 'remount-ro', target: '/' });
    expect(hostPathOf(policy.mounts, '/usr/bin/env')).toBe('/usr/bin/env');
  });

  it('resolves a symlink against the whole mount table, including later binds', () => {
    const policy = derive(
      { read_only: [{ path: '/opt/tool', mountAt: '/usr/bin/tool' }] },
      { host: (h) => void (h.paths['/opt/tool'] = file('/opt/tool')) },
    );
    expect(hostPathOf(policy.mounts, '/usr/bin/tool')).toBe('/opt/tool');
    expect(hostPathOf(policy.mounts, '/bin/tool')).toBe('/opt/tool');
  });
});

describe('isWithin', () => {
  it('is a path-component prefix test', () => {
    expect(isWithin('/a/b', '/a')).toBe(true);
    expect(isWithin('/a', '/a')).toBe(true);
    expect(isWithin('/ab', '/a')).toBe(false);
    expect(isWithin('/anything', '/')).toBe(true);
    expect(isWithin('/a', '/a/b')).toBe(false);
  });
});

describe('git: the global config views, a worktree, a detected workspace (issue 24)', () => {
  const gitGlobal: Host['gitGlobal'] = [
    { file: '/home/alice/.gitconfig', which: 'home', content: '[user]\n\tname = A\n' },
    { file: '/home/alice/.config/git/config', which: 'xdg', content: '[alias]\n\tst = status\n' },
  ];
  const fileMounts = (policy: Policy) =>
    policy.mounts.filter((m): m is Extract<Mount, { kind: 'file' }> => m.kind === 'file');

  it('shows each global file as a read-only generated file in the private HOME, with its reason', () => {
    const policy = derive({}, { host: (h) => (h.gitGlobal = gitGlobal) });
    const files = fileMounts(policy).map((m) => [m.target, m.mode, m.content]);
    expect(files).toEqual([
      ['/home/alice/.gitconfig', 0o444, '[user]\n\tname = A\n'],
      ['/home/alice/.config/git/config', 0o444, '[alias]\n\tst = status\n'],
    ]);
    for (const m of fileMounts(policy)) expect(m.reason).toMatch(/^git global config \/home\/alice\//);
  });

  it('puts the XDG view where the sandbox XDG_CONFIG_HOME says, only inside HOME', () => {
    const inHome = derive(
      { env: { set: { XDG_CONFIG_HOME: '/home/alice/cfg' } } },
      { host: (h) => (h.gitGlobal = gitGlobal) },
    );
    expect(fileMounts(inHome).map((m) => m.target)).toContain('/home/alice/cfg/git/config');
    const outside = derive(
      { env: { set: { XDG_CONFIG_HOME: '/opt/cfg' } } },
      { host: (h) => (h.gitGlobal = gitGlobal) },
    );
    expect(fileMounts(outside).map((m) => m.target)).toEqual(['/home/alice/.gitconfig']);
  });

  it('binds a worktree common dir with the workspace access, and checks it as a writable bind', () => {
    const common = '/home/alice/main/.git';
    const policy = derive(
      {},
      {
        host: (h) => {
          h.paths[common] = dir(common);
          h.gitWorktree = { gitDir: `${common}/worktrees/proj`, commonDir: common };
        },
      },
    );
    expect(policy.mounts).toContainEqual(
      expect.objectContaining({ kind: 'bind', source: common, target: common, access: 'rw' }),
    );
    const ro = derive(
      { mode: 'read-only' },
      {
        host: (h) => {
          h.paths[common] = dir(common);
          h.gitWorktree = { gitDir: `${common}/worktrees/proj`, commonDir: common };
        },
      },
    );
    expect(ro.mounts).toContainEqual(expect.objectContaining({ kind: 'bind', source: common, access: 'ro' }));
  });

  it('refuses a common dir in a credential store, a system directory, or one holding HOME', () => {
    const refused = (common: string) =>
      sbxErrorOf(() =>
        derive(
          {},
          {
            host: (h) => {
              h.paths[common] = dir(common);
              h.gitWorktree = { gitDir: `${common}/worktrees/proj`, commonDir: common };
            },
          },
        ),
      ).code;
    expect(refused('/home/alice/.ssh')).toBe('DANGER_NOT_ALLOWED');
    expect(refused('/etc')).toBe('GIT_WORKTREE_INVALID');
    expect(refused('/home')).toBe('GIT_WORKTREE_INVALID');
  });

  it('says why the workspace is not the cwd', () => {
    const policy = derive({}, { host: (h) => (h.workspaceDetected = 'the git top level above the current directory') });
    expect(policy.workspace.detected).toBe('the git top level above the current directory');
    expect(derive({}).workspace.detected).toBeUndefined();
  });
});
