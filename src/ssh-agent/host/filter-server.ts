// The sandbox's ssh-agent (profile `ssh_agent`): a unix socket in its own subdirectory of the session
// directory, bound read-only into the sandbox, that answers the agent protocol with only the keys
// the profile names. Every decision is src/ssh-agent/ssh-agent.ts's; this file owns the sockets. The
// caller's agent is asked a question per request, on a connection of its own, and only for a key
// list or a signature with an allowed key: nothing else the sandbox sends ever reaches it.
import { mkdirSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { SbxError } from '../../errors.js';
import {
  AGENT_FAILURE_FRAME,
  filterIdentities,
  judgeRequest,
  keyId,
  lengthPrefixed,
  SSH_AGENT_SESSION_SUBDIR,
  SSH_AGENT_SOCKET_NAME,
  selectKeys,
  splitFrames,
} from '../ssh-agent.js';
import { askAgent, listAgentKeys } from './agent-client.js';

/**
 * Sandbox connections served at once; more are closed on accept. Each costs sbx a descriptor, and two
 * while a request is with the agent: the sandbox must not exhaust them. ssh uses one.
 */
const MAX_CONNECTIONS = 16;
// sockaddr_un.sun_path is 108 bytes including the terminating NUL (unix(7)).
const MAX_SOCKET_PATH = 107;

export interface SshAgentFilterOptions {
  /** The caller's agent socket (their SSH_AUTH_SOCK). */
  upstream: string;
  /** The profile's `ssh_agent.keys`, as written (fingerprints or comments). */
  selectors: readonly string[];
  /** The run's session directory: the socket goes in a subdirectory of its own. */
  sessionDir: string;
}

export interface SshAgentFilter {
  /** Ends every connection, stops listening, removes the socket and its directory. Idempotent. */
  close(): Promise<void>;
}

/** One sandbox connection: its requests answered one at a time, in order, reading paused meanwhile. */
function serve(socket: Socket, upstream: string, allowed: ReadonlySet<string>): void {
  let buffered = Buffer.alloc(0);
  let busy = false;
  // The request with the agent, withdrawn if the sandbox hangs up.
  const hangUp = new AbortController();
  socket.once('close', () => hangUp.abort());
  socket.on('error', () => socket.destroy());

  const answer = async (message: Uint8Array): Promise<Uint8Array | undefined> => {
    const verdict = judgeRequest(message, allowed);
    switch (verdict.kind) {
      case 'malformed':
        return undefined;
      case 'refuse':
        return AGENT_FAILURE_FRAME;
      case 'list':
      case 'sign': {
        const reply = await askAgent(upstream, message, hangUp.signal).catch(() => undefined);
        if (reply === undefined) return AGENT_FAILURE_FRAME;
        return lengthPrefixed(verdict.kind === 'list' ? filterIdentities(reply, allowed) : reply);
      }
    }
  };

  const pump = async (): Promise<void> => {
    if (busy) return;
    const split = splitFrames(buffered);
    if ('malformed' in split) return void socket.destroy();
    const [message] = split.messages;
    if (message === undefined) return;
    busy = true;
    // Paused while the agent is asked: a sandbox pipelining requests cannot make sbx buffer them.
    socket.pause();
    buffered = buffered.subarray(4 + message.length);
    const reply = await answer(message);
    if (reply === undefined) return void socket.destroy();
    if (socket.destroyed) return;
    // A sandbox that sends but never reads gets no further answers queued in sbx's memory.
    if (!socket.write(reply))
      await new Promise((resolve) => {
        socket.once('drain', resolve);
        socket.once('close', resolve);
      });
    if (socket.destroyed) return;
    busy = false;
    socket.resume();
    await pump();
  };

  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    void pump();
  });
}

/**
 * Resolves the profile's keys against the caller's agent (SSH_AGENT_UNAVAILABLE, SSH_AGENT_KEY) and
 * listens: the socket is there before the sandbox starts.
 */
export async function startSshAgentFilter(opts: SshAgentFilterOptions): Promise<SshAgentFilter> {
  const keys = selectKeys(await listAgentKeys(opts.upstream), opts.selectors);
  const allowed = new Set(keys.map((k) => keyId(k.blob)));
  const dir = join(opts.sessionDir, SSH_AGENT_SESSION_SUBDIR);
  const path = join(dir, SSH_AGENT_SOCKET_NAME);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
    throw new SbxError('SANDBOX_SETUP', `the ssh-agent socket path is longer than ${MAX_SOCKET_PATH} bytes: ${path}`, {
      hint: 'set XDG_RUNTIME_DIR to a shorter directory',
    });
  }
  const connections = new Set<Socket>();
  const server = createServer((socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
    serve(socket, opts.upstream, allowed);
  });
  server.maxConnections = MAX_CONNECTIONS;
  try {
    // Private like the session directory above it: only this run's sandbox (same uid) connects.
    mkdirSync(dir, { mode: 0o700 });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => resolve());
    });
  } catch (cause) {
    server.close();
    rmSync(dir, { recursive: true, force: true });
    throw new SbxError('SANDBOX_SETUP', `cannot listen on the ssh-agent socket ${path}: ${(cause as Error).message}`, {
      cause,
      hint: 'the session directory must be writable',
    });
  }
  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of connections) socket.destroy();
      }).then(() => rmSync(dir, { recursive: true, force: true }));
      return closing;
    },
  };
}
