// Cleartext HTTP inside a tunnel (docs/DESIGN.md, "Plaintext in a tunnel"): each request's Host must
// be the tunnel's name, on CONNECT, SOCKS and captured tunnels alike. The upstream serves any Host it
// is sent (the control shows it serving other.test when reached directly), so a refusal here is the
// proxy's, and the upstream never sees the request.
import { once } from 'node:events';
import { connect as netConnect, type Socket } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  drain,
  proxyConnect,
  readBytes,
  socksConnect,
  startTestProxy,
  startUpstreams,
  type TestProxy,
  type Upstreams,
} from './harness.js';

let up: Upstreams;
let t: TestProxy;

beforeAll(async () => {
  up = await startUpstreams();
  t = await startTestProxy(up);
});
afterAll(async () => {
  await t?.close();
  await up?.close();
});

let violationsBefore = 0;
let seenBefore = 0;
beforeEach(() => {
  violationsBefore = t.proxy.stats().violations.length;
  seenBefore = up.seen.length;
});
const newViolations = () => t.proxy.stats().violations.slice(violationsBefore);
const newSeen = () => up.seen.slice(seenBefore);

const request = (host: string, close = true): string =>
  `GET /hello HTTP/1.1\r\nHost: ${host}\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;

/** One keep-alive response of the upstream's /hello, up to the end of its one-line greeting. */
async function readResponse(socket: Socket): Promise<string> {
  let text = '';
  while (!/hello from [^\n]*\n/.test(text)) text += (await readBytes(socket, 1)).toString('latin1');
  return text;
}

describe('a CONNECT tunnel carrying HTTP', () => {
  it('control: the upstream, reached directly, serves a request for other.test', async () => {
    const direct = netConnect({ host: '127.0.0.1', port: up.httpPort });
    await once(direct, 'connect');
    direct.write(request('other.test'));
    expect((await drain(direct)).toString()).toContain('http hello from other.test');
  });

  it('serves a request for the tunnel name', async () => {
    const { status, socket } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.httpPort}`);
    expect(status).toBe(200);
    socket.write(request(`allowed.test:${up.httpPort}`));
    expect((await drain(socket)).toString()).toContain(`http hello from allowed.test:${up.httpPort}`);
    expect(newViolations()).toEqual([]);
  });

  it('refuses a request whose Host names another host: 403, a violation, nothing reaches the upstream', async () => {
    const { status, socket } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.httpPort}`);
    expect(status).toBe(200);
    socket.write(request('other.test'));
    const reply = (await drain(socket)).toString();
    expect(reply).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
    expect(reply).toContain('network.host');
    expect(newViolations()).toEqual([
      {
        phase: 'runtime',
        kind: 'network',
        rule: 'network.host',
        detail: `Host header names another host than the tunnel's allowed.test:${up.httpPort}`,
        host: 'allowed.test',
        port: up.httpPort,
      },
    ]);
    expect(newSeen()).toEqual([]);
  });

  it('checks every request of a keep-alive tunnel: the first served, the second (another host) refused', async () => {
    const { socket } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.httpPort}`);
    socket.write(request('allowed.test', false));
    expect(await readResponse(socket)).toContain('http hello from allowed.test');
    socket.write(request('other.test'));
    expect((await drain(socket)).toString()).toContain('403 Forbidden');
    expect(newSeen().map((s) => s.headers.host)).toEqual(['allowed.test']);
    expect(newViolations()).toEqual([expect.objectContaining({ rule: 'network.host', host: 'allowed.test' })]);
  });

  it('finds a request hidden behind a body (Content-Length framing), where a first-request check would not', async () => {
    const { socket } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.httpPort}`);
    const body = 'ping';
    socket.write(
      `POST /echo HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: ${body.length}\r\n\r\n${body}${request('other.test')}`,
    );
    const reply = (await drain(socket)).toString();
    expect(reply).toContain('403 Forbidden');
    expect(newSeen().every((s) => s.headers.host === 'allowed.test')).toBe(true);
    expect(newViolations()).toEqual([expect.objectContaining({ rule: 'network.host' })]);
  });
});

describe('a SOCKS tunnel carrying HTTP', () => {
  it('is checked the same way', async () => {
    const ok = await socksConnect(t.proxy.socksSocket, { domain: 'allowed.test' }, up.httpPort);
    ok.socket.write(request('allowed.test'));
    expect((await drain(ok.socket)).toString()).toContain('http hello from allowed.test');
    const bad = await socksConnect(t.proxy.socksSocket, { domain: 'allowed.test' }, up.httpPort);
    bad.socket.write(request('other.test'));
    expect((await drain(bad.socket)).toString()).toContain('403 Forbidden');
    expect(newViolations()).toEqual([expect.objectContaining({ rule: 'network.host', host: 'allowed.test' })]);
    expect(newSeen().map((s) => s.headers.host)).toEqual(['allowed.test']);
  });
});
