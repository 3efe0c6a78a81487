// A CONNECT tunnel (HTTP or SOCKS) after the dial: bytes both ways, with the client's first bytes
// held back until they are known not to be a TLS ClientHello naming another host.
//
// No TLS interception but for the hosts a credential names (intercept.ts): elsewhere the proxy only
// reads the cleartext ClientHello. A client sending no SNI is let through: it reaches only the address
// checked for the allowed name, and SNI is absent for IP-literal targets and some legitimate clients.
// What SNI cannot catch (an HTTP Host header inside TLS, or an Encrypted Client Hello whose outer name
// is the front's) needs interception; an ECH outer name that differs from the target is refused like
// any other mismatch.
//
// Server-speaks-first protocols (SSH, SMTP) work: destination → client flows from the start; only
// client → destination waits for the first client bytes. To a host a credential names, the destination
// waits too, until the client's first bytes say whether they are TLS (then intercepted) or not (then
// tunnelled), for at most the hello timeout. A stream that is not TLS is cleartext the proxy sees: with
// credentials in play, it is searched for them on its way (credential-guard.ts).
import type { Socket } from 'node:net';
import { Transform } from 'node:stream';
import { normaliseHost } from '../egress.js';
import { CLIENT_HELLO_MAX_BYTES, parseClientHello } from './client-hello.js';
import { outOfPlace, refuseCarried, scanningStream } from './credential-guard.js';
import { interceptTunnel } from './intercept.js';
import { createRequestChecker } from '../plaintext-http.js';
import { rawResponse, refusalBody } from './replies.js';
import type { ProxyContext, Via } from './proxy-context.js';

// TLS alert record: fatal (2), access_denied (49). The client is already in tunnel mode, so this is
// the one refusal it can understand (curl prints "tlsv1 alert access denied").
const TLS_ACCESS_DENIED = Buffer.from([0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x31]);

/** Where the tunnel leads; `ledger.discard()` uncounts the connection when the tunnel is refused. */
interface TunnelTarget {
  host: string;
  port: number;
  ledger: { discard(): void };
}

export function runTunnel(ctx: ProxyContext, via: Via, client: Socket, upstream: Socket, target: TunnelTarget): void {
  const intercepted = ctx.credentials?.intercepts(target.host, target.port) ?? false;
  if (!intercepted) joinSockets(ctx, client, upstream);
  gateClientHello(ctx, via, client, upstream, target, intercepted);
}

/** An error or idleness on either side ends both; the destination's bytes flow to the client from the start. */
function joinSockets(ctx: ProxyContext, client: Socket, upstream: Socket): void {
  const teardown = (): void => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', teardown);
  upstream.on('error', teardown);
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => {
    // Let what the destination sent drain to the client before closing it.
    if (client.writableEnded) return;
    client.end();
  });
  client.setTimeout(ctx.timeouts.idleMs, teardown);
  upstream.setTimeout(ctx.timeouts.idleMs, teardown);
  upstream.pipe(client);
}

type HelloVerdict = { kind: 'pass'; tls: boolean } | { kind: 'wait' } | { kind: 'refuse'; detail: string };

/** What the client's first bytes say: pass them on, wait for more, or refuse the tunnel (and why). */
function judgeHello(bytes: Buffer, target: TunnelTarget): HelloVerdict {
  const hello = parseClientHello(bytes, CLIENT_HELLO_MAX_BYTES);
  switch (hello.kind) {
    case 'incomplete':
      return { kind: 'wait' };
    case 'not-tls':
      return { kind: 'pass', tls: false };
    case 'malformed':
      return {
        kind: 'refuse',
        detail: `malformed TLS ClientHello to ${target.host}:${target.port} (${hello.reason})`,
      };
    case 'client-hello': {
      if (hello.serverName === undefined) return { kind: 'pass', tls: true };
      const named = normaliseHost(hello.serverName);
      if (named === target.host) return { kind: 'pass', tls: true };
      const shown = named ?? 'an invalid name';
      return {
        kind: 'refuse',
        detail: `TLS server name ${shown} differs from tunnel target ${target.host}:${target.port}`,
      };
    }
  }
}

/**
 * The client's cleartext, each HTTP request in it checked against the tunnel's name
 * (network/plaintext-http.ts). A request for another host is refused with a 403 and ends the tunnel.
 */
