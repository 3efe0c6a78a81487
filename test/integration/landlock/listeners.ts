// Loopback listeners for the landlock network tests (bypass.test.ts, network-judge.test.ts): what each
// received, one string per datagram or connection, and a fence to tell that nothing else came.
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import type { connect, Server } from 'node:net';

/**
 * What a loopback listener received, one string per datagram or connection (its bytes up to EOF).
 * `drain` sends a fence through the same listener and returns what arrived before it: a refused
 * probe has exited by then, so whatever it had sent would be there.
 */
export interface Listener {
  received: string[];
  drain(): Promise<string[]>;
  /** Resolves once `message` has arrived. */
  arrived(message: string): Promise<void>;
  close(): void;
}

export function collector(fence: () => void, close: () => void): Listener {
  const received: string[] = [];
  const waiters: { message: string; resolve: () => void }[] = [];
  const l: Listener & { push(m: string): void } = {
    received,
    push(m) {
      received.push(m);
      for (const w of waiters.filter((w) => received.includes(w.message))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    },
    arrived: (message) =>
      new Promise<void>((resolve) => {
        if (received.includes(message)) resolve();
        else waiters.push({ message, resolve });
      }),
    async drain() {
      fence();
      await l.arrived('fence\n');
      return received.splice(0).filter((m) => m !== 'fence\n');
    },
    close,
  };
  return l;
}

export function streamListener(server: Server, dial: () => ReturnType<typeof connect>): Listener {
  const l = collector(
    () => dial().end('fence\n'),
    () => server.close(),
  ) as Listener & { push(m: string): void };
  server.on('connection', (socket) => {
    let data = '';
    socket.on('data', (c: Buffer) => (data += c.toString()));
    socket.on('end', () => l.push(data));
    socket.on('error', () => undefined);
  });
  return l;
}

/** A UDP listener on 127.0.0.1 (an ephemeral port): one string per datagram. */
export async function datagramListener(): Promise<{ port: number; listener: Listener }> {
  const socket = createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  const port = socket.address().port;
  const listener = collector(
    () => {
      const client = createSocket('udp4');
      client.send('fence\n', port, '127.0.0.1', () => client.close());
    },
    () => socket.close(),
  ) as Listener & { push(m: string): void };
  socket.on('message', (m) => listener.push(m.toString()));
  return { port, listener };
}
