// The hooks under the real agents: Claude Code and Gemini CLI, installed from npm, driven headless
// against a local stand-in of their model API (stand-in-api.ts) that plays a fixed script of shell tool
// calls, with `sbx hook` in their settings as the README says. What each agent then does is the agent's
// own behaviour: whether it asks before a call, where the next call starts. Each case has its control,
// the same script without the hook. The agents are optional: SBX_TEST_CLAUDE_CODE names the `claude`
// binary, SBX_TEST_GEMINI_CLI Gemini CLI's bundle/gemini.js (.ci/run installs both); without them the
// suites are skipped, and say so in their names.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  SBX_BIN,
  SKIP_INTEGRATION,
  stopWarmServers,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { anthropicStandIn, geminiStandIn, type StandIn } from './stand-in-api.js';

const CLAUDE = process.env.SBX_TEST_CLAUDE_CODE;
const GEMINI = process.env.SBX_TEST_GEMINI_CLI;
/** One agent session: its start-up, a sandbox per call, and the stand-in's turns. */
const SESSION_MS = 120_000;

let t: TestHost;
/** A git repository (the agents' project) with one commit and a sub-directory. */
let repo: string;

function makeRepo(): string {
  const dir = join(t.root, 'project');
  mkdirSync(join(dir, 'sub'), { recursive: true });
  writeFileSync(join(dir, 'README'), 'hello\n');
  writeFileSync(join(dir, 'sub', 'in-sub.txt'), 'x\n');
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, env: t.env });
  git('init', '-q');
  git('config', 'user.email', 'agent@example.com');
  git('config', 'user.name', 'agent');
  git('add', '.');
  git('commit', '-qm', 'init');
  return dir;
}

const commits = () =>
  execFileSync('git', ['log', '--format=%s'], { cwd: repo, env: t.env, encoding: 'utf8' }).trim().split('\n');

/** The hook command as the README writes it: sbx by absolute path, and a hook that cannot start blocks. */
const hookLine = (agent: string, flags = '') => `'${SBX_BIN}' hook ${agent}${flags ? ` ${flags}` : ''} || exit 2`;

/** Claude Code's stream-json lines, as far as the tests read them. */
interface ClaudeEvent {
  type: string;
  message?: { content: { type: string; input?: Record<string, unknown>; content?: unknown; is_error?: boolean }[] };
}

/** Gemini CLI's stream-json lines, as far as the tests read them. */
interface GeminiEvent {
  type: string;
  parameters?: Record<string, unknown>;
  output?: string;
  status?: string;
}

const lines = <T>(out: string): T[] =>
  out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as T);

/** A tool call's outcome as the agent reported it in its stream-json output. */
interface Step {
  input: Record<string, unknown>;
  output: string;
  error: boolean;
}

