// What the sandbox's own network namespace counted: the kernel's SNMP counters of that namespace
// (/proc/<pid>/net/snmp, snmp6), read by network/host/net-counters.ts. Without a network (`none`), or
// past the egress proxy (`filtered`), a connection or datagram to an address outside the sandbox
// fails in the kernel with "network unreachable" before anything else sees it; the kernel counts it
// as OutNoRoutes (tcp_v4_connect, udp_sendmsg and their IPv6 twins). Pure.
import type { Violation } from '../policy/violation.js';

/** The value of `field` in a `Proto: names` / `Proto: values` pair of lines (snmp's layout). */
function pairedValue(text: string, proto: string, field: string): number {
  const lines = text.split('\n').filter((l) => l.startsWith(`${proto}:`));
  const names = lines[0]?.split(/\s+/) ?? [];
  const values = lines[1]?.split(/\s+/) ?? [];
  const i = names.indexOf(field);
  const value = i > 0 ? Number(values[i]) : 0;
  return Number.isFinite(value) ? value : 0;
}

/** The value of `name` in a `Name value` per line file (snmp6's layout). */
function lineValue(text: string, name: string): number {
  const m = new RegExp(`^${name}\\s+(\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

/** Attempts, IPv4 and IPv6, to send to an address for which the namespace had no route. */
export function noRouteAttempts(snmp: string, snmp6: string): number {
  return pairedValue(snmp, 'Ip', 'OutNoRoutes') + lineValue(snmp6, 'Ip6OutNoRoutes');
}

/** What no-route attempts were, under transparent capture (the violation's detail; docs/DESIGN.md). */
export const UDP_NOT_CARRIED = 'UDP (DNS, QUIC) is not carried: clients fall back to TCP; sbx answers DNS over TCP';

/**
 * The violation the count is, under the run's network; none when nothing was attempted. The counter
 * is the IP layer's, for TCP and UDP alike; under capture (`captured`) every TCP connect off the
 * namespace's `lo` is taken into the proxy before a route is looked up, so what is left to count is
 * mostly datagrams (UDP, ICMP); a connect the judge could not read (a non-dumpable process) is
 * counted alike, and the detail says so.
 */
export function unreachableViolation(count: number, network: 'none' | 'filtered' | 'captured'): Violation | undefined {
  if (count === 0) return undefined;
  const times = `${count} attempt${count === 1 ? '' : 's'}`;
  if (network === 'captured') {
    const what = 'a datagram (UDP, ICMP), or a TCP connect the judge could not take: the kernel counts them alike';
    const detail = `${times} to send outside the sandbox found no route (${what}): ${UDP_NOT_CARRIED}`;
    return { phase: 'runtime', kind: 'network', rule: 'network', detail };
  }
  const why =
    network === 'none'
      ? 'the sandbox has no network (network: none)'
      : 'only the egress proxy leads out (HTTP_PROXY, HTTPS_PROXY)';
  return {
    phase: 'runtime',
    kind: 'network',
    rule: 'network',
    detail: `${times} to reach an address outside the sandbox (a connection, a datagram, a name lookup) found no route: ${why}`,
  };
}
