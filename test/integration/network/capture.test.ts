// Captured connections on the real proxy (docs/DESIGN.md, "Transparent capture"): a client speaks the
// judge's preamble (`CONNECT IP:PORT` + `X-Sbx-Capture: 1`) over the proxy's socket, as native/'s judge
// does for a command's connect(). Port 53 is sbx's DNS over TCP; a pool address is its name; an
// address the host's hosts file gives one allowed name is that name; anything else is refused. The
// preamble is no privilege: each refusal is checked against what a plain CONNECT gets.
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RESOLVER_ADDRESS } from '../../../src/network/address-pool.js';
import type { NetworkRequest } from '../../../src/network/network-asks.js';
import { egressQuestions } from '../../../src/network/host/egress-questions.js';
import { dnsQuery, QUERY_ID, readDnsResponse } from '../../helpers/dns-query.js';
import {
  CERT,
  NAMES,
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
let hostsDir: string;

beforeAll(async () => {
  up = await startUpstreams();
  hostsDir = mkdtempSync(join(tmpdir(), 'sbx-capture-hosts-'));
  const hostsFile = join(hostsDir, 'hosts');
  // 127.0.0.1 has names the rules refuse (localhost) and one they allow; 127.0.0.2 only refused ones.
  writeFileSync(hostsFile, '127.0.0.1 localhost allowed.test\n127.0.0.2 localhost2 localhost3\n10.0.0.1 intranet\n');
  t = await startTestProxy(up, { hostsFile });
});
afterAll(async () => {
  await t?.close();
  await up?.close();
  if (hostsDir) rmSync(hostsDir, { recursive: true, force: true });
});

let violationsBefore = 0;
let dialsBefore = 0;
beforeEach(() => {
  violationsBefore = t.proxy.stats().violations.length;
  dialsBefore = t.dials.length;
});
const newViolations = () => t.proxy.stats().violations.slice(violationsBefore);
const newDials = () => t.dials.slice(dialsBefore);

/** The judge's preamble, and the response head it reads; the socket is the tunnel when the status is 200. */
async function captured(
  authority: string,
  header = 'X-Sbx-Capture: 1\r\n',
  proxySocket = t.proxy.httpSocket,
): Promise<{ status: number; socket: Socket; body: string }> {
  const socket = netConnect({ path: proxySocket });
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${header}\r\n`);
  let head = '';
  while (!head.endsWith('\r\n\r\n')) head += (await readBytes(socket, 1)).toString('latin1');
  const status = Number(head.split(' ')[1]);
  const body = status === 200 ? '' : (await drain(socket)).toString();
  return { status, socket, body };
}

/** Queries over one captured DNS connection, answered in order. */
async function resolveOver(socket: Socket, queries: Buffer[]): Promise<ReturnType<typeof readDnsResponse>[]> {
  for (const q of queries) socket.write(Buffer.concat([Buffer.from([q.length >> 8, q.length & 0xff]), q]));
  const out: ReturnType<typeof readDnsResponse>[] = [];
  for (const _ of queries) {
    const length = (await readBytes(socket, 2)).readUInt16BE(0);
    out.push(readDnsResponse(await readBytes(socket, length)));
  }
  return out;
}

async function lookup(
  name: string,
  type = 1,
  proxySocket = t.proxy.httpSocket,
): Promise<ReturnType<typeof readDnsResponse>> {
  const { status, socket } = await captured(`${RESOLVER_ADDRESS}:53`, undefined, proxySocket);
  expect(status).toBe(200);
  const [answer] = await resolveOver(socket, [dnsQuery(name, type)]);
  socket.end();
  return answer as ReturnType<typeof readDnsResponse>;
}

/** A plain HTTP/1.1 request over a tunnel; the whole response, the server closing after it. */
async function getOver(socket: Socket, host: string): Promise<string> {
  socket.write(`GET /hello HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  return (await drain(socket)).toString();
}

describe('DNS over TCP on a captured port 53', () => {
  it('answers an allowed name with a pool address, the same one each time, and AAAA with no record', async () => {
    const { status, socket } = await captured(`${RESOLVER_ADDRESS}:53`);
    expect(status).toBe(200);
    const [a, again, aaaa] = await resolveOver(socket, [
      dnsQuery('Allowed.Test', 1),
      dnsQuery('ALLOWED.test', 1, { opt: true }),
      dnsQuery('allowed.test', 28),
    ]);
    socket.end();
    expect(a).toEqual({ id: QUERY_ID, rcode: 0, addresses: [expect.stringMatching(/^198\.1[89]\./)] });
    expect(again?.addresses).toEqual(a?.addresses);
    expect(aaaa).toEqual({ id: QUERY_ID, rcode: 0, addresses: [] });
    expect(newViolations()).toEqual([]);
    expect(newDials()).toEqual([]);
  });

  it('answers a denied name NXDOMAIN with one violation naming the rule, however often it is asked', async () => {
    const { socket } = await captured('127.0.0.53:53');
    const answers = await resolveOver(socket, [
      dnsQuery('denied.test', 1),
      dnsQuery('denied.test', 28),
      dnsQuery('DENIED.test', 1),
    ]);
    socket.end();
    expect(answers.map((a) => a.rcode)).toEqual([3, 3, 3]);
    expect(newViolations()).toEqual([
      {
        phase: 'runtime',
        kind: 'network',
        rule: 'network.deny',
        detail: 'denied.test matches network.deny "denied.test" (a name lookup: answered NXDOMAIN)',
        host: 'denied.test',
        source: { key: 'network.deny[0]' },
      },
    ]);
    expect(newDials()).toEqual([]);
  });

  it('answers a name the allow-list does not hold NXDOMAIN, with a violation', async () => {
    expect((await lookup('registry.example')).rcode).toBe(3);
    expect(newViolations()).toEqual([
      expect.objectContaining({
        rule: 'network.allow',
        host: 'registry.example',
        detail: expect.stringContaining('not in network.allow'),
      }),
    ]);
  });

  it('answers FORMERR to a malformed query and keeps serving the connection', async () => {
    const { socket } = await captured(`${RESOLVER_ADDRESS}:53`);
    const [bad, good] = await resolveOver(socket, [
      dnsQuery('x.test', 1, { counts: [2, 0, 0, 0] }),
      dnsQuery('other.test', 1),
    ]);
    socket.end();
    expect(bad?.rcode).toBe(1);
    expect(good?.rcode).toBe(0);
  });

  it('answers queries sent all at once with the sending side closed, then closes', async () => {
    const { socket } = await captured(`${RESOLVER_ADDRESS}:53`);
    const queries = [dnsQuery('a.test', 1), dnsQuery('b.test', 1), dnsQuery('denied.test', 1)];
    socket.end(Buffer.concat(queries.map((q) => Buffer.concat([Buffer.from([0, q.length]), q]))));
    const stream = await drain(socket);
    const answers: number[] = [];
    for (let at = 0; at < stream.length; at += 2 + stream.readUInt16BE(at))
      answers.push(readDnsResponse(stream.subarray(at + 2, at + 2 + stream.readUInt16BE(at))).rcode);
    expect(answers).toEqual([0, 0, 3]);
  });

  it('closes a connection whose length prefix is past the largest query, answering FORMERR', async () => {
    const { socket } = await captured(`${RESOLVER_ADDRESS}:53`);
    socket.write(Buffer.from([0xff, 0xff, 0x12, 0x34]));
    const reply = await drain(socket);
    expect(reply.readUInt16BE(0)).toBe(12);
    expect(readDnsResponse(reply.subarray(2)).rcode).toBe(1);
  });
});

describe('a captured connect', () => {
  it('to the pool address of an allowed name reaches the name, as a CONNECT to it does (SSRF check, dial)', async () => {
    const [address] = (await lookup('allowed.test')).addresses;
    const { status, socket } = await captured(`${address}:${up.httpPort}`);
    expect(status).toBe(200);
    expect(await getOver(socket, 'allowed.test')).toContain(`http hello from allowed.test`);
    expect(newDials()).toEqual([['127.0.0.1', up.httpPort]]);
    expect(t.proxy.stats().connections).toContainEqual(
      expect.objectContaining({ host: 'allowed.test', port: up.httpPort }),
    );
    expect(newViolations()).toEqual([]);
  });

  it('to a pool address checks the Host of cleartext HTTP against the name', async () => {
    const [address] = (await lookup('allowed.test')).addresses;
    const { socket } = await captured(`${address}:${up.httpPort}`);
    const reply = await getOver(socket, 'other.test');
    expect(reply).toMatch(/^HTTP\/1\.1 403 Forbidden/);
    expect(newViolations()).toEqual([
      expect.objectContaining({ rule: 'network.host', host: 'allowed.test', port: up.httpPort }),
    ]);
  });

  it('to a pool address checks SNI against the name, as a CONNECT does', async () => {
    const [address] = (await lookup('allowed.test')).addresses;
    const good = await captured(`${address}:${up.httpsPort}`);
    const tls = tlsConnect({ socket: good.socket, servername: 'allowed.test', ca: CERT });
    await once(tls, 'secureConnect');
    tls.end();
    const bad = await captured(`${address}:${up.httpsPort}`);
    const refused = tlsConnect({ socket: bad.socket, servername: 'other.test', ca: CERT });
    await expect(once(refused, 'secureConnect')).rejects.toThrow(/access denied/i);
    expect(newViolations()).toEqual([expect.objectContaining({ rule: 'network.sni', host: 'allowed.test' })]);
  });

  it('to a pool address on a port the address check refuses gets what a CONNECT gets: 403, no dial', async () => {
    const [address] = (await lookup('allowed.test')).addresses;
    const viaCapture = await captured(`${address}:${up.forbiddenPort}`);
    const viaConnect = await proxyConnect(t.proxy.httpSocket, `allowed.test:${up.forbiddenPort}`);
    expect([viaCapture.status, viaConnect.status]).toEqual([403, 403]);
    const [a, b] = newViolations();
    expect(a).toEqual(b);
    expect(a).toMatchObject({ rule: 'network.private', host: 'allowed.test', port: up.forbiddenPort });
    expect(newDials()).toEqual([]);
    expect(up.forbiddenConnections()).toBe(0);
  });

  it.each([
    ['a pool address sbx never handed out', '198.19.200.7'],
    ['an address nothing maps', '192.0.2.1'],
    ['a host address whose hosts-file names are all refused', '127.0.0.2'],
  ])('to %s is refused with 403 and a violation, and nothing is dialled', async (_what, address) => {
    const { status, body } = await captured(`${address}:${up.httpPort}`);
    expect(status).toBe(403);
    expect(body).toContain('no allowed name resolved to');
    expect(newViolations()).toEqual([
      {
        phase: 'runtime',
        kind: 'network',
        rule: 'network.allow',
        detail: `a connection to ${address}:${up.httpPort}, an address no allowed name resolved to (names resolve through sbx inside the sandbox: connect by name)`,
        host: address,
        port: up.httpPort,
      },
    ]);
    expect(newDials()).toEqual([]);
  });

  it("to a host address the hosts file gives one allowed name is that name (landlock: the host's /etc/hosts)", async () => {
    // 127.0.0.1:httpsPort is no literal of the allow-list: only the name allowed.test makes it reachable.
    const { status, socket } = await captured(`127.0.0.1:${up.httpsPort}`);
    expect(status).toBe(200);
    const tls = tlsConnect({ socket, servername: 'allowed.test', ca: CERT });
    await once(tls, 'secureConnect');
    tls.write('GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n');
    expect((await drain(tls as unknown as Socket)).toString()).toContain('https hello from allowed.test');
    expect(newViolations()).toEqual([]);
  });

  it('to an address the rules allow as a literal is that address, not its refused hosts-file name', async () => {
    // 10.0.0.1 is a literal of the allow-list; its only hosts-file name (intranet) is not allowed. Taken as
    // the literal, the connection meets the address check (allow_private), as a CONNECT to it would.
    const viaCapture = await captured(`10.0.0.1:${up.httpPort}`);
    const viaConnect = await proxyConnect(t.proxy.httpSocket, `10.0.0.1:${up.httpPort}`);
    expect([viaCapture.status, viaConnect.status]).toEqual([403, 403]);
    const [a, b] = newViolations();
    expect(a).toMatchObject({ rule: 'network.private', host: '10.0.0.1' });
    expect(a).toEqual(b);
    expect(newDials()).toEqual([]);
  });

  it('to an IPv4-mapped IPv6 pool address is its name', async () => {
    const [address] = (await lookup('allowed.test')).addresses;
    const { status, socket } = await captured(`[::ffff:${address}]:${up.httpPort}`);
    expect(status).toBe(200);
    expect(await getOver(socket, 'allowed.test')).toContain('http hello from allowed.test');
  });
});

describe('the preamble is no privilege', () => {
  it('naming a host instead of an address is refused (400), where a CONNECT would decide the name', async () => {
    const { status } = await captured(`allowed.test:${up.httpPort}`);
    expect(status).toBe(400);
    expect(newViolations()).toEqual([expect.objectContaining({ rule: 'network.invalid' })]);
    expect(newDials()).toEqual([]);
  });

  it('an address a CONNECT is refused is refused with it', async () => {
    const viaCapture = await captured('10.0.0.2:443');
    const viaConnect = await proxyConnect(t.proxy.httpSocket, '10.0.0.2:443');
    expect([viaCapture.status, viaConnect.status]).toEqual([403, 403]);
    expect(newDials()).toEqual([]);
  });

  it('without the header a pool address sbx gave is its name, over CONNECT and SOCKS alike (no more than by name)', async () => {
    const [address] = (await lookup('allowed.test')).addresses;
    const viaConnect = await proxyConnect(t.proxy.httpSocket, `${address}:${up.httpPort}`);
    expect(viaConnect.status).toBe(200);
    expect(await getOver(viaConnect.socket, 'allowed.test')).toContain('http hello from allowed.test');
    const viaSocks = await socksConnect(
      t.proxy.socksSocket,
      { ipv4: (address as string).split('.').map(Number) },
      up.httpPort,
    );
    expect(viaSocks.code).toBe(0);
    expect(await getOver(viaSocks.socket, 'allowed.test')).toContain('http hello from allowed.test');
    // The Host check holds the tunnel to the name, as by name.
    const other = await proxyConnect(t.proxy.httpSocket, `${address}:${up.httpPort}`);
    expect(await getOver(other.socket, 'other.test')).toContain('403');
    // An address sbx never gave is only an address (the benchmarking range: refused).
    expect((await proxyConnect(t.proxy.httpSocket, `198.19.200.7:${up.httpPort}`)).status).toBe(403);
  });

  it('only `X-Sbx-Capture: 1` marks a capture: any other value is a plain CONNECT (port 53 is then no DNS)', async () => {
    expect((await captured(`${RESOLVER_ADDRESS}:53`, 'X-Sbx-Capture: yes\r\n')).status).toBe(403);
    expect(newDials()).toEqual([]);
  });
});

describe('with an asker (a run that asks instead of failing)', () => {
  it('resolves a name no allow entry matched without asking, and asks when it is connected to, with the port', async () => {
    const asked: NetworkRequest[] = [];
    const asking = await startTestProxy(up, {
      resolve: async (host) => (host === 'ask.example' ? ['127.0.0.1'] : (NAMES[host] ?? [])),
      questions: egressQuestions({
        ask: (request) => {
          asked.push(request);
          return 'once';
        },
        timeoutMs: 60_000,
        record: () => undefined,
        remember: async () => undefined,
        notice: () => undefined,
      }),
    });
    try {
      const answer = await lookup('ask.example', 1, asking.proxy.httpSocket);
      expect(answer.rcode).toBe(0);
      expect(asked).toEqual([]);
      expect((await lookup('denied.test', 1, asking.proxy.httpSocket)).rcode).toBe(3); // a deny entry is never asked
      const { status, socket } = await captured(
        `${answer.addresses[0]}:${up.httpPort}`,
        undefined,
        asking.proxy.httpSocket,
      );
      expect(status).toBe(200);
      expect(asked).toEqual([{ host: 'ask.example', port: up.httpPort }]);
      expect(await getOver(socket, 'ask.example')).toContain('http hello from ask.example');
      expect(asking.proxy.stats().violations).toEqual([
        expect.objectContaining({ rule: 'network.deny', host: 'denied.test' }),
      ]);
    } finally {
      await asking.close();
    }
  });
});
