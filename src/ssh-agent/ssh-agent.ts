// The ssh-agent filter's decisions (profile `ssh_agent`), pure: which requests from the sandbox reach
// the caller's agent, and what the sandbox is told. The runtime (ssh-agent/host/) owns the sockets
// and hands every message here as bytes. Wire format: draft-miller-ssh-agent, section 3: a uint32
// length, then the message (a type byte and its contents); strings are a uint32 length and bytes.
import { SbxError } from '../errors.js';

/** Where the agent's directory and socket appear inside the sandbox (the root is otherwise empty there). */
export const SSH_AGENT_SANDBOX_DIR = '/run/sbx/ssh-agent';
export const SSH_AGENT_SANDBOX_SOCKET = `${SSH_AGENT_SANDBOX_DIR}/agent.sock`;
/** The session directory's subdirectory holding the socket alone: only it is mounted. */
export const SSH_AGENT_SESSION_SUBDIR = 'ssh-agent';
export const SSH_AGENT_SOCKET_NAME = 'agent.sock';

/**
 * Past this a message is refused and its connection closed. OpenSSH's agent caps messages at 256 KiB
 * (AGENT_MAX_LEN in ssh-agent.c); a signature request is a few KiB.
 */
export const AGENT_MAX_MESSAGE_BYTES = 256 * 1024;

/** The message types the filter knows (draft-miller-ssh-agent, section 5.1). Everything else is refused. */
export const AgentMessageType = {
  FAILURE: 5,
  REQUEST_IDENTITIES: 11,
  IDENTITIES_ANSWER: 12,
  SIGN_REQUEST: 13,
} as const;

/** SSH_AGENT_FAILURE as a whole frame: the answer to everything the filter refuses. */
export const AGENT_FAILURE_FRAME: Uint8Array = Uint8Array.of(0, 0, 0, 1, AgentMessageType.FAILURE);

export interface AgentKey {
  /** The public key blob (the wire form of the key): what the filter compares. */
  blob: Uint8Array;
  comment: string;
}

/** A key as the runtime lists it at start, with its `SHA256:` fingerprint (computed there). */
export interface ListedKey extends AgentKey {
  fingerprint: string;
}

/** A blob as a set key: two keys are the same key when their blobs are equal byte for byte. */
export function keyId(blob: Uint8Array): string {
  return Buffer.from(blob).toString('base64');
}

/** A uint32 length, then the bytes: a message's frame, and a string on the wire. */
export function lengthPrefixed(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + bytes.length);
  new DataView(out.buffer).setUint32(0, bytes.length);
  out.set(bytes, 4);
  return out;
}

/**
 * The complete messages at the front of a stream, and the bytes of the next one so far; `malformed`
 * when a frame is empty or announces more than AGENT_MAX_MESSAGE_BYTES (the connection is closed:
 * waiting for 4 GiB is how a peer would exhaust sbx's memory).
 */
