// toolchains/host/toolchain-probe.ts on a real temp HOME and a tool cache beside it: what it pins and
// binds, and what it refuses because someone else could write it (other local users are adversaries),
// with the reason explain shows.
import { chmodSync, chownSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openPins, type Pins } from '../../../../src/host/pins.js';
import { probeToolchains, type ToolchainProbeInput } from '../../../../src/toolchains/host/toolchain-probe.js';
import type { LayoutScope } from '../../../../src/toolchains/toolchains.js';
import { makeTempDir } from '../../../helpers/tmp.js';

const uid = process.getuid?.() ?? 0;
const gid = process.getgid?.() ?? 0;
let pins: Pins | undefined;
afterEach(() => pins?.close());

const SYSTEM = ['/usr', '/bin', '/etc'];

function scopeOf(home: string, toolCache?: string): LayoutScope {
  return { home, reach: { home: true, outside: true }, system: SYSTEM, toolCache };
}

function probe(home: string, path: string[], forbidden: string[] = [], extra: Partial<ToolchainProbeInput> = {}) {
  pins = openPins();
  const env = { PATH: path.join(':') };
  return probeToolchains({ env, scope: scopeOf(home), uid, gid, forbidden, adversarial: [], ...extra }, pins);
}

function homeWith(...dirs: string[]): string {
  const home = join(makeTempDir('sbx-toolchains-'), 'home');
  for (const dir of dirs) mkdirSync(join(home, dir), { recursive: true, mode: 0o755 });
  chmodSync(home, 0o755);
  return home;
}

