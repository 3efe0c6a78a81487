// The filter's socket (src/ssh-agent/host/filter-server.ts) in front of a real ssh-agent, spoken to
// byte by byte as a hostile sandbox would: a signature request with a key not listed, requests that
// would change the agent, malformed and oversized frames, pipelined requests, too many connections.
// Each refusal beside its control: the same bytes sent to the agent itself are obeyed.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentMessageType,
  lengthPrefixed,
  parseIdentities,
  SSH_AGENT_SESSION_SUBDIR,
  SSH_AGENT_SOCKET_NAME,
} from '../../../src/ssh-agent/ssh-agent.js';
import { type SshAgentFilter, startSshAgentFilter } from '../../../src/ssh-agent/host/filter-server.js';
import { SKIP_INTEGRATION } from '../../helpers/sbx-cli.js';
import { type Agent, makeKey, missingTools, startAgent, type TestKey } from './harness.js';

const skipReason = missingTools(['ssh-agent', 'ssh-add', 'ssh-keygen']);

let dir: string;
let agent: Agent;
let allowed: TestKey;
let other: TestKey;
let filter: SshAgentFilter;
let filterSocket: string;

/** The wire blob of a public key file (its second field, base64). */
function blobOf(key: TestKey): Uint8Array {
  return new Uint8Array(Buffer.from(readFileSync(key.pub, 'utf8').split(' ')[1]!, 'base64'));
}

function signRequest(blob: Uint8Array): Uint8Array {
  const flags = new Uint8Array(4);
  return Buffer.concat([Uint8Array.of(13), lengthPrefixed(blob), lengthPrefixed(Buffer.from('data')), flags]);
}

/** A connection that collects what it receives and says when the peer closed it. */
function connect(path: string): Promise<{ socket: Socket; received: () => Buffer; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    let data = Buffer.alloc(0);
    socket.on('data', (c: Buffer) => (data = Buffer.concat([data, c])));
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.once('error', () => {});
    socket.once('connect', () => resolve({ socket, received: () => data, closed }));
    socket.once('close', () => reject(new Error(`closed before connecting to ${path}`)));
  });
}

/** Sends framed `messages` at once and resolves with the first `count` answers (unframed). */
async function exchange(path: string, messages: Uint8Array[], count = messages.length): Promise<Uint8Array[]> {
  const c = await connect(path);
  c.socket.write(Buffer.concat(messages.map(lengthPrefixed)));
  const answers = await new Promise<Uint8Array[]>((resolve, reject) => {
    const check = () => {
      const out: Uint8Array[] = [];
      let at = 0;
      const data = c.received();
      while (data.length - at >= 4 && data.length - at - 4 >= data.readUInt32BE(at)) {
        out.push(new Uint8Array(data.subarray(at + 4, at + 4 + data.readUInt32BE(at))));
        at += 4 + data.readUInt32BE(at);
      }
      if (out.length >= count) resolve(out);
    };
    c.socket.on('data', check);
    c.closed.then(() => reject(new Error(`closed after ${c.received().length} bytes`)));
  });
  c.socket.destroy();
  return answers;
}

