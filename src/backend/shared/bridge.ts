// The in-sandbox bridge (network/host/bridge.cjs) as the backends that have a network namespace
// start it. Pure. bwrap and nsjail both start the command through it; landlock needs none (its launcher
// connects the command itself), so this lives apart from any one backend.
import { BRIDGE_NODE, BRIDGE_SCRIPT, BRIDGE_SESSION } from '../../network/bridge-paths.js';
import type { Policy } from '../../policy/types.js';
import { EGRESS_HTTP_SOCKET, EGRESS_SOCKS_SOCKET, hostPortSocket, publishSocket } from './sockets.js';

/**
 * The command the launcher starts: the user's, or the bridge in front of it. The bridge listens on
 * 127.0.0.1 inside (the proxy's ports, each host port), forwards to sbx's sockets in the session
 * directory, and starts the command once every listener is bound (network/host/bridge.cjs).
 */
export function commandOf(policy: Policy): string[] {
  const net = policy.network;
  if (net.kind !== 'filtered' || !net.bridge) return policy.command;
  return [
    BRIDGE_NODE,
    BRIDGE_SCRIPT,
    ...(net.rules.allow.length > 0
      ? ['--proxy', `${BRIDGE_SESSION}/${EGRESS_HTTP_SOCKET}`, `${BRIDGE_SESSION}/${EGRESS_SOCKS_SOCKET}`]
      : []),
    ...net.hostPorts.flatMap((p) => ['--host-port', String(p), `${BRIDGE_SESSION}/${hostPortSocket(p)}`]),
    ...net.publish.flatMap((p) => ['--publish', String(p), `${BRIDGE_SESSION}/${publishSocket(p)}`]),
    '--',
    ...policy.command,
  ];
}
