// No writable bind may overlap the user's host state (host-state/host-state.ts): HOME, sbx's own
// directories and what the host runs later. Each layout of the issue that let a sandbox choose a later
// run's policy (a run from ~, -w ~, writable_roots naming ~/.local, ~/.cache or ~/.config, HOME=$PWD,
// XDG_* inside the workspace) is refused; the everyday layouts beside them are not. Fixture hosts,
// chains by path (test/helpers/hosts.ts), plus identities that differ from the paths (a second mount,
// a symlinked dotfile directory).
import { describe, expect, it } from 'vitest';
import type { Host, PathFact } from '../../../src/policy/host.js';
import { hostStatePaths, refuseWritableHostState } from '../../../src/host-state/host-state.js';
import { sbxErrorOf } from '../../helpers/errors.js';
import { deriveOnFixture } from '../../helpers/hosts.js';

const dir = (real: string): PathFact => ({ exists: true, real, type: 'dir', uid: 1000 });
const file = (real: string): PathFact => ({ exists: true, real, type: 'file', uid: 1000 });

const derive = deriveOnFixture;

/** Existing directories of the fixture host, by path. */
const dirs =
  (...paths: string[]) =>
  (h: Host) => {
    for (const p of paths) h.paths[p] = dir(p);
  };

const refusal = (fn: () => unknown) => {
  const e = sbxErrorOf(fn);
  return { code: e.code, exitCode: e.exitCode, message: e.message, hint: e.hint };
};

