// The egress proxy end to end over its unix sockets, with Node clients: plain HTTP, CONNECT (+TLS) and
// SOCKS5. Each refusal is checked three ways: the client's answer, the violation recorded, and the
// counting dialler showing whether a TCP connection was attempted at all.
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  CERT,
  drain,
  proxyConnect,
  proxyGet,
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
let dialsBefore = 0;
beforeEach(() => {
  violationsBefore = t.proxy.stats().violations.length;
  dialsBefore = t.dials.length;
});
const newViolations = () => t.proxy.stats().violations.slice(violationsBefore);
const newDials = () => t.dials.slice(dialsBefore);

/** TLS over an established tunnel; resolves with the first response, rejects on a TLS failure. */
async function httpsOver(socket: Socket, servername: string, path = '/'): Promise<string> {
  const tls = tlsConnect({ socket, servername, ca: CERT });
  await once(tls, 'secureConnect');
  tls.write(`GET ${path} HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`);
  return (await drain(tls as unknown as Socket)).toString();
}

/** The ClientHello node:tls would send for `servername`, captured without a socket. */
function captureHello(options: ConnectionOptions): Promise<Buffer> {
  return new Promise((resolve) => {
    const wire = new Duplex({
      read() {},
      write(chunk: Buffer, _e, done) {
        done();
        resolve(chunk);
        setImmediate(() => socket.destroy());
      },
    });
    const socket = tlsConnect({ ...options, socket: wire });
    socket.on('error', () => undefined);
  });
}

