// Command rules, path guards, shell strings and approvals end to end: real bwrap via `node bin/sbx.js`
// (and the library for the approval callback). A refused command must not have run: each case plants
// a marker the command would create, and checks it is absent; the control runs the same command
// under rules that allow it.
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIST_API, makeTestHost, requireIntegrationPrerequisites, runSbx, runSbxRaw, SKIP_INTEGRATION, type TestHost } from '../../helpers/sbx-cli.js';
import { parseReport } from '../../helpers/report.js';
import type { Report } from '../../../src/report/report.js';

let t: TestHost;
let ledger: string;
const opts = (extra: Record<string, string> = {}) => ({ env: { ...t.env, SBX_AUDIT_FILE: ledger, ...extra }, cwd: t.workspace });
const ledgerRecords = () => (existsSync(ledger) ? readFileSync(ledger, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) : []);


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
    writeFileSync(join(profiles, 'rules.yaml'), [
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
    ].join('\n'));
    writeFileSync(join(profiles, 'asking.yaml'), 'extends: default\ncommands:\n  default: ask\n  allow: { ls: }\n');
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
    expect(r.report.violations).toEqual([expect.objectContaining({ phase: 'preflight', kind: 'command', rule: 'commands.deny' })]);
    expect(existsSync(join(t.workspace, 'victim.txt'))).toBe(true);
    // explain says so without running anything.
    const explained = await runSbxRaw(['explain', '-p', 'rules', '--', 'rm', 'victim.txt'], opts());
    expect(explained.out.split('\n').filter((l) => l.startsWith('verdict'))).toEqual(["verdict   REFUSED: commands.deny: rm is on the profile's deny list (@delete)"]);
    const lifted = await runSbx(['-p', 'rules', '--allow-denylisted-commands', '--', 'rm', 'victim.txt'], opts());
    expect(lifted.code).toBe(0);
    expect(existsSync(join(t.workspace, 'victim.txt'))).toBe(false);
    writeFileSync(join(t.workspace, 'victim.txt'), 'keep me\n');
  });

  it('git push --force is refused by the block rule, in its other spellings too; the violation is in the ledger', async () => {
    for (const argv of [['git', 'push', '--force'], ['git', 'push', '-f', 'origin', 'main'], ['git', 'push', 'origin', '+main']]) {
      const r = await sbxReport(['-p', 'rules', '--', ...argv]);
      expect(r.code, argv.join(' ')).toBe(126);
      expect(r.report.violations.map((v) => v.rule), argv.join(' ')).toEqual(['commands.allow.git.block']);
    }
    const last = ledgerRecords().at(-1)!;
    expect(last).toMatchObject({ type: 'run', exitCode: 126, argv: ['git', 'push', 'origin', '+main'], error: { code: 'COMMAND_DENIED' } });
  });

  it('without network, curl and URLs are refused up front (offline rule), even with --allow-denylisted-commands', async () => {
    const r = await sbxReport(['--allow-denylisted-commands', '--', 'curl', 'https://example.com/?token=abc']);
    expect(r.code).toBe(126);
    expect(r.report.violations.map((v) => v.rule)).toEqual(['commands.offline', 'commands.offline']);
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
      expect(r.report.violations.map((v) => v.rule), argv.join(' ')).toEqual([rule]);
    }
    const ok = await runSbx(['-p', 'rules', '--', 'cat', './victim.txt'], opts());
    expect(ok.out).toBe('keep me\n');
  });

  it('--shell with restricted syntax: one command runs, a pipe or substitution is refused (SHELL_SYNTAX) and nothing runs', async () => {
    const ok = await runSbx(['-p', 'rules', '--shell', 'cat "victim.txt"'], opts());
    expect(ok.code).toBe(0);
    expect(ok.out).toBe('keep me\n');
    for (const script of ['touch made-by-pipe | cat', 'touch $(echo made-by-subst)', 'touch made-by-chain; true']) {
      const r = await sbxReport(['-p', 'rules', '--shell', script]);
      expect(r.code, script).toBe(126);
      expect(r.report.error?.code, script).toBe('SHELL_SYNTAX');
    }
    for (const f of ['made-by-pipe', 'made-by-subst', 'made-by-chain']) expect(existsSync(join(t.workspace, f)), f).toBe(false);
    // The words of the string are judged like a command: rm is on the deny list.
    expect((await sbxReport(['-p', 'rules', '--shell', 'rm victim.txt'])).report.violations.map((v) => v.rule)).toEqual(['commands.deny']);
  });

  it('the agent profile refuses shells (so --shell too), and asks for commands not on its allow list; no terminal: refused', async () => {
    const shell = await sbxReport(['-p', 'agent', '--shell', 'ls']);
    expect(shell.code).toBe(126);
    expect(shell.report.violations.map((v) => v.rule)).toEqual(['commands.deny']);
    const ask = await sbxReport(['-p', 'agent', '--', 'uname']);
    expect(ask.code).toBe(126);
    expect(ask.report.error?.code).toBe('APPROVAL_DENIED');
    expect(ask.err).toContain('uname is not on the profile\'s allow list: needs approval, and there is no terminal to ask on');
    expect(ledgerRecords().filter((r) => r.type === 'approval').at(-1)).toMatchObject({ decision: 'refused', by: 'no-tty', argv: ['uname'] });
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
    const answer = (a: 'once' | 'always' | 'deny') => async (req: { argv: readonly string[] }) => (asked.push([...req.argv]), a);

    expect((await run({ ...base, command: ['uname'], approve: answer('always') })).exitCode).toBe(0);
    // Remembered: not asked again, and without an approver at all.
    expect((await run({ ...base, command: ['uname'] })).exitCode).toBe(0);
    expect(asked).toEqual([['uname']]);

    await expect(run({ ...base, command: ['touch', 'denied-marker'], approve: answer('deny') })).rejects.toMatchObject({ code: 'APPROVAL_DENIED', exitCode: 126 });
    await expect(run({ ...base, command: ['touch', 'denied-marker'], approve: answer('once') })).rejects.toMatchObject({ code: 'APPROVAL_DENIED' });
    expect(asked).toHaveLength(2);
    expect(existsSync(join(t.workspace, 'denied-marker'))).toBe(false);

    // "once" is not remembered.
    expect((await run({ ...base, command: ['id', '-u'], approve: answer('once') })).exitCode).toBe(0);
    await expect(run({ ...base, command: ['id', '-u'] })).rejects.toMatchObject({ code: 'APPROVAL_DENIED' });

    const approvals = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((r) => r.type === 'approval');
    expect(approvals.map((r) => [r.argv[0], r.decision, r.by])).toEqual([
      ['uname', 'always', 'user'],
      ['uname', 'always', 'stored'],
      ['touch', 'deny', 'user'],
      ['touch', 'deny', 'stored'],
      ['id', 'once', 'user'],
      ['id', 'refused', 'policy'],
    ]);
  });
});
