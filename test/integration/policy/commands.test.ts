// Command rules, path guards, shell strings and approvals end to end: real bwrap via `node bin/sbx.js`
// (and the library for the approval callback). A refused command must not have run: each case plants
// a marker the command would create, and checks it is absent; the control runs the same command
// under rules that allow it.
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DIST_API,
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  runSbxRaw,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { parseReport } from '../../helpers/report.js';
import type { Report } from '../../../src/report/report.js';

let t: TestHost;
let ledger: string;
const opts = (extra: Record<string, string> = {}) => ({
  env: { ...t.env, SBX_AUDIT_FILE: ledger, ...extra },
  cwd: t.workspace,
});
const ledgerRecords = () =>
  existsSync(ledger)
    ? readFileSync(ledger, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];

async function sbxReport(args: string[]): Promise<{ code: number | null; report: Report; err: string }> {
  const r = await runSbx(['--report-fd', '3', ...args], { ...opts(), extraStdio: { 3: 'pipe' } });
  return { code: r.code, report: parseReport(r.extra[3]!.toString()), err: r.err };
}

describe.skipIf(SKIP_INTEGRATION)('command rules, path guards, shell strings, approvals (real bwrap)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('commands');
    ledger = join(t.root, 'state', 'audit.jsonl');
    const profiles = join(t.configHome, 'sbx', 'profiles');
    mkdirSync(profiles, { recursive: true });
    // Host network, so only the rule under test can refuse (not the offline rule).
    writeFileSync(
      join(profiles, 'rules.yaml'),
      [
        'extends: default',
        'network: host',
        'commands:',
        '  default: allow',
        '  allow:',
        '    git: { block: ["push --force", "clean -fd"] }',
        '  deny: ["@delete"]',
        '  paths: workspace',
        '  shell_syntax: restricted',
        '',
      ].join('\n'),
    );
    writeFileSync(join(profiles, 'asking.yaml'), 'extends: default\ncommands:\n  default: ask\n  allow: { ls: }\n');
    writeFileSync(
      join(profiles, 'asking-strings.yaml'),
      'extends: default\ncommands:\n  default: ask\n  allow: { ls:, wc:, head: }\n  shell_syntax: restricted\n',
    );
    mkdirSync(join(t.home, '.ssh'), { recursive: true });
    writeFileSync(join(t.home, '.ssh', 'id_rsa'), 'PRIVATE\n');
    symlinkSync(join(t.home, '.ssh', 'id_rsa'), join(t.workspace, 'innocent'));
    writeFileSync(join(t.workspace, 'victim.txt'), 'keep me\n');
  });
  afterAll(() => t?.cleanup());

  it('the deny list refuses rm before it runs (126, violation commands.deny); --allow-denylisted-commands lifts it', async () => {
    const r = await sbxReport(['-p', 'rules', '--', 'rm', 'victim.txt']);
    expect(r.code).toBe(126);
    expect(r.report.error?.code).toBe('COMMAND_DENIED');
    expect(r.report.violations).toEqual([
      expect.objectContaining({ phase: 'preflight', kind: 'command', rule: 'commands.deny' }),
    ]);
    expect(existsSync(join(t.workspace, 'victim.txt'))).toBe(true);
    // explain says so without running anything.
    const explained = await runSbxRaw(['explain', '-p', 'rules', '--', 'rm', 'victim.txt'], opts());
    expect(explained.out.split('\n').filter((l) => l.startsWith('verdict'))).toEqual([
      "verdict   REFUSED: commands.deny: rm is on the profile's deny list (@delete)",
    ]);
    const lifted = await runSbx(['-p', 'rules', '--allow-denylisted-commands', '--', 'rm', 'victim.txt'], opts());
    expect(lifted.code).toBe(0);
    expect(existsSync(join(t.workspace, 'victim.txt'))).toBe(false);
    writeFileSync(join(t.workspace, 'victim.txt'), 'keep me\n');
  });

  it('git push --force is refused by the block rule, in its other spellings too; the violation is in the ledger', async () => {
    for (const argv of [
      ['git', 'push', '--force'],
      ['git', 'push', '-f', 'origin', 'main'],
      ['git', 'push', 'origin', '+main'],
    ]) {
      const r = await sbxReport(['-p', 'rules', '--', ...argv]);
      expect(r.code, argv.join(' ')).toBe(126);
      expect(
        r.report.violations.map((v) => v.rule),
        argv.join(' '),
      ).toEqual(['commands.allow.git.block']);
    }
    const last = ledgerRecords().at(-1)!;
    expect(last).toMatchObject({
      type: 'run',
      exitCode: 126,
      argv: ['git', 'push', 'origin', '+main'],
      error: { code: 'COMMAND_DENIED' },
    });
  });

  it('without network, curl is refused up front (offline rule), even with --allow-denylisted-commands', async () => {
    const r = await sbxReport(['--allow-denylisted-commands', '--', 'curl', 'https://example.com/?token=abc']);
    expect(r.code).toBe(126);
    // The network client is refused; a URL in an argument is data (issue 24), so no second reason.
    expect(r.report.violations.map((v) => v.rule)).toEqual(['commands.offline']);
    expect(JSON.stringify(r.report.violations)).not.toContain('token');
  });

  it('path guards: .., absolute paths and a symlink to ~/.ssh are refused; relative paths run', async () => {
    const cases: [string[], string][] = [
      [['cat', '../x'], 'paths.traversal'],
      [['cat', '/etc/hostname'], 'paths.absolute'],
      [['cat', 'innocent'], 'paths.escape'],
    ];
    for (const [argv, rule] of cases) {
      const r = await sbxReport(['-p', 'rules', '--', ...argv]);
      expect(r.code, argv.join(' ')).toBe(126);
      expect(r.report.error?.code).toBe('PATH_ESCAPE');
      expect(
        r.report.violations.map((v) => v.rule),
        argv.join(' '),
      ).toEqual([rule]);
    }
    const ok = await runSbx(['-p', 'rules', '--', 'cat', './victim.txt'], opts());
    expect(ok.out).toBe('keep me\n');
  });

  it('--shell with restricted syntax: chained commands, $(...) and subshells run; backticks, a background job or case are refused (SHELL_SYNTAX) and nothing runs', async () => {
    const ok = await runSbx(['-p', 'rules', '--shell', 'cat "victim.txt" | cat && echo "a;b"'], opts());
    expect(ok.code).toBe(0);
    expect(ok.out).toBe('keep me\na;b\n');
    const inner = await runSbx(
      ['-p', 'rules', '--shell', 'echo "$(echo subst-ran)" > made-by-subst; (touch made-by-subshell)'],
      opts(),
    );
    expect(inner.code, inner.err).toBe(0);
    expect(readFileSync(join(t.workspace, 'made-by-subst'), 'utf8')).toBe('subst-ran\n');
    expect(existsSync(join(t.workspace, 'made-by-subshell'))).toBe(true);
    // What $(...) prints is unknown: as a path (under path guards) it is refused, and nothing runs.
    const unknown = await sbxReport(['-p', 'rules', '--shell', 'touch made-by-unknown-$(echo x)']);
    expect(unknown.report.violations.map((v) => v.rule)).toEqual(['paths.unknown']);
    expect(existsSync(join(t.workspace, 'made-by-unknown-x'))).toBe(false);
    for (const script of [
      'touch made-by-tick `echo x`',
      'touch made-by-bg & true',
      'case x in x) touch made-by-case;; esac',
      // A glob or $VAR in an argument is fine; as the command word it is unknown until sh runs.
      'true; $CMD made-by-var',
    ]) {
      const r = await sbxReport(['-p', 'rules', '--env', 'CMD=touch', '--shell', script]);
      expect(r.code, script).toBe(126);
      expect(r.report.error?.code, script).toBe('SHELL_SYNTAX');
      expect(
        r.report.violations.map((v) => v.rule),
        script,
      ).toEqual(['commands.shell_syntax']);
    }
    for (const f of ['made-by-tick', 'made-by-bg', 'made-by-case', 'made-by-var'])
      expect(existsSync(join(t.workspace, f)), f).toBe(false);
    // The commands of the string are judged like a command: rm is on the deny list, after a pipe and in $(...) too.
    for (const script of ['rm victim.txt', 'echo "$(rm victim.txt)"', 'for f in victim.txt; do rm $f; done'])
      expect(
        (await sbxReport(['-p', 'rules', '--shell', script])).report.violations.map((v) => v.rule),
        script,
      ).toEqual(['commands.deny']);
    expect(
      (await sbxReport(['-p', 'rules', '--shell', 'echo victim.txt | xargs rm'])).report.violations.map((v) => v.rule),
    ).toEqual(['commands.deny']);
    expect(existsSync(join(t.workspace, 'victim.txt'))).toBe(true);
  });

  it('agent --shell: `ls src | wc -l` prints the count it prints outside; redirections stay in the workspace', async () => {
    mkdirSync(join(t.workspace, 'src'), { recursive: true });
    for (const f of ['a.ts', 'b.ts', 'c.ts']) writeFileSync(join(t.workspace, 'src', f), '');
    const host = await runHost(['sh', '-c', 'ls src | wc -l'], opts());
    expect(host.out).toBe('3\n');
    const r = await runSbx(['-p', 'agent', '--shell', 'ls src | wc -l'], opts());
    expect({ code: r.code, out: r.out }).toEqual({ code: 0, out: host.out });
    const chained = await runSbx(
      [
        '-p',
        'agent',
        '--shell',
        'ls src > listing.txt 2>&1 && wc -l < listing.txt; cat missing 2>/dev/null || echo none',
      ],
      opts(),
    );
    expect({ code: chained.code, out: chained.out }).toEqual({ code: 0, out: '3\nnone\n' });
    expect(readFileSync(join(t.workspace, 'listing.txt'), 'utf8')).toBe('a.ts\nb.ts\nc.ts\n');
    // A redirection target is a path the command writes: .. is refused before anything runs.
    const escaping = await sbxReport(['-p', 'agent', '--shell', 'touch made-before-escape && echo x > ../escaped.txt']);
    expect(escaping.code).toBe(126);
    expect(escaping.report.error?.code).toBe('PATH_ESCAPE');
    expect(escaping.report.violations.map((v) => v.rule)).toEqual(['paths.traversal']);
    expect(existsSync(join(t.workspace, 'made-before-escape'))).toBe(false);
    expect(existsSync(join(t.root, 'escaped.txt'))).toBe(false);
  });

  it('agent --shell: curl ... | sh is refused naming curl (126), and nothing of the string ran; the control runs it', async () => {
    const script = 'touch ran-marker && curl -s http://127.0.0.1:1/ | sh';
    const r = await sbxReport(['-p', 'agent', '--shell', script]);
    expect(r.code).toBe(126);
    expect(r.report.error?.code).toBe('COMMAND_DENIED');
    expect(r.report.violations[0]).toEqual({
      phase: 'preflight',
      kind: 'command',
      rule: 'commands.deny',
      detail: "curl is on the profile's deny list (@network)",
      // The agent profile's deny entry naming @network (test/integration/core/rule-sources.test.ts: lines).
      source: expect.objectContaining({ key: 'commands.deny[0]', origin: 'profile' }),
    });
    expect(r.report.violations.map((v) => v.rule)).toEqual(['commands.deny', 'commands.offline', 'commands.deny']);
    expect(r.err).toContain("curl is on the profile's deny list (@network)");
    expect(existsSync(join(t.workspace, 'ran-marker'))).toBe(false);
    // Control: without command rules the same string runs (touch first, then curl fails to connect).
    const control = await runSbx(['--shell', script], opts());
    expect(control.code).toBe(0);
    expect(existsSync(join(t.workspace, 'ran-marker'))).toBe(true);
  });

  it("agent: the user's own sh -c stays refused (sh is on the deny list); explain --shell shows each command's verdict", async () => {
    const explicit = await sbxReport(['-p', 'agent', '--', 'sh', '-c', 'ls']);
    expect(explicit.code).toBe(126);
    expect(explicit.report.violations.map((v) => [v.rule, v.detail])).toEqual([
      ['commands.deny', "sh is on the profile's deny list (@shells)"],
    ]);
    const explained = await runSbxRaw(
      ['explain', '-p', 'agent', '--shell', 'ls src | curl -s http://127.0.0.1:1/ 2>&1'],
      opts(),
    );
    const lines = explained.out.split('\n');
    const at = lines.findIndex((l) => l.startsWith('verdict'));
    expect(lines.slice(at, at + 3)).toEqual([
      "verdict   REFUSED: commands.deny: curl is on the profile's deny list (@network); commands.offline: curl needs the network, and this profile has none",
      '  ls src: allowed',
      "  curl -s http://127.0.0.1:1/ 2>&1: REFUSED: commands.deny: curl is on the profile's deny list (@network); commands.offline: curl needs the network, and this profile has none",
    ]);
  });

  it('the library takes the same shell string (run({ shell })); uname needs an approval, asked once for the string', async () => {
    const { run } = (await import(DIST_API)) as typeof import('../../../src/api.js');
    const base = {
      profile: 'agent',
      cwd: t.workspace,
      hostEnv: { ...t.env, XDG_STATE_HOME: join(t.root, 'lib-state') },
      stdio: 'capture' as const,
    };
    const o = await run({ ...base, shell: 'ls src | wc -l' });
    expect(o.exitCode).toBe(0);
    expect(o.stdout?.toString()).toBe('3\n');
    expect(o.command).toEqual(['/bin/sh', '-c', '--', 'ls src | wc -l']);
    const asked: string[] = [];
    const once = await run({
      ...base,
      shell: 'uname | wc -l',
      approve: async (req) => (asked.push(req.reason), 'once'),
    });
    expect(once.stdout?.toString()).toBe('1\n');
    expect(asked).toEqual(["uname is not on the profile's allow list"]);
    await expect(run({ ...base, command: ['ls'], shell: 'ls' })).rejects.toMatchObject({ code: 'OPTIONS_INVALID' });
    // A command the sandbox cannot find is 127 before anyone is asked to approve it.
    const missing = run({
      ...base,
      command: ['no-such-tool-x'],
      approve: async (req) => (asked.push(req.reason), 'once'),
    });
    await expect(missing).rejects.toMatchObject({ code: 'COMMAND_NOT_FOUND', exitCode: 127 });
    expect(asked).toHaveLength(1);
  });

  it('the agent profile asks for commands not on its allow list; no terminal: refused', async () => {
    const ask = await sbxReport(['-p', 'agent', '--', 'uname']);
    expect(ask.code).toBe(126);
    expect(ask.report.error?.code).toBe('APPROVAL_DENIED');
    expect(ask.err).toContain(
      "uname is not on the profile's allow list: needs approval, and there is no terminal to ask on",
    );
    expect(
      ledgerRecords()
        .filter((r) => r.type === 'approval')
        .at(-1),
    ).toMatchObject({ decision: 'refused', by: 'no-tty', argv: ['uname'] });
    const allowed = await runSbx(['-p', 'agent', '--', 'ls', 'victim.txt'], opts());
    expect(allowed.out).toBe('victim.txt\n');
    const never = await sbxReport(['-p', 'agent', '--approval', 'never', '--', 'uname']);
    expect(never.report.error?.code).toBe('APPROVAL_DENIED');
  });

  it('approvals through the library: "always" is remembered, "deny" refuses and is remembered, each answer is in the ledger at once', async () => {
    const { run } = (await import(DIST_API)) as typeof import('../../../src/api.js');
    const stateHome = join(t.root, 'approvals-state');
    const hostEnv = { ...t.env, XDG_STATE_HOME: stateHome };
    const file = join(t.root, 'approvals-ledger.jsonl');
    const base = { profile: 'asking', cwd: t.workspace, hostEnv, stdio: 'capture' as const, audit: { file } };
    const asked: string[][] = [];
    const answer = (a: 'once' | 'always' | 'deny') => async (req: { argv: readonly string[] }) => (
      asked.push([...req.argv]), a
    );

    expect((await run({ ...base, command: ['uname'], approve: answer('always') })).exitCode).toBe(0);
    // Remembered: not asked again, and without an approver at all.
    expect((await run({ ...base, command: ['uname'] })).exitCode).toBe(0);
    expect(asked).toEqual([['uname']]);

    await expect(run({ ...base, command: ['touch', 'denied-marker'], approve: answer('deny') })).rejects.toMatchObject({
      code: 'APPROVAL_DENIED',
      exitCode: 126,
    });
    await expect(run({ ...base, command: ['touch', 'denied-marker'], approve: answer('once') })).rejects.toMatchObject({
      code: 'APPROVAL_DENIED',
    });
    expect(asked).toHaveLength(2);
    expect(existsSync(join(t.workspace, 'denied-marker'))).toBe(false);

    // "once" is not remembered.
    expect((await run({ ...base, command: ['id', '-u'], approve: answer('once') })).exitCode).toBe(0);
    await expect(run({ ...base, command: ['id', '-u'] })).rejects.toMatchObject({ code: 'APPROVAL_DENIED' });

    const approvals = readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((r) => r.type === 'approval');
    expect(approvals.map((r) => [r.argv[0], r.decision, r.by])).toEqual([
      ['uname', 'always', 'user'],
      ['uname', 'always', 'stored'],
      ['touch', 'deny', 'user'],
      ['touch', 'deny', 'stored'],
      ['id', 'once', 'user'],
      ['id', 'refused', 'policy'],
    ]);
  });

  it('an approval is for each command of a string as the rules read it: `uname -a` covers it anywhere, written any way; `uname -s` is asked', async () => {
    const { run } = (await import(DIST_API)) as typeof import('../../../src/api.js');
    const stateHome = join(t.root, 'approvals-strings-state');
    const base = {
      profile: 'asking-strings',
      cwd: t.workspace,
      hostEnv: { ...t.env, XDG_STATE_HOME: stateHome },
      stdio: 'capture' as const,
    };
    const asked: string[] = [];
    const answer = (a: 'once' | 'always') => async (req: { reason: string }) => (asked.push(req.reason), a);
    expect((await run({ ...base, shell: 'uname -a | wc -l', approve: answer('always') })).stdout?.toString()).toBe(
      '1\n',
    );
    // No approver: remembered for `uname -a` wherever it stands, however it is spaced or quoted.
    for (const shell of ['ls >/dev/null; uname -a | head -1', "uname   '-a' | wc -l"]) {
      const o = await run({ ...base, shell });
      expect(o.exitCode, shell).toBe(0);
    }
    expect(asked).toEqual(["uname is not on the profile's allow list"]);
    // Another flag is another command: asked (and refused without an approver).
    await expect(run({ ...base, shell: 'uname -s' })).rejects.toMatchObject({ code: 'APPROVAL_DENIED' });
    const list = await runSbxRaw(['approvals', 'list', '--json'], {
      env: { ...t.env, XDG_STATE_HOME: stateHome },
      cwd: t.workspace,
    });
    expect(
      list.out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { command: string[]; answer: string })
        .map((e) => [e.command, e.answer]),
    ).toEqual([[['uname', '-a'], 'always']]);
  });
});
