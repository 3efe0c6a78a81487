// The cleartext HTTP/1.x a tunnel carries, checked request by request against the tunnel's name
// (docs/DESIGN.md, "Plaintext in a tunnel"). Pure: fed the client's bytes, it says which may go on.
//
// Why: a tunnel is decided, resolved and dialled for one name, but a server at that address (a shared
// front, a CDN) picks the site from each request's Host. A CONNECT to an allowed name followed by
// `Host: other.test` would have the front serve a host no rule allowed; TLS has the SNI check for
// that (network/host/tunnel.ts), cleartext has this one.
//
// Every request of a keep-alive connection is checked, not only the first: request bodies are framed
// as a server frames them (RFC 9112 §6: Content-Length, or chunked), so the checker always knows where
// the next head starts. Whatever a server might frame differently is refused rather than guessed at:
// Content-Length beside Transfer-Encoding, a coding other than exactly `chunked`, several lengths,
// bare CR or LF, obs-fold, whitespace before a colon, an HTTP version other than 1.0 and 1.1. What
// cannot be checked at all is refused too: CONNECT and HTTP/2 prior knowledge inside the tunnel, and
// every Upgrade but WebSocket and h2c. An `Upgrade: h2c` offer (Java's HttpClient sends one with every
// cleartext request) is taken out of the head instead: a server that was not offered the upgrade
// answers in HTTP/1.1, which every such client accepts (RFC 9113 §3.1 retired h2c anyway), and
// the connection stays checkable. After a WebSocket upgrade the next bytes decide:
// another request head is checked (the server declined), anything else is the frames (unchecked).
// A stream whose first bytes are not an HTTP request line (SSH, a database protocol, SMTP's client
// lines) is not HTTP and passes unchecked, as before.
import { normaliseHost } from './egress.js';

/** A request head larger than this is refused (node:http's default limit is 16 KiB). */
export const MAX_REQUEST_HEAD_BYTES = 16 * 1024;
/** A chunk-size line or trailer section larger than this is refused. */
const MAX_CHUNK_LINE_BYTES = 4096;
const MAX_METHOD_BYTES = 24;

/** The tunnel's destination: `host` in normal form (egress.ts normaliseHost). */
export interface TunnelName {
  host: string;
  port: number;
}

/** What the client's next bytes come to: bytes to send on now, or a refusal (nothing more is sent). */
export type CheckStep = { kind: 'forward'; bytes: Buffer[] } | { kind: 'refuse'; detail: string; first: boolean };

export interface RequestChecker {
  push(chunk: Buffer): CheckStep;
}

/** `authority` (`host[:port]`, `[v6][:port]`) names `target`; an authority without a port means `defaultPort`. */
export function isSameAuthority(authority: string, target: TunnelName, defaultPort: number): boolean {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::([0-9]{1,5}))?$/.exec(authority);
  return !!m && normaliseHost(m[1] as string) === target.host && Number(m[2] ?? defaultPort) === target.port;
}

type Framing = { kind: 'none' } | { kind: 'length'; bytes: number } | { kind: 'chunked' };

interface RequestHead {
  method: string;
  target: string;
  version: string;
  /** Field names lower-cased, values trimmed, in order. */
  fields: [string, string][];
  /** Each field's line as sent (without its CRLF), beside `fields`. */
  lines: Buffer[];
  /** Where the request line ends (after its CRLF). */
  lineEnd: number;
  length: number;
}

type HeadParse =
  | { kind: 'incomplete' }
  | { kind: 'not-http' }
  | { kind: 'malformed'; reason: string }
  | { kind: 'head'; head: RequestHead };

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;

