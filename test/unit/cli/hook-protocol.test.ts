// The agent hook protocols (src/cli/hook/hook-protocol.ts) on recorded inputs of the real shape
// (test/fixtures/hooks): what each asks, the answer's JSON, and the wrapped command's quoting, read
// back by a POSIX single-quote reader (the real shells run it in test/integration/hook).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  formatHookAnswer,
  type HookAgent,
  type HookRequest,
  leadingCd,
  MAX_ARG_BYTES,
  readHookInput,
  wrapCommand,
  wrappedInput,
} from '../../../src/cli/hook/hook-protocol.js';
import { FIXTURES_DIR } from '../../helpers/paths.js';

const fixture = (name: string) => readFileSync(join(FIXTURES_DIR, 'hooks', `${name}.json`), 'utf8');
const read = (agent: HookAgent, name: string) => readHookInput(agent, fixture(`${agent}.${name}`));
const WRAPPER = { node: '/usr/bin/node', bin: '/opt/sbx/bin/sbx.js', profile: 'agent', workspace: '/p' };

/** A POSIX shell's reading of a line of plain words and single-quoted strings (what wrapCommand writes). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === ' ') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error('unterminated quote');
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '\\') {
      word = (word ?? '') + line[++i];
    } else if (/[A-Za-z0-9_./-]/.test(c)) {
      word = (word ?? '') + c;
    } else {
      throw new Error(`unquoted ${JSON.stringify(c)} at ${i}`);
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

describe('readHookInput: Claude Code PreToolUse', () => {
  it.each(['bash-quotes', 'bash-heredoc', 'bash-pipes', 'bash-unicode', 'bash-refused', 'bash-double-wrap'])(
    '%s is a shell command to judge, at the input cwd, with every tool_input field',
    (name) => {
      const raw = JSON.parse(fixture(`claude-code.${name}`));
      const request = read('claude-code', name);
      expect(request).toEqual({
        kind: 'shell',
        command: raw.tool_input.command,
        cwd: raw.cwd,
        toolInput: raw.tool_input,
      });
    },
  );

  it('another tool is left to the agent', () => {
    expect(read('claude-code', 'read')).toEqual({ kind: 'other' });
  });

  it('PowerShell, a shell sbx cannot wrap, is refused rather than passed through', () => {
    expect(read('claude-code', 'powershell')).toEqual({
      kind: 'refuse',
      reason: 'sbx wraps Bash commands only: PowerShell would run unsandboxed',
    });
  });

  it.each([
    ['malformed', /^the hook input is not JSON \(/],
    ['missing-tool-input', /^the hook input's tool_input is missing$/],
    ['wrong-types', /^tool_input\.command is not a string$/],
  ])('%s is refused with why', (name, reason) => {
    const request = read('claude-code', name);
    expect(request.kind).toBe('refuse');
    expect((request as { reason: string }).reason).toMatch(reason);
  });

  const bash = (patch: Record<string, unknown>, toolInput: Record<string, unknown> = { command: 'ls' }) =>
    readHookInput(
      'claude-code',
      JSON.stringify({
        session_id: 's',
        cwd: '/p',
        hook_event_name: 'PreToolUse',
        tool_name: 'Bash',
        tool_input: toolInput,
        ...patch,
      }),
    );
  it.each<[string, Record<string, unknown>, Record<string, unknown> | undefined, string]>([
    ['session_id of another type', { session_id: 7 }, undefined, "the hook input's session_id is not a string"],
    ['no cwd', { cwd: undefined }, undefined, "the hook input's cwd is missing"],
    ['a relative cwd', { cwd: 'rel/dir' }, undefined, "the hook input's cwd is not an absolute path"],
    [
      'another event',
      { hook_event_name: 'PostToolUse' },
      undefined,
      'sbx hook claude-code answers PreToolUse only, not "PostToolUse"',
    ],
    ['tool_input an array', { tool_input: [] }, undefined, "the hook input's tool_input is not an object"],
    ['no command', {}, {}, 'tool_input.command is missing'],
    ['a blank command', {}, { command: ' \n' }, 'tool_input.command is empty'],
    ['a NUL in the command', {}, { command: 'ls\0-la' }, 'tool_input.command holds a NUL byte'],
  ])('%s is refused with why', (_, patch, toolInput, reason) => {
    expect(bash(patch, toolInput)).toEqual({ kind: 'refuse', reason });
  });

  it.each(['null', '[]', '"Bash"', '42'])('%s is not an object: refused', (text) => {
    expect(readHookInput('claude-code', text)).toEqual({
      kind: 'refuse',
      reason: 'the hook input is not a JSON object',
    });
  });
});

describe('readHookInput: Gemini CLI BeforeTool', () => {
  it('run_shell_command runs in dir_path, resolved against cwd', () => {
    const request = read('gemini-cli', 'run-shell-command');
    expect(request).toMatchObject({ kind: 'shell', cwd: '/home/user/project/sub' });
  });

  it.each([
    ['/etc', '/etc'],
    ['..', '/home/user'],
    ['sub/../../other-repo', '/home/user/other-repo'],
    ['/home/user/project-other', '/home/user/project-other'],
  ])('a dir_path out of cwd (%s) is refused: the wrapped run would sandbox another tree', (dir) => {
    const input = { ...JSON.parse(fixture('gemini-cli.run-shell-command')), cwd: '/home/user/project' };
    input.tool_input.dir_path = dir;
    expect(readHookInput('gemini-cli', JSON.stringify(input))).toEqual({
      kind: 'refuse',
      reason: `tool_input.dir_path ${JSON.stringify(dir)} is outside the cwd /home/user/project`,
    });
  });

  it.each([
    ['sub/../sub', '/home/user/project/sub'],
    ['/home/user/project/sub', '/home/user/project/sub'],
    ['.', '/home/user/project'],
  ])('a dir_path inside cwd (%s) is kept', (dir, cwd) => {
    const input = { ...JSON.parse(fixture('gemini-cli.run-shell-command')), cwd: '/home/user/project' };
    input.tool_input.dir_path = dir;
    expect(readHookInput('gemini-cli', JSON.stringify(input))).toMatchObject({ kind: 'shell', cwd });
  });

  it('another tool is left to the agent; Claude Code events are not Gemini CLI events', () => {
    expect(read('gemini-cli', 'read-file')).toEqual({ kind: 'other' });
    expect(readHookInput('gemini-cli', fixture('claude-code.bash-quotes'))).toEqual({
      kind: 'refuse',
      reason: 'sbx hook gemini-cli answers BeforeTool only, not "PreToolUse"',
    });
  });
});

describe('wrapCommand', () => {
  const hostile = [
    "it's",
    "'",
    "''''",
    'a\nb\n',
    "cat <<'EOF'\n$HOME `id` $(id)\nEOF",
    'héllo — ✓ 日本語 🚀 \u202e',
    '\\',
    '"$@" ; & | > < * ? [ ] { } ( ) ~ # !',
    '-n --help',
    "x'".repeat(1000),
  ];
  it.each(hostile.map((s) => [JSON.stringify(s).slice(0, 60), s]))(
    '%s comes back as one word, byte for byte',
    (_, command) => {
      const words = shellWords(wrapCommand(command!, WRAPPER));
      expect(words).toEqual([
        '/usr/bin/node',
        '/opt/sbx/bin/sbx.js',
        'run',
        '-p',
        'agent',
        '--workspace',
        '/p',
        '--approval',
        'never',
        '--shell',
        command,
      ]);
    },
  );

  it('with --warm, starts the run through the warm client, which is given the same node and bin', () => {
    const cold = shellWords(wrapCommand('ls -l', WRAPPER));
    const words = shellWords(wrapCommand('ls -l', { ...WRAPPER, client: "/opt/s'bx/dist/sbx-warm" }));
    // The same words, with the client before them and --warm after `run`.
    expect(words).toEqual(["/opt/s'bx/dist/sbx-warm", ...cold.slice(0, 3), '--warm', ...cold.slice(3)]);
    expect(cold.slice(0, 3)).toEqual(['/usr/bin/node', '/opt/sbx/bin/sbx.js', 'run']);
  });

  it('quotes the node, bin, profile and workspace too (a path with a space or a quote)', () => {
    const wrapper = { node: '/opt/my node/node', bin: "/o'x/sbx.js", profile: 'my agent', workspace: "/w s/it's" };
    const words = shellWords(wrapCommand('ls', wrapper));
    expect(words.slice(0, 7)).toEqual([
      '/opt/my node/node',
      "/o'x/sbx.js",
      'run',
      '-p',
      'my agent',
      '--workspace',
      "/w s/it's",
    ]);
  });
});

describe('leadingCd', () => {
  it.each([
    ['cd sub', 'sub', ''],
    ['cd sub && npm test', 'sub', 'npm test'],
    ['  cd\tsrc/lib&&ls -l', 'src/lib', 'ls -l'],
    ['cd sub; make', 'sub', 'make'],
    ['cd sub\nmake\n', 'sub', 'make\n'],
    ["cd 'my dir' && ls", 'my dir', 'ls'],
    ['cd "my dir" && ls', 'my dir', 'ls'],
    ['cd /abs/path/x && cd y && pwd', '/abs/path/x', 'cd y && pwd'],
    ['cd sub &&\n  ls', 'sub', 'ls'],
  ])('%j: the agent may run cd %j itself; %j is left', (script, dir, rest) => {
    expect(leadingCd(script)).toEqual({ dir, rest });
  });

  it.each([
    'cd',
    'cd -',
    'cd -P sub',
    'cd ~/x && ls',
    'cd $HOME && ls',
    'cd "$D" && ls',
    'cd sub* && ls',
    "cd 'a'b && ls",
    'cd a b',
    'cd sub || ls',
    'cd sub | ls',
    'cd sub & ls',
    'cd sub > f',
    'cd `pwd`',
    'cd $(pwd)',
    'make && cd sub',
    'echo cd sub',
    "cd ''",
  ])('%j is left in the string', (script) => {
    expect(leadingCd(script)).toBeUndefined();
  });
});

describe('wrappedInput', () => {
  const shell = (command: string) => ({ kind: 'shell' as const, command, cwd: '/p', toolInput: { command } });

  it('keeps description, timeout and run_in_background; replaces only the command', () => {
    const request = read('claude-code', 'bash-background-fields') as Extract<HookRequest, { kind: 'shell' }>;
    const answer = wrappedInput('claude-code', request, { rest: request.command }, WRAPPER);
    expect(answer).toEqual({
      kind: 'rewrite',
      toolInput: {
        command: wrapCommand('ls -1 && wc -l README.md', WRAPPER),
        description: 'List files',
        timeout: 60000,
        run_in_background: false,
      },
    });
  });

  it('a carried cd runs first in the agent shell, by its real path; a lone cd runs no sbx at all', () => {
    const moved = wrappedInput('claude-code', shell('cd s && ls'), { dir: "/p/it's", rest: 'ls' }, WRAPPER);
    const command = (moved as { toolInput: { command: string } }).toolInput.command;
    expect(command).toBe(`cd -P -- '/p/it'\\''s' && ${wrapCommand('ls', WRAPPER)}`);
    expect(moved).not.toHaveProperty('context');
    const alone = wrappedInput('claude-code', shell('cd s'), { dir: '/p/s', rest: '' }, WRAPPER);
    expect(alone).toEqual({ kind: 'rewrite', toolInput: { command: "cd -P -- '/p/s'" } });
  });

  it('a cd left inside the sandbox gets a note for the model, which only Claude Code carries', () => {
    const inner = wrappedInput('claude-code', shell('make && cd out && ls'), { rest: 'make && cd out && ls' }, WRAPPER);
    expect(inner).toMatchObject({ kind: 'rewrite' });
    expect((inner as { context: string }).context).toMatch(
      /does not carry over, and the next command starts in \/p again/,
    );
    const gemini = wrappedInput('gemini-cli', shell('make && cd out'), { rest: 'make && cd out' }, WRAPPER);
    expect(gemini).not.toHaveProperty('context');
    expect(wrappedInput('claude-code', shell('echo decode'), { rest: 'echo decode' }, WRAPPER)).not.toHaveProperty(
      'context',
    );
  });

  it('a 100 KB command fits; one whose quoted form passes Linux per-argument limit is denied, never cut', () => {
    const big = `printf '%s' '${'x'.repeat(100 * 1024)}'`;
    expect(wrappedInput('claude-code', shell(big), { rest: big }, WRAPPER).kind).toBe('rewrite');
    const quotes = "'".repeat(40 * 1024);
    const answer = wrappedInput('claude-code', shell(quotes), { rest: quotes }, WRAPPER);
    expect(answer.kind).toBe('deny');
    expect((answer as { reason: string }).reason).toContain(`Linux takes ${MAX_ARG_BYTES} per argument`);
  });
});

describe('formatHookAnswer', () => {
  const rewrite = { kind: 'rewrite' as const, toolInput: { command: 'wrapped', timeout: 5 } };
  const deny = { kind: 'deny' as const, reason: 'why' };

  it('Claude Code: updatedInput without a permission decision, so its own rules ask as they would; nothing for other tools', () => {
    expect(JSON.parse(formatHookAnswer('claude-code', rewrite)!)).toEqual({
      hookSpecificOutput: { hookEventName: 'PreToolUse', updatedInput: { command: 'wrapped', timeout: 5 } },
    });
    expect(JSON.parse(formatHookAnswer('claude-code', deny)!)).toEqual({
      hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: 'why' },
    });
    expect(formatHookAnswer('claude-code', { kind: 'other' })).toBeUndefined();
  });

  it('Claude Code --approve: allow with the rewrite; a deny stays a deny; the note goes to additionalContext', () => {
    expect(JSON.parse(formatHookAnswer('claude-code', { ...rewrite, context: 'note' }, true)!)).toEqual({
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        permissionDecision: 'allow',
        updatedInput: { command: 'wrapped', timeout: 5 },
        additionalContext: 'note',
      },
    });
    expect(JSON.parse(formatHookAnswer('claude-code', deny, true)!).hookSpecificOutput.permissionDecision).toBe('deny');
  });

  it('Gemini CLI: tool_input under hookSpecificOutput and no decision; deny with the reason; {} for other tools', () => {
    expect(JSON.parse(formatHookAnswer('gemini-cli', rewrite)!)).toEqual({
      hookSpecificOutput: { hookEventName: 'BeforeTool', tool_input: { command: 'wrapped', timeout: 5 } },
    });
    expect(JSON.parse(formatHookAnswer('gemini-cli', deny)!)).toEqual({ decision: 'deny', reason: 'why' });
    expect(formatHookAnswer('gemini-cli', { kind: 'other' })).toBe('{}');
  });
});
