// sbx's own state and the host's startup files out of every sandbox's reach, whatever the layout
// (host-state/host-state.ts), end to end through bin/sbx.js and real bwrap. Each refused layout runs an
// attack script that would rename a parent of sbx's directories, plant a profile, swap a cache and
// append to ~/.bashrc: the run must refuse (125, HOST_STATE_WRITABLE), the script must not start, and
// the host must be unchanged. Beside them, the closest layouts that are allowed (a project under HOME,
// a cache below ~/.cache writable) run the same attacks for real, and the host is checked afterwards:
// the next run still uses the built-in profile, and nothing sbx reads has changed.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IS_ROOT,
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  runSbxRaw,
  SBX_BIN,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
let home: string;
let project: string;
/** The environment with sbx's directories at their XDG defaults below HOME, as most users have them. */
let env: Record<string, string>;

/** The attack: each step tolerates failure, so a step that is refused does not hide the next one. */
const ATTACK = [
  'touch "$MARKER"',
  // Where a writable cache is bound: a hard link to a startup file and a symlink to sbx's config.
  'echo "echo pwned" >> "$HOME/.bashrc"',
  'ln -f "$HOME/.bashrc" "$HOME/.cache/pip/bashrc-link"',
  'ln -sfn "$HOME/.config" "$HOME/.cache/pip/cfg"',
  'mv "$HOME/.config" "$HOME/.config.old"',
  'mkdir -p "$HOME/.config/sbx/profiles"',
  'printf "network: host\\nseccomp: off\\n" > "$HOME/.config/sbx/profiles/default.yaml"',
  'mv "$HOME/.cache" "$HOME/.cache.old"',
  'mkdir -p "$HOME/.cache/sbx" && echo poisoned > "$HOME/.cache/sbx/bwrap.json"',
  'mv "$HOME/.local" "$HOME/.local.old"',
  'mkdir -p "$HOME/.local/state/sbx" && echo "{}" > "$HOME/.local/state/sbx/trust.json"',
  'echo "echo pwned" >> "$HOME/.bashrc"',
  'true',
].join('; ');

const LEDGER = '/audit.jsonl';

/**
 * Every file below HOME with its content: what the host looks like to sbx and to the next login. The
 * audit ledger, which sbx itself appends to for each run and refusal, only as its earlier records.
 */
function snapshot(): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else out[relative(home, path)] = e.isFile() ? readFileSync(path, 'latin1') : '(other)';
    }
  };
  walk(home);
  return out;
}

/** What sbx itself writes for a run or a refusal: its caches and the ledger, in any HOME. */
const OWN = /(^|\/)(\.cache|\.local\/state|\.xdg\/cache|\.xdg\/state)\/sbx\//;

/**
 * `after` is `before` but for what sbx itself wrote: new cache entries and ledger records (appended).
 * Everything else, and every file sbx had written before, is exactly as it was.
 */
function expectUnchanged(before: Record<string, string>, after: Record<string, string>): void {
  for (const [path, content] of Object.entries(after)) {
    if (!(path in before)) expect(path, `a new file ${path}`).toMatch(OWN);
    else if (path.endsWith(LEDGER)) expect(content.startsWith(before[path]!), 'the ledger only grows').toBe(true);
    else expect(content, path).toBe(before[path]);
  }
  expect(Object.keys(before).filter((path) => !(path in after))).toEqual([]);
}

/** Where the attack's first step leaves a mark: in the workspace, which the sandbox could write. */
function marker(cwd: string, name: string): string {
  return join(cwd, `marker-${name}`);
}

