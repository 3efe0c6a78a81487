// The in-sandbox bridge (network/host/bridge.cjs) as the backends that have a network namespace
// start it, behind the network judge under transparent capture. Pure. bwrap and nsjail both start the
// command through it; landlock needs none (its launcher connects the command itself), so this lives
// apart from any one backend.
import { BRIDGE_JUDGE, BRIDGE_NODE, BRIDGE_SCRIPT, BRIDGE_SESSION } from '../../network/bridge-paths.js';
import type { Policy } from '../../policy/types.js';
import { EGRESS_HTTP_SOCKET, EGRESS_SOCKS_SOCKET, hostPortSocket, publishSocket } from './sockets.js';

/**
 * The descriptors, as the sandbox's first process sees them, of a launcher that starts the network
 * judge (native/sbx-landlock.c --judge): the main seccomp filter it installs in place of the
 * launcher's own (undefined: none), the pipe its denials go to, and the free number the bridge
 * announces its proxy port on.
 */
export interface JudgeFds {
  seccomp: number | undefined;
  status: number;
  announce: number;
}

/** Whether the policy asks for transparent capture (an allow list, and the judge was built). */
export function capturesConnects(policy: Policy): boolean {
  return policy.network.kind === 'filtered' && policy.network.capture?.kind === 'on';
}

/** The run's warning when capture is off (the judge was not built): said before the command starts, kept in the report. */
export function captureWarning(policy: Policy): string[] {
  const n = policy.network;
  if (n.kind !== 'filtered' || n.capture?.kind !== 'off') return [];
  const only = 'only clients that honour the proxy variables (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) connect';
  return [`transparent capture is off (${n.capture.why}): ${only}`];
}

/**
 * The command the launcher starts: the user's, or the bridge in front of it. The bridge listens on
 * 127.0.0.1 inside (the proxy's ports, each host port), forwards to sbx's sockets in the session
 * directory, and starts the command once every listener is bound (network/host/bridge.cjs). Given
 * `judge` under capture, the network judge starts the bridge, and the bridge tells it the proxy's port.
 */
export function commandOf(policy: Policy, judge?: JudgeFds): string[] {
  const net = policy.network;
  if (net.kind !== 'filtered' || !net.bridge) return policy.command;
  const judged =
    judge !== undefined && capturesConnects(policy)
      ? [BRIDGE_JUDGE, '--judge', judge.seccomp === undefined ? '-' : String(judge.seccomp), String(judge.status)]
      : [];
  const announce = judged.length > 0 ? ['--announce', String(judge!.announce)] : [];
  return [
    ...(judged.length > 0 ? [...judged, String(judge!.announce), '--'] : []),
    BRIDGE_NODE,
    BRIDGE_SCRIPT,
    ...announce,
    ...(net.rules.allow.length > 0
      ? ['--proxy', `${BRIDGE_SESSION}/${EGRESS_HTTP_SOCKET}`, `${BRIDGE_SESSION}/${EGRESS_SOCKS_SOCKET}`]
      : []),
    ...net.hostPorts.flatMap((p) => ['--host-port', String(p), `${BRIDGE_SESSION}/${hostPortSocket(p)}`]),
    ...net.publish.flatMap((p) => ['--publish', String(p), `${BRIDGE_SESSION}/${publishSocket(p)}`]),
    '--',
    ...policy.command,
  ];
}
