// Exit status and the JSON report through real bwrap (`node bin/sbx.js run`): the command's status
// passes through (128+N for signal N, each compared with the same command unsandboxed), sbx's own
// failures use their documented codes and run nothing, and the report goes only where it was asked
// to go (--report-file, --report-fd 3 on a pipe), never onto stdout/stderr.
import { chmodSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  runSbxRaw,
  SKIP_INTEGRATION,
  type Ran,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { parseReport, readReport } from '../../helpers/report.js';

let t: TestHost;
const opts = () => ({ env: t.env, cwd: t.workspace });

/** The status the way a shell reports it: 128+N for a signal. */
const shellStatus = (r: Ran) =>
  r.signal ? 128 + ({ SIGKILL: 9, SIGTERM: 15 } as Record<string, number>)[r.signal]! : r.code;

function expectNoReportOnStdio(r: Ran): void {
  for (const text of [r.out, r.err]) {
    expect(text).not.toContain('"setBy"');
    expect(text).not.toContain('"sessionId"');
  }
}

describe.skipIf(SKIP_INTEGRATION)('exit codes and the JSON report (real bwrap via bin/sbx.js)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('exit');
  });
  afterAll(() => t?.cleanup());

  describe("the command's status passes through", () => {
    it.each([
      ['exit 0', 0],
      ['exit 1', 1],
      ['exit 42', 42],
      ['kill -9 $$', 137],
      ['kill -TERM $$', 143],
    ])('sh -c %j → %i, as unsandboxed', async (script, expected) => {
      const host = await runHost(['sh', '-c', script], opts());
      expect(shellStatus(host)).toBe(expected);
      const r = await runSbx(['--', 'sh', '-c', script], opts());
      expect(r.signal).toBeNull();
      expect(r.code).toBe(expected);
      if (expected === 0)
        expect(r.err).toBe(''); // success is silent
      else
        expect(r.err).toMatch(
          new RegExp(
            `^sbx: sh (exited ${expected}|was killed by SIG(KILL|TERM) \\(exit ${expected}\\)) \\[profile default, session `,
            'm',
          ),
        );
    });
  });

  describe("sbx's own failures run nothing", () => {
    it('a command that exists on the host but not in the sandbox → 127 (control: runs unsandboxed)', async () => {
      // A directory every user may write: never shown (a PATH entry outside HOME is otherwise bound
      // read-only, toolchains/toolchains.ts).
      const tools = join(t.root, 'tools');
      mkdirSync(tools, { recursive: true });
      chmodSync(tools, 0o777);
      const tool = join(tools, 'host-only-tool');
      writeFileSync(tool, `#!/bin/sh\ntouch "${t.workspace}/ran-host-only"\n`);
      chmodSync(tool, 0o755);
      const host = await runHost([tool], opts());
      expect(host.code).toBe(0);
      expect(existsSync(join(t.workspace, 'ran-host-only'))).toBe(true);
      const env = { ...t.env, PATH: `${tools}:${t.env.PATH}` };
      for (const argv of [[tool], ['host-only-tool'], ['no-such-command-anywhere']]) {
        const r = await runSbx(['--', ...argv], { env, cwd: t.workspace });
        expect(r.code, argv[0]).toBe(127);
        expect(r.err).toMatch(new RegExp(`^sbx: error: command not found in the sandbox: ${argv[0]}$`, 'm'));
        expect(r.out).toBe('');
      }
    });

    it('a file without execute permission → 126 (control: 126 from sh unsandboxed too)', async () => {
      const script = join(t.workspace, 'noexec.sh');
      writeFileSync(script, `#!/bin/sh\ntouch ran-noexec\n`);
      chmodSync(script, 0o644);
      const host = await runHost(['sh', '-c', './noexec.sh'], opts());
      expect(host.code).toBe(126);
      const r = await runSbx(['--', './noexec.sh'], opts());
      expect(r.code).toBe(126);
      expect(r.err).toMatch(new RegExp(`^sbx: error: ${script} is not executable$`, 'm'));
      expect(existsSync(join(t.workspace, 'ran-noexec'))).toBe(false);
    });

    it.each([
      // [what, file text, line:col, message]
      [
        'a YAML syntax error',
        'description: x\nenv:\n  keep: [PATH]\n  set:\n    A: "1"\n    A: "2"\n',
        '6:5',
        'Map keys must be unique',
      ],
      ['a schema error', 'description: x\nmode: sideways\n', '2:7', 'mode: Invalid option'],
      ['an unknown key', 'extends: default\nnetwrok: host\n', '2:1', 'netwrok: unknown key'],
    ])('a bad profile (%s) → 125 with file:line:col on stderr', async (_what, text, position, message) => {
      const file = join(t.root, `bad-${position.replace(':', '-')}.yaml`);
      writeFileSync(file, text);
      const r = await runSbx(['-p', file, '--', 'touch', 'ran-bad-profile'], opts());
      expect(r.code).toBe(125);
      expect(r.err.split('\n')[0]!.startsWith(`sbx: error: ${file}:${position}: ${message}`), r.err).toBe(true);
      expect(existsSync(join(t.workspace, 'ran-bad-profile'))).toBe(false);
    });

    it('the danger profile without --danger → 126', async () => {
      const r = await runSbx(['-p', 'danger', '--', 'touch', 'ran-danger'], opts());
      expect(r.code).toBe(126);
      expect(r.err).toMatch(/^sbx: error: profile "danger" asks for mode: danger/m);
      expect(existsSync(join(t.workspace, 'ran-danger'))).toBe(false);
    });

    it.each([
      ['/proc', 'a system directory'],
      ['/proc/self', 'inside /proc (a kernel interface)'],
      ['/sys/kernel', 'inside /sys (a kernel interface)'],
      ['/dev/shm', 'inside /dev (a kernel interface)'],
      ['/', 'a system directory'],
      ['a link to /proc', 'a system directory'],
    ])('-w %s → 125 WORKSPACE_INVALID before anything walks it, no stack trace', async (given, what) => {
      const link = join(t.root, 'proc-link');
      if (!existsSync(link)) symlinkSync('/proc', link);
      const workspace = given === 'a link to /proc' ? link : given;
      const r = await runSbx(['-w', workspace, '--report-fd', '3', '--', 'true'], {
        ...opts(),
        extraStdio: { 3: 'pipe' },
      });
      expect(r.code, r.err).toBe(125);
      const [message, hint, ...rest] = r.err.split('\n');
      expect(message).toMatch(new RegExp(`^sbx: error: workspace ${workspace} resolves to /\\S*, `));
      expect(message!.endsWith(what), message).toBe(true);
      expect(hint).toBe('sbx: hint: run sbx from a project directory or pass --workspace DIR');
      expect(rest).toEqual(['']);
      expect(parseReport(r.extra[3]!.toString()).error?.code).toBe('WORKSPACE_INVALID');
    });

    it.each([[['run']], [['run', '--']], [['run', '--no-such-flag', 'true']], [['run', '-p']]])(
      'usage error %j → 2',
      async (args) => {
        const r = await runSbxRaw(args, opts());
        expect(r.code).toBe(2);
        expect(r.err).toMatch(
          /error: (no command given|unknown option '--no-such-flag'|option '-p, --profile <name>' argument missing)/,
        );
        expect(r.out).toBe('');
      },
    );
  });

  describe('the JSON report', () => {
    it('--report-file: sessionId, profile, backend, command, exitCode, setBy child, durationMs, violations; stdout/stderr untouched', async () => {
      const file = join(t.root, 'report.json');
      const command = ['sh', '-c', 'echo "$SBX_SESSION_ID"; echo to-stderr >&2; exit 7'];
      const r = await runSbx(['--report-file', file, '--', ...command], opts());
      expect(r.code).toBe(7);
      const report = readReport(file);
      expect(report).toMatchObject({
        format: 1,
        sessionId: r.out.trim(),
        profile: { name: 'default' },
        backend: 'bwrap',
        command,
        exitCode: 7,
        setBy: 'child',
        violations: [],
      });
      expect(report.profile!.file).toMatch(/\/profiles\/default\.yaml$/);
      expect(report.profile!.hash).toMatch(/^[0-9a-f]{64}$/);
      expect(typeof report.durationMs).toBe('number');
      expect(report.durationMs).toBeGreaterThan(0);
      // stdout is exactly the command's; stderr the command's plus sbx's one summary line
      expect(r.out).toBe(`${report.sessionId}\n`);
      expect(r.err).toBe(`to-stderr\n${r.err.split('\n')[1]}\n`);
      expect(r.err.split('\n')[1]).toMatch(/^sbx: sh exited 7 \[profile default, session /);
      expectNoReportOnStdio(r);
    });

    // The report file is opened before anything runs: an unusable one is a usage error (2), not a
    // crash after the command's side effects.
    it('an unwritable --report-file is refused before anything runs, with a clean error', async () => {
      const file = join(t.root, 'no-such-dir', 'report.json');
      const r = await runSbx(['--report-file', file, '--', 'touch', 'ran-report-file'], opts());
      expect(r.err).not.toContain('internal error');
      expect(existsSync(join(t.workspace, 'ran-report-file'))).toBe(false);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/^sbx: error: .*report\.json/m);
    });

    it('--report-fd 3 on a pipe: the report for a killed command (signal, violation), nothing on stdout/stderr but the summary', async () => {
      const r = await runSbx(['--report-fd', '3', '--', 'sh', '-c', 'echo out; kill -9 $$'], {
        ...opts(),
        extraStdio: { 3: 'pipe' },
      });
      expect(r.code).toBe(137);
      const text = r.extra[3]!.toString();
      expect(text.endsWith('\n')).toBe(true);
      expect(text.trim().split('\n')).toHaveLength(1); // one document
      const report = parseReport(text);
      expect(report).toMatchObject({
        backend: 'bwrap',
        command: ['sh', '-c', 'echo out; kill -9 $$'],
        exitCode: 137,
        signal: 'SIGKILL',
        setBy: 'child',
        violations: [{ phase: 'runtime', kind: 'signal', rule: 'signal', detail: 'the command was killed by SIGKILL' }],
      });
      expect(report.sessionId).toMatch(/^[0-9a-z]+-[0-9a-f]{8}$/);
      expect(r.out).toBe('out\n');
      expectNoReportOnStdio(r);
    });

    it('--report-fd 3 for a refusal: setBy sbx, the error code, a preflight violation', async () => {
      const r = await runSbx(['--report-fd', '3', '-p', 'danger', '--', 'true'], {
        ...opts(),
        extraStdio: { 3: 'pipe' },
      });
      expect(r.code).toBe(126);
      const report = parseReport(r.extra[3]!.toString());
      expect(report).toMatchObject({
        command: ['true'],
        exitCode: 126,
        setBy: 'sbx',
        violations: [{ phase: 'preflight', kind: 'policy', rule: 'danger_not_allowed' }],
        error: { code: 'DANGER_NOT_ALLOWED' },
      });
      expectNoReportOnStdio(r);
    });

    it('the command cannot write into the report descriptor (fd 3, or a high one sbx inherited) to forge a report', async () => {
      for (const fd of [3, 40]) {
        const forged = '{"exitCode":0,"setBy":"child","violations":[]}';
        // bash: dash cannot name descriptors above 9
        const r = await runSbx(['--report-fd', String(fd), '--', 'bash', '-c', `echo '${forged}' >&${fd}; exit 5`], {
          ...opts(),
          extraStdio: { [fd]: 'pipe' },
        });
        expect(r.code).toBe(5);
        // fd 3 is not open inside; fd 40 is /dev/null opened read-only
        expect(r.err).toMatch(
          fd === 3
            ? /^bash: line 1: 3: Bad file descriptor$/m
            : /^bash: line 1: echo: write error: Bad file descriptor$/m,
        );
        const text = r.extra[fd]!.toString();
        expect(text.trim().split('\n'), `fd ${fd}`).toHaveLength(1);
        expect(parseReport(text)).toMatchObject({ exitCode: 5, setBy: 'child' });
      }
    });

    it('the report descriptor does not reach the command', async () => {
      // `ls -l /proc/<sh>/fd`: the shell's table, with nothing opened by the listing itself
      const r = await runSbx(['--report-fd', '3', '--', 'sh', '-c', 'ls -l /proc/$$/fd'], {
        ...opts(),
        extraStdio: { 3: 'pipe' },
      });
      expect(r.code).toBe(0);
      const fds = Object.fromEntries(
        r.out.split('\n').flatMap((l) => {
          const m = / (\d+) -> (.*)$/.exec(l);
          return m ? [[m[1]!, m[2]!]] : [];
        }),
      );
      expect(fds['0']).toBe('/dev/null');
      // beyond stdio only /dev/null (what sbx puts over descriptors its caller leaked) may appear
      for (const [fd, target] of Object.entries(fds)) if (Number(fd) > 2) expect(target, `fd ${fd}`).toBe('/dev/null');
      expect(parseReport(r.extra[3]!.toString())).toMatchObject({ exitCode: 0, setBy: 'child' });
    });
  });
});
