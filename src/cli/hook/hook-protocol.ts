// `sbx hook AGENT`: a coding agent's pre-tool hook, read and answered (README "Coding agent hooks").
// Pure: the agent's JSON in, a request to judge or an answer out; cli/hook/hook.ts does the I/O and the
// judging. Formats, as each agent documents them and as the versions tested in test/integration/hook
// behave:
// - Claude Code, PreToolUse (code.claude.com/docs/en/hooks): input `session_id`, `cwd`,
//   `hook_event_name`, `tool_name`, `tool_input` (`command` for Bash); the answer is
//   `hookSpecificOutput` { hookEventName, permissionDecision?, permissionDecisionReason?, updatedInput?,
//   additionalContext? }, on stdout with exit 0. `updatedInput` "replaces the entire input object", so
//   every other field of `tool_input` (description, timeout, run_in_background) is kept. Without a
//   permissionDecision, Claude Code's own permission rules and mode judge the updated input and ask
//   the user as they would; `allow` skips that prompt, so sbx answers it only with `--approve`.
// - Gemini CLI, BeforeTool (geminicli.com/docs/hooks/reference): the same input fields, tool
//   `run_shell_command` (`command`, optional `dir_path`); the answer is `decision` and `reason`, and
//   `hookSpecificOutput.tool_input`, which is merged over the model's arguments. Its policy engine
//   judges the merged arguments whatever `decision` says (only "deny" and "ask" change its course), so
//   sbx sends no decision with a rewrite and a hook cannot approve a call there.
// Every answer but "not a shell tool" is `deny` or the command wrapped: nothing here can produce an
// answer that runs the agent's own command unwrapped, except a leading `cd` into the workspace that
// the agent's shell runs itself so that the directory carries over (leadingCd).
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
  /** The tool input with its command wrapped; `context`, a note for the model (Claude Code only). */
  | { kind: 'rewrite'; toolInput: Record<string, unknown>; context?: string }
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
  /**
   * Whether the agent's shell keeps its directory from one call to the next: Claude Code records
   * `pwd -P` after a command that succeeded and starts the next one there; Gemini CLI starts every
   * command in `dir_path` or the project.
   */
  keepsCwd: boolean;
}

const FORMATS: Record<HookAgent, AgentFormat> = {
  // PowerShell is Claude Code's other shell tool (enabled where pwsh is): its command is PowerShell,
  // which `sbx run --shell` would hand to /bin/sh.
  'claude-code': { event: 'PreToolUse', shellTool: 'Bash', unwrappable: ['PowerShell'], keepsCwd: true },
  'gemini-cli': {
    event: 'BeforeTool',
    shellTool: 'run_shell_command',
    unwrappable: [],
    dirField: 'dir_path',
    keepsCwd: false,
  },
};

/** Whether the agent can be told to approve a call: Gemini CLI's policy engine ignores a hook's "allow". */
export function canApprove(agent: HookAgent): boolean {
  return agent === 'claude-code';
}

export function keepsCwd(agent: HookAgent): boolean {
  return FORMATS[agent].keepsCwd;
}

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
  /** `hook --warm`: the warm client (dist/sbx-warm, real path), which starts `node bin` only for a run the warm server does not serve. */
  client?: string;
  profile: string;
  /** The workspace the hook judged the command in (its real path): the wrapped run's, whatever its cwd. */
  workspace: string;
}

/**
 * The command the agent runs instead: this sbx, by absolute path (no PATH lookup a workspace could
 * steer), with the agent's command as one single-quoted word. `--workspace`: the run sandboxes the tree
 * the hook judged even if the directory it starts in was swapped meanwhile. `--approval never`: the
 * agent's shell tool has no terminal of its own to ask on, and a prompt there would fight the agent's
 * UI for it.
 */
export function wrapCommand(command: string, wrapper: Wrapper): string {
  const [node, bin, profile, workspace, script] = [
    wrapper.node,
    wrapper.bin,
    wrapper.profile,
    wrapper.workspace,
    command,
  ].map(singleQuote);
  const start =
    wrapper.client === undefined ? `${node} ${bin} run` : `${singleQuote(wrapper.client)} ${node} ${bin} run --warm`;
  return `${start} -p ${profile} --workspace ${workspace} --approval never --shell ${script}`;
}

/**
 * A word written so that it means the same text to any shell: plain characters, or single or double
 * quotes around characters nothing expands. No `-` first (an option, or `cd -`), no `~`, glob or `$`.
 */