describe('plain HTTP (absolute URI)', () => {
  it('forwards to an allowed name with Host set, hop-by-hop and Proxy-Authorization stripped', async () => {
    const r = await proxyGet(t.proxy.httpSocket, `http://allowed.test:${up.httpPort}/hello?token=SECRET-QUERY`, {
      headers: {
        Host: `allowed.test:${up.httpPort}`,
        'Proxy-Authorization': 'Basic U0VDUkVULUFVVEg=',
        Connection: 'keep-alive, X-Hop',
        'X-Hop': 'dropped',
        'Keep-Alive': 'timeout=5',
        'X-End': 'kept',
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe(`http hello from allowed.test:${up.httpPort}\n`);
    const seen = up.seen.at(-1)!;
    expect(seen.url).toBe('/hello?token=SECRET-QUERY');
    expect(seen.headers.host).toBe(`allowed.test:${up.httpPort}`);
    expect(seen.headers['proxy-authorization']).toBeUndefined();
    expect(seen.headers['x-hop']).toBeUndefined();
    expect(seen.headers['keep-alive']).toBeUndefined();
    expect(seen.headers['x-end']).toBe('kept');
    expect(seen.headers.connection).toBe('close');
    expect(r.headers['x-upstream']).toBe('http');
    expect(newDials()).toEqual([['127.0.0.1', up.httpPort]]);
    expect(newViolations()).toEqual([]);
  });

  it('adds Host when the client sent none, and drops userinfo from the URI', async () => {
    const r = await proxyGet(t.proxy.httpSocket, `http://user:SECRET-PASS@allowed.test:${up.httpPort}/x`, {
      headers: { Host: '' },
    });
    // node:http sends an empty Host header as given; an empty Host differs from the URI.
    expect(r.status).toBe(403);
    const r2 = await proxyGet(t.proxy.httpSocket, `http://user:SECRET-PASS@allowed.test:${up.httpPort}/x`);
    expect(r2.status).toBe(200);
    expect(up.seen.at(-1)!.headers.host).toBe(`allowed.test:${up.httpPort}`);
    expect(up.seen.at(-1)!.headers.authorization).toBeUndefined();
    expect(up.seen.at(-1)!.url).toBe('/x');
  });

  it('streams a request body both ways (chunked, 4 MiB)', async () => {
    const parts = Array.from({ length: 64 }, (_, i) => Buffer.alloc(64 * 1024, i));
    const r = await proxyGet(t.proxy.httpSocket, `http://allowed.test:${up.httpPort}/echo`, {
      method: 'POST',
      body: parts,
    });
    expect(r.status).toBe(200);
    expect(r.body.equals(Buffer.concat(parts))).toBe(true);
  });

  it('refuses a denied name with 403 naming the rule, one violation, and no dial', async () => {
    const r = await proxyGet(t.proxy.httpSocket, `http://denied.test:${up.httpPort}/?q=SECRET-QUERY`);
    expect(r.status).toBe(403);
    expect(r.body.toString()).toContain('network.deny');
    expect(newViolations()).toEqual([
      {
        phase: 'runtime',
        kind: 'network',
        rule: 'network.deny',
        detail: `denied.test:${up.httpPort} matches network.deny "denied.test"`,
        host: 'denied.test',
        port: up.httpPort,
        source: { key: 'network.deny[0]' },
      },
    ]);
    expect(newDials()).toEqual([]);
  });

  it.each([
    ['meta.test', '169.254.169.254', 'metadata', () => 80],
    ['ten.test', '10.0.0.1', 'private', () => 80],
    // 127.0.0.1 on this port is allowed; the second address is not, and fails the whole name.
    ['rebind.test', '10.0.0.1', 'private', () => up.httpPort],
  ])('refuses %s (resolves to %s) without dialling anything', async (name, address, cls, port) => {
    const r = await proxyGet(t.proxy.httpSocket, `http://${name}:${port()}/`);
    expect(r.status).toBe(403);
    expect(newViolations()).toEqual([
      {
        phase: 'runtime',
        kind: 'network',
        rule: 'network.private',
        detail: `${name}: ${address}:${port()} is a ${cls} address, not in network.allow_private`,
        host: name,
        port: port(),
      },
    ]);
    expect(newDials()).toEqual([]);
  });

  it('refuses an allowed name on a loopback port allow_private does not list; nothing reaches that port', async () => {
    const r = await proxyGet(t.proxy.httpSocket, `http://allowed.test:${up.forbiddenPort}/`);
    expect(r.status).toBe(403);
    expect(newViolations()[0]).toMatchObject({ rule: 'network.private', host: 'allowed.test', port: up.forbiddenPort });
    expect(newDials()).toEqual([]);
    expect(up.forbiddenConnections()).toBe(0);
  });

  it('refuses a Host header naming another host than the URI', async () => {
    const r = await proxyGet(t.proxy.httpSocket, `http://allowed.test:${up.httpPort}/`, {
      headers: { Host: 'other.test' },
    });
    expect(r.status).toBe(403);
    expect(newViolations()).toEqual([
      expect.objectContaining({ rule: 'network.host', host: 'allowed.test', port: up.httpPort }),
    ]);
    expect(newDials()).toEqual([]);
  });

  it.each([
    ['an origin-form target', '/hello'],
    ['an https URI (needs CONNECT)', 'https://allowed.test/'],
  ])('answers 400 to %s', async (_what, target) => {
    const r = await proxyGet(t.proxy.httpSocket, target, { headers: { Host: 'allowed.test' } });
    expect(r.status).toBe(400);
    expect(newDials()).toEqual([]);
  });

  it('answers 502 to a name that does not resolve, without a violation', async () => {
    const r = await proxyGet(t.proxy.httpSocket, 'http://nxdomain.test/');
    expect(r.status).toBe(502);
    expect(newViolations()).toEqual([]);
  });

  it('treats a non-canonical IPv4 form as a name (not in the map: unresolvable, never 127.0.0.1)', async () => {
    const r = await proxyGet(t.proxy.httpSocket, `http://127.1:${up.httpPort}/`, {
      headers: { Host: `127.1:${up.httpPort}` },
    });
    expect(r.status).toBe(403); // 127.1 matches no allow pattern: "127.0.0.1:port" is a literal, not a prefix
    expect(newViolations()[0]).toMatchObject({ rule: 'network.allow', host: '127.1' });
    expect(newDials()).toEqual([]);
  });

  it('never records a path, query, userinfo or header value', async () => {
    const text = JSON.stringify([t.proxy.stats(), t.events]);
    expect(text).not.toMatch(/SECRET|hello\?|U0VDUkVU/);
  });
});

describe('CONNECT', () => {
  it('tunnels TLS to an allowed name with a matching SNI', async () => {
    const { status, socket } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.httpsPort}`);
    expect(status).toBe(200);
    const before = up.httpsHandshakes();
    expect(await httpsOver(socket, 'allowed.test')).toContain('https hello from allowed.test');
    expect(up.httpsHandshakes()).toBe(before + 1);
    expect(newViolations()).toEqual([]);
  });

  it('refuses a denied name with 403 and no dial', async () => {
    const { status, body } = await proxyConnect(t.proxy.httpSocket, `denied.test:${up.httpsPort}`);
    expect(status).toBe(403);
    expect(body).toContain('network.deny');
    expect(newViolations()).toHaveLength(1);
    expect(newDials()).toEqual([]);
  });

  it.each(['meta.test:443', 'ten.test:443', '10.0.0.1:443', '[::ffff:10.0.0.1]:443'])(
    'refuses %s before any dial',
    async (target) => {
      const { status } = await proxyConnect(t.proxy.httpSocket, target);
      expect(status).toBe(403);
      expect(newViolations()).toHaveLength(1);
      expect(newDials()).toEqual([]);
    },
  );

  it('refuses a ClientHello whose SNI names another host, before the server sees a handshake', async () => {
    const { status, socket } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.httpsPort}`);
    expect(status).toBe(200);
    const before = up.httpsHandshakes();
    await expect(httpsOver(socket, 'denied.test')).rejects.toThrow(/access denied/i);
    expect(up.httpsHandshakes()).toBe(before);
    expect(newViolations()).toEqual([
      {
        phase: 'runtime',
        kind: 'network',
        rule: 'network.sni',
        detail: `TLS server name denied.test differs from tunnel target allowed.test:${up.httpsPort}`,
        host: 'allowed.test',
        port: up.httpsPort,
      },
    ]);
  });

  it('reassembles a ClientHello written one byte at a time, then passes it on', async () => {
    const hello = await captureHello({ servername: 'ALLOWED.test.' });
    const { socket } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.httpsPort}`);
    for (const byte of hello) {
      await new Promise<void>((r) => socket.write(Buffer.from([byte]), () => r()));
    }
    const first = await readBytes(socket, 1);
    expect(first[0]).toBe(0x16); // the server's handshake record: the hello got through
    socket.destroy();
    expect(newViolations()).toEqual([]);
  });

  it('refuses a mismatching ClientHello split over writes with a TLS access_denied alert', async () => {
    const hello = await captureHello({ servername: 'other.test' });
    const { socket } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.httpsPort}`);
    const half = Math.floor(hello.length / 2);
    await new Promise<void>((r) => socket.write(hello.subarray(0, half), () => r()));
    socket.write(hello.subarray(half));
    expect([...(await drain(socket))]).toEqual([0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x31]);
    expect(newViolations()).toEqual([expect.objectContaining({ rule: 'network.sni', host: 'allowed.test' })]);
  });

  it('passes a non-TLS protocol through untouched', async () => {
    const { socket } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.httpPort}`);
    socket.write(`GET /hello HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n`);
    expect((await drain(socket)).toString()).toContain('http hello from allowed.test');
  });

  it('counts the bytes of a tunnel per destination', async () => {
    const before = t.proxy.stats().connections.find((c) => c.host === 'allowed.test' && c.port === up.httpPort);
    const { socket } = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.httpPort}`);
    socket.write(`GET /big?bytes=${1 << 20} HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n`);
    const got = await drain(socket);
    expect(got.length).toBeGreaterThan(1 << 20);
    await new Promise((r) => setImmediate(r));
    const after = t.proxy.stats().connections.find((c) => c.host === 'allowed.test' && c.port === up.httpPort)!;
    expect(after.count).toBe((before?.count ?? 0) + 1);
    expect(after.bytesIn - (before?.bytesIn ?? 0)).toBe(got.length);
    expect(after.bytesOut - (before?.bytesOut ?? 0)).toBeGreaterThan(40);
  });
});

