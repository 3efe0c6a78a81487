// The filesystem through real bwrap, driven end to end by `node bin/sbx.js run`: planted credentials
// stay out (directly, with the workspace = HOME, through a symlink), writes outside the workspace fail
// or stay private, read-only mode, and the identity a root-invoked sandbox gets. Each probe runs once
// unsandboxed as the control.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IS_ROOT,
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

const MARKER = `SBX-PLANTED-${randomBytes(6).toString('hex')}`;
let t: TestHost;
let idRsa: string;
let awsCredentials: string;

const opts = (cwd = t.workspace) => ({ env: t.env, cwd });
const sh = (script: string): string[] => ['sh', '-c', script];

describe.skipIf(SKIP_INTEGRATION)('filesystem isolation (real bwrap via bin/sbx.js)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('fs');
    mkdirSync(join(t.home, '.ssh'), { mode: 0o700 });
    mkdirSync(join(t.home, '.aws'), { mode: 0o700 });
    idRsa = join(t.home, '.ssh', 'id_rsa');
    awsCredentials = join(t.home, '.aws', 'credentials');
    writeFileSync(idRsa, `-----BEGIN OPENSSH PRIVATE KEY-----\n${MARKER}\n`, { mode: 0o600 });
    writeFileSync(awsCredentials, `[default]\naws_secret_access_key = ${MARKER}\n`, { mode: 0o600 });
    writeFileSync(join(t.home, '.netrc'), `machine example.com password ${MARKER}\n`, { mode: 0o600 });
  });
  afterAll(() => t?.cleanup());

  describe('planted secrets in the invoking HOME', () => {
    it('control: they are readable unsandboxed', async () => {
      const r = await runHost(['cat', idRsa, awsCredentials], opts());
      expect(r.code).toBe(0);
      expect(r.out.split(MARKER)).toHaveLength(3);
    });

    it('cat of ~/.ssh/id_rsa and ~/.aws/credentials fails inside: No such file or directory (HOME is a private tmpfs)', async () => {
      for (const file of [idRsa, awsCredentials]) {
        const r = await runSbx(['--', 'cat', file], opts());
        expect(r.code).toBe(1);
        expect(r.err).toContain(`cat: ${file}: No such file or directory`);
        expect(r.out + r.err).not.toContain(MARKER);
      }
    });

    it('with -p read-only --workspace $HOME the credential stores are masked: empty read-only dirs, an empty file, marker absent', async () => {
      // The host's HOME is bound here (read-only: a writable one is refused, test/integration/core/host-state.test.ts),
      // so every planted file *would* be visible without the masks.
      const r = await runSbx(
        [
          '-p',
          'read-only',
          '--workspace',
          t.home,
          '--',
          ...sh(
            'cat .ssh/id_rsa; echo "rc=$?"; cat .aws/credentials; echo "rc=$?"; ls -A .ssh .aws; wc -c < .netrc; touch .ssh/planted; echo "rc=$?"',
          ),
        ],
        opts(t.home),
      );
      expect(r.code).toBe(0);
      expect(r.out + r.err).not.toContain(MARKER);
      expect(r.err).toContain('cat: .ssh/id_rsa: No such file or directory');
      expect(r.err).toContain('cat: .aws/credentials: No such file or directory');
      expect(r.err).toContain("touch: cannot touch '.ssh/planted': Read-only file system");
      expect(r.out.split('\n')).toEqual(['rc=1', 'rc=1', '.aws:', '', '.ssh:', '0', 'rc=1', '']);
      // and the host's files are untouched
      expect(readFileSync(idRsa, 'utf8')).toContain(MARKER);
      expect(readdirSync(join(t.home, '.ssh'))).toEqual(['id_rsa']);
    });

    it('a symlink in the workspace to ~/.ssh/id_rsa does not reach it (control: it does unsandboxed)', async () => {
      const link = join(t.workspace, 'innocent-link');
      symlinkSync(idRsa, link);
      const host = await runHost(['cat', 'innocent-link'], opts());
      expect(host.out).toContain(MARKER);
      const r = await runSbx(['--', 'cat', 'innocent-link'], opts());
      expect(r.code).toBe(1);
      expect(r.err).toContain('cat: innocent-link: No such file or directory');
      expect(r.out + r.err).not.toContain(MARKER);
    });

    // Masks cover stores *inside* a bind; a workspace that is itself inside one (the default workspace
    // is the cwd) must be refused as an explicit bind is, or the store would be bound read-write.
    it('a workspace inside a credential store (cwd ~/.aws/sso, --workspace ~/.ssh/keys) is refused (126) like a bind', async () => {
      const sso = join(t.home, '.aws', 'sso', 'cache');
      const keys = join(t.home, '.ssh', 'keys');
      mkdirSync(sso, { recursive: true });
      mkdirSync(keys, { recursive: true });
      writeFileSync(join(sso, 'token.json'), `{"accessToken":"${MARKER}"}\n`, { mode: 0o600 });
      writeFileSync(join(keys, 'id_ed25519'), `${MARKER}\n`, { mode: 0o600 });
      const fromCwd = await runSbx(['--', 'cat', 'cache/token.json'], opts(join(t.home, '.aws', 'sso')));
      const fromFlag = await runSbx(['--workspace', keys, '--', 'cat', 'id_ed25519'], opts(keys));
      for (const r of [fromCwd, fromFlag]) {
        expect(r.out + r.err).not.toContain(MARKER);
        expect(r.code).toBe(126);
        expect(r.err).toMatch(/credential store/);
      }
    });

    it('binding a credential store explicitly is refused (126) and runs nothing', async () => {
      const r = await runSbx(['--ro-bind', join(t.home, '.ssh'), '--', 'touch', 'should-not-exist'], opts());
      expect(r.code).toBe(126);
      expect(r.err).toMatch(/^sbx: error: --ro-bind: .*\.ssh is \(or is inside\) a credential store$/m);
      expect(existsSync(join(t.workspace, 'should-not-exist'))).toBe(false);
    });
  });

  describe('writes', () => {
    const name = `sbx-probe-${randomBytes(4).toString('hex')}`;

    it('control: as root the system directories are writable unsandboxed', async () => {
      const r = await runHost(sh('for d in /etc / /usr; do test -w "$d" && echo "$d writable"; done; true'), opts());
      expect(r.out.split('\n').filter(Boolean)).toEqual(
        IS_ROOT ? ['/etc writable', '/ writable', '/usr writable'] : [],
      );
    });

    it.each([
      [
        'touch /etc/NAME',
        (n: string) => ['touch', `/etc/${n}`],
        (n: string) => `touch: cannot touch '/etc/${n}': Read-only file system`,
        1,
      ],
      [
        'touch /NAME',
        (n: string) => ['touch', `/${n}`],
        (n: string) => `touch: cannot touch '/${n}': Read-only file system`,
        1,
      ],
      [
        'echo > /usr/NAME',
        (n: string) => sh(`echo > /usr/${n}`),
        (n: string) => `cannot create /usr/${n}: Read-only file system`,
        2,
      ],
    ])('%s fails with EROFS and nothing appears on the host', async (_label, probe, message, code) => {
      const r = await runSbx(['--', ...probe(name)], opts());
      expect(r.err).toContain(message(name));
      expect(r.code).toBe(code);
      for (const dir of ['/etc', '/', '/usr']) expect(existsSync(join(dir, name))).toBe(false);
    });

    it('touch $HOME/x succeeds inside (private tmpfs HOME) but nothing appears in the host HOME', async () => {
      const before = readdirSync(t.home).sort();
      const r = await runSbx(['--', ...sh(`touch "$HOME/${name}" && ls -A "$HOME"`)], opts());
      expect(r.code).toBe(0);
      expect(r.out).toBe(`${name}\n`);
      expect(readdirSync(t.home).sort()).toEqual(before);
      // control: the same probe unsandboxed does write the host HOME
      const host = await runHost(sh(`touch "$HOME/${name}-control"`), opts());
      expect(host.code).toBe(0);
      expect(existsSync(join(t.home, `${name}-control`))).toBe(true);
    });

    it('a host directory next to the workspace is not there: writing into it fails (ENOENT), nothing appears', async () => {
      const sibling = join(t.root, 'sibling');
      mkdirSync(sibling);
      writeFileSync(join(sibling, 'host-file'), 'host data\n');
      const host = await runHost(sh(`cat ${sibling}/host-file && touch ${sibling}/${name}`), opts());
      expect(host.code).toBe(0);
      const r = await runSbx(['--', ...sh(`cat ${sibling}/host-file; touch ${sibling}/${name}-in`)], opts());
      expect(r.err).toContain(`cat: ${sibling}/host-file: No such file or directory`);
      expect(r.err).toContain(`touch: cannot touch '${sibling}/${name}-in': No such file or directory`);
      expect(r.code).toBe(1);
      expect(readdirSync(sibling).sort()).toEqual(['host-file', name]);
    });

    it('a write into the workspace appears on the host', async () => {
      const r = await runSbx(['--', ...sh(`printf 'from inside' > ${name}.txt`)], opts());
      expect(r.code).toBe(0);
      expect(readFileSync(join(t.workspace, `${name}.txt`), 'utf8')).toBe('from inside');
    });

    it('read-only profile: a workspace write fails with EROFS, a /tmp write succeeds, HOME is read-only', async () => {
      const r = await runSbx(
        [
          '-p',
          'read-only',
          '--',
          ...sh(
            `touch ro-${name}; echo "ws=$?"; touch /tmp/${name} && echo tmp-ok; touch "$HOME/${name}"; echo "home=$?"`,
          ),
        ],
        opts(),
      );
      expect(r.code).toBe(0);
      expect(r.out.split('\n')).toEqual(['ws=1', 'tmp-ok', 'home=1', '']);
      expect(r.err).toContain(`touch: cannot touch 'ro-${name}': Read-only file system`);
      expect(r.err).toContain(`touch: cannot touch '${t.home}/${name}': Read-only file system`);
      expect(existsSync(join(t.workspace, `ro-${name}`))).toBe(false);
      // control: the same workspace write with the default profile succeeds
      const control = await runSbx(['--', 'touch', `ro-${name}`], opts());
      expect(control.code).toBe(0);
      expect(existsSync(join(t.workspace, `ro-${name}`))).toBe(true);
    });
  });

  describe('identity', () => {
    it.runIf(IS_ROOT)(
      'as root: the command runs as uid 65534 inside, and /etc/shadow is masked (control: readable outside)',
      async () => {
        const host = await runHost(['sh', '-c', 'id -u; head -c 5 /etc/shadow'], opts());
        expect(host.out).toBe('0\nroot:');
        const r = await runSbx(
          ['--', ...sh('id -u; id -g; wc -c < /etc/shadow; cat /etc/shadow; echo "rc=$?"; cat /etc/gshadow')],
          opts(),
        );
        expect(r.code).toBe(0);
        expect(r.out).toBe('65534\n65534\n0\nrc=0\n');
        expect(r.err).toBe('');
      },
    );

    it.runIf(!IS_ROOT)(
      'unprivileged: the command keeps the invoking uid, and /etc/shadow stays unreadable (EACCES)',
      async () => {
        const uid = String(process.getuid!());
        const host = await runHost(['cat', '/etc/shadow'], opts());
        expect(host.err).toContain('cat: /etc/shadow: Permission denied');
        const r = await runSbx(['--', ...sh('id -u; cat /etc/shadow')], opts());
        expect(r.out).toBe(`${uid}\n`);
        expect(r.err).toContain('cat: /etc/shadow: Permission denied');
        expect(r.code).toBe(1);
      },
    );
  });
});
