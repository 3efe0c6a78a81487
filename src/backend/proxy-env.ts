// The proxy variables a command gets when sbx's egress proxy listens on the host's loopback (the
// landlock backend, which has no bridge inside a namespace). Pure. The same list as the bwrap bridge's
// (runtime/network/bridge.cjs proxyEnv, which runs inside the sandbox and cannot import this):
// test/unit/backend/proxy-env.test.ts holds the two equal. Who reads which variable is listed there.

/** Every variable the bridge sets, for the proxy's HTTP and SOCKS ports on 127.0.0.1. */
export function proxyEnv(httpPort: number | string, socksPort: number | string): Record<string, string> {
  const http = `http://127.0.0.1:${httpPort}`;
  const socks = `socks5h://127.0.0.1:${socksPort}`;
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
    RSYNC_PROXY: `127.0.0.1:${httpPort}`,
  };
}
