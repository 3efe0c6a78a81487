// `sbx hook AGENT`: read the agent's pre-tool hook input on stdin, judge a shell command as
// `sbx run -p PROFILE --shell` would, and answer on stdout: deny with sbx's reason, or the command
// wrapped in that `sbx run` for the agent's own permission rules to judge (approved too with --approve). The agents treat a hook that fails (any exit status but 0 and 2)
// as no objection and run the original command, so every failure here becomes a deny on stdout, and
// if even stdout fails, exit 2 with the reason on stderr (both agents block on 2). Protocols:
// cli/hook/hook-protocol.ts.
import { existsSync, realpathSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { admitUnchecked } from '../../api.js';
import { isSbxError } from '../../errors.js';
import { packageRoot } from '../../package-root.js';
import { isWithin } from '../../path-within.js';
import {
  canApprove,
  formatHookAnswer,
  HOOK_AGENTS,
  type HookAgent,
  type HookAnswer,
  keepsCwd,
  leadingCd,
  type Placed,
  readHookInput,
  type Wrapper,
  wrappedInput,
} from './hook-protocol.js';
import { formatError, invokingView } from '../print-error.js';
import { whyCommandLine } from '../quote.js';

export interface HookFlags {
  profile: string;
  /** `--approve`: tell the agent to run the rewrite without asking the user (Claude Code only). */
  approve?: boolean;
  /** `--warm`: answered by the warm server when one runs, and one started when none does (warm-server.ts). */
  warm?: boolean;
}

/**
 * `sbx hook AGENT [-p NAME | --profile NAME | --profile=NAME] [--approve]` read without commander, whose
 * loading costs every tool call an agent makes about 12 ms. Only these plain forms: anything else (help,
 * another flag, a repeated or empty one, an unknown agent, --approve for an agent that cannot approve)
 * is undefined and goes through commander, which says what is wrong; the defaults are commander's
 * (program.ts addHookCommand).
 */
export function parseHookArgv(args: readonly string[]): { agent: HookAgent; flags: HookFlags } | undefined {
  let agent: HookAgent | undefined;
  let profile: string | undefined;
  let approve = false;
  let warm = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    let value: string | undefined;
    if (arg === '--approve' && !approve) {
      approve = true;
      continue;
    }
    if (arg === '--warm' && !warm) {
      warm = true;
      continue;
    }
    if (arg === '-p' || arg === '--profile') value = args[++i];
    else if (arg.startsWith('--profile=')) value = arg.slice('--profile='.length);
    else if (!arg.startsWith('-') && agent === undefined) {
      agent = HOOK_AGENTS.find((a) => a === arg);
      if (!agent) return undefined;
      continue;
    } else return undefined;
    if (profile !== undefined || value === undefined || value === '' || value.startsWith('-')) return undefined;
    profile = value;
  }
  // sbx's own agent profile unless the user names another: a `.sbx/profiles/agent.yaml` in the
  // repository (or one a run planted) must neither choose the sandbox nor refuse every call.
  // The same default as commander's (program.ts addHookCommand).
  if (!agent || (approve && !canApprove(agent))) return undefined;
  return {
    agent,
    flags: { profile: profile ?? 'builtin:agent', ...(approve ? { approve } : {}), ...(warm ? { warm } : {}) },
  };
}

/** Far above any real tool call (a 100 KB command is 100 KB of JSON); a bigger input is refused unread. */
export const MAX_INPUT_BYTES = 4 * 1024 * 1024;

async function readInput(): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > MAX_INPUT_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The deny reason the agent shows the model: sbx's error as the CLI prints it, the rule and where it
 * was written, and where the rules live (the hint may name `sbx run` flags no agent call can pass).
 */
function denyReason(error: unknown, profile: string, command: string | undefined, cwd: string): string {
  if (!isSbxError(error)) {
    const why = error instanceof Error ? error.message : String(error);
    return `sbx: internal error in the hook (${why.slice(0, 200)}); the call is refused and nothing ran`;
  }
  const lines = formatError(error, undefined, invokingView(cwd));
  const rule = error.violations[0];
  if (rule) {
    const s = rule.source;
    const where = s?.file
      ? ` (${s.file}${s.line ? `:${s.line}:${s.col ?? 1}` : ''})`
      : s?.origin
        ? ` (${s.origin})`
        : '';
    lines.push(`sbx: rule: ${rule.rule}${where}`);
  }
  lines.push(`sbx: refused by sbx (${error.code}): nothing ran`);
  lines.push(
    `sbx: every command of this agent runs under -p ${profile}; \`sbx profiles show ${profile}\` shows its rules`,
  );
  if (rule && command !== undefined)
    lines.push(`sbx: \`${whyCommandLine(profile, { shell: command })}\` names the profile line that decides`);
  return lines.join('\n');
}

/**
 * This sbx, as the wrapped command will start it: real paths, never a PATH lookup. With --warm, through
 * the warm client (when built): the run is served by the warm server where it can be (cli/warm/warm-run.ts),
 * else started by that same Node.js.
 */
