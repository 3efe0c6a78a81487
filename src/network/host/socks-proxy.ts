// The SOCKS5 front end (RFC 1928): no authentication, CONNECT only. ATYP domain is the useful case
// (curl --socks5-hostname, socks5h:// URLs): the name reaches the proxy, which decides and resolves
// it. ATYP IPv4/IPv6 are accepted too, and then the literal address is all there is to decide on.
import { createServer, type Server, type Socket } from 'node:net';
import type { ProxyContext } from './proxy-context.js';
import { pooledName } from './capture.js';
import { dialChecked } from './dial.js';
import { runTunnel } from './tunnel.js';

const VERSION = 0x05;
const NO_AUTH = 0x00;
const NO_ACCEPTABLE_METHOD = 0xff;
const CMD_CONNECT = 0x01;
const ATYP_IPV4 = 0x01;
const ATYP_DOMAIN = 0x03;
const ATYP_IPV6 = 0x04;

/** RFC 1928 §6 reply codes. */
const REPLY = {
  succeeded: 0x00,
  generalFailure: 0x01,
  notAllowed: 0x02,
  hostUnreachable: 0x04,
  connectionRefused: 0x05,
  ttlExpired: 0x06,
  commandNotSupported: 0x07,
  addressTypeNotSupported: 0x08,
} as const;

const FAILURE_REPLY = {
  unresolvable: REPLY.hostUnreachable,
  unreachable: REPLY.connectionRefused,
  timeout: REPLY.ttlExpired,
  closed: REPLY.generalFailure,
} as const;

/** BND.ADDR/BND.PORT are meaningless through a unix socket: report 0.0.0.0:0. */
function replyBytes(code: number): Buffer {
  return Buffer.from([VERSION, code, 0x00, ATYP_IPV4, 0, 0, 0, 0, 0, 0]);
}

/** Exactly n bytes from a paused socket, or a rejection when it ends first. Buffers at most n. */
function readExact(socket: Socket, n: number): Promise<Buffer> {
  if (n === 0) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    const cleanup = (): void => {
      socket.off('readable', onReadable);
      socket.off('end', onClosed);
      socket.off('close', onClosed);
    };
    function onReadable(): void {
      const chunk = socket.read(n) as Buffer | null;
      if (chunk === null) return;
      cleanup();
      if (chunk.length < n) reject(new Error('SOCKS handshake cut short'));
      else resolve(chunk);
    }
    function onClosed(): void {
      cleanup();
      reject(new Error('SOCKS handshake cut short'));
    }
    socket.on('readable', onReadable);
    socket.on('end', onClosed);
    socket.on('close', onClosed);
    onReadable();
  });
}

function ipv6Text(bytes: Buffer): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  return groups.join(':');
}

async function handshake(ctx: ProxyContext, socket: Socket): Promise<void> {
  const deadline = setTimeout(() => socket.destroy(), ctx.timeouts.headMs);
  try {
    const greeting = await readExact(socket, 2);
    if (greeting[0] !== VERSION) return void socket.destroy();
    const methods = await readExact(socket, greeting[1] as number);
    if (!methods.includes(NO_AUTH)) return void socket.end(Buffer.from([VERSION, NO_ACCEPTABLE_METHOD]));
    socket.write(Buffer.from([VERSION, NO_AUTH]));

    const request = await readExact(socket, 4);
    if (request[0] !== VERSION) return void socket.destroy();
    let host: string;
    switch (request[3]) {
      case ATYP_IPV4:
        host = [...(await readExact(socket, 4))].join('.');
        break;
      case ATYP_DOMAIN: {
        const length = (await readExact(socket, 1))[0] as number;
        host = (await readExact(socket, length)).toString('utf8');
        break;
      }
      case ATYP_IPV6:
        host = `[${ipv6Text(await readExact(socket, 16))}]`;
        break;
      default:
        return void socket.end(replyBytes(REPLY.addressTypeNotSupported));
    }
    const port = (await readExact(socket, 2)).readUInt16BE(0);
    if (request[1] !== CMD_CONNECT) return void socket.end(replyBytes(REPLY.commandNotSupported));
    clearTimeout(deadline);

    const dial = await dialChecked(ctx, 'socks', pooledName(ctx, host) ?? host, port);
    if (dial.kind === 'refused') return void socket.end(replyBytes(REPLY.notAllowed));
    if (dial.kind === 'failed') return void socket.end(replyBytes(FAILURE_REPLY[dial.reason]));
    if (socket.destroyed) return void dial.socket.destroy();
    socket.write(replyBytes(REPLY.succeeded));
    // Bytes the client sent after its request (an optimistic ClientHello) are still in the socket's
    // buffer: the tunnel's SNI check reads them first.
    runTunnel(ctx, 'socks', socket, dial.socket, { host: dial.host, port, ledger: dial.ledger });
  } finally {
    clearTimeout(deadline);
  }
}

export function createSocksProxy(ctx: ProxyContext): Server {
  return createServer({ allowHalfOpen: true }, (socket) => {
    ctx.track(socket);
    socket.on('error', () => socket.destroy());
    handshake(ctx, socket).catch(() => socket.destroy());
  });
}
