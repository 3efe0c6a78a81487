// Where a captured connection goes (docs/DESIGN.md, "Transparent capture"). The judge (native/)
// turns a command's connect() to IP:PORT into `CONNECT IP:PORT` with `X-Sbx-Capture: 1` on this
// proxy; the header is a marker, never a privilege: the sandbox can send it itself, and gets nothing
// a CONNECT would not. Port 53 is sbx's own DNS (dns-server.ts). Any other port needs a name to
// decide on: the one sbx's DNS handed the address to this run, or else the one the host's /etc/hosts
// gives it (landlock: the command reads the host's file and connects to the address), or the address
// itself when the rules allow it as a literal (a CONNECT to it would be served too). Whichever name,
// the connection then takes the CONNECT path for name:port (http-proxy.ts): decided, resolved,
// checked, dialled, its SNI or Host checked, exactly as for a client that asked by name.
import type { IncomingMessage } from 'node:http';
import type { Violation } from '../../policy/violation.js';
import { canonicalIp, decideHost, normaliseHost } from '../egress.js';
import { displayHost } from './dial.js';
import type { ProxyContext } from './proxy-context.js';

export const CAPTURE_HEADER = 'x-sbx-capture';

/** Where a captured CONNECT leads: sbx's DNS, a name to dial as a CONNECT would, or nowhere. */
export type CaptureRoute =
  | { kind: 'dns' }
  | { kind: 'name'; host: string }
  | { kind: 'refused'; status: 400 | 403; violation: Violation };

export function isCaptured(req: IncomingMessage): boolean {
  return req.headers[CAPTURE_HEADER] === '1';
}

const DNS_PORT = 53;

/**
 * The hosts file's name for `address` on `port`: its only name, or else the only one of its names the
 * rules allow on the port. This only picks the name the command meant; dialChecked decides it.
 */
function hostsName(ctx: ProxyContext, address: string, port: number): string | undefined {
  const v4 = address.startsWith('::ffff:') && address.includes('.') ? address.slice('::ffff:'.length) : address;
  const names = ctx.hosts.get(address) ?? ctx.hosts.get(v4) ?? [];
  if (names.length === 1) return names[0];
  const allowed = names.filter((name) => decideHost(ctx.rules, name, port).allowed);
  return allowed.length === 1 ? allowed[0] : undefined;
}

export function routeCapture(ctx: ProxyContext, rawHost: string, port: number): CaptureRoute {
  if (port === DNS_PORT) return { kind: 'dns' };
  const normal = normaliseHost(rawHost);
  const address = normal === undefined ? undefined : canonicalIp(normal);
  if (address === undefined) {
    const detail = `a captured connection to ${displayHost(rawHost)}:${port} names no IP address`;
    return {
      kind: 'refused',
      status: 400,
      violation: ctx.refuse('capture', displayHost(rawHost), port, 'network.invalid', detail),
    };
  }
  const pooled = ctx.pool.nameOf(address);
  if (pooled !== undefined) return { kind: 'name', host: pooled };
  if (!ctx.pool.contains(address)) {
    const named = hostsName(ctx, address, port);
    if (named !== undefined) return { kind: 'name', host: named };
    if (decideHost(ctx.rules, address, port).allowed) return { kind: 'name', host: address };
  }
  const detail =
    `a connection to ${address}:${port}, an address no allowed name resolved to ` +
    '(names resolve through sbx inside the sandbox: connect by name)';
  return { kind: 'refused', status: 403, violation: ctx.refuse('capture', address, port, 'network.allow', detail) };
}
