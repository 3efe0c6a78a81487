// The egress proxy's TLS termination for a credential's host (network/host/intercept.ts), driven with
// Node clients over its unix socket: HTTP/1.1 keep-alive and HTTP/2 multiplexing with the value put
// in, what it still refuses inside the tunnel (another Host, a placeholder in a large body, an upgrade),
// and what it leaves a tunnel (bytes that are not TLS, a server that speaks first), each beside its control.
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { connect as http2Connect } from 'node:http2';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileCredentials } from '../../../src/network/credentials.js';
import { compileEgressRules } from '../../../src/network/egress.js';
import { liveCredentials, openCredentialBroker } from '../../../src/network/host/credential-broker.js';
import {
  CERT,
  proxyConnect,
  readBytes,
  startTestProxy,
  startUpstreams,
  type TestProxy,
  type Upstreams,
} from './harness.js';

const VALUE = 'ghp_THEVALUEthevalue0123456789abcdefghij';
let up: Upstreams;
let t: TestProxy;
let banner: Server;
let bannerPort: number;
let placeholder: string;
let caPem: string;
let caDir: string;

beforeAll(async () => {
  up = await startUpstreams();
  banner = createServer((s) => s.end('SSH-2.0-banner\r\n'));
  await new Promise<void>((r) => banner.listen(0, '127.0.0.1', r));
  bannerPort = (banner.address() as { port: number }).port;
  const rules = compileEgressRules({
    allow: ['*.test'],
    deny: [],
    allowPrivate: [`127.0.0.1:${up.httpPort}`, `127.0.0.1:${up.httpsPort}`, `127.0.0.1:${bannerPort}`],
  });
  const live = liveCredentials(
    compileCredentials({ T: { from: { env: 'T' }, hosts: ['allowed.test'] } }, rules),
    new Map([['T', VALUE]]),
  );
  placeholder = live[0]!.placeholder;
  caDir = mkdtempSync(join(tmpdir(), 'sbx-intercept-'));
  // The harness's upstream certificate is self-signed: it is its own root here.
  const credentials = openCredentialBroker({ live, trust: { roots: CERT.toString(), extra: [] }, sessionDir: caDir });
  t = await startTestProxy(up, { rules, timeouts: { helloMs: 300 }, credentials });
  caPem = readFileSync(join(caDir, 'ca', 'ca.pem'), 'utf8');
});
afterAll(async () => {
  await t?.close();
  await up?.close();
  banner?.close();
  if (caDir) rmSync(caDir, { recursive: true, force: true });
});

/** A TLS session through a CONNECT tunnel to `authority`, trusting the run's CA. */
async function tunnelTls(
  authority: string,
  options: { servername?: string; alpn?: string[] } = {},
): Promise<TLSSocket> {
  const { status, socket } = await proxyConnect(t.proxy.httpSocket, authority);
  expect(status).toBe(200);
  const tls = tlsConnect({
    socket,
    ca: caPem,
    servername: options.servername ?? authority.split(':')[0],
    ALPNProtocols: options.alpn ?? ['http/1.1'],
  });
  tls.on('error', () => undefined);
  await once(tls, 'secureConnect');
  return tls;
}

/** One kept-alive connection: every request of this agent goes over `tls`. */
function agentOver(tls: TLSSocket): Agent {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  Object.assign(agent, { createConnection: () => tls });
  return agent;
}

async function get(
  agent: Agent,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
  target = `allowed.test:${up.httpsPort}`,
): Promise<{ status: number; body: string }> {
  const [host, port] = target.split(':');
  const req = httpRequest({ agent, host, port, method: body ? 'POST' : 'GET', path, headers });
  req.end(body);
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  let text = '';
  for await (const c of res) text += String(c);
  return { status: res.statusCode ?? 0, body: text };
}

const violations = () => t.proxy.stats().violations;

