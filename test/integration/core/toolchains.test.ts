// The user's own toolchains, as nvm, pyenv and rustup lay them out in HOME, through the real CLI on
// the bwrap and landlock backends: the tool on PATH runs inside (beside an unsandboxed control, and
// a `toolchains: false` control that gets 127), its root is read-only, and the credentials planted
// inside it (a node prefix's etc/npmrc, ~/.cargo/credentials.toml) are unreadable.
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RACY_MARGIN_MS } from '../../../src/sensitive/host/scan-cache.js';
import { REPO_ROOT } from '../../helpers/paths.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  runSbxRaw,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { place } from '../toolchains/tool-cache.js';

const MARKER = `TOOLCHAIN-SECRET-${process.pid}`;
const NODE_VERSION = process.version;
const TIMEOUT_MS = 180_000;
const RUST_TRIPLE = 'stable-x86_64-unknown-linux-gnu';
const NPM_SOURCE = '/usr/lib/node_modules/npm';
const HELPER = join(REPO_ROOT, 'dist', 'sbx-landlock');

let t: TestHost;
let nodeRoot: string;
let rustSkip: string | undefined;

/** nvm: ~/.nvm/versions/node/vX/{bin/node, bin/npm, lib/node_modules/npm}, with a token in its global npmrc. */
function buildNvm(home: string): string {
  const root = join(home, '.nvm', 'versions', 'node', NODE_VERSION);
  mkdirSync(join(root, 'bin'), { recursive: true });
  place(process.execPath, join(root, 'bin', 'node'));
  cpSync(NPM_SOURCE, join(root, 'lib', 'node_modules', 'npm'), { recursive: true });
  symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(root, 'bin', 'npm'));
  mkdirSync(join(root, 'etc'));
  writeFileSync(join(root, 'etc', 'npmrc'), `//registry.npmjs.org/:_authToken=${MARKER}\n`);
  return root;
}

/**
 * pyenv: a shim as `pyenv rehash` writes it (PYENV_ROOT baked in), a `libexec/pyenv` that picks the
 * version from PYENV_VERSION, the nearest .python-version, or $PYENV_ROOT/version as pyenv does, and a
 * version whose python is the system's.
 */
function buildPyenv(home: string): void {
  const root = join(home, '.pyenv');
  for (const dir of ['shims', 'libexec', 'versions/3.11.2/bin']) mkdirSync(join(root, dir), { recursive: true });
  symlinkSync('/usr/bin/python3', join(root, 'versions/3.11.2/bin/python3'));
  writeFileSync(join(root, 'version'), 'system\n');
  const shim =
    '#!/usr/bin/env bash\nset -e\nprogram="${0##*/}"\n' +
    `export PYENV_ROOT="${root}"\nexec "${root}/libexec/pyenv" exec "$program" "$@"\n`;
  writeFileSync(join(root, 'shims', 'python3'), shim, { mode: 0o755 });
  const pyenv =
    '#!/usr/bin/env bash\nset -e\n[ "$1" = exec ] || exit 2\nshift\nprogram="$1"; shift\n' +
    'v="$PYENV_VERSION"; d="$PWD"\n' +
    'while [ -z "$v" ] && [ -n "$d" ]; do [ -f "$d/.python-version" ] && v="$(cat "$d/.python-version")"; d="${d%/*}"; done\n' +
    '[ -n "$v" ] || v="$(cat "$PYENV_ROOT/version")"\n' +
    'exec "$PYENV_ROOT/versions/$v/bin/$program" "$@"\n';
  writeFileSync(join(root, 'libexec', 'pyenv'), pyenv, { mode: 0o755 });
}

/** Where a readable rust toolchain (bin/, lib/) and rustup binary are, or why there is none. */
function rustSource(): { toolchain: string; rustup: string } | string {
  const given = process.env.SBX_TEST_RUST_TOOLCHAIN;
  const candidates = [
    ...(given ? [{ toolchain: given, rustup: join(given, 'rustup') }] : []),
    {
      toolchain: join(homedir(), '.rustup', 'toolchains', RUST_TRIPLE),
      rustup: join(homedir(), '.cargo', 'bin', 'rustup'),
    },
  ];
  const found = candidates.find((c) => existsSync(join(c.toolchain, 'bin', 'cargo')) && existsSync(c.rustup));
  return found ?? 'no rust toolchain readable here (rustup stable in ~/.rustup, or SBX_TEST_RUST_TOOLCHAIN naming one)';
}

