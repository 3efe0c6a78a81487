// network/net-counters.ts: the sandbox namespace's OutNoRoutes, IPv4 and IPv6, read from the kernel's
// snmp files as a 6.x kernel writes them, and the violation it becomes.
import { describe, expect, it } from 'vitest';
import { noRouteAttempts, unreachableViolation } from '../../../src/network/net-counters.js';

const SNMP = [
  'Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails FragOKs FragFails FragCreates OutTransmits',
  'Ip: 1 64 2 0 0 0 0 0 2 2 0 3 0 0 0 0 0 0 0 2',
  'Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors',
  'Tcp: 1 200 120000 -1 1 0 1 0 0 2 2 0 0 1 0',
  '',
].join('\n');
const SNMP6 = [
  'Ip6InReceives                   \t0',
  'Ip6OutNoRoutes                  \t2',
  'Ip6InDiscards 0',
  '',
].join('\n');

describe('noRouteAttempts', () => {
  it('adds IPv4 OutNoRoutes and IPv6 Ip6OutNoRoutes; a missing file or field counts 0', () => {
    expect(noRouteAttempts(SNMP, SNMP6)).toBe(5);
    expect(noRouteAttempts(SNMP, '')).toBe(3);
    expect(noRouteAttempts('', '')).toBe(0);
  });
});

describe('unreachableViolation', () => {
  it('is a runtime network violation of the network key, worded for none and filtered; none at 0', () => {
    expect(unreachableViolation(0, 'none')).toBeUndefined();
    expect(unreachableViolation(1, 'none')).toEqual({
      phase: 'runtime',
      kind: 'network',
      rule: 'network',
      detail:
        '1 attempt to reach an address outside the sandbox (a connection, a datagram, a name lookup) found no route: the sandbox has no network (network: none)',
    });
    expect(unreachableViolation(3, 'filtered')?.detail).toMatch(/^3 attempts .*only the egress proxy leads out/);
  });

  it('under transparent capture (no TCP connect is left to find no route) says a datagram, and that UDP is not carried', () => {
    expect(unreachableViolation(2, 'captured')).toEqual({
      phase: 'runtime',
      kind: 'network',
      rule: 'network',
      detail:
        '2 attempts to send outside the sandbox found no route (a datagram (UDP, ICMP), or a TCP connect the judge could not take: the kernel counts them alike): UDP (DNS, QUIC) is not carried: clients fall back to TCP; sbx answers DNS over TCP',
    });
  });
});
