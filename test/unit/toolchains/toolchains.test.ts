// The toolchain layout table (toolchains/toolchains.ts): which root each PATH entry brings (inside
// HOME, a virtualenv, a CI tool cache outside it), what is never bound, and how the binds, the notice
// of dropped entries and the sandbox PATH follow from the runtime's facts.
import { describe, expect, it } from 'vitest';
import {
  applyToolchainEnv,
  candidateEntries,
  droppedPathNotice,
  factsWithinReach,
  type LayoutScope,
  matchLayout,
  reachOf,
  type ToolchainFacts,
  toolchainMounts,
} from '../../../src/toolchains/toolchains.js';

const HOME = '/home/alice';
const CACHE = '/opt/hostedtoolcache';
const SCOPE: LayoutScope = {
  home: HOME,
  reach: { home: true, outside: true },
  system: ['/usr', '/bin', '/etc', '/usr/bin'],
  toolCache: CACHE,
};
const MACHINE: LayoutScope = { ...SCOPE, reach: { home: false, outside: true } };

describe('matchLayout', () => {
  it.each([
    ['.nvm/versions/node/v20.1.0/bin', 'nvm', ['.nvm/versions/node/v20.1.0'], {}],
    [
      '.local/share/fnm/node-versions/v22.0.0/installation/bin',
      'fnm',
      ['.local/share/fnm/node-versions/v22.0.0/installation'],
      {},
    ],
    ['.volta/bin', 'volta', ['.volta'], { VOLTA_HOME: '.volta' }],
    ['.pyenv/shims', 'pyenv', ['.pyenv'], { PYENV_ROOT: '.pyenv' }],
    ['.pyenv/plugins/pyenv-virtualenv/shims', 'pyenv', ['.pyenv'], { PYENV_ROOT: '.pyenv' }],
    ['.pyenv/versions/3.12.1/bin', 'pyenv', ['.pyenv/versions/3.12.1'], {}],
    ['.rbenv/shims', 'rbenv', ['.rbenv'], { RBENV_ROOT: '.rbenv' }],
    ['.cargo/bin', 'rustup', ['.cargo/bin', '.rustup'], { RUSTUP_HOME: '.rustup' }],
    ['go/bin', 'go', ['go/bin'], {}],
    ['sdk/go1.22.1/bin', 'go', ['sdk/go1.22.1'], {}],
    ['.local/go/bin', 'go', ['.local/go'], {}],
    ['.sdkman/candidates/java/21.0.1-tem/bin', 'sdkman', ['.sdkman/candidates/java/21.0.1-tem'], {}],
    ['.asdf/shims', 'asdf', ['.asdf'], { ASDF_DIR: '.asdf', ASDF_DATA_DIR: '.asdf' }],
    ['.local/share/mise/shims', 'mise', ['.local/share/mise'], { MISE_DATA_DIR: '.local/share/mise' }],
    ['.local/share/mise/installs/node/22.1.0/bin', 'mise', ['.local/share/mise/installs/node/22.1.0'], {}],
    ['.deno/bin', 'deno', ['.deno/bin'], {}],
    ['.bun/bin', 'bun', ['.bun/bin'], {}],
    ['.local/share/pnpm', 'pnpm', ['.local/share/pnpm'], {}],
    ['.local/share/pipx/venvs/black/bin', 'pipx', ['.local/share/pipx/venvs/black'], {}],
    [
      '.local/share/uv/python/cpython-3.12.1-linux-x86_64-gnu/bin',
      'uv',
      ['.local/share/uv/python/cpython-3.12.1-linux-x86_64-gnu'],
      {},
    ],
    ['.local/bin', 'local bin', ['.local/bin'], {}],
    ['bin', 'local bin', ['bin'], {}],
    ['tools/mytool/bin', 'PATH entry', ['tools/mytool/bin'], {}],
  ])('~/%s is %s with roots %j', (rel, layout, roots, env) => {
    const abs = (p: string) => `${HOME}/${p}`;
    const match = matchLayout(abs(rel), SCOPE);
    expect(match).toMatchObject({ kind: 'layout', layout });
    if (match.kind !== 'layout') return;
    expect(match.roots.map((r) => r.path)).toEqual(roots.map(abs));
    expect(match.env).toEqual(Object.fromEntries(Object.entries(env).map(([k, v]) => [k, abs(v)])));
  });

  it('a cargo bin without rustup is fine: ~/.rustup is optional', () => {
    const match = matchLayout(`${HOME}/.cargo/bin`, SCOPE);
    expect(match.kind === 'layout' && match.roots).toEqual([
      { path: `${HOME}/.cargo/bin`, optional: false },
      { path: `${HOME}/.rustup`, optional: true },
    ]);
  });

  it.each(['', '.config', '.local', '.local/share', '.local/state', '.cache'])(
    'never binds ~/%s (it holds the dotfiles)',
    (rel) => {
      const match = matchLayout(rel === '' ? HOME : `${HOME}/${rel}`, SCOPE);
      expect(match).toMatchObject({ kind: 'skip', why: expect.stringMatching(/dotfiles: never bound/) });
    },
  );

  it('a bin/ beside a pyvenv.cfg is a virtualenv: its whole root, and VIRTUAL_ENV when it names it', () => {
    const env = `${HOME}/.virtualenvs/proj`;
    expect(matchLayout(`${env}/bin`, SCOPE, { venv: true, virtualEnv: env })).toEqual({
      kind: 'layout',
      layout: 'virtualenv',
      roots: [{ path: env, optional: false }],
      env: { VIRTUAL_ENV: env },
    });
    const poetry = `${HOME}/.cache/pypoetry/virtualenvs/proj-x1-py3.11`;
    expect(matchLayout(`${poetry}/bin`, SCOPE, { venv: true, virtualEnv: env })).toMatchObject({
      layout: 'virtualenv',
      roots: [{ path: poetry }],
      env: {},
    });
    // Without the pyvenv.cfg, the same directory is bound alone, as before.
    expect(matchLayout(`${env}/bin`, SCOPE)).toMatchObject({ layout: 'PATH entry', roots: [{ path: `${env}/bin` }] });
    // A known layout wins, and a virtualenv's root is never a place that holds dotfiles.
    expect(matchLayout(`${HOME}/.local/bin`, SCOPE, { venv: true })).toMatchObject({ layout: 'local bin' });
    expect(matchLayout(`${HOME}/.config/bin`, SCOPE, { venv: true })).toMatchObject({
      kind: 'skip',
      why: expect.stringMatching(/^its virtualenv .*\.config: ~\/\.config holds your dotfiles/),
    });
  });

  it.each([
    [`${CACHE}/node/20.11.0/x64/bin`, 'tool cache', `${CACHE}/node/20.11.0/x64`],
    [`${CACHE}/Python/3.12.3/x64/bin`, 'tool cache', `${CACHE}/Python/3.12.3/x64`],
    [`${CACHE}/Python/3.12.3/x64`, 'tool cache', `${CACHE}/Python/3.12.3/x64`],
    [`${CACHE}/node/20.11.0`, 'PATH entry', `${CACHE}/node/20.11.0`],
    ['/opt/tool/bin', 'PATH entry', '/opt/tool/bin'],
  ])('outside HOME, %s is %s with root %s', (real, layout, root) => {
    expect(matchLayout(real, SCOPE)).toEqual({
      kind: 'layout',
      layout,
      roots: [{ path: root, optional: false }],
      env: {},
    });
  });

  it('outside HOME: a system directory is shown already; what holds HOME or the system is never bound', () => {
    expect(matchLayout('/usr/local/bin', SCOPE)).toMatchObject({ kind: 'skip', shown: true });
    expect(matchLayout('/', SCOPE)).toMatchObject({ kind: 'skip', why: 'holds HOME: never bound' });
    expect(matchLayout('/home', SCOPE)).toMatchObject({ kind: 'skip', why: 'holds HOME: never bound' });
    // Where daemons keep their sockets, which a read-only bind still lets the sandbox connect to.
    expect(matchLayout('/var', SCOPE)).toMatchObject({ kind: 'skip', why: 'holds system directories: never bound' });
    expect(matchLayout('/run/user/1000/bin', SCOPE)).toMatchObject({
      kind: 'skip',
      why: expect.stringMatching(/\/run\): never bound$/),
    });
    expect(matchLayout('/var/lib/flatpak/exports/bin', SCOPE)).toMatchObject({ layout: 'PATH entry' });
    expect(matchLayout('/srv', { ...SCOPE, system: ['/srv/sys'] })).toMatchObject({
      kind: 'skip',
      why: 'holds system directories: never bound',
    });
    expect(matchLayout(`${CACHE}/node/20.11.0/x64/bin`, { ...SCOPE, toolCache: undefined })).toMatchObject({
      layout: 'PATH entry',
    });
  });

  it('which entries a profile shows: true both, machine outside HOME only, false none', () => {
    expect(reachOf(true)).toEqual({ home: true, outside: true });
    expect(reachOf('machine')).toEqual({ home: false, outside: true });
    expect(reachOf(false)).toBeUndefined();
    expect(reachOf(undefined)).toBeUndefined();
    expect(matchLayout(`${HOME}/.nvm/versions/node/v20.1.0/bin`, MACHINE)).toMatchObject({
      kind: 'skip',
      why: 'in HOME, which toolchains: machine keeps private',
    });
    expect(matchLayout(`${CACHE}/node/20.11.0/x64/bin`, MACHINE)).toMatchObject({ layout: 'tool cache' });
    const homeOnly = { ...SCOPE, reach: { home: true, outside: false } };
    expect(matchLayout('/opt/tool/bin', homeOnly)).toMatchObject({ kind: 'skip' });
  });
});

