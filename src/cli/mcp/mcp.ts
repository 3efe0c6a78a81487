// `sbx mcp`: a stdio MCP server (the official SDK) whose tools run commands through the pipeline `sbx run`
// uses (runUnchecked, in this process), under a profile and workspace fixed when the server starts.
// Loaded with import() by main.ts (its plain flags) or program.ts: neither this file nor the SDK is in
// the launch path of `sbx run` (scripts/build.mjs puts them in lazy chunks). This file settles the
// session and answers a plain `initialize` and `tools/list` itself (mcp-early.ts); the SDK's server,
// its tools and their schemas (mcp-server.ts) load only after those answers are out.
//
// Inputs and owners (docs/SECURITY.md "sbx mcp"): the agent owns the tool arguments, and the commands it
// runs own the workspace. Nothing either writes widens the sandbox: no argument names a profile, a
// bind, a network or a flag; `cwd` (relative, no `..`, resolving inside the workspace) moves only where the
// command starts, never what the profile resolves; `timeout` only narrows; the
// profile must hash as it did at start. Stdout is the transport: sbx's notices go into the results.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, type Readable, Writable } from 'node:stream';
import { compile, compileUnchecked, type ProfileInfo, type RunOptions, type SbxError } from '../../api.js';
import { isSbxError } from '../../errors.js';
import { ledgerPath } from '../../report/host/ledger.js';
import { packageRoot } from '../../package-root.js';
import { earlyAnswer } from './mcp-early.js';
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

/** Past this much input without a newline the line is nothing answered early: the SDK reads on (and bounds it). */
const LINE_MAX_BYTES = 1024 * 1024;

/** What was read and answered before the SDK's server took over. */
interface EarlyPart {
  /** Every byte read so far, answered or not: the SDK's server reads them first. */
  head: Buffer;
  /** The answers written here: the SDK's own answers to those requests are left out. */
  answered: string[];
  /** Stdin ended while read here. */
  ended: boolean;
}

/**
 * Answers what mcp-early.ts answers, line by line, until a line it does not (or the end of stdin), then
 * pauses stdin and returns everything read. Once tools/list is answered a tool call follows: `preload`
 * starts loading the SDK's server then, and once it is loaded the rest is the SDK's.
 */
function answerEarly(input: Readable, tools: unknown, preload: () => Promise<unknown>): Promise<EarlyPart> {
  return new Promise((done) => {
    let read = Buffer.alloc(0);
    const answered: string[] = [];
    let lines = 0;
    /** Where the next unread line starts in `read`. */
    let from = 0;
    let finished = false;
    const finish = (ended: boolean) => {
      if (finished) return;
      finished = true;
      // Synchronously, so no chunk is emitted with no listener to take it.
      if (!ended) input.pause();
      input.off('data', onData);
      input.off('end', onEnd);
      done({ head: read, answered, ended });
    };
    const onData = (chunk: Buffer) => {
      read = Buffer.concat([read, chunk]);
      for (let newline = read.indexOf(10, from); newline >= 0; newline = read.indexOf(10, from)) {
        const early = earlyAnswer(read.toString('utf8', from, newline), lines === 0, tools);
        if (!early) return finish(false);
        if (early.kind === 'answer') {
          process.stdout.write(early.text);
          answered.push(early.text);
          // A failed load is mcpCommand's to report, when it awaits the same import.
          if (lines > 0)
            void preload().then(
              () => finish(false),
              () => finish(false),
            );
        }
        lines++;
        from = newline + 1;
      }
      if (read.length - from > LINE_MAX_BYTES) finish(false);
    };
    const onEnd = () => finish(true);
    input.on('data', onData);
    input.once('end', onEnd);
  });
}

/**
 * Stdout with the SDK's answers to the replayed requests answered already left out: each is dropped
 * once, by its bytes, which are the bytes sent early (test/unit/cli/mcp-early.test.ts holds them
 * equal). Matching bytes rather than ids keeps another answer with the same id (a `ping` reusing the
 * id of `initialize`) whatever order the SDK writes them in.
 */
function withoutAnswers(texts: readonly string[]): Writable {
  const pending = [...texts];
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      const at = pending.length === 0 ? -1 : pending.indexOf(chunk.toString('utf8'));
      if (at >= 0) {
        pending.splice(at, 1);
        callback();
        return;
      }
      // Errors stay with stdout, whose handler (main.ts) ends the process on a closed pipe.
      if (process.stdout.write(chunk)) callback();
      else process.stdout.once('drain', () => callback());
    },
  });
}

/** The SDK server's tools/list result as shipped (schema/mcp-tools.json); undefined leaves tools/list to the SDK. */
function shippedTools(): unknown {
  try {
    return JSON.parse(readFileSync(join(packageRoot(), 'schema', 'mcp-tools.json'), 'utf8'));
  } catch {
    return undefined;
  }
}

export async function mcpCommand(flags: McpFlags): Promise<void> {
  const maxRuns = parseMaxRuns(flags.maxRuns);
  const fixed = await fixSession(flags);
  announce(fixed);
  // A start refused above has written nothing on stdout; from here the server answers.
  let load: Promise<typeof import('./mcp-server.js')> | undefined;
  const loadServer = () => (load ??= import('./mcp-server.js'));
  const { head, answered, ended } = await answerEarly(process.stdin, shippedTools(), loadServer);
  const { serveMcp } = await loadServer();
  // Everything read so far goes to the SDK, the answered requests too, then the rest of stdin.
  const input = new PassThrough();
  input.write(head);
  if (ended) input.end();
  else process.stdin.pipe(input);
  process.stdin.on('error', (error) => input.emit('error', error));
  await serveMcp(fixed, maxRuns, { input, output: answered.length > 0 ? withoutAnswers(answered) : process.stdout });
}