describe.skipIf(SKIP_INTEGRATION || !CLAUDE)('sbx hook under the real Claude Code (SBX_TEST_CLAUDE_CODE)', () => {
  const home = () => join(t.root, 'claude-home');

  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('agent-claude');
    repo = makeRepo();
    mkdirSync(join(home(), '.claude'), { recursive: true });
  });
  afterAll(() => t?.cleanup());

  /** `claude -p` over `script` in the project, with `hook` (or none) in the user settings. */
  async function session(script: Record<string, unknown>[], hook: string | undefined, args: string[] = []) {
    const hooks = hook
      ? { PreToolUse: [{ matcher: 'Bash|PowerShell', hooks: [{ type: 'command', command: hook }] }] }
      : {};
    writeFileSync(join(home(), '.claude', 'settings.json'), JSON.stringify({ hooks }));
    const api: StandIn = await anthropicStandIn(script);
    try {
      const env = {
        ...t.env,
        HOME: home(),
        ANTHROPIC_BASE_URL: api.url,
        ANTHROPIC_API_KEY: 'sk-ant-stand-in',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_AUTOUPDATER: '1',
      };
      const argv = [CLAUDE!, '-p', 'go', '--output-format', 'stream-json', '--verbose', ...args];
      const r = await runHost(argv, { env, cwd: repo, timeoutMs: SESSION_MS });
      expect(r.code, r.err).toBe(0);
      const blocks = (type: string) =>
        lines<ClaudeEvent>(r.out).flatMap((e) => (e.message?.content ?? []).filter((c) => c.type === type));
      const inputs = blocks('tool_use').map((c) => c.input ?? {});
      const results = blocks('tool_result');
      const steps: Step[] = inputs.map((input, i) => {
        const content = results[i]?.content;
        const output = typeof content === 'string' ? content : JSON.stringify(content);
        return { input, output, error: results[i]?.is_error === true };
      });
      return { steps, requests: api.requests };
    } finally {
      await api.close();
    }
  }

  const script = [
    { command: 'git commit --allow-empty -m by-agent', description: 'commit' },
    { command: 'cd sub', description: 'change directory' },
    { command: 'pwd', description: 'where' },
  ];

  it(
    'control, no hook: the commit waits for an approval nobody gives (-p), and `cd sub` carries over',
    async () => {
      const { steps } = await session(script, undefined);
      expect(steps[0]).toMatchObject({ error: true, output: expect.stringMatching(/requires approval/) });
      expect(steps[2]).toMatchObject({ error: false, output: join(repo, 'sub') });
      expect(commits()).toEqual(['init']);
    },
    SESSION_MS,
  );

  it(
    'default hook: the commit still waits for approval, as does every wrapped command; nothing ran',
    async () => {
      const { steps } = await session(script, hookLine('claude-code'));
      for (const step of steps) expect(step, JSON.stringify(step)).toMatchObject({ error: true });
      expect(steps[0]!.output).toMatch(/requires approval/);
      expect(commits()).toEqual(['init']);
    },
    SESSION_MS,
  );

  it(
    '--approve: every call runs without asking, in the sandbox, and `cd sub` carries over',
    async () => {
      writeFileSync(join(home(), 'host-only.txt'), 'x');
      const probe = { command: 'ls -a ~', description: 'list HOME' };
      const { steps } = await session([...script, probe], hookLine('claude-code', '--approve'));
      expect(steps[0]).toMatchObject({ error: false, output: expect.stringMatching(/by-agent/) });
      expect(steps[2]).toMatchObject({ error: false, output: join(repo, 'sub') });
      // The sandbox's HOME is its own: the host's file is not there.
      expect(steps[3]!.error, steps[3]!.output).toBe(false);
      expect(steps[3]!.output).not.toContain('host-only.txt');
      expect(commits()).toEqual(['by-agent', 'init']);
    },
    SESSION_MS,
  );

  it(
    '--approve, a cd inside a command: the model is told it does not carry over, and the next call starts where it was',
    async () => {
      const inner = [
        { command: 'ls && cd sub && ls', description: 'list twice' },
        { command: 'pwd', description: 'where' },
      ];
      const { steps, requests } = await session(inner, hookLine('claude-code', '--approve'));
      expect(steps[0]).toMatchObject({ error: false, output: expect.stringContaining('in-sub.txt') });
      expect(steps[1]).toMatchObject({ error: false, output: repo });
      expect(requests.some((r) => r.includes('does not carry over'))).toBe(true);
    },
    SESSION_MS,
  );

  it(
    '--approve --warm: the same session as --approve; the first call starts the hook server',
    async () => {
      const { steps } = await session(script, hookLine('claude-code', '--approve --warm'));
      expect(steps[0]).toMatchObject({ error: false, output: expect.stringMatching(/by-agent/) });
      expect(steps[2]).toMatchObject({ error: false, output: join(repo, 'sub') });
      expect(commits()[0]).toBe('by-agent');
      // The server the first call started outlives the session (it exits when idle): stop it.
      expect(stopWarmServers(t.cacheHome)).toBe(1);
    },
    SESSION_MS,
  );
});

