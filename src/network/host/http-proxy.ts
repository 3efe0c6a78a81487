// The HTTP front end: CONNECT tunnels and plain absolute-URI requests (`GET http://host/path`).
// node:http does the parsing (llhttp: strict framing, CL/TE conflicts refused, head size capped).
//
// Plain requests: one upstream connection per request, sent `Connection: close`. The client may keep
// its own connection alive (node:http handles that), but no upstream connection is ever reused, so
// every request, whatever host it names, is decided and dialled on its own and a pooled socket can
// never carry a request for another host.
import {
  request as httpRequest,
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import { pipeline, type Transform } from 'node:stream';
import { normaliseHost } from '../egress.js';
import type { ProxyContext, Via } from './proxy-context.js';
import { dialChecked, displayHost, type DialResult } from './dial.js';
import type { CredentialBroker } from './credential-broker.js';
import { outOfPlace, refuseCarried, scanningStream } from './credential-guard.js';
import { forwardable, framing } from './http-fields.js';
import { rawResponse, refusalBody } from './replies.js';
import { runTunnel } from './tunnel.js';
import { isCaptured, pooledName, routeCapture } from './capture.js';
import { serveDns } from './dns-server.js';

/** `host:port` or `[v6]:port`; the port may be omitted only when a default is given. */
export function parseAuthority(text: string, defaultPort?: number): { host: string; port: number } | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]@/?#\s]+)(?::([0-9]{1,5}))?$/.exec(text);
  if (!m) return undefined;
  const port = m[2] !== undefined ? Number(m[2]) : defaultPort;
  if (port === undefined || port < 1 || port > 65535) return undefined;
  return { host: m[1] as string, port };
}