describe('writable binds and the host state', () => {
  it('refuses the workspace = HOME (a run from ~, -w ~, HOME=$PWD), naming HOME and the fix', () => {
    const e = refusal(() => derive({}, { request: { workspace: '/home/alice' }, host: dirs('/home/alice') }));
    expect(e).toMatchObject({ code: 'HOST_STATE_WRITABLE', exitCode: 125 });
    expect(e.message).toBe(
      'workspace: /home/alice is your home directory, which no sandbox may write: it decides what sbx or your shell runs later',
    );
    expect(e.hint).toContain('--workspace DIR');
  });

  it('refuses a workspace that contains HOME (-w /home)', () => {
    const e = refusal(() => derive({}, { request: { workspace: '/home' }, host: dirs('/home', '/home/alice') }));
    expect(e.message).toMatch(/^workspace: \/home contains \/home\/alice \(your home directory\)/);
  });

  it.each([
    ['/home/alice/.local', '/home/alice/.local/state/sbx'],
    ['/home/alice/.cache', '/home/alice/.cache/sbx'],
    ['/home/alice/.config', '/home/alice/.config/sbx'],
  ])('refuses writable_roots: [%s] (it contains %s)', (root, own) => {
    const e = refusal(() => derive({ writable_roots: [root] }, { host: dirs(root, own) }));
    expect(e.code).toBe('HOST_STATE_WRITABLE');
    expect(e.message).toMatch(new RegExp(`^writable_roots\\[0\\]: ${root} contains ${own} \\(sbx's own`));
  });

  it('refuses the same through --bind, and a bind inside sbx’s own directory', () => {
    const inside = '/home/alice/.config/sbx/profiles';
    const e = refusal(() =>
      derive(
        {},
        { request: { binds: [{ source: inside, access: 'rw' }] }, host: dirs('/home/alice/.config/sbx', inside) },
      ),
    );
    expect(e.message).toMatch(
      /^--bind: \/home\/alice\/\.config\/sbx\/profiles lies inside \/home\/alice\/\.config\/sbx /,
    );
  });

  it.each([
    ['/home/alice/.local/bin', 'is programs on your PATH'],
    ['/home/alice/.config/autostart', 'is run at login or by the desktop'],
    ['/home/alice/.config/git', "is git's configuration"],
  ])('refuses writable_roots: [%s] (%s)', (root, what) => {
    expect(refusal(() => derive({ writable_roots: [root] }, { host: dirs(root) })).message).toContain(what);
  });

  it('refuses a writable bind of a startup file itself (~/.bashrc)', () => {
    const bashrc = '/home/alice/.bashrc';
    const e = refusal(() =>
      derive({ writable_roots: [bashrc] }, { host: (h) => void (h.paths[bashrc] = file(bashrc)) }),
    );
    expect(e.message).toContain('is a shell startup file');
  });

  it.each([
    ['XDG_CONFIG_HOME', '/home/alice/proj/.xdg/config', "sbx's own profiles"],
    ['XDG_STATE_HOME', '/home/alice/proj/.xdg/state', "sbx's own state"],
    ['XDG_CACHE_HOME', '/home/alice/proj/.xdg/cache', "sbx's own caches"],
  ])('refuses the workspace when %s lies inside it', (name, value, what) => {
    const e = refusal(() => derive({}, { host: (h) => void (h.env[name] = value) }));
    expect(e.message).toMatch(new RegExp(`^workspace: /home/alice/proj contains ${value}/sbx \\(${what}`));
  });

  it('control: the everyday layouts run (a project under HOME, a cache below ~/.cache, read-only mode from ~)', () => {
    expect(derive({}).workspace.host).toBe('/home/alice/proj');
    const pip = '/home/alice/.cache/pip';
    expect(derive({ writable_roots: [pip] }, { host: dirs(pip) }).mounts).toContainEqual(
      expect.objectContaining({ kind: 'bind', source: pip, access: 'rw' }),
    );
    const readOnly = derive(
      { mode: 'read-only' },
      { request: { workspace: '/home/alice' }, host: dirs('/home/alice') },
    );
    expect(readOnly.workspace).toMatchObject({ host: '/home/alice', access: 'ro' });
    expect(derive({ mode: 'danger' }, { request: { danger: true } }).mode).toBe('danger');
  });

  it('compares identities: a second mount of HOME at another path is still HOME', () => {
    const alias = '/mnt/alice';
    const e = refusal(() =>
      derive(
        {},
        {
          request: { workspace: alias },
          host: dirs(alias, '/home/alice'),
          // The same directory as /home/alice, mounted again at /mnt/alice.
          after: (h) => void (h.chains[alias] = { ids: ['/', '/mnt', '/home/alice'], exists: true }),
        },
      ),
    );
    expect(e.message).toMatch(/^workspace: \/mnt\/alice is your home directory/);
  });

  it('compares identities: ~/.config symlinked into the workspace (a dotfiles repository) is refused', () => {
    const e = refusal(() =>
      derive(
        {},
        {
          after: (h) => {
            const own = h.hostState.find((s) => s.path === '/home/alice/.config/sbx')!;
            own.chain = {
              ids: ['/', '/home', '/home/alice', '/home/alice/proj', '/home/alice/proj/dotconfig'],
              exists: false,
            };
          },
        },
      ),
    );
    expect(e.message).toMatch(/^workspace: \/home\/alice\/proj contains \/home\/alice\/\.config\/sbx/);
  });

  it('fails closed when a writable bind has no chain (never probed)', () => {
    const state = hostStatePaths(['/home/alice'], {}).map((s) => ({ ...s, chain: { ids: ['/'], exists: false } }));
    const e = sbxErrorOf(() => refuseWritableHostState([{ where: 'workspace', path: '/w', real: '/w' }], state, {}));
    expect(e.code).toBe('HOST_STATE_WRITABLE');
    expect(e.message).toContain('was not probed');
  });

  it("protects sbx's own installation and the Node.js running it: code the next launch runs", () => {
    const install = {
      packageRoot: '/home/alice/proj/node_modules/sbx-sandbox',
      nodeDir: '/home/alice/.local/node/bin',
    };
    const state = hostStatePaths(['/home/alice'], {}, undefined, install);
    expect(state).toContainEqual(expect.objectContaining({ path: install.packageRoot, scope: 'tree' }));
    expect(state).toContainEqual(expect.objectContaining({ path: install.nodeDir, scope: 'tree' }));
  });

  it("protects sbx's session directories (every run's mask source and proxy sockets)", () => {
    const state = hostStatePaths(['/home/alice'], {}, '/tmp/sbx-1000');
    expect(state).toContainEqual({ path: '/tmp/sbx-1000', what: "sbx's session directories", scope: 'tree' });
  });

  it("protects the passwd entry's home and the spec's default XDG dirs too, not only the environment's", () => {
    const paths = hostStatePaths(['/tmp/ci-home', '/home/alice'], { XDG_CONFIG_HOME: '/srv/xdg' }).map((s) => s.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        '/srv/xdg/sbx',
        '/tmp/ci-home/.config/sbx',
        '/home/alice/.config/sbx',
        '/home/alice',
        '/home/alice/.bashrc',
        '/tmp/ci-home/.local/bin',
      ]),
    );
  });
});
