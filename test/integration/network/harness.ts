// Shared set-up for the egress integration tests: loopback upstreams (HTTP, HTTPS, and one the proxy
// must never reach), a proxy with a fixed name map and a counting dialler, and small raw clients.
// Everything listens on 127.0.0.1 or on unix sockets in a temp dir; nothing resolves a real name.
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import {
  createServer as createHttpServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type Server,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect as netConnect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileEgressRules } from '../../../src/network/egress.js';
import { connectToAddress } from '../../../src/network/host/dial.js';
import { startEgressProxy, type EgressProxy, type EgressProxyOptions } from '../../../src/network/host/proxy.js';
import type { EgressEvent } from '../../../src/network/host/proxy-context.js';

export const FIXTURES = new URL('./fixtures/', import.meta.url);
/** Self-signed, SAN allowed.test, denied.test, other.test, 127.0.0.1; valid to 2126 (openssl req -x509). */
export const CERT = readFileSync(new URL('test-cert.pem', FIXTURES));
export const CERT_PATH = new URL('test-cert.pem', FIXTURES).pathname;
const KEY = readFileSync(new URL('test-key.pem', FIXTURES));

export const NAMES: Record<string, string[]> = {
  'allowed.test': ['127.0.0.1'],
  'denied.test': ['127.0.0.1'],
  'other.test': ['127.0.0.1'],
  'meta.test': ['169.254.169.254'],
  'ten.test': ['10.0.0.1'],
  'rebind.test': ['127.0.0.1', '10.0.0.1'],
};

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

export interface Upstreams {
  httpPort: number;
  httpsPort: number;
  /** A listener on loopback that allow_private does not list: the proxy must never connect to it. */
  forbiddenPort: number;
  forbiddenConnections: () => number;
  httpsHandshakes: () => number;
  seen: SeenRequest[];
  close(): Promise<void>;
}

async function listenLoopback(server: Server | ReturnType<typeof createNetServer>): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** GET /hello, GET /big?bytes=N (streamed), POST /echo. Records what arrived (method, url, headers). */
function app(seen: SeenRequest[], scheme: string) {
  return (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): void => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/big') {
      let left = Number(url.searchParams.get('bytes'));
      res.writeHead(200, { 'content-length': left });
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const pump = (): void => {
        while (left > 0) {
          const n = Math.min(left, chunk.length);
          left -= n;
          if (!res.write(chunk.subarray(0, n))) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
      return;
    }
    if (url.pathname === '/echo') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      req.pipe(res);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain', 'x-upstream': scheme });
    res.end(`${scheme} hello from ${req.headers.host}\n`);
  };
}

export async function startUpstreams(): Promise<Upstreams> {
  const seen: SeenRequest[] = [];
  const http = createHttpServer(app(seen, 'http'));
  const https = createHttpsServer({ cert: CERT, key: KEY }, app(seen, 'https'));
  let handshakes = 0;
  https.on('secureConnection', () => handshakes++);
  let forbidden = 0;
  const trap = createNetServer((s) => {
    forbidden++;
    s.destroy();
  });
  const [httpPort, httpsPort, forbiddenPort] = await Promise.all([
    listenLoopback(http),
    listenLoopback(https),
    listenLoopback(trap),
  ]);
  return {
    httpPort,
    httpsPort,
    forbiddenPort,
    forbiddenConnections: () => forbidden,
    httpsHandshakes: () => handshakes,
    seen,
    async close() {
      for (const s of [http, https]) s.closeAllConnections();
      await Promise.all([http, https, trap].map((s) => new Promise((r) => s.close(r))));
    },
  };
}

export interface TestProxy {
  proxy: EgressProxy;
  dir: string;
  dials: [string, number][];
  events: EgressEvent[];
  close(): Promise<void>;
}

/**
 * allow *.test and two literals, deny denied.test, allow_private only the two upstream ports.
 * `dials` records every TCP connect the proxy makes (the seam the "refused without a dial" tests read).
 */