describe('candidateEntries', () => {
  it("keeps absolute entries inside HOME and fnm's per-shell links, in order, once each", () => {
    const path = [
      `${HOME}/.nvm/versions/node/v20.1.0/bin/`,
      '/usr/bin',
      'relative/bin',
      `${HOME}/../bob/bin`,
      '/run/user/1000/fnm_multishells/123_456/bin',
      `${HOME}/.cargo/bin`,
      `${HOME}/.cargo/bin`,
      '',
    ].join(':');
    const homeOnly = { ...SCOPE, reach: { home: true, outside: false } };
    expect(candidateEntries(path, homeOnly, { XDG_RUNTIME_DIR: '/run/user/1000' })).toEqual([
      `${HOME}/.nvm/versions/node/v20.1.0/bin`,
      '/run/user/1000/fnm_multishells/123_456/bin',
      `${HOME}/.cargo/bin`,
    ]);
  });

  it('keeps entries outside HOME when the profile shows them, not the system binds nor the kernel trees', () => {
    const path = [
      '/usr/local/bin',
      `${CACHE}/node/20.11.0/x64/bin`,
      '/proc/self/cwd',
      '/bin',
      '/opt/x/bin',
      '/dev/shm',
    ];
    expect(candidateEntries(path.join(':'), MACHINE, {})).toEqual([`${CACHE}/node/20.11.0/x64/bin`, '/opt/x/bin']);
  });
});

