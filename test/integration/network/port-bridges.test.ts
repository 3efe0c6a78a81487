// The host side of host_ports and publish (src/network/host/ports.ts) on its own, over real
// loopback and unix sockets in a temp dir: what a hostile client of sbx's sockets (the sandbox) can
// and cannot make sbx do.
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bindPublishedPorts, PUBLISH_GO, startPortBridges } from '../../../src/network/host/ports.js';
import { rejection } from '../../helpers/errors.js';
import { makeTempDir } from '../../helpers/tmp.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A loopback server that records what each connection sent, and answers `reply`. */
async function recorder(reply: string): Promise<{ port: number; received: string[] }> {
  const received: string[] = [];
  const server: Server = createServer({ allowHalfOpen: true }, (s) => {
    let got = '';
    s.on('data', (c) => (got += c));
    s.on('end', () => {
      received.push(got);
      s.end(reply);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => server.close());
  return { port: (server.address() as AddressInfo).port, received };
}

/** A port free on loopback now (bound again at once by the test: a narrow, harmless race). */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Send `text`, half-close, collect the answer until the other side closes. */
async function exchange(socket: Socket, text: string): Promise<string> {
  let answer = '';
  socket.on('data', (c) => (answer += c));
  socket.end(text);
  await once(socket, 'close');
  return answer;
}

/** The port bridges in a temp dir, closed after the test; returns the dir. */
async function bridges(hostPorts: number[], publish: number[]): Promise<string> {
  const dir = makeTempDir('sbx-ports-');
  const published = await bindPublishedPorts(publish);
  cleanups.push(() => published.close());
  const b = await startPortBridges({ hostPorts, published, socketDir: dir });
  cleanups.push(() => b.close());
  return dir;
}

describe('host_ports', () => {
  it("relays to the host's 127.0.0.1:PORT only, whatever the bytes name", async () => {
    const listed = await recorder('listed');
    const other = await recorder('other');
    const dir = await bridges([listed.port], []);
    const inside = connect({ path: join(dir, `host-port-${listed.port}.sock`), allowHalfOpen: true });
    const asked = `CONNECT 127.0.0.1:${other.port} HTTP/1.1\r\n\r\n`;
    expect(await exchange(inside, asked)).toBe('listed');
    expect(listed.received).toEqual([asked]);
    expect(other.received).toEqual([]);
  });
});

describe('publish', () => {
  it('refuses a taken port by name', async () => {
    const taken = await recorder('');
    const error = await rejection(bindPublishedPorts([taken.port]));
    expect(error).toMatchObject({
      code: 'PORT_IN_USE',
      message: `network.publish: 127.0.0.1:${taken.port} is already in use on the host`,
    });
  });

  it('hands each host client to a spare with one byte, then its bytes', async () => {
    const port = await freePort();
    const dir = await bridges([], [port]);
    const spare = connect({ path: join(dir, `publish-${port}.sock`), allowHalfOpen: true });
    await once(spare, 'connect');
    const client = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    client.write('hello');
    // What the bridge sees: the go byte, then the client's bytes (held while no spare was paired).
    let seen = Buffer.alloc(0);
    while (seen.length < 1 + 'hello'.length) seen = Buffer.concat([seen, ((await once(spare, 'data')) as [Buffer])[0]]);
    expect(seen).toEqual(Buffer.concat([PUBLISH_GO, Buffer.from('hello')]));
    spare.end('HELLO');
    expect(await exchange(client, '')).toBe('HELLO');
  });

  it('keeps at most 8 idle spares: the sandbox cannot make sbx hold more', async () => {
    const port = await freePort();
    const dir = await bridges([], [port]);
    const spares: Socket[] = [];
    for (let i = 0; i < 10; i++) {
      const spare = connect({ path: join(dir, `publish-${port}.sock`) });
      spare.on('error', () => {});
      cleanups.push(() => spare.destroy());
      await once(spare, 'connect');
      spares.push(spare);
    }
    // The 9th and 10th are closed by sbx on arrival (the test's timeout is the safety net).
    await Promise.all(spares.slice(8).map((s) => once(s, 'close')));
    expect(spares.map((s) => s.destroyed)).toEqual([...Array(8).fill(false), true, true]);
  });
});