export async function startTestProxy(up: Upstreams, extra: Partial<EgressProxyOptions> = {}): Promise<TestProxy> {
  const dir = mkdtempSync(join(tmpdir(), 'sbx-egress-'));
  const dials: [string, number][] = [];
  const events: EgressEvent[] = [];
  const proxy = await startEgressProxy({
    rules: compileEgressRules({
      allow: ['*.test', `127.0.0.1:${up.httpPort}`, '10.0.0.1', '::1'],
      deny: ['denied.test'],
      allowPrivate: [`127.0.0.1:${up.httpPort}`, `127.0.0.1:${up.httpsPort}`],
    }),
    socketDir: dir,
    resolve: async (host) => {
      const found = NAMES[host];
      if (!found) throw Object.assign(new Error(`no such test name: ${host}`), { code: 'ENOTFOUND' });
      return found;
    },
    connect: (address, port) => {
      dials.push([address, port]);
      return connectToAddress(address, port);
    },
    onEvent: (e) => events.push(e),
    ...extra,
  }).catch((e: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  });
  return {
    proxy,
    dir,
    dials,
    events,
    async close() {
      await proxy.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A plain absolute-URI request over the proxy's unix socket. */
export async function proxyGet(
  socketPath: string,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: Buffer | Buffer[] } = {},
): Promise<Reply> {
  // setHost: false so that the Host header is exactly what the test passes (or none).
  const req = httpRequest({
    socketPath,
    method: options.method ?? 'GET',
    path: url,
    headers: options.headers,
    agent: false,
    setHost: false,
  });
  const body = options.body;
  if (Array.isArray(body)) for (const b of body) req.write(b);
  else if (body) req.write(body);
  req.end();
  const [res] = (await once(req, 'response')) as [import('node:http').IncomingMessage];
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  return { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) };
}

/** CONNECT over the proxy's unix socket: the status, and the tunnel socket when it is 200. */
export async function proxyConnect(
  socketPath: string,
  authority: string,
): Promise<{ status: number; socket: Socket; body: string }> {
  const req = httpRequest({ socketPath, method: 'CONNECT', path: authority, agent: false, setHost: false });
  req.end();
  const [res, socket, head] = (await once(req, 'connect')) as [import('node:http').IncomingMessage, Socket, Buffer];
  // The proxy may close first (a refusal): a late write must not become an unhandled EPIPE.
  socket.on('error', () => undefined);
  let body = head.toString();
  if (res.statusCode !== 200) {
    for await (const c of socket) body += String(c);
  }
  return { status: res.statusCode ?? 0, socket, body };
}

/** Read exactly n bytes from a socket in paused mode. */
export function readBytes(socket: Socket, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const onReadable = (): void => {
      const b = socket.read(n) as Buffer | null;
      if (b === null) return;
      done();
      resolve(b);
    };
    const onEnd = (): void => {
      done();
      reject(new Error(`socket ended before ${n} bytes`));
    };
    const done = (): void => {
      socket.off('readable', onReadable);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
    };
    socket.on('readable', onReadable);
    socket.on('end', onEnd);
    socket.on('close', onEnd);
    onReadable();
  });
}

export type SocksAddress = { domain: string } | { ipv4: readonly number[] } | { ipv6: readonly number[] };

/** A SOCKS5 CONNECT over the proxy's unix socket; resolves with the reply code and the socket. */
export async function socksConnect(
  socketPath: string,
  address: SocksAddress,
  port: number,
  command = 0x01,
): Promise<{ code: number; socket: Socket }> {
  const socket = netConnect({ path: socketPath });
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  socket.write(Buffer.from([0x05, 0x01, 0x00]));
  const method = await readBytes(socket, 2);
  if (method[1] !== 0x00) throw new Error('proxy refused the no-auth method');
  let addr: number[];
  if ('domain' in address) addr = [0x03, address.domain.length, ...Buffer.from(address.domain)];
  else if ('ipv4' in address) addr = [0x01, ...address.ipv4];
  else addr = [0x04, ...address.ipv6];
  socket.write(Buffer.from([0x05, command, 0x00, ...addr, port >> 8, port & 0xff]));
  const reply = await readBytes(socket, 10);
  return { code: reply[1] as number, socket };
}

/** Everything a socket sends until it closes. */
export async function drain(socket: Socket): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of socket) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}