describe('credential hosts: TLS terminated, the value put in', () => {
  it('HTTP/1.1: each request of a kept-alive connection gets the value, over one upstream connection', async () => {
    const seen = up.seen.length;
    const opens = t.events.filter((e) => e.kind === 'open').length;
    const tls = await tunnelTls(`allowed.test:${up.httpsPort}`);
    const agent = agentOver(tls);
    const auth = { authorization: `Bearer ${placeholder}` };
    expect(await get(agent, '/hello', auth)).toEqual({
      status: 200,
      body: `https hello from allowed.test:${up.httpsPort}\n`,
    });
    expect((await get(agent, '/hello', auth)).status).toBe(200);
    tls.destroy();
    expect(up.seen.slice(seen).map((r) => r.headers.authorization)).toEqual([`Bearer ${VALUE}`, `Bearer ${VALUE}`]);
    expect(t.events.filter((e) => e.kind === 'open').length - opens).toBe(1);
  });

  it('HTTP/2: concurrent streams, each with the value', async () => {
    const seen = up.seen.length;
    const tls = await tunnelTls(`allowed.test:${up.httpsPort}`, { alpn: ['h2'] });
    expect(tls.alpnProtocol).toBe('h2');
    const session = http2Connect(`https://allowed.test:${up.httpsPort}`, { createConnection: () => tls });
    const one = (path: string) =>
      new Promise<number>((resolve) => {
        const s = session.request({ ':path': path, authorization: `token ${placeholder}` });
        s.on('response', (h) => resolve(Number(h[':status'])));
        s.resume();
      });
    expect(await Promise.all([one('/hello'), one('/hello'), one('/hello')])).toEqual([200, 200, 200]);
    session.close();
    expect(up.seen.slice(seen).map((r) => r.headers.authorization)).toEqual(Array(3).fill(`token ${VALUE}`));
  });

  it('refuses a request naming another host inside the tunnel (network.host); the same request to the target passes (control)', async () => {
    const tls = await tunnelTls(`allowed.test:${up.httpsPort}`);
    const agent = agentOver(tls);
    const before = violations().length;
    expect((await get(agent, '/hello', {}, undefined, `other.test:${up.httpsPort}`)).status).toBe(403);
    expect(violations().slice(before)).toEqual([
      expect.objectContaining({ kind: 'network', rule: 'network.host', host: 'allowed.test' }),
    ]);
    expect((await get(agent, '/hello', {})).status).toBe(200);
    tls.destroy();
  });

  it('refuses a placeholder at the end of a 2 MiB body sent to a host where it is out of place; a clean body passes (control)', async () => {
    // allowed.test is T's host: its placeholder in a body there is the user's own request. Another
    // credential-free host, reached in cleartext, is where it is out of place.
    const big = Buffer.alloc(2 * 1024 * 1024, 0x61);
    const { socket } = await proxyConnect(t.proxy.httpSocket, `other.test:${up.httpPort}`);
    const clean = await get(agentOver(socket as TLSSocket), '/echo', {}, big, `other.test:${up.httpPort}`);
    expect(clean).toEqual({ status: 200, body: big.toString() });
    socket.destroy();
    const before = violations().length;
    const leaky = Buffer.concat([big, Buffer.from(placeholder)]);
    const { socket: again } = await proxyConnect(t.proxy.httpSocket, `other.test:${up.httpPort}`);
    const closed = once(again, 'close');
    again.write(`POST /echo HTTP/1.1\r\nHost: other.test\r\nContent-Length: ${leaky.length}\r\n\r\n`);
    again.write(leaky);
    again.resume();
    await closed;
    expect(violations().slice(before)).toEqual([
      expect.objectContaining({
        kind: 'credential',
        rule: 'credential.host',
        host: 'other.test',
        detail: expect.stringContaining('a cleartext stream'),
      }),
    ]);
  });

  it('refuses an upgrade (a WebSocket would leave HTTP)', async () => {
    const tls = await tunnelTls(`allowed.test:${up.httpsPort}`);
    tls.write(
      `GET /ws HTTP/1.1\r\nHost: allowed.test:${up.httpsPort}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
    );
    expect((await readBytes(tls, 12)).toString()).toBe('HTTP/1.1 501');
    tls.destroy();
  });
});

describe('credential hosts: what stays a tunnel', () => {
  it('bytes that are not TLS pass as a tunnel (searched: a placeholder in cleartext to its own host is refused)', async () => {
    const { socket } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.httpPort}`);
    socket.write(`GET /hello HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n`);
    expect((await readBytes(socket, 15)).toString()).toBe('HTTP/1.1 200 OK');
    socket.destroy();
    const before = violations().length;
    const { socket: leaky } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.httpPort}`);
    const closed = once(leaky, 'close');
    leaky.write(`GET /hello HTTP/1.1\r\nHost: allowed.test\r\nAuthorization: Bearer ${placeholder}\r\n\r\n`);
    leaky.resume();
    await closed;
    expect(violations().slice(before)).toEqual([
      expect.objectContaining({ rule: 'credential.plaintext', host: 'allowed.test' }),
    ]);
  });

  it('a server that speaks first is reached once the client has been silent for the hello timeout', async () => {
    const { socket } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${bannerPort}`);
    expect((await readBytes(socket as Socket, 16)).toString()).toBe('SSH-2.0-banner\r\n');
    socket.destroy();
  });

  it('a placeholder spelled in the name to dial is refused before any lookup; the plain name is dialled (control)', async () => {
    const before = violations().length;
    const dials = t.dials.length;
    const leaky = await proxyConnect(t.proxy.httpSocket, `${placeholder.toLowerCase()}.other.test:${up.httpsPort}`);
    expect(leaky.status).toBe(403);
    expect(t.dials.length).toBe(dials);
    expect(violations().slice(before)).toEqual([
      expect.objectContaining({
        kind: 'credential',
        rule: 'credential.host',
        detail: expect.stringContaining('the host name'),
      }),
    ]);
    const plain = await proxyConnect(t.proxy.httpSocket, `other.test:${up.httpsPort}`);
    expect(plain.status).toBe(200);
    plain.socket.destroy();
  });

  it('a ClientHello naming another host is refused before any interception (network.sni)', async () => {
    const { socket } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.httpsPort}`);
    const before = violations().length;
    const tls = tlsConnect({ socket, ca: caPem, servername: 'other.test' });
    const failed = await new Promise<string>((resolve) => tls.on('error', (e) => resolve(e.message)));
    expect(failed).toMatch(/alert access denied/);
    expect(violations().slice(before)).toEqual([expect.objectContaining({ rule: 'network.sni' })]);
  });
});
