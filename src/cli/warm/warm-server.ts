// `sbx warm-server`: serves `sbx hook AGENT --warm` and `sbx run --warm` for one user and one build of
// sbx, so an agent's hook or run costs a native client's start and warm host scans, not Node's start
// and the CLI's loading (docs/SECURITY.md, "The warm server"; docs/DESIGN.md, "Launch speed: the warm
// server"). The first `--warm` call that finds no server goes on without it, then starts one
// (startWarmServer); the server exits after SBX_WARM_IDLE_SECONDS without a call (900), or once its
// socket is gone or is another's. Each hook call is judged exactly as `sbx hook` judges it (hook.ts
// hookReply) and each run is `sbx run`'s (warm-run.ts), with the caller's environment: a server holds
// no policy of its own, only what the library keeps between runs (host/warm-cache.ts).
import { randomInt } from 'node:crypto';
import { spawn, type StdioOptions } from 'node:child_process';
import { closeSync, existsSync, lstatSync, openSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { leakedDescriptors, overlayLeaked } from '../../host/leaked-fds.js';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { dirname, join, posix } from 'node:path';
import { makePrivateDir } from '../../host/cache-file.js';
import { passwdHome } from '../../host/invoking-user.js';
import { packageRoot } from '../../package-root.js';
import { resolveHome, xdgDirs } from '../../policy/user-dirs.js';
import { BUILD } from '../../version.js';
import { isProvenPeer } from './warm-peer.js';
import { serveRun } from './warm-run.js';
import { hookReply, MAX_INPUT_BYTES, parseHookArgv } from '../hook/hook.js';
import {
  encodeHello,
  encodeReply,
  type WarmCall,
  MAX_CALL_BYTES,
  NONCE_LENGTH,
  parseCall,
  parseInput,
} from './warm-wire.js';

/** The longest path a unix socket address holds (sun_path, with its NUL). */
const MAX_SOCKET_PATH = 107;
const DEFAULT_IDLE_SECONDS = 900;
/** A safety net for a client that stops mid-call, not a deadline: native/sbx-warm.c waits as long. */
const CALL_TIMEOUT_MS = 120_000;
/**
 * The server's Node.js flags. V8 grows the young generation to 2 × 16 MiB under a steady stream of
 * calls and keeps it: 105 MiB resident after 600 calls here, against 78 MiB with 2 MiB semi-spaces,
 * at the same 6.2 ms a call (measured side by side; bench/agents.mjs starts its server so too).
 */
export const SERVER_NODE_FLAGS = ['--max-semi-space-size=2'];

/** Where this build's server listens for `env`'s user: in sbx's cache directory; undefined when no path fits. */
export function warmSocketPath(env: Record<string, string | undefined>): string | undefined {
  let home: string;
  try {
    home = resolveHome(env, passwdHome);
  } catch {
    return undefined;
  }
  const path = posix.join(xdgDirs(env, home).cacheHome, 'sbx', `warm-${BUILD}.sock`);
  return Buffer.byteLength(path) <= MAX_SOCKET_PATH ? path : undefined;
}

/** The native client bin/sbx.js execs for `--warm`; without it (no C compiler at build) no call reaches a server. */
export function nativeClient(): string {
  return join(packageRoot(), 'dist', 'sbx-warm');
}

/** Whether something accepts connections at `path` (a server of this build, or a socket left by a dead one: no). */
export function listening(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createConnection(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

/**
 * The server's environment: the caller's, as bin/sbx.js hands it to Node. NODE_EXTRA_CA_CERTS moved
 * aside, as the shell half does (main.ts restoreMovedEnv puts it back for the sandboxes' rules): the
 * server's own TLS then trusts what a CLI run's does.
 */
function serverEnv(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = { ...env, SBX_CALLER_FDS: '' };
  if (out.NODE_EXTRA_CA_CERTS !== undefined) {
    out.SBX_HOST_NODE_EXTRA_CA_CERTS = out.NODE_EXTRA_CA_CERTS;
    delete out.NODE_EXTRA_CA_CERTS;
  }
  return out;
}

/**
 * Starts a server for `env`'s user, detached, unless one already listens (a server the native client
 * would not trust, say one of another Node.js, is left alone: the calls are answered without it).
 */
export async function startWarmServer(env: Record<string, string | undefined>): Promise<void> {
  const path = warmSocketPath(env);
  if (!path || !existsSync(nativeClient()) || (await listening(path))) return;
  // The caller's descriptors are not the server's: it would hold a pipe open (a job server's, the
  // reader of a `sbx run --warm | tee`) for as long as it lives.
  const leaked = leakedDescriptors();
  const stdio: Exclude<StdioOptions, string> = ['ignore', 'ignore', 'ignore'];
  const devNull = leaked.length > 0 ? openSync('/dev/null', 'r') : -1;
  overlayLeaked(stdio, leaked, devNull);
  try {
    const args = [...SERVER_NODE_FLAGS, join(packageRoot(), 'bin', 'sbx.js'), 'warm-server'];
    const child = spawn(process.execPath, args, { detached: true, stdio, cwd: '/', env: serverEnv(env) });
    child.on('error', () => {});
    child.unref();
  } finally {
    if (devNull >= 0) closeSync(devNull);
  }
}

function makeNonce(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < NONCE_LENGTH; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/** bin/sbx.js moved NODE_EXTRA_CA_CERTS aside in the client's environment too (main.ts restoreMovedEnv). */
function callerEnv(env: Record<string, string>): Record<string, string> {
  const out = { ...env };
  const moved = out.SBX_HOST_NODE_EXTRA_CA_CERTS;
  if (moved !== undefined) {
    delete out.SBX_HOST_NODE_EXTRA_CA_CERTS;
    out.NODE_EXTRA_CA_CERTS = moved;
  }
  return out;
}

/** What the server is: the Node.js it runs, and its count of calls under way (the idle clock waits for them). */
interface ServerState {
  node: string;
  /** The socket's directory (sbx's own cache): a run's descriptors are sent to a socket here. */
  dir: string;
  /** A line on the server's stdout (nowhere, once started detached): why a run was declined. */
  log: (line: string) => void;
  active: number;
  lastCallMs: number;
}

/** Collects a connection's bytes: parse() sees them whole, without copying each chunk into a growing buffer. */
class Inbox {
  private chunks: Buffer[] = [];
  size = 0;
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
  }
  whole(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0] ?? Buffer.alloc(0);
  }
  clear(): void {
    this.chunks = [];
    this.size = 0;
  }
}

/**
 * One call: hello with a nonce, the call (refused unless the caller proves a pid outside every sandbox,
 * warm-peer.ts, and the command line is one this server answers), go, the input, the reply. Anything
 * wrong closes the connection unanswered, and the client answers without the server.
 */
function serve(conn: Socket, state: ServerState): void {
  const nonce = makeNonce();
  const inbox = new Inbox();
  let stage: 'call' | 'input' | 'judging' | 'run' = 'call';
  let parsed: { call: WarmCall; argv: NonNullable<ReturnType<typeof parseHookArgv>> } | undefined;
  let expected: number | undefined;
  state.active++;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    state.active--;
    state.lastCallMs = Date.now();
  };
  conn.on('close', finish);
  conn.on('error', () => conn.destroy());
  conn.setTimeout(CALL_TIMEOUT_MS, () => conn.destroy());
  conn.write(encodeHello(nonce));
  conn.on('data', (chunk: Buffer) => {
    // A run's messages are serveRun's to read.
    if (stage === 'run') return;
    if (stage === 'judging') return void conn.destroy();
    inbox.push(chunk);
    if (stage === 'call') {
      const call = inbox.size > MAX_CALL_BYTES ? 'bad' : parseCall(inbox.whole());
      if (call === 'more') return;
      if (call === 'bad' || call.build !== BUILD || call.node !== state.node || !isProvenPeer(call.pid, nonce))
        return void conn.destroy();
      if (call.args[0] === 'run') {
        stage = 'run';
        const where = { dir: state.dir, taker: nativeClient(), log: state.log };
        serveRun(conn, call, callerEnv(call.env), where).catch(() => conn.destroy());
        return;
      }
      const argv = call.args[0] === 'hook' ? parseHookArgv(call.args.slice(1)) : undefined;
      if (!argv) return void conn.destroy();
      parsed = { call, argv };
      inbox.clear();
      stage = 'input';
      conn.write('Y');
      return;
    }
    // The input's length comes first: it is parsed once, when whole (a 4 MB input in 64 KB chunks
    // would otherwise be joined again at every chunk).
    if (inbox.size < 4) return;
    expected ??= 4 + inbox.whole().readUInt32LE(0);
    if (inbox.size < expected && expected <= 4 + MAX_INPUT_BYTES + 1) return;
    const input = parseInput(inbox.whole(), MAX_INPUT_BYTES + 1);
    if (input === 'more') return;
    if (input === 'bad' || !parsed) return void conn.destroy();
    stage = 'judging';
    const { call, argv } = parsed;
    const env = callerEnv(call.env);
    const text = input.length > MAX_INPUT_BYTES ? undefined : input.toString('utf8');
    hookReply(argv.agent, argv.flags, text, { env, cwd: call.cwd, warm: !env.SBX_NO_CACHE }).then(
      (reply) => conn.end(encodeReply(0, reply.stdout ?? '', reply.onStdoutFailure)),
      () => conn.destroy(),
    );
  });
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The socket's identity, to tell ours from one a later server put at the same path. */
function identity(path: string): string | undefined {
  try {
    const st = lstatSync(path);
    return st.isSocket() ? `${st.dev}:${st.ino}` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Serves until idle. The socket is bound under a fresh name and renamed into place, so a client never
 * connects to a half-made one and two servers started at once leave one path, to the later (the other
 * sees its socket gone and exits).
 */
export async function warmServerCommand(env: Record<string, string | undefined>): Promise<void> {
  const path = warmSocketPath(env);
  const uid = process.getuid?.() ?? 0;
  if (!path || !makePrivateDir(dirname(path), uid)) return;
  const idleSeconds = Number(env.SBX_WARM_IDLE_SECONDS ?? DEFAULT_IDLE_SECONDS);
  const idleMs = (Number.isFinite(idleSeconds) && idleSeconds > 0 ? idleSeconds : DEFAULT_IDLE_SECONDS) * 1000;
  process.chdir('/');
  const state: ServerState = {
    node: realpathSync(process.execPath),
    dir: dirname(path),
    log: (line) => {
      if (!process.stdout.destroyed) process.stdout.write(`sbx warm-server: ${line}\n`);
    },
    active: 0,
    lastCallMs: Date.now(),
  };
  const server = createServer((conn) => serve(conn, state));
  // Shorter than the final name, so it fits wherever that does.
  const fresh = join(dirname(path), `.warm-${process.pid}.sock`);
  rmSync(fresh, { force: true });
  await listen(server, fresh);
  try {
    renameSync(fresh, path);
  } catch (error) {
    server.close();
    rmSync(fresh, { force: true });
    throw error;
  }
  const ours = identity(path);
  process.stdout.write(`sbx warm-server: listening on ${path}\n`);
  // Its stdout only says why a run was declined: a reader gone (`sbx warm-server | head -1`) ends that,
  // not the server (main.ts exits on EPIPE for every other command).
  process.stdout.removeAllListeners('error');
  process.stdout.on('error', () => {});
  await new Promise<void>((resolve) => {
    const shutDown = () => {
      clearInterval(check);
      process.off('SIGTERM', shutDown);
      process.off('SIGINT', shutDown);
      server.close(() => resolve());
      if (identity(path) === ours) rmSync(path, { force: true });
    };
    const check = setInterval(
      () => {
        if (identity(path) === ours && (state.active > 0 || Date.now() - state.lastCallMs < idleMs)) return;
        shutDown();
      },
      Math.min(idleMs / 4, 30_000),
    );
    process.on('SIGTERM', shutDown);
    process.on('SIGINT', shutDown);
  });
}
