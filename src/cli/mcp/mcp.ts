// `sbx mcp`: a stdio MCP server (the official SDK) whose tools run commands through the pipeline `sbx run`
// uses (runUnchecked, in this process), under a profile and workspace fixed when the server starts.
// Loaded with import() by program.ts only: neither this file nor the SDK is in the launch path of
// `sbx run` (scripts/build.mjs puts them in lazy chunks).
//
// Inputs and owners (docs/SECURITY.md "sbx mcp"): the agent owns the tool arguments, and the commands it
// runs own the workspace. Nothing either writes widens the sandbox: no argument names a profile, a
// bind, a network or a flag; `cwd` (relative, no `..`, resolving inside the workspace) moves only where the
// command starts, never what the profile resolves; `timeout` only narrows; the
// profile must hash as it did at start. Stdout is the transport: sbx's notices go into the results.
import { realpathSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { compile, runUnchecked, SbxError, type ProfileInfo, type RunOptions } from '../../api.js';
import { isSbxError } from '../../errors.js';
import { shellArgv } from '../../policy/command-line.js';
import { isWithin } from '../../path-within.js';
import { ledgerPath } from '../../report/host/ledger.js';
import { reportFromError, reportFromOutcome } from '../../report/report.js';
import { reportSchema } from '../../report/report-schema.js';
import { nowMs } from '../../host/clock.js';
import { newSessionId } from '../../host/session.js';
import { VERSION } from '../../version.js';
import { explainLines } from '../explain.js';
import { type TextResult, toolResult, type ToolResult } from './mcp-results.js';
import { backgroundJobs, type Jobs, MAX_JOBS } from './background.js';
import { parseMaxRuns, type RunSlots, runSlots } from './run-slots.js';
import type { NetworkAsker } from '../../network/network-asks.js';

export interface McpFlags {
  profile?: string;
  workspace?: string;
  backend?: 'bwrap' | 'nsjail' | 'landlock' | 'auto';
  trustProfile?: string;
  auditFile?: string;
  /** false with --no-audit. */
  audit?: boolean;
  /** `--max-runs N`: sandboxes at once; calls past it wait (run-slots.ts). */
  maxRuns?: string;
}

/** What every call runs under, settled once at start. */
interface Fixed {
  profile: ProfileInfo;
  /**
   * The profile as the command line named it (`builtin:agent`, a path): every call resolves this, not
   * `profile.name`, which drops the `builtin:` that keeps a project's `.sbx/profiles/agent.yaml` out.
   */
  spec: string;
  /** The workspace's real path: every call's --workspace. */
  workspace: string;
  /** The directory the server started in: every call's cwd, which the profile's relative paths and `${cwd}` resolve against. */
  start: string;
  /** The profile's own timeout: a call's `timeout` may only go below it. */
  timeoutMs: number | undefined;
  /** What both tools pass on from the command line. */
  base: Pick<RunOptions, 'backend' | 'trustProfiles'>;
  audit: RunOptions['audit'];
}

/**
 * Why no call can run: the host offers no sandbox (the backend's probe failed). The server still
 * answers, every call with this, so an agent learns why instead of seeing a server that would not start.
 */
interface Unavailable {
  profile: ProfileInfo | null;
  error: SbxError;
}

/** The backend probes' refusals (backend/host/registry.ts, host/host-probe.ts): facts of the host, not of the request. */
const HOST_CODES = new Set([
  'BWRAP_MISSING',
  'NSJAIL_MISSING',
  'LANDLOCK_UNAVAILABLE',
  'USERNS_DISABLED',
  'HOST_SETUP',
]);

/** The most a call may ask to see of each stream: the launcher keeps 1 MiB of each stream's end (backend/host/exec.ts). */
const MAX_OUTPUT_LIMIT = 1024 * 1024;

const arg = z.string().refine((s) => !s.includes('\0'), 'must not contain a NUL character');
const commandInput = {
  command: z
    .array(arg)
    .min(1)
    .optional()
    .describe('The command as an argv, e.g. ["npm", "test"]. Give this or `shell`.'),
  shell: arg
    .min(1)
    .optional()
    .describe(
      'A shell string run by /bin/sh, e.g. "npm test 2>&1 | tail -20"; under the profile\'s restricted shell syntax each command of it is judged by the command rules. Give this or `command`.',
    ),
  cwd: arg
    .optional()
    .describe(
      'Directory the command starts in, relative to the workspace and without ".." (default: the workspace). It changes nothing else of the sandbox.',
    ),
};
const runInput = z.strictObject({
  ...commandInput,
  timeout: z
    .number()
    .positive()
    .max(86_400)
    .optional()
    .describe("Wall-clock limit in seconds; it can only shorten the profile's timeout. Exit 124 when it fires."),
  output_limit: z
    .number()
    .int()
    .min(1024)
    .max(MAX_OUTPUT_LIMIT)
    .optional()
    .describe(
      'Bytes of stdout and of stderr returned, each (default 16384). Longer output keeps its head and its tail, half each, with a marker line where the middle was cut.',
    ),
});
const explainInput = z.strictObject(commandInput);
const stopInput = z.strictObject({
  job: z.number().int().positive().describe('The job number `start` answered with.'),
});

const RUN_DESCRIPTION =
  'Run a command in the sbx sandbox (the profile and workspace sbx mcp was started with). ' +
  'Returns the exit status (or the signal, or the limit that ended it), stdout and stderr (scrubbed of secrets; ' +
  'past 16 KiB each, or output_limit, the head and the tail with a marker where the middle was cut), files the ' +
  'policy hid, and every violation with the profile line behind its rule. ' +
  'A command the profile refuses, a non-zero exit and a violation come back with isError and the reason.';
const START_DESCRIPTION =
  'Start a command in the background in the sbx sandbox (a dev server, a watcher), as `run` would run it, and ' +
  'answer once it is launched with a job number. A later `run` reaches a port the profile publishes ' +
  '(network.publish) at 127.0.0.1:PORT, where this job serves it. `stop` ends the job and returns its output; ' +
  `at most ${MAX_JOBS} jobs exist at once.`;
const STOP_DESCRIPTION =
  'End a background job (SIGTERM, then SIGKILL after 2 s) and return its result as `run` would: the exit, ' +
  'its stdout and stderr, violations. A job that was stopped as asked is not an error.';
const EXPLAIN_DESCRIPTION =
  'Show the sandbox a run gets (profile, workspace, mounts, network, environment, limits, command rules) ' +
  'and what the command rules say of a command, without running anything.';

/**
 * A call's start directory: its real path, inside the workspace, or a refusal. Only a relative path
 * without `..` is looked at, and every refusal reads the same, so the agent learns nothing of what
 * exists outside the workspace (an absolute path or `..` is refused before the disk is touched).
 */
function callChdir(workspace: string, given: string | undefined): string {
  if (given === undefined) return workspace;
  const refuse = () =>
    new SbxError('USAGE', `cwd ${JSON.stringify(given)}: not a directory inside the workspace`, {
      hint: 'name a directory inside the workspace, relative to it and without ".." (e.g. "src"); omit cwd for the workspace itself',
    });
  if (given === '' || isAbsolute(given) || given.split('/').includes('..')) throw refuse();
  let real: string;
  try {
    real = realpathSync(resolve(workspace, given));
  } catch {
    throw refuse();
  }
  // The real path, so no symlink the sandbox planted leads out.
  if (!isWithin(real, workspace) || !statSync(real).isDirectory()) throw refuse();
  return real;
}

/**
 * Where a call runs: the profile resolves from the directory and workspace the server started with,
 * as at start, and the call's `cwd` only moves where the command starts (docs/SECURITY.md "sbx mcp").
 */
function placeOf(fixed: Fixed, given: string | undefined): Pick<RunOptions, 'workspace' | 'cwd' | 'chdir'> {
  return { workspace: fixed.workspace, cwd: fixed.start, chdir: callChdir(fixed.workspace, given) };
}

/** The call's `command` or `shell`: exactly one. */
function requestOf(args: { command?: string[] | undefined; shell?: string | undefined }) {
  if ((args.command === undefined) === (args.shell === undefined))
    throw new SbxError('USAGE', 'give exactly one of `command` (an argv array) and `shell` (a string)', {
      hint: 'e.g. {"command": ["ls", "-l"]} or {"shell": "ls | wc -l"}',
    });
  return args.shell !== undefined ? { shell: args.shell } : { command: args.command! };
}

/** Every call re-resolves the profile by name: refused unless it is still the file and content the server started with. */
function checkSameProfile(fixed: ProfileInfo, now: ProfileInfo): void {
  if (now.file === fixed.file && now.hash === fixed.hash) return;
  throw new SbxError(
    'PROFILE_UNTRUSTED',
    `profile "${fixed.name}" is no longer ${fixed.file} as sbx mcp started with it (now ${now.file}, hash ${now.hash.slice(0, 12)})`,
    { hint: 'restart sbx mcp to use the profile as it is now (a tool call never changes the profile)' },
  );
}

/**
 * The network question as an MCP elicitation (`elicitation/create`), put to the client's user while the
 * command waits (docs/DESIGN.md, "Asking at the proxy"); undefined when the client declared no form
 * elicitation, and the destination is refused as ever. A client that declared `elicitation: {}` (the
 * spec before modes) takes forms. Decline, cancel, an error or an answer off the list deny.
 */
function elicitingAsker(server: McpServer, profile: string): NetworkAsker | undefined {
  const declared = server.server.getClientCapabilities()?.elicitation;
  if (!declared) return undefined;
  const form = declared.form !== undefined;
  if (!form && declared.url !== undefined) return undefined;
  return async ({ host, port }, { signal }) => {
    const shown = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    const params = {
      message:
        `A command sbx runs (profile ${profile}) asks to connect to ${shown}, which the profile's network.allow does not list. ` +
        `once: allow it for this run; always: also for later runs of this profile (remembered in your sbx approvals); deny: refuse it for this run.`,
      requestedSchema: {
        type: 'object' as const,
        properties: {
          answer: { type: 'string' as const, title: `Connect to ${shown}?`, enum: ['once', 'always', 'deny'] },
        },
        required: ['answer'],
      },
    };
    // The proxy's question timeout bounds the wait (its signal cancels the request); the SDK's own 60 s default must not.
    const options = { signal, timeout: 24 * 3_600_000 };
    const result = form
      ? await server.server.elicitInput({ mode: 'form', ...params }, options)
      : await server.server.request({ method: 'elicitation/create', params }, ElicitResultSchema, options);
    const answer = result.action === 'accept' ? result.content?.answer : undefined;
    return answer === 'once' || answer === 'always' ? answer : 'deny';
  };
}

function runOptions(
  fixed: Fixed,
  args: z.infer<typeof runInput>,
  signal: AbortSignal,
  notices: string[],
  ask: NetworkAsker | undefined,
): RunOptions {
  const requestedMs = args.timeout === undefined ? undefined : Math.ceil(args.timeout * 1000);
  const timeoutMs =
    requestedMs === undefined || (fixed.timeoutMs !== undefined && fixed.timeoutMs <= requestedMs)
      ? undefined
      : requestedMs;
  return {
    ...requestOf(args),
    ...fixed.base,
    ...(fixed.audit ? { audit: fixed.audit } : {}),
    profile: fixed.spec,
    ...placeOf(fixed, args.cwd),
    ...(timeoutMs !== undefined ? { limits: { timeout: `${timeoutMs}ms` } } : {}),
    ...(args.output_limit !== undefined ? { captureLimitBytes: args.output_limit } : {}),
    // Captured, never inherited: this process's stdout is the MCP transport.
    stdio: 'capture',
    signal,
    onNotice: (line) => notices.push(line),
    onProfile: (profile) => checkSameProfile(fixed.profile, profile),
    ...(ask ? { onNetworkRequest: ask } : {}),
  };
}

/** A refusal as a result: the report run() knew when it refused, or (refused here, before run()) one of our own. */
function refusalResult(error: SbxError, command: string[], profile: ProfileInfo | null, notices: string[]): ToolResult {
  const facts = error.run ?? { sessionId: newSessionId(), profile, durationMs: 0 };
  return toolResult(reportFromError(error, facts.command ?? command, facts), notices, error);
}

/** The argv a refused call would have run, for its report. */
function commandOf(args: { command?: string[] | undefined; shell?: string | undefined }): string[] {
  return args.shell !== undefined ? shellArgv(args.shell) : (args.command ?? []);
}

/** One run under the fixed profile and workspace: its result, a refusal included. */
async function runCall(
  fixed: Fixed,
  args: z.infer<typeof runInput>,
  signal: AbortSignal,
  notices: string[],
  ask: NetworkAsker | undefined,
  onLaunch?: (sessionId: string) => void,
): Promise<ToolResult> {
  try {
    const options = runOptions(fixed, args, signal, notices, ask);
    const outcome = await runUnchecked(options, {
      door: 'mcp',
      // The library's warm cache: a server runs many commands over the same trees (host/warm-cache.ts).
      warm: !process.env.SBX_NO_CACHE,
      checkPolicy: (policy) => {
        if (policy.workspace.host === fixed.workspace) return;
        const message = `the workspace resolved to ${policy.workspace.host}, not ${fixed.workspace} as at start`;
        throw new SbxError('WORKSPACE_INVALID', message, { hint: 'restart sbx mcp' });
      },
      ...(onLaunch ? { onLaunch } : {}),
    });
    return toolResult(reportFromOutcome(outcome), notices);
  } catch (error) {
    if (!isSbxError(error)) throw error;
    return refusalResult(error, commandOf(args), fixed.profile, notices);
  }
}

async function runTool(
  fixed: Fixed | Unavailable,
  slots: RunSlots,
  args: z.infer<typeof runInput>,
  signal: AbortSignal,
  ask: NetworkAsker | undefined,
): Promise<ToolResult> {
  const notices: string[] = [];
  if ('error' in fixed) return refusalResult(fixed.error, commandOf(args), fixed.profile, notices);
  const asked = nowMs();
  let release: () => void;
  try {
    // On stderr too: whoever watches the server sees why a call is slow.
    release = await slots.acquire(signal, (ahead) =>
      process.stderr.write(`sbx mcp: a run waits for a free slot (--max-runs), ${ahead} ahead of it\n`),
    );
  } catch (error) {
    if (!isSbxError(error)) throw error;
    return refusalResult(error, commandOf(args), fixed.profile, notices);
  }
  try {
    const waitedMs = nowMs() - asked;
    if (waitedMs >= 1000)
      notices.push(`sbx: waited ${(waitedMs / 1000).toFixed(1)} s for a free run slot (sbx mcp --max-runs)`);
    return await runCall(fixed, args, signal, notices, ask);
  } finally {
    release();
  }
}

/** `start`: the run in the background (background.ts); answered once launched, with its job number. */
async function startTool(
  fixed: Fixed | Unavailable,
  jobs: Jobs,
  args: z.infer<typeof runInput>,
  ask: NetworkAsker | undefined,
): Promise<ToolResult | TextResult> {
  const notices: string[] = [];
  if ('error' in fixed) return refusalResult(fixed.error, commandOf(args), fixed.profile, notices);
  try {
    const started = await jobs.start((signal, onLaunch) => runCall(fixed, args, signal, notices, ask, onLaunch));
    if ('result' in started) return started.result;
    const text = [
      `job ${started.job} started in the background [profile ${fixed.profile.name}, session ${started.session}]; stop with {"job": ${started.job}} ends it and returns its output`,
      ...notices.map((n) => n.replace(/^sbx: /, 'notice: ')),
    ].join('\n');
    return { content: [{ type: 'text', text }] };
  } catch (error) {
    if (!isSbxError(error)) throw error;
    return refusalResult(error, commandOf(args), fixed.profile, notices);
  }
}

/** `stop`: the job ended and its result, as `run` would have answered it. */
async function stopTool(fixed: Fixed | Unavailable, jobs: Jobs, job: number): Promise<ToolResult> {
  const result = await jobs.stop(job);
  if (result) return result;
  const error = new SbxError('USAGE', `no background job ${job}`, {
    hint: 'start answers with the job number; a job is gone once stop has returned its output',
  });
  return refusalResult(error, [], fixed.profile, []);
}

async function explainTool(fixed: Fixed | Unavailable, args: z.infer<typeof explainInput>) {
  if ('error' in fixed) return refusalResult(fixed.error, commandOf(args), fixed.profile, []);
  try {
    const request = args.command === undefined && args.shell === undefined ? { command: ['sh'] } : requestOf(args);
    const compiled = await compile({
      ...request,
      ...fixed.base,
      profile: fixed.spec,
      ...placeOf(fixed, args.cwd),
      onProfile: (profile) => checkSameProfile(fixed.profile, profile),
    });
    const text = (await explainLines(compiled)).join('\n');
    return { content: [{ type: 'text' as const, text }] };
  } catch (error) {
    if (!isSbxError(error)) throw error;
    return refusalResult(error, commandOf(args), fixed.profile, []);
  }
}

/**
 * The profile and workspace every call will use, resolved (and the sandbox compiled once) before the
 * server answers anything. A bad profile or workspace refuses the start (stderr, exit code); a host
 * without a usable sandbox starts a server that refuses every call.
 */
async function fixSession(flags: McpFlags): Promise<Fixed | Unavailable> {
  const base: Fixed['base'] = {
    ...(flags.backend ? { backend: flags.backend } : {}),
    ...(flags.trustProfile ? { trustProfiles: flags.trustProfile.split(',').map((h) => h.trim()) } : {}),
  };
  const audit = flags.audit === false ? undefined : { file: flags.auditFile ?? ledgerPath(process.env) };
  let profile: ProfileInfo | null = null;
  const start = process.cwd();
  // sbx's own default unless the user names one: a project `.sbx/profiles/default.yaml` (shipped or
  // planted by a run) neither chooses the server's sandbox nor stops it from starting.
  const spec = flags.profile ?? 'builtin:default';
  try {
    const compiled = await compile({
      command: ['true'],
      cwd: start,
      profile: spec,
      ...(flags.workspace ? { workspace: flags.workspace } : {}),
      ...base,
      onProfile: (p) => {
        profile = p;
      },
    });
    const { policy } = compiled;
    const { host: workspace } = policy.workspace;
    return { profile: compiled.profile, spec, workspace, start, timeoutMs: policy.limits.timeoutMs, base, audit };
  } catch (error) {
    if (!isSbxError(error) || !HOST_CODES.has(error.code)) throw error;
    return { profile, error };
  }
}

/** One line on stderr: what the server runs under (stdout is the transport). */
function announce(fixed: Fixed | Unavailable): void {
  const line =
    'error' in fixed
      ? `sbx mcp: no sandbox on this host (${fixed.error.code}: ${fixed.error.message}); every call will say so`
      : `sbx mcp: profile ${fixed.profile.name} (${fixed.profile.file}), workspace ${fixed.workspace}; serving on stdio`;
  process.stderr.write(`${line}\n`);
}

export async function mcpCommand(flags: McpFlags): Promise<void> {
  const slots = runSlots(parseMaxRuns(flags.maxRuns));
  const jobs = backgroundJobs();
  const fixed = await fixSession(flags);
  announce(fixed);
  const server = new McpServer({ name: 'sbx', version: VERSION });
  // Known once the client has initialised: asked per call.
  const askerOf = () => ('error' in fixed ? undefined : elicitingAsker(server, fixed.profile.name));
  server.registerTool(
    'run',
    { description: RUN_DESCRIPTION, inputSchema: runInput, outputSchema: reportSchema },
    // The call's signal fires on the client's cancellation and when the transport closes: the run's
    // command gets SIGTERM (as on Ctrl-C), the whole sandbox SIGKILL after the grace, and it is cleaned up.
    async (args, extra) => runTool(fixed, slots, args, extra.signal, askerOf()),
  );
  server.registerTool('start', { description: START_DESCRIPTION, inputSchema: runInput }, async (args) =>
    startTool(fixed, jobs, args, askerOf()),
  );
  server.registerTool(
    'stop',
    { description: STOP_DESCRIPTION, inputSchema: stopInput, outputSchema: reportSchema },
    async ({ job }) => stopTool(fixed, jobs, job),
  );
  server.registerTool('explain', { description: EXPLAIN_DESCRIPTION, inputSchema: explainInput }, async (args) =>
    explainTool(fixed, args),
  );
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((done) => {
    transport.onclose = done;
  });
  // The SDK's transport does not watch for the end of its input: without this a client that exits
  // leaves the server waiting. Closing ends the runs in flight; their cleanup keeps the process alive
  // until each sandbox is gone.
  process.stdin.once('end', () => void server.close());
  await server.connect(transport);
  await closed;
  // Background jobs belong to no call: the server's end is theirs.
  await jobs.stopAll();
}
