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
import { normaliseHost } from '../../policy/egress.js';
import { CLIENT_HELLO_MAX_BYTES, parseClientHello } from './client-hello.js';
import type { ProxyContext, Via } from './context.js';

// TLS alert record: fatal (2), access_denied (49). The client is already in tunnel mode, so this is
// the one refusal it can understand (curl prints "tlsv1 alert access denied").
const TLS_ACCESS_DENIED = Buffer.from([0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x31]);

export function runTunnel(
  ctx: ProxyContext,
  via: Via,
  client: Socket,
  upstream: Socket,
  target: { host: string; port: number; ledger: { discard(): void } },
): void {
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
    // pipe() gives backpressure and forwards the client's half-close; errors end both (above).
    client.pipe(upstream);
  };
  const refuse = (rule: string, detail: string): void => {
    stopGate();
    chunks.length = 0;
    target.ledger.discard();
    ctx.refuse(via, target.host, target.port, rule, detail);
    upstream.destroy();
    client.end(TLS_ACCESS_DENIED);
  };
  const evaluate = (): void => {
    if (decided || size === 0) return;
    const hello = parseClientHello(Buffer.concat(chunks, size), CLIENT_HELLO_MAX_BYTES);
    switch (hello.kind) {
      case 'incomplete':
        helloTimer ??= setTimeout(
          () =>
            refuse(
              'network.sni',
              `TLS ClientHello to ${target.host}:${target.port} not complete within ${ctx.timeouts.helloMs} ms`,
            ),
          ctx.timeouts.helloMs,
        );
        return;
      case 'not-tls':
        return pass();
      case 'malformed':
        return refuse('network.sni', `malformed TLS ClientHello to ${target.host}:${target.port} (${hello.reason})`);
      case 'client-hello': {
        if (hello.serverName === undefined) return pass();
        const named = normaliseHost(hello.serverName);
        if (named === target.host) return pass();
        const shown = named ?? 'an invalid name';
        return refuse(
          'network.sni',
          `TLS server name ${shown} differs from tunnel target ${target.host}:${target.port}`,
        );
      }
    }
  };
  function onReadable(): void {
    let chunk: Buffer | null;
    while (!decided && (chunk = client.read() as Buffer | null) !== null) {
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
    refuse('network.sni', `TLS ClientHello to ${target.host}:${target.port} cut short`);
  }
  client.on('readable', onReadable);
  client.on('end', onEnd);
  onReadable();
}