export function splitFrames(
  buffered: Uint8Array,
): { messages: Uint8Array[]; rest: Uint8Array } | { malformed: string } {
  const messages: Uint8Array[] = [];
  let at = 0;
  while (buffered.length - at >= 4) {
    const length = new DataView(buffered.buffer, buffered.byteOffset + at, 4).getUint32(0);
    if (length === 0) return { malformed: 'an empty message' };
    if (length > AGENT_MAX_MESSAGE_BYTES)
      return { malformed: `a message of ${length} bytes (more than ${AGENT_MAX_MESSAGE_BYTES})` };
    if (buffered.length - at - 4 < length) break;
    messages.push(buffered.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return { messages, rest: buffered.subarray(at) };
}

/** Reads the wire's uint32 and string fields in order; any read past the end makes `ok` false. */
class Reader {
  private at = 0;
  ok = true;
  constructor(private readonly bytes: Uint8Array) {}

  uint32(): number {
    if (this.bytes.length - this.at < 4) {
      this.ok = false;
      return 0;
    }
    const value = new DataView(this.bytes.buffer, this.bytes.byteOffset + this.at, 4).getUint32(0);
    this.at += 4;
    return value;
  }

  string(): Uint8Array {
    const length = this.uint32();
    if (!this.ok || this.bytes.length - this.at < length) {
      this.ok = false;
      return new Uint8Array(0);
    }
    const value = this.bytes.subarray(this.at, this.at + length);
    this.at += length;
    return value;
  }

  /** Whether every field read was there and nothing follows them. */
  done(): boolean {
    return this.ok && this.at === this.bytes.length;
  }
}

/**
 * What the filter does with one message from the sandbox: `list` asks the agent for its keys (the
 * answer is filtered), `sign` forwards the message unchanged (its key is an allowed one), `refuse`
 * answers SSH_AGENT_FAILURE without asking the agent, `malformed` closes the connection.
 */
export type AgentVerdict =
  | { kind: 'list' }
  | { kind: 'sign' }
  | { kind: 'refuse'; reason: string }
  | { kind: 'malformed'; reason: string };

export function judgeRequest(message: Uint8Array, allowed: ReadonlySet<string>): AgentVerdict {
  const type = message[0];
  if (type === AgentMessageType.REQUEST_IDENTITIES) {
    return message.length === 1 ? { kind: 'list' } : { kind: 'malformed', reason: 'a key list request with contents' };
  }
  if (type === AgentMessageType.SIGN_REQUEST) {
    // Parsed whole, trailing bytes refused: the agent then reads the very key the filter checked.
    const r = new Reader(message.subarray(1));
    const blob = r.string();
    r.string();
    r.uint32();
    if (!r.done()) return { kind: 'malformed', reason: 'a signature request that does not parse' };
    return allowed.has(keyId(blob))
      ? { kind: 'sign' }
      : { kind: 'refuse', reason: 'a signature with a key not listed' };
  }
  // Adding, removing and locking keys, smartcards, extensions (session-bind@openssh.com included:
  // ssh carries on without it), and the protocol 1 messages: the sandbox changes nothing in the agent.
  return { kind: 'refuse', reason: `message type ${type}` };
}

/** The keys of an SSH_AGENT_IDENTITIES_ANSWER; undefined for any other message or one that does not parse. */
export function parseIdentities(message: Uint8Array): AgentKey[] | undefined {
  if (message[0] !== AgentMessageType.IDENTITIES_ANSWER) return undefined;
  const r = new Reader(message.subarray(1));
  const count = r.uint32();
  const keys: AgentKey[] = [];
  // Each key takes at least 8 bytes: a count past that is a lie, not an allocation to make.
  if (count > message.length / 8) return undefined;
  for (let i = 0; i < count && r.ok; i++) {
    const blob = r.string();
    const comment = new TextDecoder().decode(r.string());
    keys.push({ blob, comment });
  }
  return r.done() ? keys : undefined;
}

export function encodeIdentities(keys: readonly AgentKey[]): Uint8Array {
  const parts = keys.flatMap((k) => [lengthPrefixed(k.blob), lengthPrefixed(new TextEncoder().encode(k.comment))]);
  const count = new Uint8Array(4);
  new DataView(count.buffer).setUint32(0, keys.length);
  const out = Buffer.concat([Uint8Array.of(AgentMessageType.IDENTITIES_ANSWER), count, ...parts]);
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

/** The agent's answer to a key list, narrowed to the allowed keys; a failure when it is not a key list. */
export function filterIdentities(answer: Uint8Array, allowed: ReadonlySet<string>): Uint8Array {
  const keys = parseIdentities(answer);
  if (!keys) return Uint8Array.of(AgentMessageType.FAILURE);
  return encodeIdentities(keys.filter((k) => allowed.has(keyId(k.blob))));
}

/**
 * The profile's selectors against the agent's keys at start: each names exactly one key, by
 * fingerprint or by comment. A selector naming none, or a comment naming several, refuses the run:
 * offering a key the user did not mean (or none they did) is decided here, never at first use.
 */
export function selectKeys(listed: readonly ListedKey[], selectors: readonly string[]): AgentKey[] {
  const chosen = new Map<string, AgentKey>();
  for (const selector of selectors) {
    const matches = listed.filter((k) =>
      selector.startsWith('SHA256:') ? k.fingerprint === selector : k.comment === selector,
    );
    if (matches.length === 0) {
      throw new SbxError('SSH_AGENT_KEY', `ssh_agent.keys: your ssh-agent holds no key "${selector}"`, {
        hint: 'add it with `ssh-add KEYFILE`, or name one that `ssh-add -l` lists (its SHA256: fingerprint or comment)',
      });
    }
    const ids = new Set(matches.map((k) => keyId(k.blob)));
    if (ids.size > 1) {
      const prints = matches.map((k) => k.fingerprint).join(', ');
      throw new SbxError('SSH_AGENT_KEY', `ssh_agent.keys: "${selector}" is the comment of ${ids.size} keys`, {
        hint: `name the one you mean by its fingerprint: ${prints}`,
      });
    }
    chosen.set(keyId(matches[0]!.blob), matches[0]!);
  }
  return [...chosen.values()];
}
