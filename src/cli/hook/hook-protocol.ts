// `sbx hook AGENT`: a coding agent's pre-tool hook, read and answered (README "Coding agent hooks").
// Pure: the agent's JSON in, a request to judge or an answer out; cli/hook/hook.ts does the I/O and the
// judging. Formats, as each agent documents them:
// - Claude Code, PreToolUse (code.claude.com/docs/en/hooks): input `session_id`, `cwd`,
//   `hook_event_name`, `tool_name`, `tool_input` (`command` for Bash); the answer is
//   `hookSpecificOutput` { hookEventName, permissionDecision, permissionDecisionReason, updatedInput },
//   on stdout with exit 0. `updatedInput` "replaces the entire input object", so every other field of
//   `tool_input` (description, timeout, run_in_background) is kept.
// - Gemini CLI, BeforeTool (geminicli.com/docs/hooks/reference): the same input fields, tool
//   `run_shell_command` (`command`, optional `dir_path`); the answer is `decision` and `reason`, and
//   `hookSpecificOutput.tool_input`, which is merged over the model's arguments.
// Every answer but "not a shell tool" is `deny` or `allow` with the command wrapped: nothing here can
// produce an allow that runs the agent's own command unwrapped.
import { isAbsolute, resolve } from 'node:path';
import { isWithin } from '../../path-within.js';
import { singleQuote } from '../quote.js';

export const HOOK_AGENTS = ['claude-code', 'gemini-cli'] as const;
export type HookAgent = (typeof HOOK_AGENTS)[number];

/** What an agent's hook input asks of sbx. */
export type HookRequest =
  /** A shell command to judge and wrap; `cwd` is where the agent will run it. */
  | { kind: 'shell'; command: string; cwd: string; toolInput: Record<string, unknown> }
  /** A tool sbx has nothing to say about (a file edit, a web fetch): the agent's own rules decide. */
  | { kind: 'other' }
  /** Input sbx cannot read, or a shell it cannot wrap: refused, with why. */
  | { kind: 'refuse'; reason: string };

export type HookAnswer =
  | { kind: 'allow'; toolInput: Record<string, unknown> }
  | { kind: 'deny'; reason: string }
  | { kind: 'other' };

interface AgentFormat {
  event: string;
  /** The tool whose `command` sbx wraps. */
  shellTool: string;
  /** Shell tools sbx cannot wrap: refused, never passed through to run unsandboxed. */
  unwrappable: readonly string[];
  /** The tool input's directory field, resolved against `cwd` (Gemini's `dir_path`). */
  dirField?: string;
}

const FORMATS: Record<HookAgent, AgentFormat> = {
  // PowerShell is Claude Code's other shell tool (enabled where pwsh is): its command is PowerShell,
  // which `sbx run --shell` would hand to /bin/sh.
  'claude-code': { event: 'PreToolUse', shellTool: 'Bash', unwrappable: ['PowerShell'] },
  'gemini-cli': { event: 'BeforeTool', shellTool: 'run_shell_command', unwrappable: [], dirField: 'dir_path' },
};

/**
 * Linux's limit on one argument (MAX_ARG_STRLEN, 32 pages, with its NUL): the wrapped command is one
 * argument of the agent's `bash -c`, and the original one argument of sbx's `--shell`.
 */
