// derivePolicy's trust-boundary rules for mounts, on fixture hosts: unix_sockets takes sockets only
// (not in read-only mode, never a credential store's); mountAt never covers a system path; a mount
// inside a writable host bind must land on an existing path (bwrap would create its mount point on
// the host); sbx's config dir and the project's .sbx are bound read-only over themselves.
import { describe, expect, it } from 'vitest';
import type { RunRequest } from '../../../../src/policy/derive/request.js';
import type { Host, PathFact } from '../../../../src/policy/host.js';
import type { Mount, Policy } from '../../../../src/policy/types.js';
import type { Profile } from '../../../../src/profile/schema.js';
import { sbxErrorOf } from '../../../helpers/errors.js';
import { deriveOnFixture, fixturePlan, loadHost } from '../../../helpers/hosts.js';

const fact = (real: string, type: 'dir' | 'file' | 'socket'): PathFact => ({ exists: true, real, type, uid: 1000 });

const derive = deriveOnFixture;

const readOnlyBinds = (policy: Policy) =>
  policy.mounts
    .filter((m): m is Extract<Mount, { kind: 'bind' }> => m.kind === 'bind' && m.access === 'ro')
    .map((m) => [m.source, m.target, m.reason]);

describe('network.unix_sockets', () => {
  const withSocket = (path: string, f: PathFact) => (h: Host) => void (h.paths[path] = f);
  const sockets = (path: string): Profile => ({ network: { unix_sockets: [path] } });

  it('binds a socket read-write at the path as written', () => {
    const policy = derive(sockets('/run/app.sock'), {
      host: withSocket('/run/app.sock', fact('/run/app.sock', 'socket')),
    });
    expect(policy.mounts).toContainEqual({
      kind: 'bind',
      source: '/run/app.sock',
      target: '/run/app.sock',
      access: 'rw',
      optional: false,
      reason: 'network.unix_sockets',
      role: 'socket',
    });
  });

  it('refuses a directory, a regular file and /etc (UNIX_SOCKET_INVALID)', () => {
    const cases: [string, PathFact, string][] = [
      ['/srv/data', fact('/srv/data', 'dir'), 'is a directory'],
      ['/srv/notes.txt', fact('/srv/notes.txt', 'file'), 'is a regular file'],
      ['/etc', fact('/etc', 'dir'), 'is a directory'],
      ['/run/link.sock', fact('/etc/passwd', 'file'), '(/etc/passwd) is a regular file'],
    ];
    for (const [path, f, what] of cases) {
      const e = sbxErrorOf(() => derive(sockets(path), { host: withSocket(path, f) }));
      expect(e.code, path).toBe('UNIX_SOCKET_INVALID');
      expect(e.message, path).toContain(what);
    }
  });

  it('refuses an agent socket of a credential store, and any socket in mode read-only', () => {
    const agent = '/home/alice/.ssh/agent.sock';
    expect(sbxErrorOf(() => derive(sockets(agent), { host: withSocket(agent, fact(agent, 'socket')) })).code).toBe(
      'DANGER_NOT_ALLOWED',
    );
    const e = sbxErrorOf(() =>
      derive(
        { mode: 'read-only', ...sockets('/run/app.sock') },
        { host: withSocket('/run/app.sock', fact('/run/app.sock', 'socket')) },
      ),
    );
    expect(e).toMatchObject({
      code: 'UNIX_SOCKET_INVALID',
      message: expect.stringContaining('mode: read-only promises no writes'),
    });
  });
});

describe('mountAt', () => {
  it('refuses / and every parent of a system path, and targets in /proc /dev /sys', () => {
    for (const target of ['/', '/etc', '/usr', '/var', '/tmp', '/run', '/proc/x', '/dev/shm/x', '/sys']) {
      const e = sbxErrorOf(() => derive({ workspace: { mountAt: target } }));
      expect(e.code, target).toBe('BIND_TARGET_INVALID');
      expect(e.message, target).toContain('would cover a system directory');
      const bind = sbxErrorOf(() =>
        derive({ read_only: [{ path: '/home/alice/.config/sbx/tools', mountAt: target }] }),
      );
      expect(bind.code, `read_only at ${target}`).toBe('BIND_TARGET_INVALID');
    }
  });

  it('control: a path of its own is fine, and so is one below a read-only system bind', () => {
    expect(derive({ workspace: { mountAt: '/work' } }).workspace.sandbox).toBe('/work');
    expect(derive({ workspace: { mountAt: '/usr/local/src' } }).workspace.sandbox).toBe('/usr/local/src');
  });
});

