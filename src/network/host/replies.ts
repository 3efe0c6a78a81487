// The HTTP answers the proxy writes itself on a raw socket: to a CONNECT it refuses (http-proxy.ts),
// and to a request inside a tunnel that names another host (tunnel.ts). Each closes the connection.
import type { Violation } from '../../policy/violation.js';

/** What a refused client reads: the destination, the rule and why; never a path, query or header. */
export function refusalBody(v: Violation): string {
  return `sbx: egress to ${v.host}:${v.port} refused (${v.rule}): ${v.detail}\n`;
}

/** A whole response: status line, plain-text body, `Connection: close`. */
export function rawResponse(status: number, reason: string, body: string): string {
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
