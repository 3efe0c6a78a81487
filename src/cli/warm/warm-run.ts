// `sbx run --warm`, served by the warm server (docs/SECURITY.md, "The warm server"; docs/DESIGN.md,
// "Launch speed: the warm server"). The run is `sbx run`'s own (run-command.ts runCommand), through a
// door that stands the caller in for this process: its environment and working directory, its stdio
// (sent by the caller, put in place by the launch's taker: backend/host/exec.ts StdioFrom), its signals,
// and its stderr and stdout for sbx's own lines and the report. A call is served only when the command
// would start as it would under the caller's own `sbx run`; everything else is declined before anything
// is read or run, and the client goes on without the server.
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { existsSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { constants as osConstants } from 'node:os';
import { parseRunArgv } from '../run-flags.js';
import type { RunCliFlags } from '../run-flags.js';
import { failureOf } from '../main.js';
import { runCommand, type RunDoor } from '../run-command.js';
import { hasControllingTerminal, inheritedDifference } from './warm-peer.js';
import {
  encodeExit,
  encodeLaunching,
  encodeRunGo,
  encodeStderr,
  encodeStdout,
  parseSignals,
  type WarmCall,
} from './warm-wire.js';

/** How long the caller has to send its descriptors after the go: a safety net, as for a hook's input. */
const STDIO_TIMEOUT_MS = 120_000;

/**
 * Variables that change how Node.js itself behaves in the process that runs sbx (its options, TLS
 * trust, thread pool, OpenSSL, time zone): a caller whose differ from the server's is served cold.
 */
const RUNTIME_VARIABLE = /^(?:NODE_|UV_|OPENSSL_|SSL_CERT_|TZ$)/;

function runtimeVariables(env: Record<string, string | undefined>): string {
  return JSON.stringify(
    Object.keys(env)
      .filter((k) => RUNTIME_VARIABLE.test(k) && env[k] !== undefined)
      .sort()
      .map((k) => [k, env[k]]),
  );
}

/**
 * The command line, when the server serves it: a well-formed `run --warm` whose run reads nothing of
 * the caller but what the call carries. Else why not: the server says it on its own stdout (the client is
 * told nothing, and runs the command line as without --warm).
 */
function runServed(call: WarmCall, env: Record<string, string>): { command: string[]; flags: RunCliFlags } | string {
  const parsed = call.args[0] === 'run' ? parseRunArgv(call.args.slice(1)) : undefined;
  if (!parsed?.flags.warm) return 'not a run --warm command line';
  const { flags } = parsed;
  // The caller's descriptor table (bin/sbx.js's shell half checks it); explain's output on stdout.
  if (flags.reportFd !== undefined || flags.dryRun) return '--report-fd or --dry-run';
  // Its workflow commands go to this process's stdout (actions-mode.ts).
  if (env.GITHUB_ACTIONS === 'true') return 'a GitHub Actions job';
  // sbx's errors are colored on a stderr that is no terminal only when asked.
  if (env.FORCE_COLOR !== undefined) return 'FORCE_COLOR';
  // A terminal: job control, the questions asked on it, its size and modes belong to the caller's session.
  if (call.ttys !== 0) return 'a terminal on stdio';
  if (flags.approval !== 'never' && hasControllingTerminal(call.pid)) return 'a controlling terminal';
  if (runtimeVariables(env) !== runtimeVariables(process.env)) return "Node.js's variables differ";
  const differs = inheritedDifference(call.pid);
  if (differs !== undefined) return `${differs} differs`;
  return parsed;
}

function listenOnce(path: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    // Never read here: the descriptors it carries are the taker's to receive.
    const server = createServer({ pauseOnConnect: true });
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/** The caller's connection for its descriptors: the first to arrive; undefined if the call ends or times out first. */
function stdioConnection(server: Server, conn: Socket): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const done = (socket: Socket | undefined) => {
      clearTimeout(timer);
      conn.off('close', gone);
      resolve(socket);
    };
    const gone = () => done(undefined);
    const timer = setTimeout(gone, STDIO_TIMEOUT_MS);
    conn.once('close', gone);
    server.once('connection', (socket: Socket) => done(socket));
  });
}

function signalName(n: number): NodeJS.Signals | undefined {
  const forwarded: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];
  return forwarded.find((s) => osConstants.signals[s] === n);
}

/**
 * Serves one run for a proven caller (warm-server.ts has checked its pid and build): declines (closes
 * the connection unanswered) unless runServed says yes; else the go, the caller's descriptors, the
 * run, and its exit status.
 */
export async function serveRun(
  conn: Socket,
  call: WarmCall,
  env: Record<string, string>,
  where: { dir: string; taker: string; log: (line: string) => void },
): Promise<void> {
  const { dir, taker } = where;
  const served = existsSync(taker) ? runServed(call, env) : `${taker} is missing`;
  if (typeof served === 'string') {
    where.log(`declined a run of pid ${call.pid}: ${served}`);
    return void conn.destroy();
  }
  const path = join(dir, `.run-${randomBytes(6).toString('hex')}.sock`);
  let listener: Server;
  try {
    listener = await listenOnce(path);
  } catch {
    return void conn.destroy();
  }
  conn.setTimeout(0);
  // Read from the go on: the caller's first signal may arrive before its descriptors' connection does.
  const signals = new EventEmitter();
  const abort = new AbortController();
  let launched = false;
  let pending = Buffer.alloc(0);
  conn.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    const read = parseSignals(pending);
    if (read === 'bad') return void conn.destroy();
    pending = pending.subarray(read.used);
    for (const n of read.signals) {
      const name = signalName(n);
      // Before the launch nothing runs yet to pass it to: the run ends there, as the caller's own
      // `sbx run` would have died of it.
      if (name && launched) signals.emit(name);
      else if (name) abort.abort();
    }
  });
  // A caller gone (killed, say) ends its run, as the caller's own `sbx run` would end with it.
  conn.on('close', () => abort.abort());
  conn.write(encodeRunGo(path));
  listener.on('error', () => {});
  const stdio = await stdioConnection(listener, conn);
  stdio?.on('error', () => {});
  listener.close();
  rmSync(path, { force: true });
  if (!stdio || conn.destroyed || abort.signal.aborted) {
    stdio?.destroy();
    return void conn.destroy();
  }
  // From here on the caller has sent its descriptors and waits for the run's end.
  const send = (bytes: Buffer) => {
    if (!conn.destroyed) conn.write(bytes);
  };
  const door: RunDoor = {
    env,
    cwd: call.cwd,
    stdinIsTty: false,
    stderr: (text) => send(encodeStderr(text)),
    stdoutReport: (bytes, failure) => send(encodeStdout(bytes, failure)),
    // No controlling terminal (runServed), so nobody to ask: as askOnTerminal answers without one.
    approve: async () => undefined,
    signal: abort.signal,
    hooks: {
      signals,
      stdioFrom: { socket: stdio, taker, pid: call.pid },
      warm: !env.SBX_NO_CACHE,
      // Everything said so far must be on the caller's stderr before the command can write there, as
      // under `sbx run`: the client answers this on the descriptors' connection once it has written
      // what came before, and the taker starts the launch only then.
      onLaunch: () => {
        launched = true;
        send(encodeLaunching());
      },
    },
  };
  let status: number;
  try {
    status = (await runCommand(served.command, served.flags, door)) ?? 0;
  } catch (error) {
    const failure = await failureOf(error, env);
    send(encodeStderr(failure.text));
    status = failure.exitCode;
  } finally {
    stdio.destroy();
  }
  if (!conn.destroyed) conn.end(encodeExit(status));
}