describe.skipIf(SKIP_INTEGRATION)("sbx's own state and the host's startup files, whatever the layout", () => {
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    t = makeTestHost('host-state');
    home = t.home;
    project = join(home, 'proj');
    mkdirSync(project);
    mkdirSync(join(home, '.cache', 'pip'), { recursive: true });
    writeFileSync(join(home, '.bashrc'), "# the user's own\n");
    env = { ...t.env, HOME: home };
    delete env.XDG_CONFIG_HOME;
    delete env.XDG_CACHE_HOME;
    // A first run fills sbx's caches and creates its directories, as on any machine in use.
    const first = await runSbx(['--', 'true'], { env, cwd: project });
    expect(first.code, first.err).toBe(0);
  });
  afterAll(() => t?.cleanup());

  /** Runs the attack in a refused layout: 125, named, nothing started, the host unchanged. */
  async function expectRefused(name: string, args: string[], cwd: string, runEnv = env) {
    const before = snapshot();
    const mark = marker(cwd, name);
    const r = await runSbx(['--report-fd', '3', '--env', `MARKER=${mark}`, ...args, '--', 'sh', '-c', ATTACK], {
      env: runEnv,
      cwd,
      extraStdio: { 3: 'pipe' },
    });
    expect(r.code, r.err).toBe(125);
    expect(r.err).toMatch(/which no sandbox may write/);
    const report = JSON.parse(r.extra[3]!.toString()) as { error?: { code: string } };
    expect(report.error?.code).toBe('HOST_STATE_WRITABLE');
    expect(existsSync(mark), 'the attack script must not start').toBe(false);
    expectUnchanged(before, snapshot());
  }

  it('control: unsandboxed, the same script does plant a profile and append to ~/.bashrc', async () => {
    const copy = join(t.root, 'control-home');
    execFileSync('cp', ['-a', home, copy]);
    const r = await runHost(['sh', '-c', ATTACK], {
      env: { ...env, HOME: copy, MARKER: marker('control') },
      cwd: copy,
    });
    expect(r.code).toBe(0);
    expect(readFileSync(join(copy, '.config', 'sbx', 'profiles', 'default.yaml'), 'utf8')).toContain('network: host');
    expect(readFileSync(join(copy, '.bashrc'), 'utf8')).toContain('echo pwned');
  });

  it('refuses a run from ~ (the workspace is HOME)', async () => {
    await expectRefused('from-home', [], home);
  });

  it('refuses -w ~ from a project directory', async () => {
    await expectRefused('w-home', ['-w', home], project);
  });

  it('refuses a workspace that contains HOME (-w its parent)', async () => {
    await expectRefused('w-parent', ['-w', t.root], project);
  });

  it.each(['.local', '.cache', '.config'])(
    'refuses writable_roots: [~/%s] in a profile, and the same with --bind',
    async (dir) => {
      mkdirSync(join(home, dir), { recursive: true });
      const profile = join(t.root, `wr-${dir.slice(1)}.yaml`);
      writeFileSync(profile, `extends: default\nwritable_roots: ["${join(home, dir)}"]\n`);
      await expectRefused(`wr-${dir}`, ['-p', profile], project);
      await expectRefused(`bind-${dir}`, ['--bind', join(home, dir)], project);
    },
  );

  it('refuses HOME=$PWD (CI that points HOME at the checkout)', async () => {
    await expectRefused('home-pwd', [], project, { ...env, HOME: project });
  });

  it.each([
    ['XDG_CONFIG_HOME', '.xdg/config'],
    ['XDG_CACHE_HOME', '.xdg/cache'],
    ['XDG_STATE_HOME', '.xdg/state'],
    ['XDG_RUNTIME_DIR', '.xdg/run'],
  ])('refuses a workspace that holds %s', async (name, rel) => {
    await expectRefused(`xdg-${name}`, [], project, { ...env, [name]: join(project, rel) });
  });

  it('refuses a bind through a symlink in the workspace that leads to ~/.config', async () => {
    const link = join(project, 'dotconfig');
    symlinkSync(join(home, '.config'), link);
    try {
      await expectRefused('symlink', ['--bind', link], project);
    } finally {
      execFileSync('rm', [link]);
    }
  });

  it.skipIf(!IS_ROOT)('refuses HOME mounted a second time at another path (compared by identity)', async () => {
    const alias = join(t.root, 'alias');
    mkdirSync(alias);
    const before = snapshot();
    // A private mount namespace: the second mount of HOME exists only for this sbx.
    const mark = marker(alias, 'alias');
    const script = `mount --bind "$1" "$2" && exec "$3" run -w "$2" --env "MARKER=$5" -- sh -c "$4"`;
    const r = await runHost(
      ['unshare', '-m', '--propagation', 'private', 'sh', '-c', script, 'sh', home, alias, SBX_BIN, ATTACK, mark],
      { env, cwd: project },
    );
    expect(r.code, r.err).toBe(125);
    expect(r.err).toMatch(new RegExp(`workspace: ${alias} is your home directory`));
    expect(existsSync(join(home, 'marker-alias'))).toBe(false);
    expectUnchanged(before, snapshot());
  });

  it('a project under HOME with a writable cache below ~/.cache: the attacks run and the host is unchanged', async () => {
    const before = snapshot();
    const pip = join(home, '.cache', 'pip');
    const mark = join(project, 'marker-allowed');
    // The bind works; then the attack (inside, HOME is private: its steps land there); then the bind
    // itself cannot be renamed away.
    const script = `echo pip-ok > "${pip}/x" && { ${ATTACK}; ! mv "${pip}" "${pip}.old"; }`;
    const r = await runSbx(['--bind', pip, '--env', `MARKER=${mark}`, '--', 'sh', '-c', script], { env, cwd: project });
    expect(r.code, r.err).toBe(0);
    expect(existsSync(mark), 'the attack ran').toBe(true);
    const after = snapshot();
    expect(after[relative(home, join(pip, 'x'))]).toBe('pip-ok\n');
    delete after[relative(home, join(pip, 'x'))];
    delete after[relative(home, mark)];
    // The hard link failed (another mount: EXDEV); the symlink is a plain entry in the cache dir.
    expect(after[relative(home, join(pip, 'bashrc-link'))]).toBeUndefined();
    expect(after[relative(home, join(pip, 'cfg'))]).toBe('(other)');
    delete after[relative(home, join(pip, 'cfg'))];
    expectUnchanged(before, after);
    // Binding the planted symlink later is binding ~/.config: refused by identity.
    const viaLink = await runSbx(['--bind', join(pip, 'cfg'), '--', 'true'], { env, cwd: project });
    expect(viaLink.code).toBe(125);
    expect(viaLink.err).toContain(`--bind: ${join(pip, 'cfg')} (${join(home, '.config')}) contains`);
    // The next run is the built-in default, with the built-in's hash.
    const next = await runSbx(['--report-fd', '3', '--', 'true'], { env, cwd: project, extraStdio: { 3: 'pipe' } });
    expect(next.code, next.err).toBe(0);
    const report = JSON.parse(next.extra[3]!.toString()) as { profile: { source: string } };
    expect(report.profile.source).toBe('builtin');
    const list = await runSbxRaw(['profiles', 'list'], { env, cwd: project });
    expect(list.out).toMatch(/^default\s+builtin/m);
  });
});
