// `sbx mcp`: a stdio MCP server (the official SDK) whose tools run commands through the pipeline `sbx run`
// uses (runUnchecked, in this process), under a profile and workspace fixed when the server starts.
// Loaded with import() by main.ts (its plain flags) or program.ts: neither this file nor the SDK is in
// the launch path of `sbx run` (scripts/build.mjs puts them in lazy chunks). This file settles the
// session and answers a plain `initialize` itself (mcp-initialize.ts); the SDK's server, its tools and
// their schemas (mcp-server.ts) load only after that answer is out.
//
// Inputs and owners (docs/SECURITY.md "sbx mcp"): the agent owns the tool arguments, and the commands it
// runs own the workspace. Nothing either writes widens the sandbox: no argument names a profile, a
// bind, a network or a flag; `cwd` (relative, no `..`, resolving inside the workspace) moves only where the
// command starts, never what the profile resolves; `timeout` only narrows; the
// profile must hash as it did at start. Stdout is the transport: sbx's notices go into the results.
import { PassThrough, type Readable, Writable } from 'node:stream';
import { compile, compileUnchecked, type ProfileInfo, type RunOptions, type SbxError } from '../../api.js';
import { isSbxError } from '../../errors.js';
import { ledgerPath } from '../../report/host/ledger.js';
import { initializeAnswer } from './mcp-initialize.js';
import { parseMaxRuns } from './run-slots.js';

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
export interface Fixed {
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
export interface Unavailable {
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

/**
 * Whether compile()'s option check (api-options.ts) takes the options fixSession builds as they are.
 * Their strings come from argv (no NUL), the backend from the parser's choices and the workspace only
 * when not empty, so all it can refuse is an empty profile and a trust hash that is no sha256: those
 * still go through compile(), which refuses them as it always did; every other start skips loading zod
 * (its schemas are a large part of a server's start).
 */
export function passesOptionCheck(spec: string, trustProfiles: readonly string[]): boolean {
  return spec !== '' && trustProfiles.every((hash) => /^[0-9a-f]{64}$/.test(hash));
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
  const compiler = passesOptionCheck(spec, base.trustProfiles ?? []) ? compileUnchecked : compile;
  try {
    const compiled = await compiler({
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

/** Past this much input without a newline the first line is no plain `initialize`: the SDK reads on (and bounds it). */
const FIRST_LINE_MAX_BYTES = 1024 * 1024;

/** Stdin up to its first newline (or its end, or the bound), then paused: what the SDK's server is handed first. */
function readHead(input: Readable): Promise<{ head: Buffer; ended: boolean }> {
  return new Promise((done) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (ended: boolean) => {
      input.off('data', onData);
      input.off('end', onEnd);
      done({ head: Buffer.concat(chunks), ended });
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (!chunk.includes(10) && size <= FIRST_LINE_MAX_BYTES) return;
      // Synchronously, so no chunk is emitted with no listener to take it.
      input.pause();
      finish(false);
    };
    const onEnd = () => finish(true);
    input.on('data', onData);
    input.once('end', onEnd);
  });
}

/**
 * Stdout with the SDK's answer to the replayed `initialize` (request `id`) left out: that request was
 * answered already. The SDK answers requests in the order they came, and that one came first, so its
 * answer is the first response carrying `id`.
 */
function withoutAnswerTo(id: string | number): Writable {
  let dropped = false;
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (!dropped) {
        const message = JSON.parse(chunk.toString('utf8')) as { id?: unknown; result?: unknown; error?: unknown };
        if (message.id === id && ('result' in message || 'error' in message)) {
          dropped = true;
          callback();
          return;
        }
      }
      // Errors stay with stdout, whose handler (main.ts) ends the process on a closed pipe.
      if (process.stdout.write(chunk)) callback();
      else process.stdout.once('drain', () => callback());
    },
  });
}

export async function mcpCommand(flags: McpFlags): Promise<void> {
  const maxRuns = parseMaxRuns(flags.maxRuns);
  const fixed = await fixSession(flags);
  announce(fixed);
  // A start refused above has written nothing on stdout; from here the server answers.
  const { head, ended } = await readHead(process.stdin);
  const newline = head.indexOf(10);
  const early = newline < 0 ? undefined : initializeAnswer(head.toString('utf8', 0, newline));
  if (early) process.stdout.write(early.text);
  const { serveMcp } = await import('./mcp-server.js');
  // Everything read so far goes to the SDK, the answered request too, then the rest of stdin.
  const input = new PassThrough();
  input.write(head);
  if (ended) input.end();
  else process.stdin.pipe(input);
  process.stdin.on('error', (error) => input.emit('error', error));
  await serveMcp(fixed, maxRuns, { input, output: early ? withoutAnswerTo(early.id) : process.stdout });
}
