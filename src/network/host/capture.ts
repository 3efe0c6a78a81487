// Where a captured connection goes (docs/DESIGN.md, "Transparent capture"). The judge (native/)
// turns a command's connect() to IP:PORT into `CONNECT IP:PORT` with `X-Sbx-Capture: 1` on this
// proxy; the header is a marker, never a privilege: the sandbox can send it itself, and gets nothing
// a CONNECT would not. Port 53 is sbx's own DNS (dns-server.ts). Any other port needs a name to
// decide on: the one sbx's DNS handed the address to this run, or else the one the host's /etc/hosts
// gives it (landlock: the command reads the host's file and connects to the address), or the address
// itself when the rules allow it as a literal (meantName says in which order). Whichever name,
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

/** The hosts file's names for `address` (an IPv4-mapped IPv6 address is its IPv4). */
function hostsNames(ctx: ProxyContext, address: string): readonly string[] {
  const v4 = address.startsWith('::ffff:') && address.includes('.') ? address.slice('::ffff:'.length) : address;
  return ctx.hosts.get(address) ?? ctx.hosts.get(v4) ?? [];
}

/**
 * The name the command meant by a host address: the only one of its hosts-file names the rules allow
 * on the port (its Host and SNI then match the tunnel's name); else the address itself when the rules
 * allow it as a literal (a CONNECT to it is served, and `localhost` for 127.0.0.1 must not turn it into
 * a refusal); else its only hosts-file name, so that the refusal names what the command asked for.
 * This only picks the name; dialChecked decides it.
 */
function meantName(ctx: ProxyContext, address: string, port: number): string | undefined {
  const names = hostsNames(ctx, address);
  const allowed = names.filter((name) => decideHost(ctx.rules, name, port).allowed);
  if (allowed.length === 1) return allowed[0];
  if (decideHost(ctx.rules, address, port).allowed) return address;
  return names.length === 1 ? names[0] : undefined;
}

/**
 * The name sbx's DNS gave this run for `rawHost`, when it is a pool address. A client that resolved
 * the name inside and then asked the proxy by address (a CONNECT, a `socks5://` without the h) means
 * that name; taking it gives it exactly what asking by name would, and the tunnel checks SNI and Host
 * against the name.
 */
export function pooledName(ctx: ProxyContext, rawHost: string): string | undefined {
  const normal = normaliseHost(rawHost);
  const address = normal === undefined ? undefined : canonicalIp(normal);
  return address === undefined ? undefined : ctx.pool.nameOf(address);
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
  const pooled = pooledName(ctx, address);
  if (pooled !== undefined) return { kind: 'name', host: pooled };
  const meant = ctx.pool.contains(address) ? undefined : meantName(ctx, address, port);
  if (meant !== undefined) return { kind: 'name', host: meant };
  const detail =
    `a connection to ${address}:${port}, an address no allowed name resolved to ` +
    '(names resolve through sbx inside the sandbox: connect by name)';
  return { kind: 'refused', status: 403, violation: ctx.refuse('capture', address, port, 'network.allow', detail) };
}
