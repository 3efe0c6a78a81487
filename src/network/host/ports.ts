// The host side of network.host_ports and network.publish: unix sockets in the session directory that
// the in-sandbox bridge (bridge.cjs) connects to, and for publish the host's 127.0.0.1 listeners.
//
// host_ports: each socket leads to exactly one destination, the host's 127.0.0.1:PORT, fixed here when
// the socket is made. The sandbox sends only bytes, never an address, so it cannot reach another port
// or another host through it.
// publish: the sandbox's view of the session directory is read-only (policy/derive/network.ts bridgeLayers),
// so it cannot make a socket sbx would connect to; instead the bridge keeps a spare connection open on
// sbx's socket, and sbx hands the next host client to it with one byte (PUBLISH_GO). A port another
// live run of the same workspace already serves is joined rather than refused (published.ts): sbx tells
// the bridge so on its first connection (PUBLISH_JOIN), the bridge listens on the port inside, and sbx
// relays each of its clients to the other run's join socket, where that run's sbx hands it to its server
// as it would a host client.
import type { Server, Socket } from 'node:net';
import { connect, createServer } from 'node:net';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { hostPortSocket, publishSocket } from '../../backend/shared/sockets.js';
import { SbxError } from '../../errors.js';
import { checkSocketPath } from './proxy.js';
import { findPublisher, joinSocket, unpublish, writePublished } from './published.js';

/**
 * The bytes of the publish socket (bridge.cjs speaks the other side). sbx writes SERVE or JOIN first on
 * every connection the bridge opens: SERVE, this run serves the port and the connection is a spare,
 * which GO later pairs with a host client; JOIN, another run serves it, and the bridge answers CLIENT on
 * a connection that carries one of its clients.
 */
export const PUBLISH_GO = Buffer.from([0x01]);
export const PUBLISH_SERVE = Buffer.from([0x02]);
export const PUBLISH_JOIN = Buffer.from([0x03]);
export const PUBLISH_CLIENT = 0x04;

/**
 * Bounds on what the sandbox can make sbx hold: spares beyond MAX_SPARES are closed on arrival (the
 * bridge keeps one), and connections beyond MAX_CONNECTIONS per socket or listener are closed on accept.
 */
const MAX_SPARES = 8;
const MAX_CONNECTIONS = 512;

/** Another run's server this run reaches on a published port (published.ts findPublisher). */
export interface JoinedPort {
  /** That run's session id, for the notice. */
  session: string;
  /** Its join socket. */
  socket: string;
}

/**
 * The host listeners of network.publish, bound before the launch and held until the run ends, and the
 * ports this run joins instead (taken by another run serving the same workspace).
 */
