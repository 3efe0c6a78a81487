'use strict';
// The in-sandbox half of sbx egress. Runs inside the sandbox's network namespace (only `lo`) under the
// host's node binary, so it is plain CommonJS with no project or npm imports, and small: it adds one
// node start-up to every networked run.
//
//   node bridge.cjs <http-unix-socket> <socks-unix-socket> -- CMD [ARGS...]
//
// Listens on two ephemeral 127.0.0.1 ports (ephemeral so the child keeps every fixed port for its own
// servers), forwards each TCP connection to the matching unix socket of the host-side proxy, and only
// once both listeners are bound spawns CMD with the proxy variables pointing at them. Exit status is
// the child's, or 128+signal as in sh(1); 127/126 when CMD cannot be found or executed.
//
// The environment is built here rather than by the host because only the bridge knows the ports.
// Who reads what (all of these are overridden, a stale host value must not win):
//   curl/libcurl (git, cargo): http_proxy (lower case only: httpoxy), HTTPS_PROXY, ALL_PROXY, NO_PROXY
//   wget: http_proxy, https_proxy, no_proxy (lower case)
//   pip/requests/urllib, Go, Deno, Bun, Ruby: HTTP(S)_PROXY and NO_PROXY in either case
//   npm and yarn 1 (which reads npm_config_*): npm_config_proxy, npm_config_https_proxy, npm_config_noproxy
//   yarn 2+: YARN_HTTP_PROXY, YARN_HTTPS_PROXY; cargo also reads CARGO_HTTP_PROXY
//   Node's fetch/http: NODE_USE_ENV_PROXY=1 (honoured from Node 24; ignored before)
//   rsync daemon protocol: RSYNC_PROXY (host:port, via CONNECT)
// ALL_PROXY is socks5h:// so tools that take it (curl, git) send names, not addresses, to the proxy.
// Not covered: Java (needs -D flags), git:// and ssh:// (need GIT_PROXY_COMMAND / ProxyCommand).
const net = require('node:net');
const { spawn } = require('node:child_process');
const { constants } = require('node:os');

function proxyEnv(httpPort, socksPort) {
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

function die(message, code) {
  process.stderr.write(`sbx-bridge: ${message}\n`);
  process.exit(code);
}

// Half-close passes through (allowHalfOpen), pipe() gives backpressure, an error on either side
// ends both.
function forwardTo(path) {
  return net.createServer({ allowHalfOpen: true, noDelay: true }, (tcp) => {
    const unix = net.connect({ path, allowHalfOpen: true });
    const both = () => {
      tcp.destroy();
      unix.destroy();
    };
    tcp.on('error', both);
    unix.on('error', both);
    tcp.on('close', () => unix.destroy());
    unix.on('close', () => tcp.end());
    tcp.pipe(unix).pipe(tcp);
  });
}

function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

async function main(argv) {
  const sep = argv.indexOf('--');
  if (sep !== 2 || argv.length < 4) die('usage: bridge.cjs <http-socket> <socks-socket> -- CMD [ARGS...]', 2);
  const [httpPort, socksPort] = await Promise.all([listen(forwardTo(argv[0])), listen(forwardTo(argv[1]))]);
  const child = spawn(argv[3], argv.slice(4), {
    stdio: 'inherit',
    env: { ...process.env, ...proxyEnv(httpPort, socksPort) },
  });
  // The child stays in the bridge's process group so it keeps the terminal. A Ctrl-C from a terminal
  // therefore reaches it twice (kernel, then this forward); signals sbx sends reach only the bridge.
  // Harmless for the usual handlers; see bash(1) on the same trade-off for foreground children.
  const forward = (signal) => child.kill(signal);
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(s, forward);
  child.on('error', (e) => die(`cannot run ${argv[3]}: ${e.code || e.message}`, e.code === 'ENOENT' ? 127 : 126));
  child.on('exit', (code, signal) => process.exit(signal ? 128 + (constants.signals[signal] || 0) : code));
}

main(process.argv.slice(2)).catch((e) => die(e.message, 125));