/** rustup: ~/.cargo/bin/{rustup, cargo → rustup, rustc → rustup}, ~/.rustup/{settings.toml, toolchains/…}, hard-linked. */
function buildRustup(home: string): string | undefined {
  const source = rustSource();
  if (typeof source === 'string') return source;
  const bin = join(home, '.cargo', 'bin');
  const toolchain = join(home, '.rustup', 'toolchains', RUST_TRIPLE);
  mkdirSync(bin, { recursive: true });
  mkdirSync(toolchain, { recursive: true });
  // Hundreds of MiB: hard links only (as root, or from a copy this user owns).
  const cp = spawnSync('cp', ['-al', join(source.toolchain, 'bin'), join(source.toolchain, 'lib'), toolchain]);
  if (cp.status !== 0)
    return `cannot hard-link the rust toolchain from ${source.toolchain}: ${cp.stderr.toString().trim()}`;
  place(source.rustup, join(bin, 'rustup'));
  for (const proxy of ['cargo', 'rustc']) symlinkSync('rustup', join(bin, proxy));
  writeFileSync(
    join(home, '.rustup', 'settings.toml'),
    `version = "12"\ndefault_toolchain = "${RUST_TRIPLE}"\nprofile = "default"\n\n[overrides]\n`,
  );
  writeFileSync(join(home, '.cargo', 'credentials.toml'), `[registry]\ntoken = "${MARKER}"\n`);
  return undefined;
}

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  if (!existsSync(HELPER)) throw new Error(`${HELPER} is missing: run npm run build (with a C compiler) first`);
  t = makeTestHost('toolchains');
  chmodSync(t.home, 0o755);
  nodeRoot = buildNvm(t.home);
  buildPyenv(t.home);
  rustSkip = buildRustup(t.home);
  t.env.PATH = [
    join(nodeRoot, 'bin'),
    join(t.home, '.pyenv', 'shims'),
    join(t.home, '.cargo', 'bin'),
    '/usr/local/bin:/usr/bin:/bin',
  ].join(':');
  const profiles = join(t.configHome, 'sbx', 'profiles');
  mkdirSync(profiles, { recursive: true, mode: 0o700 });
  writeFileSync(join(profiles, 'notools.yaml'), 'extends: default\ntoolchains: false\n', { mode: 0o600 });
  writeFileSync(
    join(t.workspace, 'package.json'),
    JSON.stringify({ name: 'w', version: '1.0.0', scripts: { test: 'node test.js' } }),
  );
  writeFileSync(join(t.workspace, 'test.js'), 'console.log(`node-ran ${process.execPath}`);\n');
  writeFileSync(join(t.workspace, '.python-version'), '3.11.2\n');
  writeFileSync(
    join(t.workspace, 'test_unit.py'),
    'import sys, unittest\nclass T(unittest.TestCase):\n    def test_ok(self):\n        self.assertTrue(sys.version)\n',
  );
  writeFileSync(join(t.workspace, 'Cargo.toml'), '[package]\nname = "hello"\nversion = "0.1.0"\nedition = "2021"\n');
  mkdirSync(join(t.workspace, 'src'));
  writeFileSync(join(t.workspace, 'src', 'main.rs'), 'fn main() { println!("rust-ran"); }\n');
}, TIMEOUT_MS);
afterAll(() => t?.cleanup());

const opts = () => ({ env: t.env, cwd: t.workspace, timeoutMs: TIMEOUT_MS });
const sbx = (backend: string, command: string[], profile = 'default') =>
  runSbx(['--backend', backend, '-p', profile, '--', ...command], opts());

