// The toolchain layout table (toolchains/toolchains.ts): which root each PATH entry inside HOME brings,
// what is never bound, and how the binds and the sandbox PATH follow from the runtime's facts.
import { describe, expect, it } from 'vitest';
import {
  applyToolchainEnv,
  candidateEntries,
  matchLayout,
  type ToolchainFacts,
  toolchainMounts,
} from '../../../src/toolchains/toolchains.js';

const HOME = '/home/alice';

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
    ['.local/bin', 'local bin', ['.local/bin'], {}],
    ['bin', 'local bin', ['bin'], {}],
    ['tools/mytool/bin', 'PATH entry', ['tools/mytool/bin'], {}],
  ])('~/%s is %s with roots %j', (rel, layout, roots, env) => {
    const abs = (p: string) => `${HOME}/${p}`;
    const match = matchLayout(abs(rel), HOME);
    expect(match).toMatchObject({ kind: 'layout', layout });
    if (match.kind !== 'layout') return;
    expect(match.roots.map((r) => r.path)).toEqual(roots.map(abs));
    expect(match.env).toEqual(Object.fromEntries(Object.entries(env).map(([k, v]) => [k, abs(v)])));
  });

  it('a cargo bin without rustup is fine: ~/.rustup is optional', () => {
    const match = matchLayout(`${HOME}/.cargo/bin`, HOME);
    expect(match.kind === 'layout' && match.roots).toEqual([
      { path: `${HOME}/.cargo/bin`, optional: false },
      { path: `${HOME}/.rustup`, optional: true },
    ]);
  });

  it.each(['', '.config', '.local', '.local/share', '.local/state', '.cache'])(
    'never binds ~/%s (it holds the dotfiles)',
    (rel) => {
      const match = matchLayout(rel === '' ? HOME : `${HOME}/${rel}`, HOME);
      expect(match).toMatchObject({ kind: 'skip', why: expect.stringMatching(/dotfiles: never bound/) });
    },
  );

  it('never binds what resolves outside HOME (system directories are bound already)', () => {
    expect(matchLayout('/opt/tool/bin', HOME)).toMatchObject({ kind: 'skip' });
    expect(matchLayout('/home/alicia/.nvm/versions/node/v1/bin', HOME)).toMatchObject({ kind: 'skip' });
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
    expect(candidateEntries(path, HOME, { XDG_RUNTIME_DIR: '/run/user/1000' })).toEqual([
      `${HOME}/.nvm/versions/node/v20.1.0/bin`,
      '/run/user/1000/fnm_multishells/123_456/bin',
      `${HOME}/.cargo/bin`,
    ]);
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
