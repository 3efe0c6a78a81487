// A CONNECT tunnel (HTTP or SOCKS) after the dial: bytes both ways, with the client's first bytes
// held back until they are known not to be a TLS ClientHello naming another host.
//
// No TLS interception: the proxy only reads the cleartext ClientHello. A client sending no SNI is let
// through: it reaches only the address checked for the allowed name, and SNI is absent for IP-literal
// targets and some legitimate clients. What SNI cannot catch (an HTTP Host header inside TLS, or an
// Encrypted Client Hello whose outer name is the front's) needs interception, which sbx does not do;
// an ECH outer name that differs from the target is refused like any other mismatch.
//
// Server-speaks-first protocols (SSH, SMTP) work: destination → client flows from the start; only
// client → destination waits for the first client bytes.
import type { Socket } from 'node:net';
import { normaliseHost } from '../egress.js';
import { CLIENT_HELLO_MAX_BYTES, parseClientHello } from './client-hello.js';
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
  joinSockets(ctx, client, upstream);
  gateClientHello(ctx, via, client, upstream, target);
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

type HelloVerdict = { kind: 'pass' } | { kind: 'wait' } | { kind: 'refuse'; detail: string };

/** What the client's first bytes say: pass them on, wait for more, or refuse the tunnel (and why). */
function judgeHello(bytes: Buffer, target: TunnelTarget): HelloVerdict {
  const hello = parseClientHello(bytes, CLIENT_HELLO_MAX_BYTES);
  switch (hello.kind) {
    case 'incomplete':
      return { kind: 'wait' };
    case 'not-tls':
      return { kind: 'pass' };
    case 'malformed':
      return {
        kind: 'refuse',
        detail: `malformed TLS ClientHello to ${target.host}:${target.port} (${hello.reason})`,
      };
    case 'client-hello': {
      if (hello.serverName === undefined) return { kind: 'pass' };
      const named = normaliseHost(hello.serverName);
      if (named === target.host) return { kind: 'pass' };
      const shown = named ?? 'an invalid name';
      return {
        kind: 'refuse',
        detail: `TLS server name ${shown} differs from tunnel target ${target.host}:${target.port}`,
      };
    }
  }
}

/** Holds the client's bytes back until judgeHello decides, then passes them on or refuses the tunnel. */
function gateClientHello(ctx: ProxyContext, via: Via, client: Socket, upstream: Socket, target: TunnelTarget): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let helloTimer: NodeJS.Timeout | undefined;
  let decided = false;

  const stopGate = (): void => {
    decided = true;
    clearTimeout(helloTimer);
    client.off('readable', onReadable);
    client.off('end', onEnd);
  };
  const pass = (): void => {
    stopGate();
    if (size > 0) client.unshift(Buffer.concat(chunks, size));
    chunks.length = 0;
    // pipe() gives backpressure and forwards the client's half-close; errors end both (joinSockets).
    client.pipe(upstream);
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
    const verdict = judgeHello(Buffer.concat(chunks, size), target);
    if (verdict.kind === 'pass') pass();
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
      upstream.end();
      return;
    }
    refuse(`TLS ClientHello to ${target.host}:${target.port} cut short`);
  }
  client.on('readable', onReadable);
  client.on('end', onEnd);
  onReadable();
}