describe.skipIf(SKIP_INTEGRATION).each(['bwrap', 'landlock'])('toolchains on PATH under --backend %s', (backend) => {
  it(
    'nvm: npm test runs with the nvm node, writes its cache, and the root stays read-only',
    async () => {
      const host = await runHost(['npm', 'test'], opts());
      expect(host.code, host.err).toBe(0);
      expect(host.out).toContain(`node-ran ${join(nodeRoot, 'bin', 'node')}`);
      // Without the toolchain, the system's npm and node run instead: silently another version.
      const off = await sbx(backend, ['npm', 'test'], 'notools');
      expect(off.out).not.toContain(`node-ran ${nodeRoot}`);
      const ran = await sbx(backend, ['npm', 'test']);
      expect(ran.code, ran.err).toBe(0);
      expect(ran.out).toContain(`node-ran ${join(nodeRoot, 'bin', 'node')}`);
      const probe = [
        `cat ${nodeRoot}/etc/npmrc; echo "npmrc:$?"`,
        `touch ${nodeRoot}/bin/planted 2>/dev/null; echo "write:$?"`,
        'ls "$HOME/.npm" >/dev/null 2>&1; echo "cache:$?"',
      ].join('; ');
      const inside = await sbx(backend, ['sh', '-c', `npm test >/dev/null 2>&1; ${probe}`]);
      expect(inside.code, inside.err).toBe(0);
      expect(inside.out).not.toContain(MARKER);
      expect(inside.out).toMatch(/write:[1-9]/);
      expect(inside.out).toContain('cache:0');
      expect(existsSync(join(nodeRoot, 'bin', 'planted'))).toBe(false);
      const control = await runHost(['cat', join(nodeRoot, 'etc', 'npmrc')], opts());
      expect(control.out).toContain(MARKER);
    },
    TIMEOUT_MS,
  );

  it(
    "pyenv: the shim picks the workspace's .python-version and python -m unittest passes",
    async () => {
      const which = ['python3', '-c', 'import sys; print(sys.executable)'];
      const version = join(t.home, '.pyenv', 'versions', '3.11.2', 'bin', 'python3');
      const host = await runHost(which, opts());
      expect(host.out.trim(), host.err).toBe(version);
      // Without the toolchain, the system's python3 runs instead.
      const off = await sbx(backend, which, 'notools');
      expect(off.out.trim(), off.err).not.toBe(version);
      const ran = await sbx(backend, which);
      expect(ran.out.trim(), ran.err).toBe(version);
      const unit = await sbx(backend, ['python3', '-m', 'unittest', '-v', 'test_unit']);
      expect(unit.code, unit.err).toBe(0);
      expect(unit.err).toContain('OK');
      const write = await sbx(backend, ['sh', '-c', `echo x > ${t.home}/.pyenv/version`]);
      expect(write.code).not.toBe(0);
    },
    TIMEOUT_MS,
  );

  it(
    'rustup: cargo builds and runs a crate; ~/.cargo/credentials.toml stays out',
    async (ctx) => {
      if (rustSkip) ctx.skip(rustSkip);
      const command = ['cargo', 'run', '--offline', '-q'];
      const host = await runHost(['cargo', '--version'], opts());
      expect(host.code, host.err).toBe(0);
      expect((await sbx(backend, command, 'notools')).code).toBe(127);
      const ran = await sbx(backend, command);
      expect(ran.code, ran.err).toBe(0);
      expect(ran.out).toContain('rust-ran');
      const probe = `cat ${t.home}/.cargo/credentials.toml; touch ${t.home}/.rustup/planted; echo "write:$?"`;
      const inside = await sbx(backend, ['sh', '-c', probe]);
      expect(inside.out).not.toContain(MARKER);
      expect(inside.out).toMatch(/write:[1-9]/);
      expect(existsSync(join(t.home, '.rustup', 'planted'))).toBe(false);
    },
    TIMEOUT_MS,
  );
});

