// sbx's DNS inside the sandbox, over TCP (RFC 1035 §4.2.2: each message after its 2-byte length), on a
// captured connection to port 53 (capture.ts). An allowed name is answered with an address of the run's
// pool (network/address-pool.ts), a denied one NXDOMAIN and a `network` violation (once per name). No
// query leaves sbx: the answer is made here, from the rules alone. Why TCP only: docs/DESIGN.md,
// "Transparent capture".
import { once } from 'node:events';
import type { Socket } from 'node:net';
import {
  DNS_TYPE_A,
  type DnsAnswer,
  dnsErrorResponse,
  dnsResponse,
  isInternetClass,
  MAX_DNS_QUERY_BYTES,
  parseDnsQuery,
} from '../dns-message.js';
import { canonicalIp, normaliseHost } from '../egress.js';
import { decideName, displayHost } from './dial.js';
import type { ProxyContext } from './proxy-context.js';

/** Short: a pool address is only good for this run, and a resolver should not hold it past it. */
export const DNS_TTL_SECONDS = 5;

/** What to answer for one query's name: decided by the proxy's one decision on names. */
async function answerName(ctx: ProxyContext, rawName: string, type: number): Promise<DnsAnswer> {
  // A literal is not a name to look up (getaddrinfo never asks for one); an answer would only alias it.
  if (canonicalIp(rawName) !== undefined) return { kind: 'nxdomain' };
  const decision = await decideName(ctx, rawName, 'any');
  if (!decision.allowed) {
    const detail = `${decision.detail} (a name lookup: answered NXDOMAIN)`;
    ctx.refuseName('dns', displayHost(rawName), decision.rule, detail, decision.key);
    return { kind: 'nxdomain' };
  }
  const name = normaliseHost(rawName) as string; // decideHost refuses every name without a normal form
  if (type !== DNS_TYPE_A) return { kind: 'no-data' };
  const address = ctx.pool.assign(name);
  if (address === undefined) {
    const detail = `${name}: the run's ${ctx.pool.size} addresses for names are all given out (answered SERVFAIL)`;
    ctx.refuseName('dns', name, 'network.allow', detail);
    return { kind: 'servfail' };
  }
  return { kind: 'address', address, ttlSeconds: DNS_TTL_SECONDS };
}

/** The reply to one message, or undefined when it cannot be answered at all (no id to answer to). */
async function reply(ctx: ProxyContext, message: Uint8Array): Promise<Buffer | undefined> {
  const parsed = parseDnsQuery(message);
  switch (parsed.kind) {
    case 'malformed':
      return parsed.id === undefined ? undefined : dnsErrorResponse(parsed.id, 'formerr');
    case 'unsupported':
      return dnsErrorResponse(parsed.id, 'notimp');
    case 'query': {
      const q = parsed.query;
      if (!isInternetClass(q)) return dnsResponse(q, { kind: 'refused' });
      return dnsResponse(q, await answerName(ctx, q.name, q.type));
    }
  }
}

function framed(message: Buffer): Buffer {
  const length = Buffer.alloc(2);
  length.writeUInt16BE(message.length, 0);
  return Buffer.concat([length, message]);
}

/**
 * Answers queries on `socket` in order until the client ends it. Holds at most one partial query
 * (MAX_DNS_QUERY_BYTES) beside the chunk being read, and reads nothing more while it answers or while
 * the client has not read the last answer, so a client that only sends cannot grow sbx's memory.
 * (Not `for await`: leaving that loop destroys the socket, and with it an answer not yet flushed.)
 */
export function serveDns(ctx: ProxyContext, socket: Socket): void {
  socket.setTimeout(ctx.timeouts.headMs, () => socket.destroy());
  let pending: Buffer = Buffer.alloc(0);
  /** Answers every whole query held; 'stop' when the connection is done with. */
  const answerHeld = async (): Promise<'more' | 'stop'> => {
    while (pending.length >= 2) {
      const length = pending.readUInt16BE(0);
      if (length > MAX_DNS_QUERY_BYTES || length === 0) {
        // Not a query sbx reads: say so when the id is there, and stop (the stream cannot be resynchronised).
        if (length > 0 && pending.length >= 4)
          socket.write(framed(dnsErrorResponse(pending.readUInt16BE(2), 'formerr')));
        socket.end();
        return 'stop';
      }
      if (pending.length < 2 + length) break;
      const answer = await reply(ctx, pending.subarray(2, 2 + length));
      pending = pending.subarray(2 + length);
      if (answer === undefined || socket.destroyed) {
        socket.destroy();
        return 'stop';
      }
      if (!socket.write(framed(answer))) await Promise.race([once(socket, 'drain'), once(socket, 'close')]);
    }
    return 'more';
  };
  socket.on('data', (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    socket.pause();
    answerHeld().then(
      (next) => {
        if (next === 'more' && !socket.destroyed) socket.resume();
      },
      () => socket.destroy(),
    );
  });
  // 'end' comes only once every chunk was taken, so after the last answer was written.
  socket.on('end', () => socket.end());
}