describe.skipIf(SKIP_INTEGRATION)('the ssh-agent filter socket, against a real agent', () => {
  beforeAll(async () => {
    if (skipReason) return;
    dir = mkdtempSync(join(tmpdir(), 'sbx-agent-filter-'));
    allowed = makeKey(dir, 'allowed', 'allowed@sbx-test');
    other = makeKey(dir, 'other', 'other@sbx-test');
    agent = await startAgent(dir);
    expect(agent.add([allowed.file, other.file]).status).toBe(0);
    filter = await startSshAgentFilter({ upstream: agent.socket, selectors: [allowed.comment], sessionDir: dir });
    filterSocket = join(dir, SSH_AGENT_SESSION_SUBDIR, SSH_AGENT_SOCKET_NAME);
  });

  afterAll(async () => {
    await filter?.close();
    agent?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('lives in a private directory of its own', (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    expect(statSync(join(dir, SSH_AGENT_SESSION_SUBDIR)).mode & 0o777).toBe(0o700);
    expect(statSync(filterSocket).isSocket()).toBe(true);
  });

  it('lists the allowed key only', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const [control] = await exchange(agent.socket, [Uint8Array.of(AgentMessageType.REQUEST_IDENTITIES)]);
    expect(parseIdentities(control!)).toHaveLength(2);
    const [answer] = await exchange(filterSocket, [Uint8Array.of(AgentMessageType.REQUEST_IDENTITIES)]);
    expect(parseIdentities(answer!)).toEqual([{ blob: blobOf(allowed), comment: allowed.comment }]);
  });

  it('signs with the allowed key and refuses a key not listed (control: the agent signs with it)', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const [control] = await exchange(agent.socket, [signRequest(blobOf(other))]);
    expect(control![0]).toBe(14);
    const [refused, signed] = await exchange(filterSocket, [signRequest(blobOf(other)), signRequest(blobOf(allowed))]);
    expect(refused).toEqual(Uint8Array.of(AgentMessageType.FAILURE));
    expect(signed![0]).toBe(14);
  });

  it('refuses remove-all, lock and extensions; the agent keeps its keys (control: a spare agent obeys)', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const removeAll = Uint8Array.of(19);
    const lock = Buffer.concat([Uint8Array.of(22), lengthPrefixed(Buffer.from('pw'))]);
    const sessionBind = Buffer.concat([Uint8Array.of(27), lengthPrefixed(Buffer.from('session-bind@openssh.com'))]);
    const spare = await startAgent(dir, 'spare.sock');
    try {
      expect(spare.add([other.file]).status).toBe(0);
      expect(await exchange(spare.socket, [removeAll])).toEqual([Uint8Array.of(6)]);
    } finally {
      spare.stop();
    }
    const answers = await exchange(filterSocket, [removeAll, lock, sessionBind]);
    expect(answers).toEqual([1, 2, 3].map(() => Uint8Array.of(AgentMessageType.FAILURE)));
    expect(agent.add(['-l']).out).toContain(other.fingerprint);
  });

  it('answers pipelined requests in order', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const list = Uint8Array.of(AgentMessageType.REQUEST_IDENTITIES);
    const answers = await exchange(
      filterSocket,
      Array.from({ length: 50 }, (_, i) => (i % 2 ? list : Uint8Array.of(19))),
    );
    expect(answers).toHaveLength(50);
    const expected = answers.map((_, i) => (i % 2 ? AgentMessageType.IDENTITIES_ANSWER : AgentMessageType.FAILURE));
    expect(answers.map((a) => a[0])).toEqual(expected);
  });

  it('closes a connection that announces an oversized or empty frame, or sends a malformed request; others go on', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const oversized = Buffer.alloc(4);
    oversized.writeUInt32BE(256 * 1024 + 1);
    const trailing = Buffer.concat([signRequest(blobOf(allowed)), Uint8Array.of(0)]);
    for (const bytes of [oversized, Buffer.alloc(4), lengthPrefixed(trailing)]) {
      const c = await connect(filterSocket);
      c.socket.write(bytes);
      await c.closed;
      expect(c.received().length).toBe(0);
    }
    const [answer] = await exchange(filterSocket, [Uint8Array.of(AgentMessageType.REQUEST_IDENTITIES)]);
    expect(answer![0]).toBe(AgentMessageType.IDENTITIES_ANSWER);
  });

  it('serves 16 connections at once and closes the 17th on accept', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const open = await Promise.all(Array.from({ length: 16 }, () => connect(filterSocket)));
    // Each of the 16 answered: the server has accepted them all before the next one knocks.
    await Promise.all(
      open.map(
        (c) =>
          new Promise<void>((resolve) => {
            c.socket.once('data', () => resolve());
            c.socket.write(lengthPrefixed(Uint8Array.of(19)));
          }),
      ),
    );
    const extra = await connect(filterSocket);
    extra.socket.write(lengthPrefixed(Uint8Array.of(AgentMessageType.REQUEST_IDENTITIES)));
    await extra.closed;
    expect(extra.received().length).toBe(0);
    for (const c of open) c.socket.destroy();
    await Promise.all(open.map((c) => c.closed));
  });

  it('close() ends its connections and removes the socket and its directory', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const sessionDir = mkdtempSync(join(dir, 'session-'));
    const second = await startSshAgentFilter({ upstream: agent.socket, selectors: [other.fingerprint], sessionDir });
    const c = await connect(join(sessionDir, SSH_AGENT_SESSION_SUBDIR, SSH_AGENT_SOCKET_NAME));
    await Promise.all([second.close(), second.close(), c.closed]);
    expect(readdirSync(sessionDir)).toEqual([]);
  });
});
