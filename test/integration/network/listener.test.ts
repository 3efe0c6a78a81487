// The one-port front door of `sbx proxy` (src/network/host/listener.ts), in process: the first byte
// picks the front end, a client that never speaks is closed after the head timeout, close() ends live
// tunnels, and a taken port is PORT_IN_USE. Loopback only; names through the harness's map.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SbxError } from '../../../src/errors.js';
import { compileEgressRules } from '../../../src/network/egress.js';
import { listenEgressProxy, type ListeningProxy } from '../../../src/network/host/listener.js';
import { NAMES, readBytes, startUpstreams, type Upstreams } from './harness.js';

let up: Upstreams;
let proxy: ListeningProxy;

async function client(): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port: proxy.port });
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  return socket;
}

describe('the proxy on one TCP port', () => {
  beforeAll(async () => {
    up = await startUpstreams();
    proxy = await listenEgressProxy({
      rules: compileEgressRules({ allow: ['allowed.test'], deny: [], allowPrivate: [`127.0.0.1:${up.httpPort}`] }),
      host: '127.0.0.1',
      port: 0,
      resolve: async (h) => NAMES[h] ?? [],
      timeouts: { headMs: 300 },
    });
  });
  afterAll(async () => {
    await proxy?.close();
    await up?.close();
  });

  it('closes a client that never sends a byte (it would hold a descriptor)', async () => {
    const socket = await client();
    await once(socket, 'close');
    expect(socket.bytesRead).toBe(0);
  });

  it('serves SOCKS5 and HTTP by the first byte, and close() ends a live tunnel', async () => {
    const http = await client();
    http.write(`CONNECT allowed.test:${up.httpPort} HTTP/1.1\r\nHost: allowed.test\r\n\r\n`);
    const [head] = (await once(http, 'data')) as [Buffer];
    expect(head.toString()).toMatch(/^HTTP\/1\.1 200 /);
    const socks = await client();
    socks.write(Buffer.from([0x05, 0x01, 0x00]));
    expect([...(await readBytes(socks, 2))]).toEqual([0x05, 0x00]);
    socks.write(
      Buffer.from([0x05, 0x01, 0x00, 0x03, 12, ...Buffer.from('allowed.test'), up.httpPort >> 8, up.httpPort & 0xff]),
    );
    expect((await readBytes(socks, 10))[1]).toBe(0x00);
    const closed = Promise.all([once(http, 'close'), once(socks, 'close')]);
    await proxy.close();
    await closed;
  });

  it('refuses a taken port as PORT_IN_USE, naming it', async () => {
    const other = await listenEgressProxy({
      rules: compileEgressRules({ allow: ['allowed.test'], deny: [], allowPrivate: [] }),
      host: '127.0.0.1',
      port: 0,
    });
    try {
      const taken = listenEgressProxy({
        rules: compileEgressRules({ allow: ['allowed.test'], deny: [], allowPrivate: [] }),
        host: '127.0.0.1',
        port: other.port,
      });
      await expect(taken).rejects.toThrow(SbxError);
      await expect(taken).rejects.toMatchObject({
        code: 'PORT_IN_USE',
        message: expect.stringContaining(`:${other.port}`),
      });
    } finally {
      await other.close();
    }
  });
});
