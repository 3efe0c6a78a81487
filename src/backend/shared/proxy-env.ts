// The proxy variables a command gets when it reaches sbx's egress proxy without the bwrap bridge: on
// the host's loopback (the landlock backend, which has no namespace) or at a proxy pod's address (the
// Kubernetes export, src/export/k8s-egress.ts). Pure. The same list as the bwrap bridge's
// (network/host/bridge.cjs proxyEnv, which runs inside the sandbox and cannot import this):
// test/unit/backend/landlock/network-judge.test.ts holds the two equal. Who reads which variable: bridge.cjs.

/** Every variable the bridge sets, for the proxy's HTTP and SOCKS ports at `host` (127.0.0.1 for the bridge). */
export function proxyEnv(host: string, httpPort: number | string, socksPort: number | string): Record<string, string> {
  const http = `http://${host}:${httpPort}`;
  const socks = `socks5h://${host}:${socksPort}`;
  const noProxy = 'localhost,127.0.0.1,::1';
  return {
    HTTP_PROXY: http,
    http_proxy: http,
    HTTPS_PROXY: http,
    https_proxy: http,
    ALL_PROXY: socks,
    all_proxy: socks,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    npm_config_proxy: http,
    npm_config_https_proxy: http,
    npm_config_noproxy: noProxy,
    YARN_HTTP_PROXY: http,
    YARN_HTTPS_PROXY: http,
    CARGO_HTTP_PROXY: http,
    NODE_USE_ENV_PROXY: '1',
    RSYNC_PROXY: `${host}:${httpPort}`,
  };
}