/** The authority and origin-form target of `http://[userinfo@]host[:port]/path?query`. */
function parseAbsoluteUri(url: string): { host: string; port: number; path: string } | { error: string } {
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)([^#]*)/.exec(url);
  if (!m) return { error: 'sbx egress proxy: only absolute-URI requests (http://host/...) and CONNECT are served' };
  if ((m[1] as string).toLowerCase() !== 'http')
    return { error: 'sbx egress proxy: use CONNECT for https and other schemes' };
  const authority = (m[2] as string).slice((m[2] as string).lastIndexOf('@') + 1); // userinfo is dropped, never logged
  const target = parseAuthority(authority, 80);
  if (!target) return { error: 'sbx egress proxy: malformed host in request URI' };
  const rest = m[3] as string;
  return { ...target, path: rest.startsWith('/') ? rest : `/${rest}` };
}

const FAILURE_STATUS = { unresolvable: 502, unreachable: 502, timeout: 504, closed: 503 } as const;
const REASON: Record<number, string> = { 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout' };

function rawReply(socket: Socket, status: number, reason: string, body: string): void {
  socket.end(rawResponse(status, reason, body));
}

function reply(res: ServerResponse, status: number, body: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

async function onRequest(ctx: ProxyContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const target = parseAbsoluteUri(req.url ?? '');
  if ('error' in target) return reply(res, 400, `${target.error}\n`);
  const hosts = req.rawHeaders.filter((_, i) => i % 2 === 0 && req.rawHeaders[i]?.toLowerCase() === 'host');
  if (hosts.length > 1) return reply(res, 400, 'sbx egress proxy: more than one Host header\n');
  const claimed = req.headers.host !== undefined ? parseAuthority(req.headers.host, 80) : undefined;
  if (req.headers.host !== undefined) {
    // A Host differing from the URI would have the destination serve a host the decision never saw.
    const same = claimed && normaliseHost(claimed.host) === normaliseHost(target.host) && claimed.port === target.port;
    if (!same) {
      const v = ctx.refuse(
        'http',
        displayHost(target.host),
        target.port,
        'network.host',
        `Host header differs from request URI host ${displayHost(target.host)}:${target.port}`,
      );
      return reply(res, 403, refusalBody(v));
    }
  }
  const guard = ctx.credentials ? credentialGuard(ctx, req, res, target) : undefined;
  if (guard === 'refused') return;
  const dial = await dialChecked(ctx, 'http', target.host, target.port);
  if (dial.kind === 'refused') return reply(res, 403, refusalBody(dial.violation));
  if (dial.kind === 'failed') return reply(res, FAILURE_STATUS[dial.reason], `sbx egress proxy: ${dial.detail}\n`);
  if (res.destroyed) return void dial.socket.destroy();
  try {
    forward(req, res, dial, target, guard);
  } catch {
    // node:http refuses to send a header value it considers invalid; nothing was sent upstream.
    dial.socket.destroy();
    reply(res, 400, 'sbx egress proxy: request headers cannot be forwarded\n');
  }
}

/**
 * A plain-HTTP request with credentials in play: every trace of one is out of place here (the value is
 * sent only over TLS, to the hosts listed for it). The URL and headers are searched before anything is
 * dialled; the body is searched by the stream returned, on its way.
 */
function credentialGuard(
  ctx: ProxyContext,
  req: IncomingMessage,
  res: ServerResponse,
  target: { host: string; port: number },
): Transform | 'refused' {
  const broker = ctx.credentials as CredentialBroker;
  const where = { host: normaliseHost(target.host) ?? displayHost(target.host), port: target.port, plaintext: true };
  const accept = outOfPlace(where.host, where.port, true);
  const lines = req.rawHeaders.map((h, i) => (i % 2 === 0 ? `${h}: ` : `${h}\n`)).join('');
  const found = [
    { carried: broker.tracer.find(Buffer.from(req.url ?? ''), accept), in: 'the URL' },
    { carried: broker.tracer.find(Buffer.from(lines), accept), in: 'a header' },
  ].find((f) => f.carried);
  if (found?.carried) {
    reply(res, 403, refusalBody(refuseCarried(ctx, 'http', where, found.carried, found.in)));
    return 'refused';
  }
  return scanningStream(broker.tracer, accept, (carried) => {
    const v = refuseCarried(ctx, 'http', where, carried, 'the body');
    reply(res, 403, refusalBody(v));
  });
}

function forward(
  req: IncomingMessage,
  res: ServerResponse,
  dial: Extract<DialResult, { kind: 'connected' }>,
  target: { host: string; port: number; path: string },
  guard: Transform | undefined,
): void {
  const hostHeader = target.port === 80 ? target.host : `${target.host}:${target.port}`;
  const upstream = httpRequest({
    method: req.method,
    path: target.path,
    headers: [...forwardable(req.rawHeaders), 'Host', hostHeader, ...framing(req), 'Connection', 'close'],
    setHost: false,
    // No agent: the request runs on the socket dialled to the checked address, and nothing else.
    createConnection: () => dial.socket,
  });
  const abort = (): void => {
    upstream.destroy();
    dial.socket.destroy();
  };
  res.on('close', abort);
  upstream.on('error', () => {
    // A refusal already answered (credentialGuard) stays whole; a failure mid-response cuts it.
    if (res.writableEnded) return;
    reply(res, 502, `sbx egress proxy: connection to ${target.host}:${target.port} failed\n`);
  });
  const done = (err: Error | null): void => {
    if (err) abort();
  };
  if (guard) pipeline(req, guard, upstream, done);
  else pipeline(req, upstream, done);
  upstream.on('response', (upRes) => {
    const headers = [...forwardable(upRes.rawHeaders), ...framing(upRes)];
    res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, headers);
    pipeline(upRes, res, (err) => {
      if (err) abort();
    });
  });
}

const ESTABLISHED = 'HTTP/1.1 200 Connection Established\r\n\r\n';

/** Dial `host:port` as a CONNECT does, answer the client, and join them (tunnel.ts). */
function tunnelTo(
  ctx: ProxyContext,
  via: Via,
  socket: Socket,
  head: Buffer,
  host: string,
  port: number,
): Promise<void> {
  return dialChecked(ctx, via, host, port).then((dial) => {
    if (dial.kind === 'refused') return rawReply(socket, 403, 'Forbidden', refusalBody(dial.violation));
    if (dial.kind === 'failed') {
      const status = FAILURE_STATUS[dial.reason];
      return rawReply(socket, status, REASON[status] as string, `sbx egress proxy: ${dial.detail}\n`);
    }
    if (socket.destroyed) return void dial.socket.destroy();
    socket.write(ESTABLISHED);
    if (head.length > 0) socket.unshift(head);
    runTunnel(ctx, via, socket, dial.socket, { host: dial.host, port, ledger: dial.ledger });
  });
}

/** A connect the judge captured (capture.ts): sbx's DNS, or the CONNECT path for the name its address stands for. */
function onCaptured(ctx: ProxyContext, socket: Socket, head: Buffer, target: { host: string; port: number }) {
  const route = routeCapture(ctx, target.host, target.port);
  switch (route.kind) {
    case 'dns':
      socket.write(ESTABLISHED);
      if (head.length > 0) socket.unshift(head);
      return serveDns(ctx, socket);
    case 'name':
      return tunnelTo(ctx, 'capture', socket, head, route.host, target.port);
    case 'refused':
      return rawReply(
        socket,
        route.status,
        route.status === 400 ? 'Bad Request' : 'Forbidden',
        refusalBody(route.violation),
      );
  }
}

function onConnect(ctx: ProxyContext, req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> | void {
  socket.on('error', () => socket.destroy());
  const target = parseAuthority(req.url ?? '');
  if (!target) return rawReply(socket, 400, 'Bad Request', 'sbx egress proxy: CONNECT needs host:port\n');
  if (isCaptured(req)) return onCaptured(ctx, socket, head, target);
  return tunnelTo(ctx, 'connect', socket, head, pooledName(ctx, target.host) ?? target.host, target.port);
}

export function createHttpProxy(ctx: ProxyContext): Server {
  const server = createServer({
    headersTimeout: ctx.timeouts.headMs,
    // Bodies may be long uploads: bounded by the idle timeout instead of a total.
    requestTimeout: 0,
    // The absolute URI names the host; a missing Host is rebuilt from it (and a present one must match).
    requireHostHeader: false,
  });
  server.timeout = ctx.timeouts.idleMs;
  server.on('connection', (socket: Socket) => ctx.track(socket));
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    onRequest(ctx, req, res).catch(() => res.destroy());
  });
  server.on('connect', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    Promise.resolve(onConnect(ctx, req, socket, head)).catch(() => socket.destroy());
  });
  return server;
}
