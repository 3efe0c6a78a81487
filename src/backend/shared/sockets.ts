// The socket names in the session directory where the in-sandbox bridge (shared/bridge.ts,
// network/host/bridge.cjs) and sbx's listeners outside (network/host/proxy.ts, ports.ts) meet.
// Pure, and free of imports: the network runtime loads it without the policy modules.

/** The egress proxy's socket names in the session directory: the proxy listens there, the bridge connects there. */
export const EGRESS_HTTP_SOCKET = 'egress-http.sock';
export const EGRESS_SOCKS_SOCKET = 'egress-socks.sock';

/** network.host_ports: sbx listens on this socket and relays each connection to the host's 127.0.0.1:`port`. */
export function hostPortSocket(port: number): string {
  return `host-port-${port}.sock`;
}

/** network.publish: the bridge keeps a connection open on this socket for sbx to hand the next host client to. */
export function publishSocket(port: number): string {
  return `publish-${port}.sock`;
}
