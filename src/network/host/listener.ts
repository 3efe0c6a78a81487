// `sbx proxy`'s front door: the egress proxy (the same front ends and rules as `sbx run`'s, proxy.ts)
// on one TCP port instead of two unix sockets, so one address serves HTTP_PROXY, HTTPS_PROXY and
// ALL_PROXY alike. The protocol is told by the first byte: a SOCKS5 greeting starts with its version,
// 0x05 (RFC 1928 §3), which no HTTP request line can (RFC 9112 §3: a method is a token of visible
// characters). The byte is put back and the connection handed to that front end as if it had accepted it.
import { createServer, type Server, type Socket } from 'node:net';
import { SbxError } from '../../errors.js';
import type { EgressStats } from './proxy-context.js';
import { createFrontEnds, type FrontEndOptions } from './proxy.js';

const SOCKS_VERSION = 0x05;

export interface ListeningProxyOptions extends FrontEndOptions {
  /** An IP literal: the caller decides which addresses may be served (cli/proxy-command.ts). */
  host: string;
  /** 0: an ephemeral port, reported by `port`. */
  port: number;
}

export interface ListeningProxy {
  host: string;
  port: number;
  stats(): EgressStats;
  /** Ends every connection and stops listening. Idempotent. */
  close(): Promise<void>;
}

function closeServer(server: { close(cb: () => void): unknown }): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

export async function listenEgressProxy(opts: ListeningProxyOptions): Promise<ListeningProxy> {
  const { state, http, socks } = createFrontEnds(opts);
  const headMs = state.timeouts.headMs;
  // allowHalfOpen as the SOCKS front end's own server has it: a tunnel passes half-closes through.
  const front: Server = createServer({ allowHalfOpen: true }, (socket: Socket) => {
    state.track(socket);
    socket.on('error', () => socket.destroy());
    // A client that connects and says nothing holds a descriptor: it gets the time a request head gets.
    const silent = setTimeout(() => socket.destroy(), headMs);
    socket.once('close', () => clearTimeout(silent));
    socket.once('data', (first: Buffer) => {
      clearTimeout(silent);
      socket.pause();
      socket.unshift(first);
      // The SOCKS front end reads the paused socket ('readable'); node:http listens for 'data', which
      // does not restart a stream paused by hand.
      if (first[0] === SOCKS_VERSION) socks.emit('connection', socket);
      else {
        http.emit('connection', socket);
        socket.resume();
      }
    });
  });
  front.maxConnections = opts.maxConnections ?? 512;
  try {
    await new Promise<void>((resolve, reject) => {
      front.once('error', reject);
      front.listen({ host: opts.host, port: opts.port, exclusive: true }, () => {
        front.off('error', reject);
        resolve();
      });
    });
  } catch (cause) {
    state.shutdown();
    const where = `${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${opts.port}`;
    const inUse = (cause as NodeJS.ErrnoException).code === 'EADDRINUSE';
    throw new SbxError(
      inUse ? 'PORT_IN_USE' : 'SANDBOX_SETUP',
      `sbx proxy cannot listen on ${where}: ${(cause as Error).message}`,
      {
        cause,
        hint: inUse
          ? `stop what listens there (ss -ltnp 'sport = :${opts.port}' shows it), or name another port with --listen`
          : 'name an address of this host with --listen (e.g. 127.0.0.1:3128)',
      },
    );
  }
  const bound = front.address();
  const port = typeof bound === 'object' && bound !== null ? bound.port : opts.port;
  let closing: Promise<void> | undefined;
  return {
    host: opts.host,
    port,
    stats: () => state.stats(),
    close() {
      closing ??= (async () => {
        const done = closeServer(front);
        state.shutdown();
        http.closeAllConnections();
        await done;
      })();
      return closing;
    },
  };
}
