// `sbx hook claude-code` end to end: recorded PreToolUse inputs (test/fixtures/hooks) go through the
// real CLI; a command's rewrite (no permission decision unless --approve) runs with `bash -c`, as Claude
// Code runs it, in a git-less temp workspace, beside the original run unsandboxed in an identical copy:
// same stdout, same status. A leading `cd` runs in the agent's shell so its directory carries over. What
// sbx refuses is denied with its reason and never runs; malformed input is denied; other tools get no
// answer. Runs as whoever runs the suite (root, and an unprivileged user in CI). agents.test.ts runs
// the hook under the real Claude Code.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES_DIR } from '../../helpers/paths.js';
import {
  DIST_API,
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbxRaw,
  SBX_BIN,
  SKIP_INTEGRATION,
  type Ran,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
/** The unsandboxed control's workspace: a copy of t.workspace made before anything ran. */
let plain: string;

const recorded = (name: string) => readFileSync(join(FIXTURES_DIR, 'hooks', `claude-code.${name}.json`), 'utf8');

/** A recorded input as Claude Code would send it from `cwd` (optionally with another command). */
function inputFor(name: string, cwd: string, command?: string): string {
  const input = JSON.parse(recorded(name));
  input.cwd = cwd;
  if (command !== undefined) input.tool_input.command = command;
  return JSON.stringify(input);
}

function hook(input: string, cwd: string, flags: readonly string[] = []): Promise<Ran> {
  return runSbxRaw(['hook', 'claude-code', ...flags], { env: t.env, cwd, input });
}

interface Decision {
  hookEventName: string;
  /** Absent on a rewrite (Claude Code's own rules decide), unless the hook runs with --approve. */
  permissionDecision?: 'allow' | 'deny';
  permissionDecisionReason?: string;
  updatedInput?: Record<string, unknown>;
  additionalContext?: string;
}

/** A rewrite: no decision of its own (Claude Code asks as it would), the command wrapped. */
function rewritten(decision: Decision): string {
  expect(decision.permissionDecision, decision.permissionDecisionReason).toBeUndefined();
  return decision.updatedInput!.command as string;
}

/** Claude Code's reading: exit 0, stdout one JSON object with hookSpecificOutput. */
function decisionOf(r: Ran): Decision {
  expect(r.code, r.err).toBe(0);
  const answer = JSON.parse(r.out) as { hookSpecificOutput: Decision };
  expect(answer.hookSpecificOutput.hookEventName).toBe('PreToolUse');
  return answer.hookSpecificOutput;
}

const bash = (script: string, cwd: string, env = t.env) => runHost(['bash', '-c', script], { env, cwd });

describe.skipIf(SKIP_INTEGRATION)('sbx hook claude-code (real bwrap)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('hook');
    writeFileSync(join(t.workspace, 'README.md'), '# fixture\nline 2\n');
    mkdirSync(join(t.workspace, 'src'));
    writeFileSync(join(t.workspace, 'src', 'a.ts'), 'export const a = 1;\n');
    plain = join(t.root, 'plain');
    cpSync(t.workspace, plain, { recursive: true });
    expect(existsSync(join(t.workspace, '.git'))).toBe(false);
  });
  afterAll(() => t?.cleanup());

  const cases: [string, string | undefined][] = [
    ['bash-quotes', undefined],
    ['bash-heredoc', undefined],
    ['bash-pipes', undefined],
    ['bash-unicode', undefined],
    ['bash-background-fields', undefined],
    // 100 KB of output from one printf argument: the command is past most line and buffer limits.
    [
      'bash-quotes',
      `printf '%s\\n' '${'0123456789abcdef'.repeat(6400)}' | wc -c && printf '%.40s\\n' '${'é'.repeat(50)}'`,
    ],
  ];
  it.each(cases.map(([name, command]) => [command ? `${name} (100 KB)` : name, name, command]))(
    '%s: the rewrite prints what the original prints, sandboxed',
    async (_, name, command) => {
      const original = (command as string | undefined) ?? JSON.parse(recorded(name!)).tool_input.command;
      const decision = decisionOf(await hook(inputFor(name!, t.workspace, command as string | undefined), t.workspace));
      const wrapped = rewritten(decision);
      const { command: _wrapped, ...rest } = decision.updatedInput!;
      const { command: _original, ...kept } = JSON.parse(recorded(name!)).tool_input;
      expect(rest).toEqual(kept);
      expect(wrapped).toMatch(
        /^'\/[^']+' '\/[^']+\/bin\/sbx\.js' run -p 'builtin:agent' --workspace '\/[^']+' --approval never --shell '/,
      );

      const sandboxed = await bash(wrapped, t.workspace);
      const control = await bash(original, plain);
      expect(control.code, control.err).toBe(0);
      expect(sandboxed.code, sandboxed.err).toBe(0);
      expect(sandboxed.out).toBe(control.out);
    },
    60_000,
  );

  it('the rewrite runs inside the sandbox: the control sees the host, the rewrite does not', async () => {
    // HOME is private in every sandbox: the host's HOME listing differs from the sandbox's.
    writeFileSync(join(t.home, 'host-only.txt'), 'x');
    const probe = 'ls -a ~';
    const decision = decisionOf(await hook(inputFor('bash-quotes', t.workspace, probe), t.workspace));
    const sandboxed = await bash(rewritten(decision), t.workspace);
    const control = await bash(probe, plain);
    expect(control.out).toContain('host-only.txt');
    expect(sandboxed.code, sandboxed.err).toBe(0);
    expect(sandboxed.out).not.toContain('host-only.txt');
  });

  it('a command sbx refuses is denied with the reason and the rule, and nothing runs', async () => {
    const decision = decisionOf(await hook(inputFor('bash-refused', t.workspace), t.workspace));
    expect(decision.permissionDecision).toBe('deny');
    expect(decision.updatedInput).toBeUndefined();
    expect(decision.permissionDecisionReason).toContain("curl is on the profile's deny list");
    // The rule's profile line, as sbx run names it: in the error and on the rule line.
    expect(decision.permissionDecisionReason).toMatch(/\(builtin:agent:\d+:\d+ commands\.deny\[\d+\]\)/);
    expect(decision.permissionDecisionReason).toMatch(
      /^sbx: rule: commands\.deny \(\S+\/profiles\/agent\.yaml:\d+:\d+\)$/m,
    );
    expect(decision.permissionDecisionReason).toMatch(
      /\(COMMAND_DENIED\): nothing ran\nsbx: every command of this agent runs under -p builtin:agent;/,
    );
    // The pointer to `sbx why`: run as written (sbx standing for this checkout's bin), it names the same rule.
    const why = /^sbx: `(sbx why -p builtin:agent --shell '[^`]*')` names the profile line that decides$/m.exec(
      decision.permissionDecisionReason!,
    );
    expect(why, decision.permissionDecisionReason).not.toBeNull();
    const answered = await bash(`sbx() { '${process.execPath}' '${SBX_BIN}' "$@"; }; ${why![1]} --json`, t.workspace);
    expect(answered.code, answered.err).toBe(1);
    const [answer] = (JSON.parse(answered.out) as { answers: { verdict: string; rules: { rule: string }[] }[] })
      .answers;
    expect(answer).toMatchObject({ verdict: 'deny' });
    expect(answer!.rules[0]).toMatchObject({ rule: 'commands.deny', source: { key: 'commands.deny[0]' } });
  });

  it('a command no rule allows is denied: the wrapped run would have no terminal to ask on', async () => {
    const decision = decisionOf(await hook(inputFor('bash-quotes', t.workspace, 'whoami'), t.workspace));
    expect(decision.permissionDecision).toBe('deny');
    expect(decision.permissionDecisionReason).toContain('needs approval');
  });

  it('a command approved "always" before (the store sbx run keeps) is allowed, and the rewrite runs it', async () => {
    // Answered once at the library door, as `sbx run -p agent --shell 'uname'` on a terminal would record it.
    const { run } = (await import(DIST_API)) as typeof import('../../../src/api.js');
    const approved = await run({
      profile: 'agent',
      shell: 'uname',
      cwd: t.workspace,
      hostEnv: t.env,
      stdio: 'capture',
      approve: async () => 'always',
    });
    expect(approved.exitCode).toBe(0);
    const decision = decisionOf(await hook(inputFor('bash-quotes', t.workspace, 'uname'), t.workspace));
    const sandboxed = await bash(rewritten(decision), t.workspace);
    expect(sandboxed.code, sandboxed.err).toBe(0);
    expect(sandboxed.out).toBe('Linux\n');
  });

  it('sbx run inside the command is wrapped like any other: denied by the agent rules, not trusted', async () => {
    const decision = decisionOf(await hook(inputFor('bash-double-wrap', t.workspace), t.workspace));
    expect(decision.permissionDecision).toBe('deny');
  });

  it('another tool gets no answer (exit 0, nothing on stdout): Claude Code decides', async () => {
    const r = await hook(inputFor('read', t.workspace), t.workspace);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe('');
  });

  it.each([
    ['malformed', /^sbx: the hook input is not JSON/],
    ['missing-tool-input', /^sbx: the hook input's tool_input is missing; the call is refused$/],
    ['wrong-types', /^sbx: tool_input\.command is not a string; the call is refused$/],
    ['powershell', /^sbx: sbx wraps Bash commands only: PowerShell would run unsandboxed/],
  ])('%s input is denied with why', async (name, reason) => {
    const decision = decisionOf(await hook(recorded(name), t.workspace));
    expect(decision.permissionDecision).toBe('deny');
    expect(decision.permissionDecisionReason).toMatch(reason);
  });

  it('an answer that cannot be written exits 2, which Claude Code treats as a block, never 0', async () => {
    const child = spawn(process.execPath, [SBX_BIN, 'hook', 'claude-code'], { env: t.env, cwd: t.workspace });
    child.stdout.destroy();
    child.stdin.end(inputFor('bash-quotes', t.workspace));
    const [code] = (await once(child, 'close')) as [number | null];
    expect(code).toBe(2);
  });

  it('empty input is denied', async () => {
    const decision = decisionOf(await hook('', t.workspace));
    expect(decision.permissionDecision).toBe('deny');
  });

  it('a cwd sbx cannot sandbox (HOME) is denied with the setup error, before anything runs', async () => {
    const decision = decisionOf(await hook(inputFor('bash-pipes', t.home), t.home));
    expect(decision.permissionDecision).toBe('deny');
    expect(decision.permissionDecisionReason).toContain('HOST_STATE_WRITABLE');
  });

  it("a repository's own agent profile is not used: the built-in by default, denied until trusted when named", async () => {
    // The planted profile would allow anything. By default the hook names sbx's own (builtin:agent),
    // so the plant neither chooses the sandbox nor refuses every call (issue 31 §3).
    const repo = join(t.root, 'planted');
    mkdirSync(join(repo, '.sbx', 'profiles'), { recursive: true });
    writeFileSync(join(repo, '.sbx', 'profiles', 'agent.yaml'), 'extends: default\ncommands:\n  default: allow\n');
    const builtin = decisionOf(await hook(inputFor('bash-quotes', repo, 'uname'), repo));
    expect(rewritten(builtin)).toContain("run -p 'builtin:agent' ");
    // Named by the user as `-p agent`, it resolves as `sbx run -p agent` does: refused until trusted.
    const named = decisionOf(await hook(inputFor('bash-quotes', repo, 'whoami'), repo, ['-p', 'agent']));
    expect(named.permissionDecision).toBe('deny');
    expect(named.permissionDecisionReason).toContain('PROFILE_UNTRUSTED');
  });

  it('--approve answers allow with the same rewrite: Claude Code then runs it without asking', async () => {
    const input = inputFor('bash-quotes', t.workspace, 'ls');
    const asked = decisionOf(await hook(input, t.workspace));
    const approved = decisionOf(await hook(input, t.workspace, ['--approve']));
    expect(approved.permissionDecision).toBe('allow');
    expect(approved.updatedInput).toEqual(asked.updatedInput);
    // A refusal is a refusal either way.
    const refused = decisionOf(await hook(inputFor('bash-refused', t.workspace), t.workspace, ['--approve']));
    expect(refused.permissionDecision).toBe('deny');
  });

  it('a leading `cd DIR &&` runs in the agent shell, so its directory is the one Claude Code records; the rest runs sandboxed there', async () => {
    const decision = decisionOf(await hook(inputFor('bash-quotes', t.workspace, 'cd src && ls'), t.workspace));
    const command = rewritten(decision);
    expect(command.startsWith(`cd -P -- '${t.workspace}/src' && '`)).toBe(true);
    expect(decision.additionalContext).toBeUndefined();
    // Claude Code runs `COMMAND && pwd -P >| FILE` and starts the next command in FILE's directory.
    const r = await bash(`${command} && pwd -P`, t.workspace);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe(`a.ts\n${t.workspace}/src\n`);
    // `cd src` alone: no sandbox needed to change directory.
    const alone = rewritten(decisionOf(await hook(inputFor('bash-quotes', t.workspace, 'cd src'), t.workspace)));
    expect(alone).toBe(`cd -P -- '${t.workspace}/src'`);
  });

  it('a cd the agent shell cannot carry stays in the sandbox, and the model is told the next command starts where it was', async () => {
    const decision = decisionOf(await hook(inputFor('bash-quotes', t.workspace, 'ls && cd src && ls'), t.workspace));
    expect(rewritten(decision)).toMatch(/^'\//);
    expect(decision.additionalContext).toContain(`the next command starts in ${t.workspace} again`);
    const r = await bash(`${rewritten(decision)} && pwd -P`, t.workspace);
    expect(r.out.trim().split('\n').at(-1)).toBe(t.workspace);
  });

  it("a cd out of the workspace is the profile's to refuse; one through a symlink out is never carried", async () => {
    const out = decisionOf(
      await hook(inputFor('bash-quotes', join(t.workspace, 'src'), 'cd .. && cd .. && ls'), t.workspace),
    );
    expect(out.permissionDecision).toBe('deny');
    symlinkSync(t.root, join(t.workspace, 'up'));
    try {
      const linked = decisionOf(await hook(inputFor('bash-quotes', t.workspace, 'cd up && ls'), t.workspace));
      if (linked.permissionDecision === undefined) expect(rewritten(linked)).not.toMatch(/^cd /);
      else expect(linked.permissionDecision).toBe('deny');
    } finally {
      rmSync(join(t.workspace, 'up'));
    }
  });

  it('when the sandbox cannot be built at run time, the rewrite fails visibly, non-zero, and runs nothing', async () => {
    const decision = decisionOf(await hook(inputFor('bash-heredoc', t.workspace), t.workspace));
    rmSync(join(t.workspace, 'notes.txt'), { force: true });
    const broken = { ...t.env, SBX_BWRAP: join(t.root, 'no-such-bwrap') };
    const r = await bash(rewritten(decision), t.workspace, broken);
    expect(r.code).toBe(125);
    expect(r.err).toContain('no-such-bwrap');
    expect(r.out).toBe('');
    expect(existsSync(join(t.workspace, 'notes.txt'))).toBe(false);
  });
});