/** RFC 9110 §5.6.2 tchar: the bytes of a method or a field name. */
const TCHARS: ReadonlySet<number> = new Set(
  Buffer.from("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 'latin1'),
);

function isTchar(b: number): boolean {
  return TCHARS.has(b);
}

/** A byte a request target may hold: visible ASCII and obs-text, never SP or a control. */
function isTargetByte(b: number): boolean {
  return b > SP && b !== 0x7f;
}

/**
 * The request line, read as far as the bytes go. `not-http` as soon as a byte shows it is some other
 * protocol's line, so a client that sends one short line and waits (SMTP, Redis) is not held.
 */
function parseRequestLine(
  bytes: Buffer,
):
  | { kind: 'incomplete' }
  | { kind: 'not-http' }
  | { kind: 'malformed'; reason: string }
  | { kind: 'line'; method: string; target: string; version: string; end: number } {
  let i = 0;
  // Servers skip empty lines before a request line (RFC 9112 §2.2): so does the check, or a leading
  // CRLF would make a request look like some other protocol and pass unchecked.
  while (i < bytes.length && (bytes[i] === CR || bytes[i] === LF)) i++;
  const methodStart = i;
  while (i < bytes.length && isTchar(bytes[i] as number)) i++;
  const methodLength = i - methodStart;
  if (i === bytes.length) return methodLength > MAX_METHOD_BYTES ? { kind: 'not-http' } : { kind: 'incomplete' };
  if (methodLength === 0 || methodLength > MAX_METHOD_BYTES || bytes[i] !== SP) return { kind: 'not-http' };
  const method = bytes.toString('latin1', methodStart, i);
  const targetStart = ++i;
  while (i < bytes.length && isTargetByte(bytes[i] as number)) i++;
  if (i === bytes.length) return { kind: 'incomplete' };
  if (i === targetStart || bytes[i] !== SP) return { kind: 'not-http' };
  const target = bytes.toString('latin1', targetStart, i);
  const versionStart = ++i;
  const expected = 'HTTP/';
  for (let k = 0; k < expected.length; k++, i++) {
    if (i === bytes.length) return { kind: 'incomplete' };
    if (bytes[i] !== expected.charCodeAt(k)) return { kind: 'not-http' };
  }
  while (i < bytes.length && bytes[i] !== CR && bytes[i] !== LF) i++;
  if (i + 1 >= bytes.length) return { kind: 'incomplete' };
  if (bytes[i] !== CR || bytes[i + 1] !== LF) return { kind: 'malformed', reason: 'a bare LF ends the request line' };
  const version = bytes.toString('latin1', versionStart + expected.length, i);
  return { kind: 'line', method, target, version, end: i + 2 };
}

/** One header field line (without its CRLF): `name: value`, strictly (RFC 9112 §5). */
function parseField(line: Buffer): [string, string] | { reason: string } {
  if (line[0] === SP || line[0] === HTAB) return { reason: 'a folded header line (obs-fold)' };
  let i = 0;
  while (i < line.length && isTchar(line[i] as number)) i++;
  if (i === 0 || line[i] !== 0x3a) return { reason: 'a header line without a name and a colon' };
  for (let k = i + 1; k < line.length; k++) {
    const b = line[k] as number;
    if ((b < SP && b !== HTAB) || b === 0x7f) return { reason: 'a control character in a header value' };
  }
  return [line.toString('latin1', 0, i).toLowerCase(), line.toString('latin1', i + 1).replace(/^[ \t]+|[ \t]+$/g, '')];
}

function parseHead(bytes: Buffer): HeadParse {
  const line = parseRequestLine(bytes);
  if (line.kind !== 'line') return line;
  const fields: [string, string][] = [];
  const lines: Buffer[] = [];
  let at = line.end;
  for (;;) {
    const lf = bytes.indexOf(LF, at);
    if (lf < 0) return { kind: 'incomplete' };
    if (lf === at || bytes[lf - 1] !== CR) return { kind: 'malformed', reason: 'a bare LF in the request head' };
    const content = bytes.subarray(at, lf - 1);
    if (content.includes(CR)) return { kind: 'malformed', reason: 'a bare CR in the request head' };
    at = lf + 1;
    if (content.length === 0) break;
    const field = parseField(content);
    if (!Array.isArray(field)) return { kind: 'malformed', reason: field.reason };
    fields.push(field);
    lines.push(content);
  }
  return {
    kind: 'head',
    head: {
      method: line.method,
      target: line.target,
      version: line.version,
      fields,
      lines,
      lineEnd: line.end,
      length: at,
    },
  };
}

function valuesOf(head: RequestHead, name: string): string[] {
  return head.fields.filter(([n]) => n === name).map(([, v]) => v);
}

/** The request offers exactly one upgrade, to cleartext HTTP/2. */
function offersH2cOnly(head: RequestHead): boolean {
  const upgrade = valuesOf(head, 'upgrade');
  return upgrade.length === 1 && (upgrade[0] as string).toLowerCase() === 'h2c';
}

/**
 * The head without its h2c offer: no Upgrade or HTTP2-Settings line, and neither token left in
 * Connection (a Connection line with nothing else left goes too). Every other line is sent as it came.
 */
function withoutH2cOffer(head: RequestHead, bytes: Buffer): Buffer {
  const CRLF = Buffer.from('\r\n', 'latin1');
  const out: Buffer[] = [bytes.subarray(0, head.lineEnd)];
  head.fields.forEach(([name, value], i) => {
    if (name === 'upgrade' || name === 'http2-settings') return;
    if (name === 'connection') {
      const kept = value
        .split(',')
        .map((t) => t.trim())
        .filter((t) => t !== '' && !['upgrade', 'http2-settings'].includes(t.toLowerCase()));
      if (kept.length > 0) out.push(Buffer.from(`Connection: ${kept.join(', ')}`, 'latin1'), CRLF);
      return;
    }
    out.push(head.lines[i] as Buffer, CRLF);
  });
  out.push(CRLF);
  return Buffer.concat(out);
}

/** The body framing of a request (RFC 9112 §6.3), or why a server could frame it differently. */
function framingOf(head: RequestHead): Framing | { reason: string } {
  const codings = valuesOf(head, 'transfer-encoding');
  const lengths = valuesOf(head, 'content-length');
  if (codings.length > 0) {
    if (lengths.length > 0) return { reason: 'both Content-Length and Transfer-Encoding' };
    if (head.version !== '1.1') return { reason: 'Transfer-Encoding in an HTTP/1.0 request' };
    if (codings.length !== 1 || (codings[0] as string).toLowerCase() !== 'chunked')
      return { reason: 'a Transfer-Encoding other than chunked alone' };
    return { kind: 'chunked' };
  }
  if (lengths.length === 0) return { kind: 'none' };
  if (lengths.length !== 1 || !/^[0-9]{1,15}$/.test(lengths[0] as string))
    return { reason: 'a Content-Length that is not one decimal number' };
  return { kind: 'length', bytes: Number(lengths[0]) };
}

/** Whether the request is for the tunnel's name; why not when it is not. Returns undefined when it is. */
function refusalOf(head: RequestHead, tunnel: TunnelName): string | undefined {
  const shown = `${tunnel.host}:${tunnel.port}`;
  if (head.version !== '1.1' && head.version !== '1.0') return `HTTP/${head.version} cannot be checked in a tunnel`;
  if (head.method === 'PRI') return 'cleartext HTTP/2 (prior knowledge) cannot be checked in a tunnel';
  if (head.method === 'CONNECT') return `a CONNECT inside the tunnel to ${shown}`;
  const upgrade = valuesOf(head, 'upgrade');
  if (!offersH2cOnly(head) && upgrade.some((u) => u.toLowerCase() !== 'websocket'))
    return 'an Upgrade other than websocket (TLS, several protocols) cannot be checked in a tunnel';
  const hosts = valuesOf(head, 'host');
  if (hosts.length > 1) return 'more than one Host header';
  const absolute = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/(?:[^@/?#]*@)?([^/?#]*)/.exec(head.target);
  if (absolute) {
    if (!isSameAuthority(absolute[1] as string, tunnel, tunnel.port))
      return `the request URL names another host than the tunnel's ${shown}`;
  } else if (!head.target.startsWith('/') && !(head.target === '*' && head.method === 'OPTIONS')) {
    return 'the request target is neither a path nor an absolute URL';
  }
  const host = hosts[0];
  if (host === undefined) return head.version === '1.1' && !absolute ? 'an HTTP/1.1 request without Host' : undefined;
  if (!isSameAuthority(host, tunnel, tunnel.port)) return `Host header names another host than the tunnel's ${shown}`;
  return undefined;
}

type State =
  /** Reading a request head; `first`: the stream's first bytes; `afterUpgrade`: a WebSocket upgrade was asked. */
  | { kind: 'head'; first: boolean; afterUpgrade: boolean }
  | { kind: 'body'; left: number; upgrade: boolean }
  | { kind: 'chunk-size'; upgrade: boolean }
  | { kind: 'chunk-data'; left: number; upgrade: boolean }
  | { kind: 'chunk-end'; upgrade: boolean }
  | { kind: 'trailers'; upgrade: boolean }
  | { kind: 'opaque' }
  | { kind: 'refused' };

/** The checker of one tunnel's client → destination bytes. */
export function createRequestChecker(tunnel: TunnelName): RequestChecker {
  let state: State = { kind: 'head', first: true, afterUpgrade: false };
  let held: Buffer = Buffer.alloc(0);
  let served = 0;

  const afterBody = (upgrade: boolean): State => ({ kind: 'head', first: false, afterUpgrade: upgrade });

  return {
    push(chunk) {
      const out: Buffer[] = [];
      let data = chunk;
      const refuse = (detail: string): CheckStep => {
        state = { kind: 'refused' };
        held = Buffer.alloc(0);
        return { kind: 'refuse', detail, first: served === 0 };
      };
      /** Append `data` to what is held; the caller takes what it reads and gives back the rest. */
      const hold = (): Buffer => {
        held = held.length === 0 ? data : Buffer.concat([held, data]);
        data = Buffer.alloc(0);
        return held;
      };
      const release = (used: number): void => {
        if (used > 0) out.push(held.subarray(0, used));
        data = held.subarray(used);
        held = Buffer.alloc(0);
      };
      for (;;) {
        switch (state.kind) {
          case 'refused':
            return { kind: 'forward', bytes: [] };
          case 'opaque':
            if (data.length > 0) out.push(data);
            return { kind: 'forward', bytes: out };
          case 'head': {
            if (data.length === 0 && held.length === 0) return { kind: 'forward', bytes: out };
            const bytes = hold();
            const parsed = parseHead(bytes);
            if (parsed.kind === 'incomplete') {
              if (bytes.length > MAX_REQUEST_HEAD_BYTES)
                return refuse(`a request head over ${MAX_REQUEST_HEAD_BYTES} bytes`);
              return { kind: 'forward', bytes: out };
            }
            if (parsed.kind === 'not-http') {
              if (!state.first && !state.afterUpgrade)
                return refuse('bytes that are not an HTTP request after a request in the tunnel');
              state = { kind: 'opaque' };
              release(0);
              continue;
            }
            if (parsed.kind === 'malformed') return refuse(`a malformed request head (${parsed.reason})`);
            const refused = refusalOf(parsed.head, tunnel);
            if (refused !== undefined) return refuse(refused);
            const framing = framingOf(parsed.head);
            if ('reason' in framing) return refuse(`a request body framed ambiguously (${framing.reason})`);
            served++;
            const h2c = offersH2cOnly(parsed.head);
            const upgrade = !h2c && valuesOf(parsed.head, 'upgrade').length > 0;
            if (h2c) {
              out.push(withoutH2cOffer(parsed.head, held));
              data = held.subarray(parsed.head.length);
              held = Buffer.alloc(0);
            } else release(parsed.head.length);
            if (framing.kind === 'length' && framing.bytes > 0) state = { kind: 'body', left: framing.bytes, upgrade };
            else if (framing.kind === 'chunked') state = { kind: 'chunk-size', upgrade };
            else state = afterBody(upgrade);
            continue;
          }
          case 'body':
          case 'chunk-data': {
            if (data.length === 0) return { kind: 'forward', bytes: out };
            const n = Math.min(state.left, data.length);
            out.push(data.subarray(0, n));
            data = data.subarray(n);
            const left = state.left - n;
            if (left > 0) state = { ...state, left };
            else
              state = state.kind === 'body' ? afterBody(state.upgrade) : { kind: 'chunk-end', upgrade: state.upgrade };
            continue;
          }
          case 'chunk-size': {
            if (data.length === 0 && held.length === 0) return { kind: 'forward', bytes: out };
            const bytes = hold();
            const lf = bytes.indexOf(LF);
            if (lf < 0) {
              if (bytes.length > MAX_CHUNK_LINE_BYTES) return refuse('a chunk-size line too long');
              return { kind: 'forward', bytes: out };
            }
            const line = bytes.toString('latin1', 0, lf + 1);
            const m = /^([0-9a-fA-F]{1,12})(;[\x20-\x7e\t]*)?\r\n$/.exec(line);
            if (!m) return refuse('a malformed chunk-size line');
            const size = Number.parseInt(m[1] as string, 16);
            release(lf + 1);
            state =
              size === 0
                ? { kind: 'trailers', upgrade: state.upgrade }
                : { kind: 'chunk-data', left: size, upgrade: state.upgrade };
            continue;
          }
          case 'chunk-end': {
            if (data.length === 0 && held.length === 0) return { kind: 'forward', bytes: out };
            const bytes = hold();
            if (bytes.length < 2) return { kind: 'forward', bytes: out };
            if (bytes[0] !== CR || bytes[1] !== LF) return refuse('chunk data longer than its size');
            release(2);
            state = { kind: 'chunk-size', upgrade: state.upgrade };
            continue;
          }
          case 'trailers': {
            if (data.length === 0 && held.length === 0) return { kind: 'forward', bytes: out };
            const bytes = hold();
            // The trailer section: field lines, then an empty line (RFC 9112 §7.1.2).
            let at = 0;
            for (;;) {
              const lf = bytes.indexOf(LF, at);
              if (lf < 0) {
                if (bytes.length > MAX_CHUNK_LINE_BYTES) return refuse('a trailer section too long');
                return { kind: 'forward', bytes: out };
              }
              if (lf === at || bytes[lf - 1] !== CR) return refuse('a bare LF in the trailers');
              const content = bytes.subarray(at, lf - 1);
              at = lf + 1;
              if (content.length === 0) break;
              if (content.includes(CR) || !Array.isArray(parseField(content)))
                return refuse('a malformed trailer line');
            }
            release(at);
            state = afterBody(state.upgrade);
            continue;
          }
        }
      }
    },
  };
}
