// TLS termination for the hosts a credential names (docs/DESIGN.md "Credentials"), and only for them:
// every other host stays an opaque tunnel (tunnel.ts). The client's TLS ends here, with a leaf of the
// run's CA for the tunnel's target; it may speak HTTP/1.1 or HTTP/2 (ALPN). Each request is checked
// (authority = the target; no credential out of place in its path, headers or body), its headers get
// the values of the credentials listed for the target, and it is sent on over a TLS connection of the
// proxy's own, whose certificate must chain to the host's trust store or network.extra_ca_certs.
//
// What the proxy decides on is the tunnel's target, fixed when it was dialled (dial.ts): never a Host
// header or :authority, which must name the same host or the request is refused. Upstream connections
// belong to one client connection (a keep-alive agent each), so requests of different tunnels never
// share one, and every upstream connection after the first is dialled and decided afresh.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createSecureServer, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { pipeline } from 'node:stream';
import { checkServerIdentity, connect as tlsConnect } from 'node:tls';
import { substituteHeaders, userinfoAuthorization } from '../credential-scan.js';
import { canonicalIp } from '../egress.js';
import { isSameAuthority } from '../plaintext-http.js';
import type { CredentialBroker } from './credential-broker.js';
import { outOfPlace, refuseCarried, scanningStream } from './credential-guard.js';
import { dialChecked, displayHost } from './dial.js';
import { forwardable, framing } from './http-fields.js';
import type { ProxyContext, Via } from './proxy-context.js';

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

/** The tunnel's destination, as dial.ts decided it. */
export interface InterceptTarget {
  host: string;
  port: number;
}

/** Upstream connections one client connection may hold at once (an HTTP/2 client multiplexes). */
const MAX_UPSTREAM_SOCKETS = 8;

const isHttp2 = (req: Request): req is Http2ServerRequest => 'stream' in req;

function destroy(res: Response): void {
  if ('stream' in res) res.stream.close();
  else res.destroy();
}

