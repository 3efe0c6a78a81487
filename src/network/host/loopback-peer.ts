// Who is on the other end of a TCP connection accepted on the host's 127.0.0.1. The landlock backend's
// proxy listens there (there is no network namespace to hide it in), where every local user can reach
// it: only connections from a socket of sbx's own uid are taken, so another user can neither use the
// run's allow-list nor write refusals into its report. The kernel's table of TCP sockets names each
// socket's owner (the uid that created it); the peer is the row whose local end is the connection's
// remote end. An IPv6 socket connected to ::ffff:127.0.0.1 (Java's, and the network judge's capture on
// one: native/sbx-landlock-net.c) arrives here as IPv4 but is listed in /proc/net/tcp6, in its
// v4-mapped form. Same-uid processes are sbx's user already (they could ptrace sbx itself).
import { readFile } from 'node:fs/promises';
import type { Socket } from 'node:net';

/** An IPv4 endpoint as /proc/net/tcp writes it: the address in host byte order (little-endian here), then the port, both hex. */
function procEndpoint(address: string, port: number): string {
  const octets = address.split('.').map(Number);
  const hex = (n: number, width: number) => n.toString(16).toUpperCase().padStart(width, '0');
  return `${[...octets]
    .reverse()
    .map((o) => hex(o, 2))
    .join('')}:${hex(port, 4)}`;
}

/** The same endpoint as /proc/net/tcp6 writes a v4-mapped one: four 32-bit words, each in host byte order. */
function procEndpoint6(address: string, port: number): string {
  return `0000000000000000FFFF0000${procEndpoint(address, port)}`;
}

/** The owner's uid of the row of `table` from `peer` to `us`, if there is one. */
function ownerIn(table: string, peer: string, us: string): number | undefined {
  for (const line of table.split('\n').slice(1)) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode (proc_net_tcp(5))
    const fields = line.trim().split(/\s+/);
    if (fields[1] === peer && fields[2] === us) return Number(fields[7]);
  }
  return undefined;
}

/** Whether `socket`'s peer is a socket `uid` created, on 127.0.0.1. False when it cannot be told (fail closed). */
export async function isLoopbackPeerOwnedBy(socket: Socket, uid: number): Promise<boolean> {
  const { remoteAddress, remotePort, localAddress, localPort } = socket;
  if (remoteAddress !== '127.0.0.1' || localAddress !== '127.0.0.1' || !remotePort || !localPort) return false;
  const read = (file: string) => readFile(file, 'utf8').catch(() => '');
  const v4 = ownerIn(
    await read('/proc/net/tcp'),
    procEndpoint(remoteAddress, remotePort),
    procEndpoint(localAddress, localPort),
  );
  if (v4 !== undefined) return v4 === uid;
  const v6 = ownerIn(
    await read('/proc/net/tcp6'),
    procEndpoint6(remoteAddress, remotePort),
    procEndpoint6(localAddress, localPort),
  );
  return v6 === uid;
}