describe('SOCKS5', () => {
  it('connects by name (ATYP domain) and carries HTTP', async () => {
    const { code, socket } = await socksConnect(t.proxy.socksSocket, { domain: 'allowed.test' }, up.httpPort);
    expect(code).toBe(0x00);
    socket.write(`GET /hello HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n`);
    expect((await drain(socket)).toString()).toContain('http hello from allowed.test');
    expect(newDials()).toEqual([['127.0.0.1', up.httpPort]]);
  });

  it('carries TLS and checks its SNI like CONNECT', async () => {
    const ok = await socksConnect(t.proxy.socksSocket, { domain: 'allowed.test' }, up.httpsPort);
    expect(await httpsOver(ok.socket, 'allowed.test')).toContain('https hello');
    const bad = await socksConnect(t.proxy.socksSocket, { domain: 'allowed.test' }, up.httpsPort);
    await expect(httpsOver(bad.socket, 'other.test')).rejects.toThrow(/access denied/i);
    expect(newViolations()).toEqual([expect.objectContaining({ rule: 'network.sni' })]);
  });

  it.each([
    ['denied.test by name', { domain: 'denied.test' }, 'network.deny'],
    ['meta.test by name', { domain: 'meta.test' }, 'network.private'],
    ['ten.test by name', { domain: 'ten.test' }, 'network.private'],
    ['10.0.0.1 as ATYP IPv4 (allowed by name, private by address)', { ipv4: [10, 0, 0, 1] }, 'network.private'],
    ['::1 as ATYP IPv6 (allowed by name, loopback by address)', { ipv6: [...Array(15).fill(0), 1] }, 'network.private'],
    ['127.0.0.2 as ATYP IPv4 (no allow pattern)', { ipv4: [127, 0, 0, 2] }, 'network.allow'],
  ] as const)('answers 0x02 to %s, with one violation and no dial', async (_what, address, rule) => {
    const { code, socket } = await socksConnect(t.proxy.socksSocket, address, 443);
    expect(code).toBe(0x02);
    socket.destroy();
    expect(newViolations()).toEqual([expect.objectContaining({ rule, port: 443 })]);
    expect(newDials()).toEqual([]);
  });

  it('decides an ATYP IPv4 literal on the literal itself', async () => {
    const { code, socket } = await socksConnect(t.proxy.socksSocket, { ipv4: [127, 0, 0, 1] }, up.httpPort);
    expect(code).toBe(0x00);
    socket.destroy();
  });

  it('answers 0x07 to BIND and 0x04 to an unresolvable name', async () => {
    expect((await socksConnect(t.proxy.socksSocket, { domain: 'allowed.test' }, 80, 0x02)).code).toBe(0x07);
    expect((await socksConnect(t.proxy.socksSocket, { domain: 'nxdomain.test' }, 80)).code).toBe(0x04);
    expect(newDials()).toEqual([]);
  });

  it('offers no method to a client without no-auth', async () => {
    const socket = netConnect({ path: t.proxy.socksSocket });
    socket.write(Buffer.from([0x05, 0x01, 0x02]));
    expect([...(await drain(socket))]).toEqual([0x05, 0xff]);
  });
});