describe('probeToolchains', () => {
  it('binds an nvm version and a rustup pair, pinned, with their variables', () => {
    const home = homeWith('.nvm/versions/node/v20.1.0/bin', '.cargo/bin', '.rustup');
    const facts = probe(home, [`${home}/.nvm/versions/node/v20.1.0/bin`, '/usr/bin', `${home}/.cargo/bin`]);
    expect(facts.roots.map((r) => [r.layout, r.path])).toEqual([
      ['nvm', `${home}/.nvm/versions/node/v20.1.0`],
      ['rustup', `${home}/.cargo/bin`],
      ['rustup', `${home}/.rustup`],
    ]);
    expect(facts.env).toEqual({ RUSTUP_HOME: `${home}/.rustup` });
    expect(facts.skipped).toEqual([]);
    for (const r of facts.roots) expect(pins?.fdOf(r.path)).toEqual(expect.any(Number));
  });

  it('refuses a root everyone may write, and says why', () => {
    const home = homeWith('.volta/bin');
    chmodSync(join(home, '.volta'), 0o777);
    const facts = probe(home, [`${home}/.volta/bin`]);
    expect(facts.roots).toEqual([]);
    expect(facts.skipped).toEqual([{ entry: `${home}/.volta/bin`, why: `${home}/.volta is writable by every user` }]);
  });

  it.skipIf(uid !== 0)('refuses a root another user owns (needs root to chown: skipped otherwise)', () => {
    const home = homeWith('go/bin');
    chownSync(join(home, 'go', 'bin'), 1234, 1234);
    const facts = probe(home, [`${home}/go/bin`]);
    expect(facts.skipped).toEqual([
      { entry: `${home}/go/bin`, why: `${home}/go/bin belongs to another user (uid 1234)` },
    ]);
  });

  it('never binds HOME, ~/.config, or a root overlapping a credential store', () => {
    const home = homeWith('.config', '.aws/bin');
    const facts = probe(home, [home, `${home}/.config`, `${home}/.aws/bin`], [`${home}/.aws`]);
    expect(facts.roots).toEqual([]);
    expect(facts.skipped.map((s) => s.why)).toEqual([
      'HOME itself holds your dotfiles: never bound',
      '~/.config holds your dotfiles: never bound',
      `${home}/.aws/bin overlaps a credential store, sbx's own state or the runner's files`,
    ]);
  });

  it('follows ~/.local/bin links to a pipx venv (its root) and to a program (the file), not to a key', () => {
    const home = homeWith('.local/bin', '.local/share/pipx/venvs/black/bin', 'apps', 'keys');
    writeFileSync(join(home, '.local/share/pipx/venvs/black/bin/black'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(home, 'apps/tool'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(home, 'keys/id'), 'secret\n', { mode: 0o600 });
    symlinkSync('../share/pipx/venvs/black/bin/black', join(home, '.local/bin/black'));
    symlinkSync(join(home, 'apps/tool'), join(home, '.local/bin/tool'));
    symlinkSync(join(home, 'keys/id'), join(home, '.local/bin/id'));
    const facts = probe(home, [`${home}/.local/bin`]);
    expect(facts.roots.map((r) => [r.layout, r.path]).sort()).toEqual(
      [
        ['local bin', `${home}/.local/bin`],
        ['pipx', `${home}/.local/share/pipx/venvs/black`],
        ['link target', `${home}/apps/tool`],
      ].sort(),
    );
  });

  it("resolves a linked entry (fnm's per-shell link) to the version it points to", () => {
    const home = homeWith('.local/share/fnm/node-versions/v22.0.0/installation/bin');
    const shells = join(home, '..', 'run', 'fnm_multishells');
    mkdirSync(shells, { recursive: true });
    symlinkSync(join(home, '.local/share/fnm/node-versions/v22.0.0/installation'), join(shells, '1_2'));
    pins = openPins();
    const env = { PATH: `${shells}/1_2/bin`, XDG_RUNTIME_DIR: join(home, '..', 'run') };
    const facts = probeToolchains({ env, scope: scopeOf(home), uid, gid, forbidden: [], adversarial: [] }, pins);
    const version = `${home}/.local/share/fnm/node-versions/v22.0.0/installation`;
    expect(facts.roots.map((r) => r.path)).toEqual([version]);
    expect(facts.resolved).toEqual({ [`${shells}/1_2/bin`]: `${version}/bin` });
  });

  it('binds a virtualenv whole (pyvenv.cfg, lib/) and keeps VIRTUAL_ENV when it names it', () => {
    const home = homeWith('.virtualenvs/proj/bin', '.virtualenvs/proj/lib/python3.11/site-packages');
    const venv = join(home, '.virtualenvs/proj');
    writeFileSync(join(venv, 'pyvenv.cfg'), 'home = /usr/bin\n');
    symlinkSync('/usr/bin/python3', join(venv, 'bin/python'));
    const facts = probe(home, [join(venv, 'bin')], [], { virtualEnv: venv });
    expect(facts.roots.map((r) => [r.layout, r.path])).toEqual([['virtualenv', venv]]);
    expect(facts.env).toEqual({ VIRTUAL_ENV: venv });
    // Its python links outside HOME (the system's): nothing more to bind.
    expect(facts.skipped).toEqual([]);
  });

  it("binds a virtualenv's interpreter when it is a toolchain in HOME (a pyenv version)", () => {
    const home = homeWith('.virtualenvs/proj/bin', '.pyenv/versions/3.12.1/bin');
    const venv = join(home, '.virtualenvs/proj');
    writeFileSync(join(venv, 'pyvenv.cfg'), `home = ${home}/.pyenv/versions/3.12.1/bin\n`);
    writeFileSync(join(home, '.pyenv/versions/3.12.1/bin/python3.12'), '#!/bin/sh\n', { mode: 0o755 });
    symlinkSync(join(home, '.pyenv/versions/3.12.1/bin/python3.12'), join(venv, 'bin/python'));
    const facts = probe(home, [join(venv, 'bin')]);
    expect(facts.roots.map((r) => [r.layout, r.path])).toEqual([
      ['virtualenv', venv],
      ['pyenv', join(home, '.pyenv/versions/3.12.1')],
    ]);
    expect(facts.env).toEqual({});
  });

  it('binds a tool cache version outside HOME, setup-node and setup-python style; not one everyone may write', () => {
    const base = makeTempDir('sbx-toolcache-');
    const home = homeWith('bin');
    const cache = join(base, 'hostedtoolcache');
    const node = join(cache, 'node/20.11.0/x64');
    const python = join(cache, 'Python/3.12.3/x64');
    mkdirSync(join(node, 'bin'), { recursive: true });
    mkdirSync(join(python, 'bin'), { recursive: true });
    pins = openPins();
    const env = { PATH: [`${node}/bin`, python, `${python}/bin`, '/usr/bin'].join(':') };
    const input = { env, scope: scopeOf(home, cache), uid, gid, forbidden: [], adversarial: [] };
    const facts = probeToolchains(input, pins);
    expect(facts.roots.map((r) => [r.layout, r.path])).toEqual([
      ['tool cache', node],
      ['tool cache', python],
    ]);
    expect(facts.skipped).toEqual([]);
    // The runner image makes its tool cache world-writable: refused elsewhere, the job's own inside a job.
    chmodSync(cache, 0o777);
    pins.close();
    pins = openPins();
    expect(probeToolchains(input, pins).skipped).toEqual([
      { entry: `${node}/bin`, why: `${cache} is writable by every user` },
      { entry: python, why: `${cache} is writable by every user` },
      { entry: `${python}/bin`, why: `${cache} is writable by every user` },
    ]);
    pins.close();
    pins = openPins();
    expect(probeToolchains({ ...input, jobToolCache: cache }, pins).roots.map((r) => r.path)).toEqual([node, python]);
  });

  it('never binds an entry outside HOME that holds the runner files, or lies in a writable tree', () => {
    const base = makeTempDir('sbx-outside-');
    const home = homeWith('bin');
    const temp = join(base, 'runner-temp');
    mkdirSync(join(temp, '_runner_file_commands'), { recursive: true });
    const envFile = join(temp, '_runner_file_commands', 'set_env_1');
    writeFileSync(envFile, 'TOKEN<<EOF\nx\nEOF\n');
    mkdirSync(join(base, 'ws/bin'), { recursive: true });
    const facts = probe(home, [temp, join(base, 'ws/bin')], [envFile], { adversarial: [join(base, 'ws')] });
    expect(facts.roots).toEqual([]);
    expect(facts.skipped).toEqual([
      { entry: temp, why: `${temp} overlaps a credential store, sbx's own state or the runner's files` },
      { entry: join(base, 'ws/bin'), why: expect.stringMatching(/^lies in the workspace/), shown: true },
    ]);
  });
});
