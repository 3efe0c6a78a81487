// sbx as a client of the caller's own ssh-agent: one request on a connection of its own, one answer.
// The agent is the caller's (their SSH_AUTH_SOCK, read once at the door); only the filter
// (filter-server.ts) and the start of a run talk to it, never the sandbox.
import { createHash } from 'node:crypto';
import { createConnection } from 'node:net';
import { SbxError } from '../../errors.js';
import { AgentMessageType, type ListedKey, lengthPrefixed, parseIdentities, splitFrames } from '../ssh-agent.js';

/**
 * Sends `message` to the agent at `socketPath` and resolves with its answer (a message, unframed).
 * Rejects when the agent cannot be reached, closes early, or answers more than a bounded frame; a
 * fired `signal` (the sandbox hung up) ends the connection. No timeout of its own: an agent may wait
 * for the user to confirm a signature (`ssh-add -c`).
 */
export function askAgent(socketPath: string, message: Uint8Array, signal?: AbortSignal): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    let buffered = Buffer.alloc(0);
    const fail = (why: string) => {
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      reject(new Error(why));
    };
    const onAbort = () => fail(`no answer: ${(signal?.reason as Error | undefined)?.message ?? 'withdrawn'}`);
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => socket.write(lengthPrefixed(message)));
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const split = splitFrames(buffered);
      if ('malformed' in split) return fail(`the agent answered ${split.malformed}`);
      const answer = split.messages[0];
      if (answer === undefined) return;
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(answer);
    });
    socket.once('error', (error) => fail(error.message));
    socket.once('close', () => fail('the agent closed the connection without an answer'));
  });
}

/** What `ssh-keygen -lf` and `ssh-add -l` print: SHA256: and the unpadded base64 of the blob's hash. */
export function fingerprintOf(blob: Uint8Array): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** How long the start of a run waits for the agent's key list: a wedged agent refuses the run, not hangs it. */
const LIST_TIMEOUT_MS = 10_000;

/** The agent's keys with their fingerprints, or SSH_AGENT_UNAVAILABLE naming the socket and why. */
export async function listAgentKeys(socketPath: string): Promise<ListedKey[]> {
  const unavailable = (why: string, cause?: unknown) =>
    new SbxError('SSH_AGENT_UNAVAILABLE', `ssh_agent: your ssh-agent at ${socketPath} ${why}`, {
      hint: 'start one (`eval "$(ssh-agent)"`) and `ssh-add` your key, then check with `ssh-add -l`',
      cause,
    });
  let answer: Uint8Array;
  try {
    const request = Uint8Array.of(AgentMessageType.REQUEST_IDENTITIES);
    answer = await askAgent(socketPath, request, AbortSignal.timeout(LIST_TIMEOUT_MS));
  } catch (cause) {
    throw unavailable(`cannot be asked for its keys: ${(cause as Error).message}`, cause);
  }
  const keys = parseIdentities(answer);
  // A locked agent answers an empty list; one that refuses (a failure message) is no agent to filter.
  if (!keys) throw unavailable('did not answer with a key list');
  return keys.map((k) => ({ ...k, fingerprint: fingerprintOf(k.blob) }));
}