export const MAX_ARG_BYTES = 32 * 4096 - 1;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The agent's hook input (stdin text) → what it asks. Anything unexpected refuses, naming the field. */
export function readHookInput(agent: HookAgent, text: string): HookRequest {
  const format = FORMATS[agent];
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (error) {
    return { kind: 'refuse', reason: `the hook input is not JSON (${(error as Error).message})` };
  }
  if (!isRecord(input)) return { kind: 'refuse', reason: 'the hook input is not a JSON object' };
  const field = (name: string, type: 'string' | 'object') => {
    const value = input[name];
    if (type === 'object' ? isRecord(value) : typeof value === type) return undefined;
    return `the hook input's ${name} is ${value === undefined ? 'missing' : `not a${type === 'object' ? 'n' : ''} ${type}`}`;
  };
  const wrong = ['session_id', 'cwd', 'hook_event_name', 'tool_name'].map((n) => field(n, 'string')).find(Boolean);
  if (wrong) return { kind: 'refuse', reason: wrong };
  if (input.hook_event_name !== format.event) {
    const got = JSON.stringify(input.hook_event_name).slice(0, 40);
    return { kind: 'refuse', reason: `sbx hook ${agent} answers ${format.event} only, not ${got}` };
  }
  const tool = input.tool_name as string;
  if (format.unwrappable.includes(tool))
    return { kind: 'refuse', reason: `sbx wraps ${format.shellTool} commands only: ${tool} would run unsandboxed` };
  if (tool !== format.shellTool) return { kind: 'other' };
  const toolInput = field('tool_input', 'object');
  if (toolInput) return { kind: 'refuse', reason: toolInput };
  const args = input.tool_input as Record<string, unknown>;
  const command = args.command;
  if (typeof command !== 'string')
    return { kind: 'refuse', reason: `tool_input.command is ${command === undefined ? 'missing' : 'not a string'}` };
  if (command.trim() === '') return { kind: 'refuse', reason: 'tool_input.command is empty' };
  // A shell's argument is a C string: a NUL would cut the command sbx judged short of the one that runs.
  if (command.includes('\0')) return { kind: 'refuse', reason: 'tool_input.command holds a NUL byte' };
  const cwd = input.cwd as string;
  if (!isAbsolute(cwd)) return { kind: 'refuse', reason: `the hook input's cwd is not an absolute path` };
  const dir = format.dirField === undefined ? undefined : args[format.dirField];
  if (dir !== undefined && typeof dir !== 'string')
    return { kind: 'refuse', reason: `tool_input.${format.dirField} is not a string` };
  const where = dir ? resolve(cwd, dir) : cwd;
  // The wrapped run takes its workspace from where it runs: a dir_path out of cwd would point the
  // sandbox at another tree (another repository, HOME) than the one the agent was started in.
  if (!isWithin(where, resolve(cwd)))
    return { kind: 'refuse', reason: `tool_input.${format.dirField} ${JSON.stringify(dir)} is outside the cwd ${cwd}` };
  return { kind: 'shell', command, cwd: where, toolInput: args };
}

export interface Wrapper {
  /** The Node.js running sbx now, and sbx's own bin/sbx.js: absolute, real paths. */
  node: string;
  bin: string;
  profile: string;
}

/**
 * The command the agent runs instead: this sbx, by absolute path (no PATH lookup a workspace could
 * steer), with the agent's command as one single-quoted word. `--approval never`: the agent's shell
 * tool has no terminal of its own to ask on, and a prompt there would fight the agent's UI for it.
 */
export function wrapCommand(command: string, wrapper: Wrapper): string {
  const [node, bin, profile, script] = [wrapper.node, wrapper.bin, wrapper.profile, command].map(singleQuote);
  return `${node} ${bin} run -p ${profile} --approval never --shell ${script}`;
}

/** An allow answer's tool input: the agent's own, with only the command replaced. */
export function wrappedInput(request: Extract<HookRequest, { kind: 'shell' }>, wrapper: Wrapper): HookAnswer {
  const command = wrapCommand(request.command, wrapper);
  if (Buffer.byteLength(command) > MAX_ARG_BYTES || Buffer.byteLength(request.command) > MAX_ARG_BYTES) {
    const reason = `the command is too long to run wrapped in sbx (${Buffer.byteLength(command)} bytes quoted; Linux takes ${MAX_ARG_BYTES} per argument)`;
    return { kind: 'deny', reason: `${reason}: write it to a script in the workspace and run that` };
  }
  return { kind: 'allow', toolInput: { ...request.toolInput, command } };
}

/** The answer as the agent reads it on stdout (exit status 0), or nothing for a tool sbx leaves alone. */
export function formatHookAnswer(agent: HookAgent, answer: HookAnswer): string | undefined {
  if (agent === 'claude-code') {
    if (answer.kind === 'other') return undefined;
    const decision =
      answer.kind === 'allow'
        ? { permissionDecision: 'allow', updatedInput: answer.toolInput }
        : { permissionDecision: 'deny', permissionDecisionReason: answer.reason };
    return JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', ...decision } });
  }
  // Gemini CLI parses stdout as JSON whenever the hook exits 0.
  if (answer.kind === 'other') return '{}';
  if (answer.kind === 'deny') return JSON.stringify({ decision: 'deny', reason: answer.reason });
  return JSON.stringify({
    decision: 'allow',
    hookSpecificOutput: { hookEventName: 'BeforeTool', tool_input: answer.toolInput },
  });
}