function thisSbx(profile: string, workspace: string, warm: boolean): Wrapper {
  const client = join(packageRoot(), 'dist', 'sbx-warm');
  return {
    node: realpathSync(process.execPath),
    bin: realpathSync(join(packageRoot(), 'bin', 'sbx.js')),
    profile,
    workspace,
    ...(warm && existsSync(client) ? { client: realpathSync(client) } : {}),
  };
}

/** The real path of a directory, or undefined (missing, not a directory, unreadable). */
function realDirectory(path: string): string | undefined {
  try {
    const real = realpathSync(path);
    return statSync(real).isDirectory() ? real : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The leading `cd`s the agent's shell runs itself (hook-protocol.ts leadingCd), for an agent that keeps
 * its directory: each DIR, taken from where the one before left, must be a directory whose real path
 * lies in the workspace (the agent's next command is sandboxed from there). The first that is not
 * stays in the string, with all after it, and changes the directory inside the sandbox only.
 */
function placeOf(agent: HookAgent, command: string, cwd: string, workspace: string): Placed {
  if (!keepsCwd(agent)) return { rest: command };
  let placed: Placed = { rest: command };
  for (let cd = leadingCd(command); cd; cd = leadingCd(placed.rest)) {
    const real = realDirectory(resolve(placed.dir ?? cwd, cd.dir));
    if (real === undefined || !isWithin(real, workspace)) break;
    placed = { dir: real, rest: cd.rest };
  }
  return placed;
}

/** Where a call is judged: the caller's environment, and whether host walks stay warm (the warm server). */
export interface HookPlace {
  env: Record<string, string | undefined>;
  /** The caller's working directory, where messages show paths from. */
  cwd: string;
  warm: boolean;
}

/** `asked.command`: the shell command judged, once read, for the deny a refusal becomes. */
async function answerOf(
  agent: HookAgent,
  flags: HookFlags,
  text: string | undefined,
  place: HookPlace,
  asked: { command?: string },
): Promise<HookAnswer> {
  if (text === undefined)
    return { kind: 'deny', reason: `sbx: the hook input is larger than ${MAX_INPUT_BYTES} bytes` };
  const request = readHookInput(agent, text);
  if (request.kind === 'other') return request;
  if (request.kind === 'refuse') return { kind: 'deny', reason: `sbx: ${request.reason}; the call is refused` };
  asked.command = request.command;
  // The same judgement the wrapped `sbx run` makes (profile, policy, command rules, remembered
  // approvals), from where the agent will run it; a refusal throws with its reason.
  const { workspace } = await admitUnchecked(
    { profile: flags.profile, shell: request.command, cwd: request.cwd, hostEnv: place.env },
    place.warm,
  );
  const placed = placeOf(agent, request.command, request.cwd, workspace);
  return wrappedInput(agent, request, placed, thisSbx(flags.profile, workspace, flags.warm === true));
}

/**
 * The hook's answer to one input (undefined: larger than MAX_INPUT_BYTES): the text for stdout
 * (undefined: nothing to say, the agent goes on), and what stderr says if stdout cannot take it.
 */
export async function hookReply(
  agent: HookAgent,
  flags: HookFlags,
  text: string | undefined,
  place: HookPlace,
): Promise<{ stdout: string | undefined; onStdoutFailure: string }> {
  let answer: HookAnswer;
  const asked: { command?: string } = {};
  try {
    answer = await answerOf(agent, flags, text, place, asked);
  } catch (error) {
    answer = { kind: 'deny', reason: denyReason(error, flags.profile, asked.command, place.cwd) };
  }
  const out = formatHookAnswer(agent, answer, flags.approve);
  return {
    stdout: out === undefined ? undefined : out + '\n',
    onStdoutFailure: answer.kind === 'deny' ? answer.reason : 'sbx: the hook could not write its answer',
  };
}

/** Where this process runs, for the paths messages show; `/` when its directory is gone. */
function currentDir(): string {
  try {
    return process.cwd();
  } catch {
    return '/';
  }
}

export async function hookCommand(agent: HookAgent, flags: HookFlags): Promise<void> {
  const reply = await hookReply(agent, flags, await readInput(), { env: process.env, cwd: currentDir(), warm: false });
  // Until the answer is out: main.ts ends the process on a broken stdout with this status, and 0
  // without an answer would let the agent run the original command.
  process.exitCode = 2;
  try {
    if (reply.stdout !== undefined) await write(reply.stdout);
    process.exitCode = 0;
  } catch {
    process.stderr.write(`${reply.onStdoutFailure}\n`);
    process.exitCode = 2;
  }
  // Answered without the server (native/sbx-warm.c found none, or none it could trust): start one for
  // the next call. After the answer, so this call waits for nothing; a server that cannot start
  // changes nothing of this answer or its status (main.ts would turn an error into a block).
  if (flags.warm) {
    try {
      await (await import('../warm/warm-server.js')).startWarmServer(process.env);
    } catch {
      // the next --warm call is answered without a server too, and tries again
    }
  }
}

function write(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.once('error', reject);
    process.stdout.write(text, (error) => (error ? reject(error) : resolve()));
  });
}