describe('lifecycle', () => {
  it('close() ends open tunnels, stops listening and removes both socket files', async () => {
    const own = await startTestProxy(up);
    const { socket } = await proxyConnect(own.proxy.httpSocket, `allowed.test:${up.httpPort}`);
    const idle = netConnect({ path: own.proxy.socksSocket });
    await once(idle, 'connect');
    expect(existsSync(own.proxy.httpSocket) && existsSync(own.proxy.socksSocket)).toBe(true);
    const closed = Promise.all([once(socket, 'close'), once(idle, 'close')]);
    await own.proxy.close();
    await closed;
    expect(existsSync(own.proxy.httpSocket)).toBe(false);
    expect(existsSync(own.proxy.socksSocket)).toBe(false);
    await own.close(); // idempotent
  });

  it('ends a tunnel whose ClientHello never completes (hello timeout) and records it', async () => {
    const own = await startTestProxy(up, { timeouts: { helloMs: 50 } });
    const hello = await captureHello({ servername: 'allowed.test' });
    const { socket } = await proxyConnect(own.proxy.httpSocket, `allowed.test:${up.httpsPort}`);
    socket.write(hello.subarray(0, 20));
    expect([...(await drain(socket))]).toEqual([0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x31]);
    expect(own.proxy.stats().violations).toEqual([
      expect.objectContaining({ rule: 'network.sni', detail: expect.stringContaining('not complete') }),
    ]);
    await own.close();
  });

  it('ends an idle tunnel (idle timeout)', async () => {
    const own = await startTestProxy(up, { timeouts: { idleMs: 50 } });
    const { socket } = await proxyConnect(own.proxy.httpSocket, `allowed.test:${up.httpPort}`);
    await once(socket, 'close');
    await own.close();
  });

  it('closes client connections beyond maxConnections on accept', async () => {
    const own = await startTestProxy(up, { maxConnections: 1 });
    const first = netConnect({ path: own.proxy.socksSocket });
    await once(first, 'connect');
    const second = netConnect({ path: own.proxy.socksSocket });
    let answered = 0;
    second.on('error', () => undefined);
    second.on('data', (c: Buffer) => (answered += c.length));
    const closed = new Promise((r) => second.on('close', r)); // not once(): it rejects on EPIPE
    second.write(Buffer.from([0x05, 0x01, 0x00]));
    await closed;
    expect(answered).toBe(0); // closed unanswered
    first.write(Buffer.from([0x05, 0x01, 0x00]));
    expect([...(await readBytes(first, 2))]).toEqual([0x05, 0x00]); // the first is served
    first.destroy();
    await own.close();
  });

  it('refuses to start on a socket path that is already taken', async () => {
    await expect(startTestProxy(up, { socketDir: t.dir })).rejects.toMatchObject({ code: 'SANDBOX_SETUP' });
  });
});
