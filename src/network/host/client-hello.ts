// Reads the server name (SNI) out of the first bytes a client sends through a CONNECT tunnel, so the
// proxy can refuse a tunnel opened to an allowed host whose TLS session names another one (domain
// fronting through a shared CDN front). Pure and bounds-checked: the input is attacker-controlled,
// every length is checked against what is left before it is used, and no input makes it throw.
// Formats: RFC 8446 §5.1 (records), §4.1.2 (ClientHello), RFC 6066 §3 (server_name).

export type ClientHelloResult =
  /** Not enough bytes yet: call again with more. */
  | { kind: 'incomplete' }
  /** The stream does not start with a TLS handshake record: some other protocol. */
  | { kind: 'not-tls' }
  /** TLS, but not a well-formed ClientHello within the size cap. */
  | { kind: 'malformed'; reason: string }
  /** serverName undefined: the client sent no host_name (IP-literal targets, old clients). */
  | { kind: 'client-hello'; serverName: string | undefined };

/** A ClientHello is a few hundred bytes to a few KiB (post-quantum key shares); 16 KiB is generous. */
export const CLIENT_HELLO_MAX_BYTES = 16 * 1024;

const RECORD_HANDSHAKE = 0x16;
const HANDSHAKE_CLIENT_HELLO = 0x01;
const EXT_SERVER_NAME = 0x0000;
const NAME_TYPE_HOST = 0x00;
const MAX_RECORD_PAYLOAD = 1 << 14;

class Malformed extends Error {}

/** A cursor that refuses to read past its end. */
function cursor(buf: Uint8Array) {
  let pos = 0;
  const need = (n: number): void => {
    if (n > buf.length - pos) throw new Malformed('truncated ClientHello');
  };
  return {
    get left(): number {
      return buf.length - pos;
    },
    u8(): number {
      need(1);
      return buf[pos++] as number;
    },
    u16(): number {
      need(2);
      const v = ((buf[pos] as number) << 8) | (buf[pos + 1] as number);
      pos += 2;
      return v;
    },
    bytes(n: number): Uint8Array {
      need(n);
      const out = buf.subarray(pos, pos + n);
      pos += n;
      return out;
    },
  };
}

/**
 * Parse the start of a client's byte stream. `maxBytes` caps the bytes looked at: a ClientHello
 * not complete within it is malformed (the proxy never buffers more than that per connection).
 */
export function parseClientHello(data: Uint8Array, maxBytes = CLIENT_HELLO_MAX_BYTES): ClientHelloResult {
  if (data.length === 0) return { kind: 'incomplete' };
  if (data[0] !== RECORD_HANDSHAKE) return { kind: 'not-tls' };
  if (data.length >= 2 && data[1] !== 0x03) return { kind: 'not-tls' };
  try {
    return parseRecords(data.subarray(0, maxBytes), maxBytes, data.length > maxBytes);
  } catch (e) {
    if (e instanceof Malformed) return { kind: 'malformed', reason: e.message };
    throw e;
  }
}

// A ClientHello may be fragmented over several handshake records (RFC 8446 §5.1); reassemble the
// fragments until the handshake message's own length is reached.
function parseRecords(data: Uint8Array, maxBytes: number, capped: boolean): ClientHelloResult {
  const fragments: Uint8Array[] = [];
  let collected = 0;
  let offset = 0;
  while (data.length - offset >= 5) {
    if (data[offset] !== RECORD_HANDSHAKE) throw new Malformed('non-handshake record inside the ClientHello');
    if (data[offset + 1] !== 0x03) throw new Malformed('bad record version');
    const length = ((data[offset + 3] as number) << 8) | (data[offset + 4] as number);
    if (length === 0 || length > MAX_RECORD_PAYLOAD) throw new Malformed('bad record length');
    if (data.length - offset - 5 < length) break;
    fragments.push(data.subarray(offset + 5, offset + 5 + length));
    collected += length;
    offset += 5 + length;
    const message = concat(fragments, collected);
    if (message.length >= 4) {
      if (message[0] !== HANDSHAKE_CLIENT_HELLO) throw new Malformed('first handshake message is not a ClientHello');
      const bodyLength = ((message[1] as number) << 16) | ((message[2] as number) << 8) | (message[3] as number);
      if (bodyLength > maxBytes) throw new Malformed('ClientHello larger than the cap');
      if (message.length - 4 >= bodyLength) return parseBody(message.subarray(4, 4 + bodyLength));
    }
  }
  if (capped) throw new Malformed(`no complete ClientHello within ${maxBytes} bytes`);
  return { kind: 'incomplete' };
}

function concat(parts: Uint8Array[], length: number): Uint8Array {
  if (parts.length === 1) return parts[0] as Uint8Array;
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function parseBody(body: Uint8Array): ClientHelloResult {
  const c = cursor(body);
  c.u16(); // legacy_version
  c.bytes(32); // random
  const sessionId = c.u8();
  if (sessionId > 32) throw new Malformed('session id too long');
  c.bytes(sessionId);
  const suites = c.u16();
  if (suites < 2 || suites % 2 !== 0) throw new Malformed('bad cipher suites');
  c.bytes(suites);
  const compression = c.u8();
  if (compression < 1) throw new Malformed('no compression methods');
  c.bytes(compression);
  if (c.left === 0) return { kind: 'client-hello', serverName: undefined }; // pre-extension hello
  const extensionsLength = c.u16();
  if (extensionsLength !== c.left) throw new Malformed('extensions length mismatch');
  const seen = new Set<number>();
  let serverName: string | undefined;
  while (c.left > 0) {
    const type = c.u16();
    const data = c.bytes(c.u16());
    // Duplicate extensions are illegal (RFC 8446 §4.2) and would let a client show the proxy one
    // name and the server another.
    if (seen.has(type)) throw new Malformed('duplicate extension');
    seen.add(type);
    if (type === EXT_SERVER_NAME) serverName = parseServerName(data);
  }
  return { kind: 'client-hello', serverName };
}

function parseServerName(ext: Uint8Array): string {
  const c = cursor(ext);
  const listLength = c.u16();
  if (listLength !== c.left || listLength === 0) throw new Malformed('bad server_name list');
  let host: string | undefined;
  while (c.left > 0) {
    const type = c.u8();
    const name = c.bytes(c.u16());
    if (type !== NAME_TYPE_HOST) continue;
    if (host !== undefined) throw new Malformed('more than one host_name'); // RFC 6066 §3
    if (name.length === 0 || name.length > 255 || name.some((b) => b <= 0x20 || b >= 0x7f))
      throw new Malformed('bad host_name');
    host = Array.from(name, (b) => String.fromCharCode(b)).join('');
  }
  if (host === undefined) throw new Malformed('server_name without a host_name');
  return host;
}
