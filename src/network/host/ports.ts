// The host side of network.host_ports and network.publish: unix sockets in the session directory that
// the in-sandbox bridge (bridge.cjs) connects to, and for publish the host's 127.0.0.1 listeners.
//
// host_ports: each socket leads to exactly one destination, the host's 127.0.0.1:PORT, fixed here when
// the socket is made. The sandbox sends only bytes, never an address, so it cannot reach another port
// or another host through it.
// publish: the sandbox's view of the session directory is read-only (policy/derive/network.ts bridgeLayers),
// so it cannot make a socket sbx would connect to; instead the bridge keeps a spare connection open on
// sbx's socket, and sbx hands the next host client to it with one byte (PUBLISH_GO).
import type { Server, Socket } from 'node:net';
import { connect, createServer } from 'node:net';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { hostPortSocket, publishSocket } from '../../backend/shared/sockets.js';
import { SbxError } from '../../errors.js';
import { checkSocketPath } from './proxy.js';

/** The byte that tells the bridge a host client is waiting (bridge.cjs, GO). */
export const PUBLISH_GO = Buffer.from([0x01]);

/**
 * Bounds on what the sandbox can make sbx hold: spares beyond MAX_SPARES are closed on arrival (the
 * bridge keeps one), and connections beyond MAX_CONNECTIONS per socket or listener are closed on accept.
 */
const MAX_SPARES = 8;
const MAX_CONNECTIONS = 512;

/** The host listeners of network.publish, bound before the launch and held until the run ends. */
export interface PublishedPorts {
  servers: Map<number, Server>;
  close(): Promise<void>;
}

export interface PortBridges {
  close(): Promise<void>;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Listen on 127.0.0.1:port, or refuse naming the port (PORT_IN_USE for a taken one). */
function listenLoopback(port: number): Promise<Server> {
  const server = createServer({ allowHalfOpen: true, noDelay: true, pauseOnConnect: true });
  return new Promise((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      const where = `network.publish: 127.0.0.1:${port}`;
      reject(
        e.code === 'EADDRINUSE'
          ? new SbxError('PORT_IN_USE', `${where} is already in use on the host`, {
              hint: `stop what listens there (ss -ltnp 'sport = :${port}' shows it), or publish another port`,
            })
          : new SbxError('SANDBOX_SETUP', `${where} cannot be bound: ${e.code ?? e.message}`, {
              cause: e,
              hint: 'publish another port',
            }),
      );
    });
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/**
 * Bind every published port on the host's 127.0.0.1 now, before anything runs: a taken port refuses
 * the run, and the listener is held (never bound again later, so nothing can take it in between).
 */
export async function bindPublishedPorts(ports: readonly number[]): Promise<PublishedPorts> {
  const servers = new Map<number, Server>();
  const close = async (): Promise<void> => {
    await Promise.all([...servers.values()].map(closeServer));
  };
  try {
    for (const port of ports) servers.set(port, await listenLoopback(port));
  } catch (error) {
    await close();
    throw error;
  }
  return { servers, close };
}

/** Bytes both ways, half-close passed on, an error or close on either side ends both. */
function joinSockets(a: Socket, b: Socket): void {
  const both = (): void => {
    a.destroy();
    b.destroy();
  };
  a.on('error', both);
  b.on('error', both);
  a.on('close', () => b.destroy());
  b.on('close', () => a.destroy());
  a.pipe(b).pipe(a);
}

function listenUnix(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Ends every socket on shutdown; a socket arriving after it is destroyed at once. */
function socketSet() {
  const sockets = new Set<Socket>();
  let closed = false;
  return {
    add(socket: Socket): boolean {
      if (closed) socket.destroy();
      else {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
      }
      return !closed;
    },
    shutdown(): void {
      closed = true;
      for (const s of sockets) s.destroy();
    },
  };
}

/** host_ports: a connection on the socket is relayed to the host's 127.0.0.1:port, and only there. */
function hostPortServer(port: number, sockets: ReturnType<typeof socketSet>): Server {
  return createServer({ allowHalfOpen: true }, (inside) => {
    if (!sockets.add(inside)) return;
    const host = connect({ host: '127.0.0.1', port, allowHalfOpen: true, noDelay: true });
    sockets.add(host);
    joinSockets(inside, host);
  });
}

/** publish: pairs each host client with a spare connection from the bridge, oldest first. */
function publishServer(listener: Server, sockets: ReturnType<typeof socketSet>): Server {
  const spares: Socket[] = [];
  const waiting: Socket[] = [];
  const drop = (list: Socket[], s: Socket) => () => {
    const i = list.indexOf(s);
    if (i >= 0) list.splice(i, 1);
  };
  const pair = (): void => {
    while (spares.length > 0 && waiting.length > 0) {
      const spare = spares.shift() as Socket;
      const client = waiting.shift() as Socket;
      spare.write(PUBLISH_GO);
      // pipe() resumes the client, paused since accept so that its first bytes wait for the server.
      joinSockets(client, spare);
    }
  };
  listener.maxConnections = MAX_CONNECTIONS;
  listener.on('connection', (client: Socket) => {
    if (!sockets.add(client)) return;
    client.on('error', () => client.destroy());
    client.once('close', drop(waiting, client));
    waiting.push(client);
    pair();
  });
  const server = createServer({ allowHalfOpen: true }, (spare) => {
    if (!sockets.add(spare)) return;
    if (spares.length >= MAX_SPARES) return void spare.destroy();
    spare.on('error', () => spare.destroy());
    spare.once('close', drop(spares, spare));
    spares.push(spare);
    pair();
  });
  return server;
}

/**
 * Listen on the host_ports and publish sockets in `socketDir` (the session directory, which the
 * sandbox sees read-only at the bridge's path). `published` holds the publish ports' host listeners.
 */
export async function startPortBridges(opts: {
  hostPorts: readonly number[];
  published: PublishedPorts;
  socketDir: string;
}): Promise<PortBridges> {
  const sockets = socketSet();
  const servers: { server: Server; path: string }[] = [
    ...opts.hostPorts.map((port) => ({
      server: hostPortServer(port, sockets),
      path: join(opts.socketDir, hostPortSocket(port)),
    })),
    ...[...opts.published.servers].map(([port, listener]) => ({
      server: publishServer(listener, sockets),
      path: join(opts.socketDir, publishSocket(port)),
    })),
  ];
  for (const { path } of servers) checkSocketPath(path);
  let closing: Promise<void> | undefined;
  const bridges: PortBridges = {
    close() {
      closing ??= (async () => {
        const done = Promise.all(servers.filter((s) => s.server.listening).map((s) => closeServer(s.server)));
        sockets.shutdown();
        await done;
        for (const s of servers) rmSync(s.path, { force: true });
      })();
      return closing;
    },
  };
  try {
    for (const { server, path } of servers) {
      server.maxConnections = MAX_CONNECTIONS;
      await listenUnix(server, path);
    }
  } catch (cause) {
    await bridges.close();
    throw new SbxError('SANDBOX_SETUP', `cannot listen on the port bridges' sockets in ${opts.socketDir}`, {
      cause,
      hint: 'the session directory must be writable and must not already hold host-port-*.sock or publish-*.sock',
    });
  }
  return bridges;
}