function reply(res: Response, status: number, body: string): void {
  if (res.headersSent) {
    destroy(res);
    return;
  }
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/**
 * The keep-alive agent of one client connection: its first socket is the one dialled for the tunnel,
 * every further one is dialled (and decided) again. Each speaks TLS to the target, verified against
 * the broker's roots and the target's name.
 */
function upstreamAgent(ctx: ProxyContext, via: Via, target: InterceptTarget, first: Socket): HttpsAgent {
  const broker = ctx.credentials as CredentialBroker;
  let spare: Socket | undefined = first;
  const agent = new HttpsAgent({ keepAlive: true, maxSockets: MAX_UPSTREAM_SOCKETS, maxFreeSockets: 2 });
  const secure = (tcp: Socket) =>
    tlsConnect({
      socket: tcp,
      secureContext: broker.upstreamContext(),
      // An IP literal is not a server name (RFC 6066 §3): its certificate names the address instead.
      ...(canonicalIp(target.host) === undefined ? { servername: target.host } : {}),
      ALPNProtocols: ['http/1.1'],
      checkServerIdentity: (_name, cert) => checkServerIdentity(target.host, cert),
    });
  const createConnection = (_options: unknown, callback: (err: Error | null, socket?: Socket) => void) => {
    if (spare) {
      const tcp = spare;
      spare = undefined;
      return secure(tcp);
    }
    dialChecked(ctx, via, target.host, target.port).then(
      (dial) => {
        if (dial.kind === 'connected') callback(null, secure(dial.socket));
        else callback(new Error(dial.kind === 'refused' ? dial.violation.detail : dial.detail));
      },
      (e: unknown) => callback(e as Error),
    );
    return undefined;
  };
  Object.assign(agent, { createConnection });
  const close = agent.destroy.bind(agent);
  Object.assign(agent, {
    destroy() {
      spare?.destroy();
      spare = undefined;
      close();
    },
  });
  return agent;
}

/** The request's target path, and the Authorization its URL's userinfo stands for, or why it is refused. */
function requestTarget(
  req: Request,
  target: InterceptTarget,
): { path: string; authorization?: string } | { refused: string } {
  const url = req.url ?? '/';
  // Absolute-form (RFC 9112 §3.2.2) is legal inside a tunnel too; its authority must be the target.
  const m = /^https:\/\/(?:([^@/?#]*)@)?([^/?#]*)([^#]*)/i.exec(url);
  if (!m) return url.startsWith('/') ? { path: url } : { refused: 'the request target is neither a path nor https://' };
  if (!sameAuthority(m[2] as string, target))
    return { refused: `the request URL names ${displayHost(m[2] as string)}` };
  const path = (m[3] as string).startsWith('/') ? (m[3] as string) : `/${m[3]}`;
  return m[1] !== undefined ? { path, authorization: userinfoAuthorization(m[1]) } : { path };
}

/** An authority without a port is https's default: 443. */
const sameAuthority = (authority: string, target: InterceptTarget): boolean => isSameAuthority(authority, target, 443);

/** The header list to send on: no pseudo-headers, no hop-by-hop fields, cookies of HTTP/2 joined (RFC 9113 §8.2.3). */
function requestHeaders(req: Request, authorization: string | undefined): string[] {
  const raw = req.rawHeaders;
  const plain: string[] = [];
  const cookies: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.startsWith(':')) continue;
    if (name.toLowerCase() === 'cookie') cookies.push(raw[i + 1] as string);
    else plain.push(name, raw[i + 1] as string);
  }
  const out = forwardable(plain);
  if (cookies.length > 0) out.push('Cookie', cookies.join('; '));
  if (authorization !== undefined && !out.some((h, i) => i % 2 === 0 && h.toLowerCase() === 'authorization'))
    out.push('Authorization', authorization);
  return out;
}

/** Bodies of methods that usually have none: sent with no framing when the client gave no length. */
const BODILESS = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE', 'TRACE']);

function bodyFraming(req: Request): string[] {
  if (!isHttp2(req)) return framing(req);
  const length = req.headers['content-length'];
  if (length !== undefined) return ['Content-Length', length];
  return BODILESS.has(req.method) ? [] : ['Transfer-Encoding', 'chunked'];
}

function respond(req: Request, res: Response, upRes: IncomingMessage): void {
  const headers = forwardable(upRes.rawHeaders);
  if (isHttp2(req)) {
    const object: Record<string, string[]> = {};
    for (let i = 0; i < headers.length; i += 2) {
      const name = (headers[i] as string).toLowerCase();
      object[name] = [...(object[name] ?? []), headers[i + 1] as string];
    }
    const length = upRes.headers['content-length'];
    if (length !== undefined) object['content-length'] = [length];
    (res as Http2ServerResponse).writeHead(upRes.statusCode ?? 502, object);
  } else {
    (res as ServerResponse).writeHead(upRes.statusCode ?? 502, upRes.statusMessage, [...headers, ...framing(upRes)]);
  }
}

/** One request of an intercepted connection: checked, its credentials put in, sent on, answered. */
function forwardRequest(
  ctx: ProxyContext,
  via: Via,
  target: InterceptTarget,
  agent: HttpsAgent,
  req: Request,
  res: Response,
): void {
  const broker = ctx.credentials as CredentialBroker;
  const { host, port } = target;
  const authority = isHttp2(req) ? req.headers[':authority'] : req.headers.host;
  if (authority !== undefined && !sameAuthority(authority, target)) {
    const v = ctx.refuse(
      via,
      host,
      port,
      'network.host',
      `the request names ${displayHost(authority)}, not the tunnel's ${host}:${port}`,
    );
    reply(res, 403, `sbx: request refused (${v.rule}): ${v.detail}\n`);
    return;
  }
  const aimed = requestTarget(req, target);
  if ('refused' in aimed) {
    const v = ctx.refuse(via, host, port, 'network.host', aimed.refused);
    reply(res, 403, `sbx: request refused (${v.rule}): ${v.detail}\n`);
    return;
  }
  const headers = requestHeaders(req, aimed.authorization);
  const accept = outOfPlace(host, port, false);
  const where = { host, port, plaintext: false };
  const lines = headers.map((h, i) => (i % 2 === 0 ? `${h}: ` : `${h}\n`)).join('');
  const carried = [
    { found: broker.tracer.find(Buffer.from(aimed.path), accept), in: 'the path or query' },
    { found: broker.tracer.find(Buffer.from(lines), accept), in: 'a header' },
  ].find((f) => f.found);
  if (carried?.found) {
    const v = refuseCarried(ctx, via, where, carried.found, carried.in);
    reply(res, 403, `sbx: request refused (${v.rule}): ${v.detail}\n`);
    return;
  }
  const hostHeader = port === 443 ? host : `${host}:${port}`;
  const upReq = httpsRequest({
    agent,
    host,
    port,
    method: req.method,
    path: aimed.path,
    headers: [...substituteHeaders(headers, broker.live, host, port), 'Host', hostHeader, ...bodyFraming(req)],
    setHost: false,
  });
  let refused = false;
  const abort = () => upReq.destroy();
  res.on('close', abort);
  upReq.setTimeout(ctx.timeouts.idleMs, abort);
  upReq.on('error', (e: NodeJS.ErrnoException) => {
    if (refused) return;
    const why = e.code ?? e.message;
    ctx.failed(via, host, port, `upstream request failed: ${why}`);
    reply(res, 502, `sbx egress proxy: ${host}:${port} failed: ${why}\n`);
  });
  upReq.on('response', (upRes) => {
    respond(req, res, upRes);
    pipeline(upRes, res as NodeJS.WritableStream, (err) => {
      if (err) abort();
    });
  });
  const scan = scanningStream(broker.tracer, accept, (found) => {
    refused = true;
    const v = refuseCarried(ctx, via, where, found, 'the body');
    upReq.destroy();
    reply(res, 403, `sbx: request refused (${v.rule}): ${v.detail}\n`);
  });
  pipeline(req, scan, upReq, (err) => {
    if (err && !refused) abort();
  });
}

/**
 * Terminates the client's TLS on `client` (a tunnel to `target` whose first bytes are a ClientHello,
 * already judged by tunnel.ts) and serves its requests through `first`, the connection dialled for the
 * tunnel. A server of its own per tunnel (never listening): Node's secure server sets the TLS socket up
 * for HTTP/2 as a hand-made one is not, and the server's handler closes over this tunnel's target.
 */
export function interceptTunnel(
  ctx: ProxyContext,
  via: Via,
  client: Socket,
  first: Socket,
  target: InterceptTarget,
): void {
  const broker = ctx.credentials as CredentialBroker;
  const agent = upstreamAgent(ctx, via, target, first);
  const handle = (req: Request, res: Response) => {
    try {
      forwardRequest(ctx, via, target, agent, req, res);
    } catch {
      destroy(res);
    }
  };
  const server = createSecureServer(
    {
      ...broker.leafFor(target.host),
      ALPNProtocols: ['h2', 'http/1.1'],
      allowHTTP1: true,
      handshakeTimeout: ctx.timeouts.helloMs,
    },
    handle,
  );
  server.setTimeout(ctx.timeouts.idleMs);
  // A WebSocket or another upgrade would leave HTTP, where no credential can be put in: refused plainly.
  server.on('upgrade', (_req: IncomingMessage, socket: Socket) =>
    socket.end('HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'),
  );
  server.on('tlsClientError', (_e: Error, socket: Socket) => socket.destroy());
  server.on('sessionError', () => client.destroy());
  client.once('close', () => agent.destroy());
  server.emit('connection', client);
}