function requestGate(ctx: ProxyContext, via: Via, client: Socket, upstream: Socket, target: TunnelTarget): Transform {
  const checker = createRequestChecker({ host: target.host, port: target.port });
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const step = checker.push(chunk);
      if (step.kind === 'forward') {
        for (const bytes of step.bytes) this.push(bytes);
        return done();
      }
      if (step.first) target.ledger.discard();
      const v = ctx.refuse(via, target.host, target.port, 'network.host', step.detail);
      upstream.unpipe(client);
      upstream.destroy();
      client.end(rawResponse(403, 'Forbidden', refusalBody(v)));
      done();
    },
  });
}

/**
 * A cleartext stream from the client: its HTTP requests checked (requestGate), and searched for
 * credentials on its way when the run has any: one found ends the tunnel and is refused
 * (network/host/credential-guard.ts).
 */
function pipeCleartext(ctx: ProxyContext, via: Via, client: Socket, upstream: Socket, target: TunnelTarget): void {
  const gate = requestGate(ctx, via, client, upstream, target);
  const broker = ctx.credentials;
  if (!broker) {
    client.pipe(gate).pipe(upstream);
    return;
  }
  const where = { host: target.host, port: target.port, plaintext: true };
  const scan = scanningStream(broker.tracer, outOfPlace(target.host, target.port, true), (found) => {
    refuseCarried(ctx, via, where, found, 'a cleartext stream');
    client.destroy();
    upstream.destroy();
  });
  scan.on('error', () => undefined);
  client.pipe(gate).pipe(scan).pipe(upstream);
}

/**
 * Holds the client's bytes back until judgeHello decides, then passes them on or refuses the tunnel.
 * `intercepted`: the target is a credential's host, whose TLS the proxy terminates (intercept.ts); the
 * sockets are joined only once the client's bytes turn out not to be TLS, or it sent none in time.
 */
function gateClientHello(
  ctx: ProxyContext,
  via: Via,
  client: Socket,
  upstream: Socket,
  target: TunnelTarget,
  intercepted: boolean,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let helloTimer: NodeJS.Timeout | undefined;
  let decided = false;
  // A server-speaks-first protocol to a credential's host: nothing from the client, so a tunnel after all.
  let silentTimer = intercepted
    ? setTimeout(() => {
        if (size === 0) pass(false);
      }, ctx.timeouts.helloMs)
    : undefined;

  const stopGate = (): void => {
    decided = true;
    clearTimeout(helloTimer);
    clearTimeout(silentTimer);
    client.off('readable', onReadable);
    client.off('end', onEnd);
  };
  const pass = (tls: boolean): void => {
    stopGate();
    if (size > 0) client.unshift(Buffer.concat(chunks, size));
    chunks.length = 0;
    if (intercepted && tls) {
      interceptTunnel(ctx, via, client, upstream, target);
      return;
    }
    if (intercepted) joinSockets(ctx, client, upstream);
    // pipe() gives backpressure and forwards the client's half-close; errors end both (joinSockets).
    if (tls) client.pipe(upstream);
    else pipeCleartext(ctx, via, client, upstream, target);
  };
  const refuse = (detail: string): void => {
    stopGate();
    chunks.length = 0;
    target.ledger.discard();
    ctx.refuse(via, target.host, target.port, 'network.sni', detail);
    upstream.destroy();
    client.end(TLS_ACCESS_DENIED);
  };
  const evaluate = (): void => {
    if (decided || size === 0) return;
    clearTimeout(silentTimer);
    silentTimer = undefined;
    const verdict = judgeHello(Buffer.concat(chunks, size), target);
    if (verdict.kind === 'pass') pass(verdict.tls);
    else if (verdict.kind === 'refuse') refuse(verdict.detail);
    else {
      const late = `TLS ClientHello to ${target.host}:${target.port} not complete within ${ctx.timeouts.helloMs} ms`;
      helloTimer ??= setTimeout(() => refuse(late), ctx.timeouts.helloMs);
    }
  };
  function onReadable(): void {
    while (!decided) {
      const chunk = client.read() as Buffer | null;
      if (chunk === null) break;
      chunks.push(chunk);
      size += chunk.length;
    }
    evaluate();
  }
  function onEnd(): void {
    // The client half-closed before the gate decided: nothing more can complete a ClientHello.
    if (decided) return;
    if (size === 0) {
      stopGate();
      if (intercepted) joinSockets(ctx, client, upstream);
      upstream.end();
      return;
    }
    refuse(`TLS ClientHello to ${target.host}:${target.port} cut short`);
  }
  client.on('readable', onReadable);
  client.on('end', onEnd);
  onReadable();
}
