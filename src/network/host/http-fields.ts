// The header fields a proxy passes on, and the body framing it rebuilds: shared by the plain-HTTP
// front end (http-proxy.ts) and the requests of intercepted hosts (intercept.ts).
import type { IncomingMessage } from 'node:http';

// RFC 9110 §7.6.1 hop-by-hop fields, Proxy-Authorization (credentials for this proxy, never for the
// destination), Host (rebuilt from the URI) and framing (rebuilt from what the parser read).
export const NOT_FORWARDED = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'expect', // node:http already answered 100-continue to the client
]);

/** raw header list minus NOT_FORWARDED and whatever the message's own Connection field names. */
export function forwardable(raw: string[]): string[] {
  const named = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    if ((raw[i] as string).toLowerCase() === 'connection') {
      for (const token of (raw[i + 1] as string).split(',')) named.add(token.trim().toLowerCase());
    }
  }
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (!NOT_FORWARDED.has(name) && !named.has(name)) out.push(raw[i] as string, raw[i + 1] as string);
  }
  return out;
}

/** Body framing as the parser saw it: a length, or chunked re-encoding when the length is unknown. */
export function framing(msg: Pick<IncomingMessage, 'headers'>): string[] {
  const length = msg.headers['content-length'];
  if (length !== undefined) return ['Content-Length', length];
  return msg.headers['transfer-encoding'] !== undefined ? ['Transfer-Encoding', 'chunked'] : [];
}