const FACTS: ToolchainFacts = {
  roots: [
    {
      path: `${HOME}/.nvm/versions/node/v20.1.0`,
      dir: true,
      layout: 'nvm',
      entry: `${HOME}/.nvm/versions/node/v20.1.0/bin`,
    },
    { path: `${HOME}/proj/bin`, dir: true, layout: 'PATH entry', entry: `${HOME}/proj/bin` },
    { path: `${HOME}/.aws/bin`, dir: true, layout: 'PATH entry', entry: `${HOME}/.aws/bin` },
  ],
  skipped: [{ entry: HOME, why: 'HOME itself holds your dotfiles: never bound' }],
  resolved: { '/run/user/1000/fnm_multishells/1_2/bin': `${HOME}/.local/share/fnm/node-versions/v22/installation/bin` },
  env: { PYENV_ROOT: `${HOME}/.pyenv` },
  masks: [],
};

describe('toolchainMounts', () => {
  it('binds each root read-only at its own path, leaving out credential stores and the workspace', () => {
    const { mounts, skipped } = toolchainMounts(FACTS, [`${HOME}/.aws`], `${HOME}/proj`);
    expect(mounts).toEqual([
      {
        kind: 'bind',
        source: `${HOME}/.nvm/versions/node/v20.1.0`,
        target: `${HOME}/.nvm/versions/node/v20.1.0`,
        access: 'ro',
        optional: false,
        reason: `toolchain (nvm): PATH entry ${HOME}/.nvm/versions/node/v20.1.0/bin`,
        role: 'toolchain',
      },
    ]);
    expect(skipped.map((s) => s.entry)).toEqual([HOME, `${HOME}/proj/bin`, `${HOME}/.aws/bin`]);
  });

  it('binds nothing without facts (toolchains: false)', () => {
    expect(toolchainMounts(undefined, [], '/w')).toEqual({ mounts: [], skipped: [] });
  });
});

