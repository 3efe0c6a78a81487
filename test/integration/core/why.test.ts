// `sbx why` through the real CLI (`node bin/sbx.js why`) on a user profile that extends the built-in
// agent: the deciding line is in the user's file for the keys it writes (network.allow, network.deny,
// commands.allow.uname) and in builtin:agent for those it inherits (commands.deny, commands.allow.make,
// read_only). The command verdicts are checked against `sbx run` of the same command (the answer is
// what the sandbox enforces), and the exit status is 0 only when every target is allowed.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_PROFILES_DIR } from '../../helpers/paths.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runSbx,
  runSbxRaw,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
let userFile: string;
const USER_LINES = [
  '# a user profile on top of the built-in agent',
  'extends: agent',
  'network:',
  '  allow: ["*.example.test"]',
  '  deny:',
  '    - bad.example.test',
  'commands:',
  '  allow:',
  '    uname: {}',
];
const AGENT = join(BUILTIN_PROFILES_DIR, 'agent.yaml');

/** 1-based line and column of `text` in `lines`. */
function at(lines: readonly string[], text: string): { line: number; col: number } {
  const line = lines.findIndex((l) => l.includes(text));
  return { line: line + 1, col: lines[line]!.indexOf(text) + 1 };
}

interface Answer {
  kind: string;
  target?: string;
  argv?: string[];
  allowed: boolean;
  access?: string;
  verdict?: string;
  source?: { key: string; file?: string; line?: number; col?: number; origin?: string };
  rules?: { rule: string; source?: Answer['source'] }[];
}

async function why(args: string[]): Promise<{ code: number | null; answers: Answer[]; out: string; err: string }> {
  const r = await runSbxRaw(['why', '--json', ...args], { env: t.env, cwd: t.workspace });
  const answers = r.out ? (JSON.parse(r.out) as { answers: Answer[] }).answers : [];
  return { code: r.code, answers, out: r.out, err: r.err };
}