const LITERAL_WORD = String.raw`(?!-)(?:[A-Za-z0-9_@%+=:,./-]+|'[^']+'|"[^"$\x60\\!]+")`;
const LEADING_CD = new RegExp(String.raw`^[ \t]*cd[ \t]+(${LITERAL_WORD})[ \t]*(?:(?:&&|;|\n)\s*|\s*$)`);

/**
 * The string's first command when it is `cd DIR` with DIR written literally, then `&&`, `;`, a newline
 * or the end: the directory as written and the rest of the string. Claude Code keeps the directory a
 * command ends in for the next one; a `cd` inside the sandbox cannot carry over (the sandbox's shell
 * ends with it), so the agent's own shell runs this one (hook.ts checks DIR first). Anything else is
 * left in the string.
 */
export function leadingCd(script: string): { dir: string; rest: string } | undefined {
  const match = LEADING_CD.exec(script);
  if (!match) return undefined;
  const word = match[1]!;
  const dir = word.startsWith("'") || word.startsWith('"') ? word.slice(1, -1) : word;
  return { dir, rest: script.slice(match[0].length) };
}

/** A `cd` that is not first, or not plain: it changes the directory inside the sandbox only. */
const INNER_CD = /(?:^|[\s;&|(){}`])cd(?=$|[\s;&|()])/;

/** Where a wrapped command starts: the agent's directory, or (`dir`) one a leading `cd` moved it to. */
export interface Placed {
  /** The real path the agent's shell changes to first; absent when no leading `cd` is carried. */
  dir?: string;
  /** What runs in the sandbox: the string after the carried `cd`s. */
  rest: string;
}

/**
 * The answer's tool input: the agent's own, with only the command replaced: the carried `cd` (run by
 * the agent's shell, `-P` so that its recorded directory is the real one) and the rest in sbx. When the
 * rest may change directory, the model is told it will not carry over (an agent that keeps its cwd).
 */
export function wrappedInput(
  agent: HookAgent,
  request: Extract<HookRequest, { kind: 'shell' }>,
  placed: Placed,
  wrapper: Wrapper,
): HookAnswer {
  const cd = placed.dir === undefined ? undefined : `cd -P -- ${singleQuote(placed.dir)}`;
  const wrapped = placed.rest.trim() === '' && cd ? undefined : wrapCommand(placed.rest, wrapper);
  const command = [cd, wrapped].filter(Boolean).join(' && ');
  if (Buffer.byteLength(command) > MAX_ARG_BYTES || Buffer.byteLength(request.command) > MAX_ARG_BYTES) {
    const reason = `the command is too long to run wrapped in sbx (${Buffer.byteLength(command)} bytes quoted; Linux takes ${MAX_ARG_BYTES} per argument)`;
    return { kind: 'deny', reason: `${reason}: write it to a script in the workspace and run that` };
  }
  const toolInput = { ...request.toolInput, command };
  if (!FORMATS[agent].keepsCwd || !wrapped || !INNER_CD.test(placed.rest)) return { kind: 'rewrite', toolInput };
  const context =
    `sbx: this command runs in a sandbox, in a shell that ends with it: a \`cd\` inside it does not carry over, ` +
    `and the next command starts in ${placed.dir ?? request.cwd} again. To move for later commands, begin a ` +
    `command with \`cd DIR &&\` (or run \`cd DIR\` alone), DIR written plainly and inside ${wrapper.workspace}.`;
  return { kind: 'rewrite', toolInput, context };
}

/**
 * The answer as the agent reads it on stdout (exit status 0), or nothing for a tool sbx leaves alone.
 * `approve` (`sbx hook claude-code --approve`): Claude Code runs the rewrite without asking the user.
 */
export function formatHookAnswer(agent: HookAgent, answer: HookAnswer, approve = false): string | undefined {
  if (agent === 'claude-code') {
    if (answer.kind === 'other') return undefined;
    const decision =
      answer.kind === 'rewrite'
        ? {
            ...(approve ? { permissionDecision: 'allow' } : {}),
            updatedInput: answer.toolInput,
            ...(answer.context ? { additionalContext: answer.context } : {}),
          }
        : { permissionDecision: 'deny', permissionDecisionReason: answer.reason };
    return JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', ...decision } });
  }
  // Gemini CLI parses stdout as JSON whenever the hook exits 0.
  if (answer.kind === 'other') return '{}';
  if (answer.kind === 'deny') return JSON.stringify({ decision: 'deny', reason: answer.reason });
  return JSON.stringify({ hookSpecificOutput: { hookEventName: 'BeforeTool', tool_input: answer.toolInput } });
}
