// The trust boundary end to end (real bwrap via bin/sbx.js): a profile that a cloned repository or
// another local user wrote (a sandboxed command can no longer write one: profile-paths.test.ts) chooses nothing until the user trusted that exact
// content; hostile profile paths (devices, FIFOs, /proc, huge or alias-bomb files, HOME=/proc) are
// refused promptly (each run's safety timeout would fail a hang). Every refusal checks that the
// marker command did not run, beside a control in which it does.
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IS_ROOT,
  makeTestHost,
  requireIntegrationPrerequisites,
  runSbx,
  runSbxReport,
  scenarioDir,
  runSbxRaw,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;

const workdir = (name: string) => scenarioDir(t, name);

// What a hostile profile asks for (a writable HOME would itself be refused: host-state.test.ts).
const EVIL = 'extends: default\nnetwork: host\nseccomp: off\n';

describe.skipIf(SKIP_INTEGRATION)('trust boundary (real bwrap via bin/sbx.js)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('trust');
  });
  afterAll(() => t?.cleanup());

  // A dozen sandboxes in a row: a longer safety net than one run's.
  it('a profile a sandboxed command wrote is refused on the next run until trusted, and again once it changes', {
    timeout: 120_000,
  }, async () => {
    const ws = workdir('planted');
    const opts = { env: t.env, cwd: ws };
    // Run 1: the sandboxed command tries to write a policy for the user's next run into its workspace:
    // sbx made an empty .sbx first and holds it read-only (issue 31 §3).
    const plant = await runSbx(
      ['--', 'sh', '-c', `mkdir -p .sbx/profiles && printf '%s' '${EVIL}' > .sbx/profiles/default.yaml`],
      opts,
    );
    expect(plant.code).not.toBe(0);
    expect(plant.err).toContain('Read-only file system');
    const planted = join(ws, '.sbx/profiles/default.yaml');
    expect(existsSync(planted)).toBe(false);
    // The repository can still ship one (a clone, a pull): that is what trust is for.
    mkdirSync(join(ws, '.sbx/profiles'), { recursive: true });
    writeFileSync(planted, EVIL);

    // Run 2: refused, nothing runs.
    const refused = await runSbxReport(['--', 'touch', 'ran-untrusted'], opts);
    expect(refused.r.code).toBe(125);
    expect(refused.report.error?.code).toBe('PROFILE_UNTRUSTED');
    expect(refused.report.error?.message).toContain(`(${planted}) is not trusted`);
    expect(refused.report.error?.hint).toContain('`sbx profiles show default`, then `sbx trust default`');
    expect(existsSync(join(ws, 'ran-untrusted'))).toBe(false);

    // The user reviews and trusts it: the same command now runs, and says whose profile it is.
    const trusted = await runSbxRaw(['trust', '--yes', 'default'], opts);
    expect(trusted.code).toBe(0);
    expect(trusted.out).toContain(planted);
    expect(trusted.out).toContain('(project, new)');
    expect(trusted.out).toContain('    network: host');
    const ran = await runSbxReport(['--', 'touch', 'ran-trusted'], opts);
    expect(ran.r.code).toBe(0);
    expect(existsSync(join(ws, 'ran-trusted'))).toBe(true);
    const shadowing = `sbx: profile "default" is the project's ${planted} (shadows the built-in; -p builtin:default names sbx's own; said once)`;
    expect(ran.r.err).toContain(shadowing);
    // Said once per profile file on this host, not on every call (an agent's hook reads each call's stderr).
    const quiet = await runSbxReport(['--', 'true'], opts);
    expect(quiet.r.code).toBe(0);
    expect(quiet.r.err).not.toContain('shadows the built-in');
    expect(quiet.report.profile?.shadows).toMatch(/\/profiles\/default\.yaml$/);
    expect(ran.report.profile).toMatchObject({
      name: 'default',
      source: 'project',
      file: planted,
      shadows: expect.stringMatching(/\/profiles\/default\.yaml$/),
    });

    // Now that .sbx exists, a sandbox can no longer rewrite it (bound read-only over itself)...
    const before = readFileSync(planted, 'utf8');
    const rewrite = await runSbx(['--', 'sh', '-c', 'echo "hostname: evil" >> .sbx/profiles/default.yaml'], opts);
    expect(rewrite.code).not.toBe(0);
    expect(rewrite.err).toContain('Read-only file system');
    expect(readFileSync(planted, 'utf8')).toBe(before);
    // ...but the repository can change it (a pull, a checkout): refused again, naming the change.
    appendFileSync(planted, 'hostname: evil\n');
    const changed = await runSbxReport(['--', 'touch', 'ran-changed'], opts);
    expect(changed.r.code).toBe(125);
    expect(changed.report.error?.code).toBe('PROFILE_UNTRUSTED');
    expect(changed.report.error?.message).toMatch(
      new RegExp(`changed since you trusted it: ${planted} [0-9a-f]{12} → [0-9a-f]{12}`),
    );
    expect(changed.report.error?.hint).toContain(
      'see the change with `sbx trust --dry-run default`, then `sbx trust default`',
    );
    expect(existsSync(join(ws, 'ran-changed'))).toBe(false);
    const dry = await runSbxRaw(['trust', '--dry-run', 'default'], opts);
    expect(dry.out).toMatch(/^ {4}\+ +\d+ hostname: evil$/m);
    expect(dry.out).toContain('nothing pinned (--dry-run)');
    expect((await runSbxReport(['--', 'true'], opts)).report.error?.code).toBe('PROFILE_UNTRUSTED');
    const again = await runSbxRaw(['trust', '--yes', 'default'], opts);
    expect(again.out).toContain('(project, changed)');
    expect(again.out).toMatch(/^ {4}\+ +\d+ hostname: evil$/m);

    const listed = await runSbxRaw(['trust', '--list'], opts);
    expect(listed.out).toContain(planted);
    expect(listed.out).toContain('file unchanged');
    expect((await runSbxRaw(['trust', '--revoke', planted], opts)).code).toBe(0);
    expect((await runSbxReport(['--', 'true'], opts)).report.error?.code).toBe('PROFILE_UNTRUSTED');
  });

  describe('a profile under a shared parent (/tmp/x/.sbx) that another user could have planted', () => {
    let shared: string;
    beforeAll(() => {
      shared = mkdtempSync(join(tmpdir(), 'sbx-trust-shared-'));
      chmodSync(shared, 0o1777);
      mkdirSync(join(shared, 'sub'), { recursive: true });
    });
    afterAll(() => rmSync(shared, { recursive: true, force: true }));

    function plant(): string {
      const file = join(shared, '.sbx/profiles/default.yaml');
      rmSync(join(shared, '.sbx'), { recursive: true, force: true });
      mkdirSync(join(shared, '.sbx/profiles'), { recursive: true });
      writeFileSync(file, EVIL);
      return file;
    }

    it('control: a profile the user placed there with safe modes is only untrusted (not unsafe)', async () => {
      plant();
      const { report } = await runSbxReport(['--', 'true'], { env: t.env, cwd: join(shared, 'sub') });
      expect(report.error?.code).toBe('PROFILE_UNTRUSTED');
    });

    // Only root can make a file belong to someone else.
    it.runIf(IS_ROOT)("another user's file: PROFILE_UNSAFE naming its owner, nothing runs", async () => {
      const file = plant();
      for (const p of [join(shared, '.sbx'), join(shared, '.sbx/profiles'), file]) chownSync(p, 65534, 65534);
      const { r, report } = await runSbxReport(['--', 'touch', 'ran-planted'], {
        env: t.env,
        cwd: join(shared, 'sub'),
      });
      expect(r.code).toBe(125);
      expect(report.error?.code).toBe('PROFILE_UNSAFE');
      expect(report.error?.message).toContain(
        `${join(shared, '.sbx')} is owned by uid 65534, not by you (uid 0) or root`,
      );
      expect(existsSync(join(shared, 'sub', 'ran-planted'))).toBe(false);
    });

    it('a group/other-writable profile or a world-writable parent without the sticky bit: PROFILE_UNSAFE', async () => {
      const file = plant();
      chmodSync(file, 0o666);
      const opts = { env: t.env, cwd: join(shared, 'sub') };
      const writable = await runSbxReport(['--', 'touch', 'ran-writable'], opts);
      expect(writable.report.error?.code).toBe('PROFILE_UNSAFE');
      expect(writable.report.error?.message).toContain(`${file} is writable by group and others (mode 0666)`);
      expect(writable.report.error?.hint).toBe(`chmod go-w ${file}`);
      chmodSync(file, 0o644);
      chmodSync(join(shared, '.sbx'), 0o777);
      const parent = await runSbxReport(['--', 'touch', 'ran-writable'], opts);
      expect(parent.report.error?.message).toContain(
        `${join(shared, '.sbx')} is writable by group and others (mode 0777)`,
      );
      expect(existsSync(join(shared, 'sub', 'ran-writable'))).toBe(false);
    });
  });

  describe('hostile profile inputs are refused promptly, nothing runs', () => {
    let dir: string;
    beforeAll(() => {
      dir = workdir('hostile');
      writeFileSync(join(dir, 'extends-zero.yaml'), 'extends: /dev/zero\n');
      writeFileSync(join(dir, 'extends-stdin.yaml'), 'extends: /proc/self/fd/0\n');
      execFileSync('mkfifo', [join(dir, 'fifo.yaml')]);
      writeFileSync(join(dir, 'huge.yaml'), '#'.repeat(10 * 1024 * 1024));
      let laughs = 'a: &a [x, x, x, x, x, x, x, x, x]\n';
      for (let i = 0, prev = 'a'; i < 9; prev = `b${i}`, i++)
        laughs += `b${i}: &b${i} [${Array(9).fill(`*${prev}`).join(', ')}]\n`;
      writeFileSync(join(dir, 'laughs.yaml'), laughs);
      writeFileSync(join(dir, 'fine.yaml'), 'extends: default\n');
    });

    it('control: a plain profile file runs the marker command', async () => {
      // Named from another directory: a file in the cwd's tree would need a pin (profile-paths.test.ts).
      const cwd = workdir('hostile-control');
      const r = await runSbx(['-p', join(dir, 'fine.yaml'), '--', 'touch', 'ran-fine'], { env: t.env, cwd });
      expect(r.code).toBe(0);
      expect(existsSync(join(cwd, 'ran-fine'))).toBe(true);
    });

    it.each([
      ['-p /dev/zero', '/dev/zero', 'PROFILE_UNSAFE', '/proc, /sys and /dev hold no profiles'],
      ['extends: /dev/zero', './extends-zero.yaml', 'PROFILE_UNSAFE', 'refusing profile /dev/zero'],
      ['a FIFO', './fifo.yaml', 'PROFILE_UNSAFE', 'is a FIFO, not a regular file'],
      ['extends: /proc/self/fd/0', './extends-stdin.yaml', 'PROFILE_UNSAFE', 'refusing profile /proc/self/fd/0'],
      ['a 10 MiB file', './huge.yaml', 'PROFILE_TOO_LARGE', '10485760 bytes, is over the 256 KiB limit'],
      ['a billion-laughs document', './laughs.yaml', 'PROFILE_PARSE', 'alias'],
    ])('%s → %s', async (_what, profile, code, message) => {
      // stdin carries a profile: /proc/self/fd/0 must not take policy from it.
      const { r, report } = await runSbxReport(['-p', profile, '--', 'touch', 'ran-hostile'], {
        env: t.env,
        cwd: dir,
        input: 'network: host\n',
      });
      expect(r.code).toBe(125);
      expect(report.error?.code).toBe(code);
      expect(report.error?.message).toContain(message);
      expect(existsSync(join(dir, 'ran-hostile'))).toBe(false);
    });

    it("HOME=/proc: the passwd entry's home is used instead (no scan of /proc), the run ends normally", async () => {
      const env = { ...t.env, HOME: '/proc', XDG_STATE_HOME: join(t.root, 'state') };
      const r = await runSbx(['--no-audit', '--', 'sh', '-c', 'printf %s "$HOME"'], { env, cwd: dir });
      expect(r.code).toBe(0);
      expect(r.out).toBe(userInfo().homedir);
    });
  });

  describe('CI: trust named by hash for one invocation, never implicitly', () => {
    let ws: string;
    let hash: string;
    beforeAll(async () => {
      ws = workdir('ci');
      mkdirSync(join(ws, '.sbx/profiles'), { recursive: true });
      writeFileSync(join(ws, '.sbx/profiles/ci.yaml'), 'extends: default\nenv:\n  set: { FROM_CI_PROFILE: "yes" }\n');
      const shown = await runSbxRaw(['profiles', 'show', 'ci', '--json'], { env: t.env, cwd: ws });
      ({ hash } = JSON.parse(shown.out) as { hash: string });
      expect(hash).toMatch(/^[0-9a-f]{64}$/);
    });

    it('--trust-profile HASH runs it; a wrong hash is refused', async () => {
      const ok = await runSbx(['-p', 'ci', '--trust-profile', hash, '--', 'sh', '-c', 'printf %s "$FROM_CI_PROFILE"'], {
        env: t.env,
        cwd: ws,
      });
      expect([ok.code, ok.out]).toEqual([0, 'yes']);
      const wrong = await runSbxReport(['-p', 'ci', '--trust-profile', 'f'.repeat(64), '--', 'touch', 'ran-wrong'], {
        env: t.env,
        cwd: ws,
      });
      expect(wrong.report.error?.code).toBe('PROFILE_UNTRUSTED');
      expect(existsSync(join(ws, 'ran-wrong'))).toBe(false);
      const explained = await runSbxRaw(['explain', '-p', 'ci', '--trust-profile', hash, '--', 'true'], {
        env: t.env,
        cwd: ws,
      });
      expect(explained.code).toBe(0);
    });

    it('SBX_TRUST_PROFILE=HASH[,HASH] runs it; a wrong one is refused; a malformed one is a usage error', async () => {
      const ok = await runSbx(['-p', 'ci', '--', 'true'], {
        env: { ...t.env, SBX_TRUST_PROFILE: `${'0'.repeat(64)},${hash}` },
        cwd: ws,
      });
      expect(ok.code).toBe(0);
      const wrong = await runSbxReport(['-p', 'ci', '--', 'touch', 'ran-wrong-env'], {
        env: { ...t.env, SBX_TRUST_PROFILE: '0'.repeat(64) },
        cwd: ws,
      });
      expect(wrong.report.error?.code).toBe('PROFILE_UNTRUSTED');
      expect(existsSync(join(ws, 'ran-wrong-env'))).toBe(false);
      const bad = await runSbx(['-p', 'ci', '--', 'true'], {
        env: { ...t.env, SBX_TRUST_PROFILE: hash.slice(0, 12) },
        cwd: ws,
      });
      expect(bad.code).toBe(2);
      expect(bad.err).toContain('is not a sha256');
    });

    it('sbx trust shows a hostile profile without letting its escape sequences reach the terminal', async () => {
      writeFileSync(join(ws, '.sbx/profiles/esc.yaml'), '# \x1b]0;owned\x07\x1b[2J\nextends: default\n');
      const r = await runSbxRaw(['trust', '--dry-run', 'esc'], { env: t.env, cwd: ws });
      expect(r.code).toBe(0);
      expect(r.out).toContain('# \\x1b]0;owned\\x07\\x1b[2J');
      expect(r.out).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
    });

    it('profiles list shows each profile with its source and trust state', async () => {
      const r = await runSbxRaw(['profiles', 'list', '--json'], { env: t.env, cwd: ws });
      const rows = JSON.parse(r.out) as { name: string; source: string; trust: string }[];
      expect(rows).toContainEqual(expect.objectContaining({ name: 'ci', source: 'project', trust: 'UNTRUSTED' }));
      expect(rows).toContainEqual(expect.objectContaining({ name: 'agent', source: 'builtin', trust: 'builtin' }));
    });
  });
});
