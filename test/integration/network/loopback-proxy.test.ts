// The egress proxy as the landlock backend runs it: on the host's 127.0.0.1, where every local user can
// connect. It takes a connection only from a socket of the uid it was told (the kernel's table names
// each socket's owner: network/host/loopback-peer.ts). Tried both ways from this process: as the
// owner (the request goes through) and as "another user" (a proxy told another uid: the connection is
// closed unread, and nothing is written into the run's report). Loopback only.
import { once } from 'node:events';
import { createServer, get, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileEgressRules } from '../../../src/network/egress.js';
import { type EgressProxy, startEgressProxy } from '../../../src/network/host/index.js';

let upstream: Server;
let port: number;
let dir: string;

beforeAll(async () => {
  upstream = createServer((req, res) => res.end(`upstream ${req.url}\n`)).listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  port = (upstream.address() as { port: number }).port;
  dir = mkdtempSync(join(tmpdir(), 'sbx-loopback-proxy-'));
});

afterAll(() => {
  upstream?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const rules = () => compileEgressRules({ allow: ['127.0.0.1'], deny: [], allowPrivate: [`127.0.0.1:${port}`] });

function through(proxy: EgressProxy, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const headers = { host: `127.0.0.1:${port}` };
    get({ host: '127.0.0.1', port: proxy.ports!.http, path: `http://127.0.0.1:${port}${path}`, headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
}

describe('startEgressProxy({ loopback })', () => {
  it("listens on the host's 127.0.0.1 and serves its own uid's connections, HTTP and SOCKS", async () => {
    const proxy = await startEgressProxy({ rules: rules(), socketDir: dir, loopback: { uid: process.getuid!() } });
    try {
      expect(proxy.httpSocket).toBe(`127.0.0.1:${proxy.ports!.http}`);
      expect(await through(proxy, '/owned')).toBe('upstream /owned\n');
      // SOCKS5: no auth, then CONNECT 127.0.0.1:port; the reply's first two bytes are version 5, success 0.
      const socks = connect(proxy.ports!.socks, '127.0.0.1');
      socks.write(Buffer.from([5, 1, 0]));
      await once(socks, 'data');
      socks.write(Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, port >> 8, port & 0xff]));
      const [reply] = (await once(socks, 'data')) as [Buffer];
      expect([...reply.subarray(0, 2)]).toEqual([5, 0]);
      socks.destroy();
      expect(proxy.stats().violations).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it("closes another uid's connection unread, and records nothing", async () => {
    const proxy = await startEgressProxy({ rules: rules(), socketDir: dir, loopback: { uid: process.getuid!() + 1 } });
    try {
      await expect(through(proxy, '/stranger')).rejects.toThrow(/socket hang up|ECONNRESET/);
      const denied = connect(proxy.ports!.http, '127.0.0.1');
      denied.end('GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n');
      let answer = '';
      denied.on('data', (c: Buffer) => (answer += c.toString()));
      denied.on('error', () => undefined); // the reset of a socket closed unread
      await new Promise((resolve) => denied.on('close', resolve));
      expect(answer).toBe('');
      expect(proxy.stats()).toEqual({ violations: [], violationsDropped: 0, connections: [] });
    } finally {
      await proxy.close();
    }
  });
});