describe.skipIf(SKIP_INTEGRATION)('sbx why on a user profile extending a built-in (bin/sbx.js)', () => {
  let agentLines: string[];
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    t = makeTestHost('why');
    const dir = join(t.configHome, 'sbx', 'profiles');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    userFile = join(dir, 'mine.yaml');
    writeFileSync(userFile, `${USER_LINES.join('\n')}\n`, { mode: 0o644 });
    mkdirSync(join(t.home, '.config', 'sbx', 'tools'), { recursive: true });
    writeFileSync(join(t.workspace, '.env'), 'TOKEN=planted\n');
    writeFileSync(join(t.workspace, 'notes.txt'), 'hello\n');
    agentLines = (await import('node:fs')).readFileSync(AGENT, 'utf8').split('\n');
  });
  afterAll(() => t?.cleanup());

  it("hosts: the user's network.allow and network.deny lines decide", async () => {
    const r = await why(['-p', 'mine', 'api.example.test', 'bad.example.test:443', 'example.com']);
    expect(r.code, r.err).toBe(1);
    const [api, bad, other] = r.answers;
    expect(api).toMatchObject({
      allowed: true,
      source: { key: 'network.allow[0]', file: userFile, ...at(USER_LINES, '"*.example.test"') },
    });
    expect(bad).toMatchObject({
      allowed: false,
      source: { key: 'network.deny[0]', file: userFile, ...at(USER_LINES, 'bad.example.test') },
    });
    expect(other).toMatchObject({
      allowed: false,
      source: { key: 'network.allow', file: userFile, ...at(USER_LINES, 'allow:') },
    });
  });

  it("commands: the built-in's deny and allow lines for what it inherits, the user's for what it adds; sbx run agrees", async () => {
    const curl = await why(['-p', 'mine', '--', 'curl', 'https://api.example.test']);
    expect(curl.code, curl.err).toBe(1);
    expect(curl.answers[0]).toMatchObject({ kind: 'command', verdict: 'deny', allowed: false });
    expect(curl.answers[0]!.rules![0]).toMatchObject({
      rule: 'commands.deny',
      source: { key: 'commands.deny[0]', file: AGENT, ...at(agentLines, '"@network"') },
    });
    const ran = await runSbx(['-p', 'mine', '--', 'curl', 'https://api.example.test'], {
      env: t.env,
      cwd: t.workspace,
    });
    expect(ran.code, ran.err).toBe(126);

    const make = await why(['-p', 'mine', '--', 'make', '--version']);
    expect(make.answers[0]!.rules![0]!.source).toMatchObject({
      key: 'commands.allow.make',
      file: AGENT,
      ...at(agentLines, '    make:'),
      col: 5,
    });

    const uname = await why(['-p', 'mine', '--', 'uname', '-a']);
    expect(uname.code, uname.err).toBe(0);
    expect(uname.answers[0]).toMatchObject({ verdict: 'allow', allowed: true });
    expect(uname.answers[0]!.rules![0]!.source).toMatchObject({
      key: 'commands.allow.uname',
      file: userFile,
      ...at(USER_LINES, 'uname'),
    });
    const control = await runSbx(['-p', 'mine', '--approval', 'never', '--', 'uname', '-s'], {
      env: t.env,
      cwd: t.workspace,
    });
    expect(control.code, control.err).toBe(0);
  });

  it("paths: a secret hidden by sbx's default, a workspace file writable, the built-in's read_only line", async () => {
    const r = await why(['-p', 'mine', '.env', 'notes.txt', join(t.home, '.config', 'sbx', 'tools', 'x')]);
    expect(r.code, r.err).toBe(1);
    const [env, notes, tools] = r.answers;
    expect(env).toMatchObject({ access: 'hidden', source: { key: 'sensitive.files', origin: 'default' } });
    expect(notes).toMatchObject({ access: 'writable', source: { key: 'workspace', origin: 'default' } });
    expect(tools).toMatchObject({
      access: 'readable',
      source: { key: 'read_only[0]', file: AGENT, ...at(agentLines, '{ path: "~/.config/sbx/tools"') },
    });
  });

  it('text: each target with its verdict and its rule, built-ins as builtin:NAME:LINE:COL; exit 0 when all are allowed', async () => {
    const r = await runSbxRaw(['why', '-p', 'mine', 'notes.txt', 'api.example.test', '--', 'make'], {
      env: t.env,
      cwd: t.workspace,
    });
    expect(r.code, r.err).toBe(0);
    const make = at(agentLines, '    make:');
    expect(r.out).toContain('notes.txt: writable');
    expect(r.out).toContain(`api.example.test: allowed`);
    expect(r.out).toContain(`(builtin:agent:${make.line}:5 commands.allow.make)`);
  });

  it("a run's own flags change the answer as they change the run: --allow-domain, --ro-bind, --unmask", async () => {
    const before = await why(['-p', 'mine', 'example.com', '.env', join(t.root, 'outside')]);
    expect(before.answers.map((a) => a.allowed)).toEqual([false, false, false]);
    writeFileSync(join(t.root, 'outside'), 'x\n');
    const after = await why([
      '-p',
      'mine',
      '--allow-domain',
      'example.com',
      '--ro-bind',
      join(t.root, 'outside'),
      '--unmask',
      '.env',
      'example.com',
      '.env',
      join(t.root, 'outside'),
    ]);
    expect(after.code, after.err).toBe(0);
    expect(after.answers.map((a) => [a.target, a.allowed])).toEqual([
      ['example.com', true],
      ['.env', true],
      [join(t.root, 'outside'), true],
    ]);
    // Decided by the flag, and said so (not the profile's network.allow line).
    expect(after.answers[0]!.source).toEqual({ key: '--allow-domain', origin: 'flag' });
    // The targets, then the command after `--`, with the flags before them.
    const mixed = await why(['-p', 'mine', '--allow-domain', 'example.com', 'example.com', '--', 'uname', '-a']);
    expect(mixed.answers.map((a) => [a.kind, a.allowed])).toEqual([
      ['host', true],
      ['command', true],
    ]);
  });

  it('usage: nothing to ask about is exit 2', async () => {
    const r = await runSbxRaw(['why', '-p', 'mine'], { env: t.env, cwd: t.workspace });
    expect(r.code).toBe(2);
    expect(r.err).toContain('nothing to ask about');
  });
});
