// The sandbox's network counters (network/net-counters.ts), opened once the launcher names the
// sandbox's init (backend/host/exec.ts onSandbox) and read after the command ended. A /proc net file
// keeps its namespace while it is open, so the count survives the sandbox; one opened in sbx's own
// namespace (landlock, `network: host`) would count the host's traffic, so nothing is opened there.
import { closeSync, openSync, readFileSync, statSync } from 'node:fs';
import type { Policy } from '../../policy/types.js';
import type { Violation } from '../../policy/violation.js';
import { noRouteAttempts, unreachableViolation } from '../net-counters.js';

export interface NetCounters {
  /** The sandbox's init (host pid): its network namespace's counters are opened now. */
  open(initPid: number): void;
  /** What they counted, as violations; closes them. */
  collect(): Violation[];
}

function openOrUndefined(path: string): number | undefined {
  try {
    return openSync(path, 'r');
  } catch {
    return undefined;
  }
}

function readAndClose(fd: number | undefined): string {
  if (fd === undefined) return '';
  try {
    return readFileSync(fd, 'utf8');
  } catch {
    return '';
  } finally {
    closeSync(fd);
  }
}

/**
 * Counters for a run whose sandbox has a network namespace of its own; undefined otherwise. `captured`:
 * the network judge captures its TCP connects (backend/shared/bridge.ts), so what finds no route is a datagram.
 */
export function sandboxNetCounters(network: Policy['network'], captured: boolean): NetCounters | undefined {
  if (network.kind === 'host') return undefined;
  const kind = network.kind === 'filtered' && captured ? 'captured' : network.kind;
  let fds: { snmp?: number | undefined; snmp6?: number | undefined } | undefined;
  return {
    open(initPid) {
      if (fds) return;
      try {
        // A namespace shared with sbx is the host's: its counters are not the sandbox's.
        if (statSync(`/proc/${initPid}/ns/net`).ino === statSync('/proc/self/ns/net').ino) return;
      } catch {
        return;
      }
      fds = {
        snmp: openOrUndefined(`/proc/${initPid}/net/snmp`),
        snmp6: openOrUndefined(`/proc/${initPid}/net/snmp6`),
      };
    },
    collect() {
      if (!fds) return [];
      const count = noRouteAttempts(readAndClose(fds.snmp), readAndClose(fds.snmp6));
      fds = undefined;
      const violation = unreachableViolation(count, kind);
      return violation ? [violation] : [];
    },
  };
}