describe.skipIf(SKIP_INTEGRATION)('the toolchain scan kept between runs (sensitive/host/scan-cache.ts)', () => {
  it(
    'a secret added deep in a kept toolchain is masked on the next run; a kept secret stays masked',
    async () => {
      const deep = join(t.home, '.pyenv', 'versions', '3.11.2', 'etc', 'keys');
      mkdirSync(deep, { recursive: true });
      // Past the racy margin: the tree counts as settled, so the first run keeps its scan.
      await new Promise((resolve) => setTimeout(resolve, RACY_MARGIN_MS + 300));
      const first = await sbx('bwrap', ['true']);
      expect(first.code, first.err).toBe(0);
      // Every toolchain root's walk is kept, nvm's too (a match, no repository at its root).
      const explain = await runSbxRaw(['explain', '--json', '--', 'true'], opts());
      const roots = (JSON.parse(explain.out) as { policy: { mounts: { reason: string }[] } }).policy.mounts.filter(
        (m) => m.reason.startsWith('toolchain ('),
      );
      const kept = readdirSync(join(t.cacheHome, 'sbx')).filter((f) => f.startsWith('tree-scan-'));
      expect(roots.length).toBeGreaterThanOrEqual(2);
      expect(kept.length).toBe(roots.length);
      writeFileSync(join(deep, 'credentials'), MARKER);
      const control = await runHost(['cat', join(deep, 'credentials')], opts());
      expect(control.out).toContain(MARKER);
      for (const backend of ['bwrap', 'landlock']) {
        // Masked: an empty file where the secret was.
        const inside = await sbx(backend, ['sh', '-c', `cat ${deep}/credentials ${nodeRoot}/etc/npmrc; echo "rc:$?"`]);
        expect(inside.out, inside.err).toContain('rc:');
        expect(inside.out).not.toContain(MARKER);
      }
    },
    TIMEOUT_MS,
  );
});

describe.skipIf(SKIP_INTEGRATION)('a PATH entry the repository can redirect', () => {
  it(
    'is never bound: a link planted in the workspace, or any link to a directory of no known layout',
    async () => {
      const secret = join(t.home, 'diary');
      mkdirSync(secret, { recursive: true, mode: 0o700 });
      writeFileSync(join(secret, 'notes.txt'), MARKER);
      // The sandbox (or the cloned repository) turned the workspace's .venv/bin into a link to HOME's
      // diary; HOME's own link to that venv is what the PATH names.
      mkdirSync(join(t.workspace, '.venv'), { recursive: true });
      symlinkSync(secret, join(t.workspace, '.venv', 'bin'));
      symlinkSync(join(t.workspace, '.venv'), join(t.home, 'venv-link'));
      // A link in HOME to a directory that no toolchain layout knows.
      symlinkSync(secret, join(t.home, 'alias-bin'));
      const entries = [join(t.home, 'venv-link', 'bin'), join(t.home, 'alias-bin')];
      for (const entry of entries) {
        const env = { ...t.env, PATH: `${entry}:${t.env.PATH}` };
        const control = await runHost(['cat', join(entry, 'notes.txt')], { ...opts(), env });
        expect(control.out).toContain(MARKER);
        const inside = await runSbx(['--', 'cat', join(secret, 'notes.txt')], { ...opts(), env });
        expect(inside.out).not.toContain(MARKER);
        expect(inside.code).not.toBe(0);
        const explain = await runSbxRaw(['explain', '--', 'true'], { ...opts(), env });
        expect(explain.out).toContain(`toolchain not shown: ${entry}: is reached through`);
      }
    },
    TIMEOUT_MS,
  );
});

describe.skipIf(SKIP_INTEGRATION)('toolchains in explain', () => {
  it(
    'lists each toolchain bind with its PATH entry, and refuses a directory every user may write',
    async () => {
      // Another local user could swap or plant a program in a world-writable directory on the PATH.
      const shared = join(t.home, 'shared', 'bin');
      mkdirSync(shared, { recursive: true });
      chmodSync(shared, 0o777);
      writeFileSync(join(shared, 'shared-tool'), '#!/bin/sh\necho shared-ran\n', { mode: 0o755 });
      const env = { ...t.env, PATH: `${shared}:${t.env.PATH}` };
      const control = await runHost(['shared-tool'], { ...opts(), env });
      expect(control.out).toContain('shared-ran');
      const ran = await runSbx(['--', 'shared-tool'], { ...opts(), env });
      expect(ran.code).toBe(127);
      expect(ran.err).toContain('`sbx explain` says why 1 PATH entry in HOME is not shown');
      const explain = await runSbxRaw(['explain', '--', 'npm', 'test'], { ...opts(), env });
      expect(explain.code, explain.err).toBe(0);
      const lines = explain.out.split('\n');
      expect(lines).toContain(`toolchain not shown: ${shared}: ${shared} is writable by every user`);
      expect(lines.find((l) => l.includes(`toolchain (nvm): PATH entry ${nodeRoot}/bin`))).toMatch(/^\s+ro\s/);
      expect(lines.find((l) => l.includes('toolchain (pyenv): PATH entry'))).toContain(`${t.home}/.pyenv `);
    },
    TIMEOUT_MS,
  );
});
