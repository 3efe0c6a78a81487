// The host side of host_ports and publish (src/network/host/ports.ts) on its own, over real
// loopback and unix sockets in a temp dir: what a hostile client of sbx's sockets (the sandbox) can
// and cannot make sbx do.
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join as joinPath } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/free-port.js';
import {
  bindPublishedPorts,
  PUBLISH_CLIENT,
  PUBLISH_GO,
  PUBLISH_JOIN,
  PUBLISH_SERVE,
  startPortBridges,
} from '../../../src/network/host/ports.js';
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

/** Send `text`, half-close, collect the answer until the other side closes. */
async function exchange(socket: Socket, text: string): Promise<string> {
  let answer = '';
  socket.on('data', (c) => (answer += c));
  socket.end(text);
  await once(socket, 'close');
  return answer;
}

/** The first `n` bytes `socket` receives. */
async function received(socket: Socket, n: number): Promise<Buffer> {
  let seen = Buffer.alloc(0);
  while (seen.length < n) seen = Buffer.concat([seen, ((await once(socket, 'data')) as [Buffer])[0]]);
  return seen;
}

/**
 * The port bridges in a temp dir (or `join.sessionDir`, for runs that may join one another), closed
 * after the test; returns the dir and what was bound.
 */
async function bridges(
  hostPorts: number[],
  publish: number[],
  join?: { sessionDir: string; workspace: string; uid: number },
): Promise<string> {
  const dir = join?.sessionDir ?? makeTempDir('sbx-ports-');
  const published = await bindPublishedPorts(publish, join);
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
    const inside = connect({ path: joinPath(dir, `host-port-${listed.port}.sock`), allowHalfOpen: true });
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
    const spare = connect({ path: joinPath(dir, `publish-${port}.sock`), allowHalfOpen: true });
    await once(spare, 'connect');
    const client = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    client.write('hello');
    // What the bridge sees: this run serves the port, the go byte, then the client's bytes (held while
    // no spare was paired).
    expect(await received(spare, 2 + 'hello'.length)).toEqual(
      Buffer.concat([PUBLISH_SERVE, PUBLISH_GO, Buffer.from('hello')]),
    );
    spare.end('HELLO');
    expect(await exchange(client, '')).toBe('HELLO');
  });

  it('keeps at most 8 idle spares: the sandbox cannot make sbx hold more', async () => {
    const port = await freePort();
    const dir = await bridges([], [port]);
    const spares: Socket[] = [];
    for (let i = 0; i < 10; i++) {
      const spare = connect({ path: joinPath(dir, `publish-${port}.sock`) });
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

describe('publish: a port another run of the same workspace serves', () => {
  const uid = process.getuid?.() ?? 0;
  /** A session base with run directories named as host/session.ts names them (ID.PID, this live pid). */
  function sessions(): (id: string) => string {
    const base = makeTempDir('sbx-sessions-');
    return (id) => {
      const dir = joinPath(base, `${id}.${process.pid}`);
      mkdirSync(dir, { mode: 0o700 });
      return dir;
    };
  }

  /**
   * Two runs of workspace /w publishing one port: the first serves it (a spare of its bridge waits on
   * its socket), the second, finding the port taken by the first, joins. Returns the spare and a
   * connection opener for the second run's publish socket, each told JOIN first.
   */
  async function servedAndJoined() {
    const port = await freePort();
    const run = sessions();
    const first = await bridges([], [port], { sessionDir: run('a1-00aa'), workspace: '/w', uid });
    const spare = connect({ path: joinPath(first, `publish-${port}.sock`), allowHalfOpen: true });
    expect(await received(spare, 1)).toEqual(PUBLISH_SERVE);
    const second = await bridges([], [port], { sessionDir: run('b2-00bb'), workspace: '/w', uid });
    const inside = async () => {
      const socket = connect({ path: joinPath(second, `publish-${port}.sock`), allowHalfOpen: true });
      expect(await received(socket, 1)).toEqual(PUBLISH_JOIN);
      return socket;
    };
    return { spare, inside };
  }

  it("is joined: the bridge is told JOIN, and a client it sends reaches the first run's spare", async () => {
    const { spare, inside: open } = await servedAndJoined();
    const inside = await open();
    inside.write(Buffer.concat([Buffer.from([PUBLISH_CLIENT]), Buffer.from('hello')]));
    expect(await received(spare, 1 + 'hello'.length)).toEqual(Buffer.concat([PUBLISH_GO, Buffer.from('hello')]));
    spare.end('HELLO');
    expect(await exchange(inside, '')).toBe('HELLO');
  });

  it('a connection to the joined socket that does not say CLIENT reaches nothing', async () => {
    const { spare, inside } = await servedAndJoined();
    const bad = await inside();
    bad.end('GET / HTTP/1.0\r\n\r\n');
    await once(bad, 'end');
    // The next client that does say CLIENT is the first the spare is handed.
    const good = await inside();
    good.write(Buffer.concat([Buffer.from([PUBLISH_CLIENT]), Buffer.from('ok')]));
    expect(await received(spare, 3)).toEqual(Buffer.concat([PUBLISH_GO, Buffer.from('ok')]));
  });

  it('of another workspace, of a run whose sbx is gone, or with no marker at all: PORT_IN_USE as before', async () => {
    const port = await freePort();
    const run = sessions();
    await bridges([], [port], { sessionDir: run('a1-00aa'), workspace: '/w', uid });
    const error = await rejection(bindPublishedPorts([port], { sessionDir: run('b2-00bb'), workspace: '/other', uid }));
    expect(error).toMatchObject({ code: 'PORT_IN_USE' });
    // A marker naming this workspace in a directory whose pid is not alive (pid 2^22+1 is above pid_max's limit).
    const taken = await recorder('');
    const ghost = joinPath(makeTempDir('sbx-sessions-'), 'c3-00cc.4194305');
    mkdirSync(ghost);
    writeFileSync(joinPath(ghost, 'published.json'), JSON.stringify({ workspace: '/w', ports: [taken.port] }));
    const own = joinPath(ghost, '..', `d4-00dd.${process.pid}`);
    mkdirSync(own);
    const dead = await rejection(bindPublishedPorts([taken.port], { sessionDir: own, workspace: '/w', uid }));
    expect(dead).toMatchObject({ code: 'PORT_IN_USE' });
  });
});
