// The host side of sandbox egress: an HTTP proxy (CONNECT + absolute-URI) and a SOCKS5 proxy on unix
// sockets in the session dir. The sandbox has only `lo`; the bridge inside it (bridge.cjs) forwards
// 127.0.0.1 ports to these sockets, so the proxy is the sandbox's only way out, and every destination
// passes src/network/egress.ts: the name first, then every address it resolves to. Under the landlock
// backend (no namespace) the two listen on the host's 127.0.0.1 instead (`loopback`), where the
// launcher connects the command to them, and take only connections of sbx's own uid (loopback-peer.ts).
//
// Records host and port only: URLs (paths, queries, userinfo) and headers carry secrets and never
// reach a violation, an event or the stats.
import { EGRESS_HTTP_SOCKET, EGRESS_SOCKS_SOCKET } from '../../backend/shared/sockets.js';
import type { Server } from 'node:http';
import type { Server as NetServer, Socket } from 'node:net';
import { closeSync, openSync, readSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SbxError } from '../../errors.js';
import { createAddressPool } from '../address-pool.js';
import type { EgressRules } from '../egress.js';
import { MAX_HOSTS_FILE_BYTES, parseHostsFile } from '../hosts-file.js';
import {
  createProxyState,
  DEFAULT_TIMEOUTS,
  type EgressEvent,
  type ProxyState,
  type EgressStats,
  type EgressTimeouts,
} from './proxy-context.js';
import type { CredentialBroker } from './credential-broker.js';
import type { EgressQuestions } from './egress-questions.js';
import { connectToAddress, resolveSystem } from './dial.js';
import { createHttpProxy } from './http-proxy.js';
import { isLoopbackPeerOwnedBy } from './loopback-peer.js';
import { createServer } from 'node:net';
import { createSocksProxy } from './socks-proxy.js';

/** What both front ends share: the rules, the seams and the limits. */
export interface FrontEndOptions {
  rules: EgressRules;
  /** Name → addresses. Default: the system resolver (getaddrinfo), every address. Test seam. */
  resolve?: (host: string) => Promise<string[]>;
  /** Opens a TCP connection to an IP literal. Default: net.connect with DNS disabled. Test seam. */
  connect?: (address: string, port: number) => Socket;
  onEvent?: (event: EgressEvent) => void;
  timeouts?: Partial<EgressTimeouts>;
  /** The run's credentials: their hosts' TLS is terminated, their values put in (intercept.ts). */
  credentials?: CredentialBroker;
  /** The hosts file captured connects to a host address are mapped back through (capture.ts). Default /etc/hosts. Test seam. */
  hostsFile?: string;
  /** Asked about a destination no allow entry matched, while its connection waits (egress-questions.ts). */
  questions?: EgressQuestions;
  /**
   * Client connections each front end accepts at once (default 512); more are closed on accept. Each
   * one costs sbx's process up to two descriptors, and the sandbox must not exhaust them.
   */
  maxConnections?: number;
}

export interface EgressProxyOptions extends FrontEndOptions {
  /** Directory for the two sockets (the session dir, bind-mounted into the sandbox). */
  socketDir: string;
  /**
   * Listen on ephemeral ports of the host's 127.0.0.1 instead of `socketDir`, taking only connections
   * from sockets this uid created (the landlock backend: its launcher connects the command there).
   */
  loopback?: { uid: number };
}

export interface EgressProxy {
  /** Where each front end listens: a socket path, or `127.0.0.1:PORT` (loopback). */
  httpSocket: string;
  socksSocket: string;
  /** The ports, when listening on the host's 127.0.0.1 (loopback). */
  ports?: { http: number; socks: number };
  stats(): EgressStats;
  /** Ends every connection, stops listening, removes both socket files. Idempotent. */
  close(): Promise<void>;
}

// sockaddr_un.sun_path is 108 bytes including the terminating NUL (unix(7)).
const MAX_SOCKET_PATH = 107;

/** A socket path the kernel would truncate is refused before anything listens. */
export function checkSocketPath(path: string): void {
  if (Buffer.byteLength(path) <= MAX_SOCKET_PATH) return;
  throw new SbxError('SANDBOX_SETUP', `a socket path of sbx is longer than ${MAX_SOCKET_PATH} bytes: ${path}`, {
    hint: 'set XDG_RUNTIME_DIR to a shorter directory',
  });
}

function listen(server: NetServer | Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * A loopback listener in front of `inner`: each connection is handed over only once its peer is known
 * to be `uid`'s. Paused until then, so nothing it sent is read before. `resume`: whether the inner
 * server reads in flowing mode (http) rather than on 'readable' (the SOCKS handshake). Resolves with the port.
 */
async function listenLoopback(
  inner: NetServer | Server,
  uid: number,
  resume: boolean,
  maxConnections: number,
): Promise<{ front: NetServer; port: number }> {
  const front = createServer({ pauseOnConnect: true, allowHalfOpen: true }, (socket) => {
    isLoopbackPeerOwnedBy(socket, uid).then(
      (owned) => {
        if (!owned) return socket.destroy();
        inner.emit('connection', socket);
        if (resume) socket.resume();
      },
      () => socket.destroy(),
    );
  });
  front.maxConnections = maxConnections;
  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen(0, '127.0.0.1', () => {
      front.off('error', reject);
      resolve();
    });
  });
  const address = front.address();
  return { front, port: typeof address === 'object' && address ? address.port : 0 };
}