describe.skipIf(SKIP_INTEGRATION || !GEMINI)('sbx hook under the real Gemini CLI (SBX_TEST_GEMINI_CLI)', () => {
  const home = () => join(t.root, 'gemini-home');

  beforeAll(() => {
    requireIntegrationPrerequisites();
    expect(existsSync(GEMINI!), GEMINI).toBe(true);
    t = makeTestHost('agent-gemini');
    repo = makeRepo();
    mkdirSync(join(home(), '.gemini'), { recursive: true });
  });
  afterAll(() => t?.cleanup());

  async function session(script: Record<string, unknown>[], hook: string | undefined, args: string[]) {
    const settings = {
      security: { auth: { selectedType: 'gemini-api-key' } },
      ...(hook
        ? { hooks: { BeforeTool: [{ matcher: 'run_shell_command', hooks: [{ type: 'command', command: hook }] }] } }
        : {}),
    };
    writeFileSync(join(home(), '.gemini', 'settings.json'), JSON.stringify(settings));
    const api = await geminiStandIn(script);
    try {
      const env = {
        ...t.env,
        HOME: home(),
        GEMINI_API_KEY: 'stand-in',
        GOOGLE_GEMINI_BASE_URL: api.url,
        GEMINI_CLI_TRUST_WORKSPACE: 'true',
        GEMINI_CLI_NO_RELAUNCH: '1',
      };
      const argv = [process.execPath, GEMINI!, '-p', 'go', '--output-format', 'stream-json', ...args];
      const r = await runHost(argv, { env, cwd: repo, timeoutMs: SESSION_MS });
      expect(r.code, r.err).toBe(0);
      const events = lines<GeminiEvent>(r.out);
      const inputs = events.filter((e) => e.type === 'tool_use').map((e) => e.parameters ?? {});
      const results = events.filter((e) => e.type === 'tool_result');
      return inputs.map(
        (input, i): Step => ({
          input,
          output: String(results[i]?.output ?? ''),
          error: results[i]?.status !== 'success',
        }),
      );
    } finally {
      await api.close();
    }
  }

  const commit = { command: 'git commit --allow-empty -m by-gemini', description: 'commit' };
  const allowCommit = ['--allowed-tools', 'run_shell_command(git commit)'];

  it(
    'control, no hook: a policy rule allowing `git commit` runs the commit',
    async () => {
      const steps = await session([commit], undefined, allowCommit);
      expect(steps[0]).toMatchObject({ error: false, output: expect.stringMatching(/by-gemini/) });
      expect(commits()[0]).toBe('by-gemini');
    },
    SESSION_MS,
  );

  it(
    'hook: the same rule no longer matches the rewritten command, so the commit is not run (nothing widened)',
    async () => {
      const steps = await session(
        [{ ...commit, command: 'git commit --allow-empty -m hooked' }],
        hookLine('gemini-cli'),
        allowCommit,
      );
      expect(steps[0]).toMatchObject({ error: true, output: expect.stringMatching(/denied by policy/) });
      expect(commits()[0]).toBe('by-gemini');
    },
    SESSION_MS,
  );

  it(
    'hook under --approval-mode yolo: the call runs sandboxed; a cd lasts for its own call only, as without the hook',
    async () => {
      const script = [
        { command: 'git commit --allow-empty -m yolo', description: 'commit' },
        { command: 'cd sub && pwd', description: 'cd' },
        { command: 'pwd', description: 'where' },
      ];
      const steps = await session(script, hookLine('gemini-cli'), ['--approval-mode', 'yolo']);
      expect(steps.map((s) => s.error)).toEqual([false, false, false]);
      expect(steps[1]!.output).toBe(join(repo, 'sub'));
      expect(steps[2]!.output).toBe(repo);
      expect(commits()[0]).toBe('yolo');
    },
    SESSION_MS,
  );
});
