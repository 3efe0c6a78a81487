// Sandbox egress: host-side proxy, in-sandbox bridge. The rules themselves are src/network/egress.ts.
//
// The proxy variables the child sees are built by the bridge (bridge.cjs), not here: the bridge binds
// ephemeral ports inside the sandbox's namespace, and only it learns them. The host only needs the
// bridge's argv: `node <bridgePath()> <httpSocket> <socksSocket> -- CMD ARGS...`.
import { fileURLToPath } from 'node:url';

export { startEgressProxy, type EgressProxy, type EgressProxyOptions } from './proxy.js';
export { listenEgressProxy, type ListeningProxy, type ListeningProxyOptions } from './listener.js';
export { bindPublishedPorts, startPortBridges, type PortBridges, type PublishedPorts } from './ports.js';
export type { EgressEvent, EgressStats, EgressTimeouts, DestinationStats, Via } from './proxy-context.js';
export { parseClientHello, type ClientHelloResult } from './client-hello.js';

/**
 * Where bridge.cjs is: beside this module in src/, and beside the bundle in dist/ (the build must
 * copy src/network/host/bridge.cjs to dist/bridge.cjs, as esbuild does not follow a file that is
 * only ever spawned).
 */
export function bridgePath(moduleUrl: string = import.meta.url): string {
  return fileURLToPath(new URL('./bridge.cjs', moduleUrl));
}