function closeServer(server: NetServer | Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** The two front ends on the host's 127.0.0.1. The inner servers never listen: each front hands them what it accepted. */
async function startOnLoopback(
  http: Server,
  socks: NetServer,
  state: ProxyState,
  uid: number,
  maxConnections: number,
): Promise<EgressProxy> {
  const fronts: NetServer[] = [];
  try {
    for (const [inner, resume] of [
      [http, true],
      [socks, false],
    ] as const) {
      fronts.push((await listenLoopback(inner, uid, resume, maxConnections)).front);
    }
  } catch (cause) {
    state.shutdown();
    await Promise.all(fronts.map(closeServer));
    throw new SbxError(
      'SANDBOX_SETUP',
      `cannot listen on 127.0.0.1 for the egress proxy: ${(cause as Error).message}`,
      {
        cause,
        hint: 'the host needs a loopback interface with free ephemeral ports',
      },
    );
  }
  const [httpPort, socksPort] = fronts.map((f) => (f.address() as { port: number }).port) as [number, number];
  let closing: Promise<void> | undefined;
  return {
    httpSocket: `127.0.0.1:${httpPort}`,
    socksSocket: `127.0.0.1:${socksPort}`,
    ports: { http: httpPort, socks: socksPort },
    stats: () => state.stats(),
    close() {
      closing ??= (async () => {
        const done = Promise.all(fronts.map(closeServer));
        state.shutdown();
        http.closeAllConnections();
        await done;
      })();
      return closing;
    },
  };
}

/** The hosts file's names by address, read once; an unreadable file maps nothing (capture then refuses those addresses). */
function readHosts(path: string): Map<string, string[]> {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const buffer = Buffer.alloc(MAX_HOSTS_FILE_BYTES);
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    return parseHostsFile(buffer.subarray(0, length).toString('utf8'));
  } catch {
    return new Map();
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The HTTP and SOCKS front ends over one proxy state, not yet listening (`sbx run`'s sockets, `sbx proxy`'s port). */
export function createFrontEnds(opts: FrontEndOptions): { state: ProxyState; http: Server; socks: NetServer } {
  const state = createProxyState({
    rules: opts.rules,
    resolve: opts.resolve ?? resolveSystem,
    connect: opts.connect ?? connectToAddress,
    timeouts: { ...DEFAULT_TIMEOUTS, ...opts.timeouts },
    credentials: opts.credentials,
    pool: createAddressPool(),
    hosts: readHosts(opts.hostsFile ?? '/etc/hosts'),
    questions: opts.questions,
    onEvent: opts.onEvent,
  });
  const http = createHttpProxy(state);
  const socks = createSocksProxy(state);
  http.maxConnections = opts.maxConnections ?? 512;
  socks.maxConnections = opts.maxConnections ?? 512;
  return { state, http, socks };
}

export async function startEgressProxy(opts: EgressProxyOptions): Promise<EgressProxy> {
  if (opts.loopback) {
    const { state, http, socks } = createFrontEnds(opts);
    return startOnLoopback(http, socks, state, opts.loopback.uid, opts.maxConnections ?? 512);
  }
  const httpSocket = join(opts.socketDir, EGRESS_HTTP_SOCKET);
  const socksSocket = join(opts.socketDir, EGRESS_SOCKS_SOCKET);
  checkSocketPath(socksSocket);
  const { state, http, socks } = createFrontEnds(opts);
  try {
    await listen(http, httpSocket);
    await listen(socks, socksSocket);
  } catch (cause) {
    state.shutdown();
    await Promise.all([
      http.listening ? closeServer(http) : undefined,
      socks.listening ? closeServer(socks) : undefined,
    ]);
    throw new SbxError(
      'SANDBOX_SETUP',
      `cannot listen on the egress proxy sockets in ${opts.socketDir}: ${(cause as Error).message}`,
      {
        cause,
        hint: 'the session directory must be writable and must not already hold egress-*.sock',
      },
    );
  }

  let closing: Promise<void> | undefined;
  return {
    httpSocket,
    socksSocket,
    stats: () => state.stats(),
    close() {
      closing ??= (async () => {
        const done = Promise.all([closeServer(http), closeServer(socks)]);
        state.shutdown();
        http.closeAllConnections();
        await done;
        // libuv unlinks a listening pipe's path on close; this covers a server that never got there.
        rmSync(httpSocket, { force: true });
        rmSync(socksSocket, { force: true });
      })();
      return closing;
    },
  };
}