describe('factsWithinReach', () => {
  it('keeps nothing in HOME under toolchains: machine, whatever the facts hold; all under true', () => {
    const tool = {
      path: `${CACHE}/node/20.11.0/x64`,
      dir: true,
      layout: 'tool cache',
      entry: `${CACHE}/node/20.11.0/x64/bin`,
    };
    const facts = {
      ...FACTS,
      roots: [...FACTS.roots, tool],
      masks: [{ path: `${HOME}/.nvm/x/etc/npmrc`, dir: false }],
    };
    const machine = factsWithinReach(facts, { home: false, outside: true }, HOME);
    expect(machine.roots).toEqual([tool]);
    expect(machine.env).toEqual({});
    expect(machine.resolved).toEqual({});
    expect(machine.masks).toEqual([]);
    expect(machine.skipped.slice(1).map((s) => s.entry)).toEqual([
      `${HOME}/.nvm/versions/node/v20.1.0/bin`,
      `${HOME}/proj/bin`,
      `${HOME}/.aws/bin`,
    ]);
    expect(factsWithinReach(facts, { home: true, outside: true }, HOME)).toBe(facts);
  });
});

describe('droppedPathNotice', () => {
  it('names each entry the sandbox will not see, with why, in one line; none when all are shown', () => {
    const why = 'in HOME, which toolchains: machine keeps private';
    expect(
      droppedPathNotice([
        { entry: '/opt/x/bin', why: '/opt/x is writable by every user' },
        { entry: '/w/node_modules/.bin', why: 'lies in the workspace', shown: true },
        { entry: `${HOME}/.local/bin`, why },
        { entry: `${HOME}/.cargo/bin`, why },
        { entry: `${HOME}/.cargo/bin`, why },
      ]),
    ).toEqual([
      'PATH entries not shown in the sandbox (`sbx explain` lists them): /opt/x/bin (/opt/x is writable by every user); ' +
        `${HOME}/.local/bin, ${HOME}/.cargo/bin (${why})`,
    ]);
    expect(droppedPathNotice([{ entry: '/w/bin', why: 'lies in the workspace', shown: true }])).toEqual([]);
    expect(droppedPathNotice(undefined)).toEqual([]);
  });
});

describe('applyToolchainEnv', () => {
  it('rewrites linked PATH entries to their realpath and sets the variables the profile did not', () => {
    const vars = { PATH: '/run/user/1000/fnm_multishells/1_2/bin:/usr/bin', PYENV_ROOT: '/mine' };
    applyToolchainEnv(vars, { ...FACTS, env: { ...FACTS.env, RUSTUP_HOME: `${HOME}/.rustup` } });
    expect(vars).toEqual({
      PATH: `${HOME}/.local/share/fnm/node-versions/v22/installation/bin:/usr/bin`,
      PYENV_ROOT: '/mine',
      RUSTUP_HOME: `${HOME}/.rustup`,
    });
  });
});