describe('mount points inside writable host binds', () => {
  it('refuses a bind whose mount point does not exist in the writable workspace', () => {
    const e = sbxErrorOf(() =>
      derive({}, { request: { binds: [{ source: '/usr', target: '/home/alice/proj/newdir', access: 'ro' }] } }),
    );
    expect(e.code).toBe('BIND_TARGET_INVALID');
    expect(e.message).toContain('its mount point /home/alice/proj/newdir would be created on the host');
  });

  it('allows one on an existing directory of the workspace (probed) and a self-bind', () => {
    const policy = derive(
      {},
      {
        request: { binds: [{ source: '/usr', target: '/home/alice/proj/vendor', access: 'ro' }] },
        host: (h) => void (h.paths['/home/alice/proj/vendor'] = fact('/home/alice/proj/vendor', 'dir')),
      },
    );
    expect(policy.mounts.some((m) => m.target === '/home/alice/proj/vendor')).toBe(true);
  });

  it('refuses a read-only bind at /work inside a writable workspace = /srv whose mount point is missing there, unless it exists', () => {
    const host = (exists: boolean) => (h: Host) => {
      h.paths['/srv'] = fact('/srv', 'dir');
      h.paths['/srv/tools'] = fact('/srv/tools', 'dir');
      if (exists) h.paths['/srv/opt'] = fact('/srv/opt', 'dir');
    };
    const profile: Profile = { read_only: [{ path: '/srv/tools', mountAt: '/srv/opt' }] };
    expect(sbxErrorOf(() => derive(profile, { request: { workspace: '/srv' }, host: host(false) })).code).toBe(
      'BIND_TARGET_INVALID',
    );
    expect(derive(profile, { request: { workspace: '/srv' }, host: host(true) }).workspace.host).toBe('/srv');
  });

  it('danger mode (the host, writable by design) is not checked', () => {
    expect(derive({ mode: 'danger' }, { request: { danger: true } }).mode).toBe('danger');
  });
});

describe("sbx's policy files", () => {
  it('probes the config dir, HOME and .sbx at the workspace and at every writable root', () => {
    const host = loadHost('alice');
    const profile: Profile = { writable_roots: ['/srv/out'] };
    const request: RunRequest = { command: ['true'] };
    const { paths } = fixturePlan(host, profile, request);
    expect(paths).toEqual(
      expect.arrayContaining(['/home/alice/.config/sbx', '/home/alice/proj/.sbx', '/srv/out/.sbx', '/home/alice']),
    );
  });

  it('binds .sbx and the config dir read-only over themselves where a bind shows them (workspace = HOME, read-only mode)', () => {
    const policy = derive(
      { mode: 'read-only' },
      {
        request: { workspace: '/home/alice' },
        host: (h) => {
          h.paths['/home/alice'] = fact('/home/alice', 'dir');
          h.paths['/home/alice/.sbx'] = fact('/home/alice/.sbx', 'dir');
          h.paths['/home/alice/.config/sbx'] = fact('/home/alice/.config/sbx', 'dir');
        },
      },
    );
    expect(readOnlyBinds(policy)).toEqual(
      expect.arrayContaining([
        ['/home/alice/.config/sbx', '/home/alice/.config/sbx', "sbx's policy files stay read-only"],
        ['/home/alice/.sbx', '/home/alice/.sbx', "sbx's policy files stay read-only"],
      ]),
    );
    // Masks (secrets.yaml, state, cache) come after, so a read-only bind cannot uncover one.
    const lastProtect = policy.mounts.findLastIndex(
      (m) => m.kind === 'bind' && m.reason === "sbx's policy files stay read-only",
    );
    expect(policy.mounts.findIndex((m) => m.kind === 'mask')).toBeGreaterThan(lastProtect);
  });

  it('control: a config dir no bind shows is not bound (HOME is a private tmpfs)', () => {
    const policy = derive(
      {},
      { host: (h) => void (h.paths['/home/alice/.config/sbx'] = fact('/home/alice/.config/sbx', 'dir')) },
    );
    expect(readOnlyBinds(policy).filter(([source]) => source === '/home/alice/.config/sbx')).toEqual([]);
  });
});