export interface PublishedPorts {
  servers: Map<number, Server>;
  joined: Map<number, JoinedPort>;
  /** The workspace served (its real path), which published.json names for later runs. */
  workspace?: string;
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
 * Bind every published port on the host's 127.0.0.1 now, before anything runs, and hold the listener
 * (never bound again later, so nothing can take it in between). A taken port refuses the run, unless
 * `join` is given and another live run serves that port for the same workspace: then this run joins
 * that server (the sandboxes could already meet through the workspace they both write).
 */
export async function bindPublishedPorts(
  ports: readonly number[],
  join?: { sessionDir: string; workspace: string; uid: number },
): Promise<PublishedPorts> {
  const servers = new Map<number, Server>();
  const joined = new Map<number, JoinedPort>();
  const close = async (): Promise<void> => {
    await Promise.all([...servers.values()].map(closeServer));
  };
  try {
    for (const port of ports) {
      try {
        servers.set(port, await listenLoopback(port));
      } catch (error) {
        const publisher = (error as SbxError).code === 'PORT_IN_USE' && join ? findPublisher(join, port) : undefined;
        if (!publisher) throw error;
        joined.set(port, publisher);
      }
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { servers, joined, ...(join ? { workspace: join.workspace } : {}), close };
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

/**
 * publish, served here: pairs each client (of the host listener, or of the join socket another run's
 * sbx relays to) with a spare connection from the bridge, oldest first. Returns the publish socket's
 * server and the join socket's.
 */
function publishServers(listener: Server, sockets: ReturnType<typeof socketSet>): { publish: Server; join: Server } {
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
  const onClient = (client: Socket): void => {
    if (!sockets.add(client)) return;
    client.on('error', () => client.destroy());
    client.once('close', drop(waiting, client));
    waiting.push(client);
    pair();
  };
  listener.maxConnections = MAX_CONNECTIONS;
  listener.on('connection', onClient);
  const publish = createServer({ allowHalfOpen: true }, (spare) => {
    if (!sockets.add(spare)) return;
    if (spares.length >= MAX_SPARES) return void spare.destroy();
    spare.on('error', () => spare.destroy());
    spare.once('close', drop(spares, spare));
    spare.write(PUBLISH_SERVE);
    spares.push(spare);
    pair();
  });
  return { publish, join: createServer({ allowHalfOpen: true, pauseOnConnect: true }, onClient) };
}

/**
 * publish, joined: every connection from the bridge is told JOIN; one that answers CLIENT carries a
 * client from inside, relayed to the other run's join socket (a path sbx found, never one the sandbox
 * names). Anything else is closed.
 */
function joinedServer(target: string, sockets: ReturnType<typeof socketSet>): Server {
  return createServer({ allowHalfOpen: true }, (inside) => {
    if (!sockets.add(inside)) return;
    inside.on('error', () => inside.destroy());
    inside.write(PUBLISH_JOIN);
    inside.once('readable', () => {
      const first = inside.read(1) as Buffer | null;
      if (first?.[0] !== PUBLISH_CLIENT) return void inside.destroy();
      const other = connect({ path: target, allowHalfOpen: true });
      sockets.add(other);
      joinSockets(inside, other);
    });
  });
}

/**
 * Listen on the host_ports and publish sockets in `socketDir` (the session directory, which the
 * sandbox sees read-only at the bridge's path). `published` holds the publish ports' host listeners,
 * and the ports joined; once every socket listens, published.json says what this run serves.
 */
export async function startPortBridges(opts: {
  hostPorts: readonly number[];
  published: PublishedPorts;
  socketDir: string;
}): Promise<PortBridges> {
  const sockets = socketSet();
  const at = (name: string) => join(opts.socketDir, name);
  const served = [...opts.published.servers].flatMap(([port, listener]) => {
    const { publish, join: joinServer } = publishServers(listener, sockets);
    return [
      { server: publish, path: at(publishSocket(port)) },
      { server: joinServer, path: at(joinSocket(port)) },
    ];
  });
  const servers: { server: Server; path: string }[] = [
    ...opts.hostPorts.map((port) => ({ server: hostPortServer(port, sockets), path: at(hostPortSocket(port)) })),
    ...served,
    ...[...opts.published.joined].map(([port, joined]) => ({
      server: joinedServer(joined.socket, sockets),
      path: at(publishSocket(port)),
    })),
  ];
  for (const { path } of servers) checkSocketPath(path);
  let closing: Promise<void> | undefined;
  const bridges: PortBridges = {
    close() {
      closing ??= (async () => {
        // First, so that no later run looks for this run's servers while they close.
        unpublish(opts.socketDir);
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
    const { workspace } = opts.published;
    if (workspace !== undefined && opts.published.servers.size > 0)
      writePublished(opts.socketDir, workspace, [...opts.published.servers.keys()]);
  } catch (cause) {
    await bridges.close();
    throw new SbxError('SANDBOX_SETUP', `cannot listen on the port bridges' sockets in ${opts.socketDir}`, {
      cause,
      hint: 'the session directory must be writable and must not already hold host-port-*.sock, publish-*.sock, join-*.sock or published.json',
    });
  }
  return bridges;
}
