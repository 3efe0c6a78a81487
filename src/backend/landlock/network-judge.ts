// The network under the landlock backend (native/sbx-landlock-net.c): there is no namespace, so
// Landlock's TCP rules deny connect and bind unless the policy shares the host's network, and for an
// allow-list the helper's network judge connects each connect() to sbx's proxy or a host port on the
// host's 127.0.0.1, and captures every other TCP connect into the proxy (its denials are read back by
// backend/shared/judge-status.ts). Pure.
import type { Policy } from '../../policy/types.js';
import type { Session } from '../launch.js';
import { RES_OPTIONS_USE_VC } from '../../network/resolver-files.js';
import { proxyEnv } from '../shared/proxy-env.js';
import { deny, type Grants, OTHER_BACKEND } from './grants.js';

/** Landlock's TCP rules are in force unless the policy shares the host's network (ABI 4). */
export function landlockGovernsTcp(policy: Policy): boolean {
  return policy.network.kind !== 'host';
}

/**
 * An allow-list network: the helper's judge connects the command only to sbx's proxy and the host
 * ports (native/sbx-landlock-net.c). What needs inbound connections or a socket file is refused.
 */
export function assessFiltered(g: Grants, n: Extract<Policy['network'], { kind: 'filtered' }>): void {
  if (n.publish.length > 0) {
    deny(
      g,
      'network.publish',
      `network.publish (${n.publish.join(', ')}): the command cannot listen without a network namespace, ` +
        "where a listening socket would take connections from the host's network",
      `remove publish from the profile, ${OTHER_BACKEND}`,
    );
  }
  if (n.unixSockets.length > 0) {
    deny(
      g,
      'network.unix_sockets',
      `network.unix_sockets (${n.unixSockets.join(', ')}): the backend refuses socket(AF_UNIX) (landlock.unix-sockets)`,
      `remove unix_sockets from the profile, ${OTHER_BACKEND}`,
    );
  }
  g.approximations.add('network.filtered');
}

/** Where an allow-list network's command is under this backend, for `sbx explain` (native/sbx-landlock-net.c). */
export const LANDLOCK_NETWORK_FILTERED =
  "no network namespace (the host's network); Landlock denies TCP, the helper's judge takes each connect() " +
  "into sbx's proxy on 127.0.0.1";

/**
 * What to do when the network judge cannot work (`sbx-landlock --probe-judge` named the step). Docker's
 * default seccomp profile allows pidfd_getfd (and process_vm_readv, for which the helper falls back to
 * /proc/TID/mem) only to a container that has CAP_SYS_PTRACE; the command itself never keeps a
 * capability (native/sbx-landlock.c drop_capabilities), so adding it widens nothing inside.
 */
export function judgeFix(unavailable: string): string {
  const ptraceGated = /^pidfd_getfd: Operation not permitted/.test(unavailable);
  return ptraceGated
    ? "start the container with --cap-add SYS_PTRACE (Docker's default seccomp profile allows pidfd_getfd " +
        'only with it; the sandboxed command keeps no capability), or use --network none or host'
    : 'use --network none or host';
}

/**
 * The loopback ports the judge connects the command to (the proxy's, then network.host_ports), the
 * proxy port it captures every other TCP connect into (an allow list's), and the command's network
 * variables: the proxy's, as the bwrap bridge sets them, and RES_OPTIONS=use-vc, so that glibc asks
 * the host's nameserver over TCP, which the judge captures into sbx's DNS (the host's /etc is the
 * command's: no resolv.conf of sbx's own here). A planned session (explain) has no proxy yet: its
 * ports are shown as placeholders, which the helper would refuse as a run's configuration.
 */
export function egressOf(
  policy: Policy,
  session: Session,
): { ports: (number | string)[]; capture?: number | string; env: Record<string, string> } {
  const n = policy.network;
  if (n.kind !== 'filtered') return { ports: [], env: {} };
  if (n.rules.allow.length === 0) return { ports: n.hostPorts, env: {} };
  const http = session.egressPorts?.http ?? '<proxy-http-port>';
  const socks = session.egressPorts?.socks ?? '<proxy-socks-port>';
  return {
    ports: [http, socks, ...n.hostPorts],
    capture: http,
    env: { ...proxyEnv('127.0.0.1', http, socks), ...RES_OPTIONS_USE_VC },
  };
}

/** The system calls the helper's network judge receives (explain lists them beside the filter's rules). */
export function landlockJudgedCalls(policy: Policy): string[] {
  return policy.network.kind === 'filtered' ? ['connect', 'listen', 'socket'] : [];
}
