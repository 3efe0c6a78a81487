'use strict';
// The in-sandbox half of sbx's network bridges. Runs inside the sandbox's network namespace (only `lo`)
// under the host's node binary, so it is plain CommonJS with no project or npm imports, and small: it
// adds one node start-up to every run that needs it.
//
//   node bridge.cjs [--announce FD] [--proxy <http-socket> <socks-socket>] [--host-port PORT <socket>]...
//                   [--publish PORT <socket>]... -- CMD [ARGS...]
//
// --proxy: listens on two ephemeral 127.0.0.1 ports (ephemeral so the child keeps every fixed port for
// its own servers) and forwards each TCP connection to the matching unix socket of the host-side egress
// proxy; the child gets the proxy variables below.
// --host-port: listens on 127.0.0.1:PORT and forwards each connection to <socket>, where sbx relays it
// to the host's 127.0.0.1:PORT. The destination is sbx's choice, fixed per socket: nothing sent here
// can name another (network/host/ports.ts).
// --publish: keeps one connection open to <socket>. sbx writes one byte on it when a host client
// arrives at the host's 127.0.0.1:PORT; the bridge then connects to 127.0.0.1:PORT inside, joins the two,
// and opens the next spare. The sandbox cannot listen on a socket the host can reach (its view of the
// session directory is read-only), so every connection starts from inside. When another run of the
// same workspace already serves PORT, sbx says so on the first connection (JOIN): the bridge then
// listens on 127.0.0.1:PORT inside, as for --host-port, and sends each client to <socket>, which sbx
// relays to that run's server (network/host/ports.ts).
// --announce: once the proxy's ports are bound, writes the HTTP one (a decimal line) to descriptor FD
// and closes it: sbx's network judge (native/sbx-landlock.c --judge), which started the bridge, captures
// the command's TCP connects into that port. Closed before CMD starts, so the command never holds it.
// CMD is spawned only once every listener is bound and every spare connected. Exit status is the
// child's, or 128+signal as in sh(1); 127/126 when CMD cannot be found or executed; 125 when a bridge
// cannot be set up.
//
// The proxy environment is built here rather than by the host because only the bridge knows the ports.
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
const { closeSync, writeSync } = require('node:fs');

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
function join(tcp, unix) {
  const both = () => {
    tcp.destroy();
    unix.destroy();
  };
  tcp.on('error', both);
  unix.on('error', both);
  tcp.on('close', () => unix.destroy());
  unix.on('close', () => tcp.end());
  tcp.pipe(unix).pipe(tcp);
}

function forwardTo(path) {
  return net.createServer({ allowHalfOpen: true, noDelay: true }, (tcp) => {
    join(tcp, net.connect({ path, allowHalfOpen: true }));
  });
}

/** Port 0: an ephemeral one. Resolves with the port bound. */
function listen(server, port) {
  return new Promise((resolve, reject) => {
    server.once('error', (e) => reject(new Error(`cannot listen on 127.0.0.1:${port}: ${e.code || e.message}`)));
    server.listen(port, '127.0.0.1', () => resolve(server.address().port));
  });
}

// The publish socket's bytes (network/host/ports.ts PUBLISH_*): sbx writes SERVE or JOIN first on
// every connection, GO on a spare when a host client waits; the bridge answers CLIENT on a JOIN.
const GO = 0x01;
const SERVE = 0x02;
const JOIN = 0x03;
const CLIENT = 0x04;

/** The next byte on `socket`, or null once it ends first. */
function readByte(socket) {
  return new Promise((resolve) => {
    const done = (value) => {
      socket.off('readable', next);
      socket.off('end', ended);
      socket.off('close', ended);
      resolve(value);
    };
    const next = () => {
      const b = socket.read(1);
      if (b !== null) done(b[0]);
    };
    const ended = () => done(null);
    socket.on('readable', next);
    socket.once('end', ended);
    socket.once('close', ended);
    next();
  });
}

/** A connection to sbx's publish socket and the first byte sbx wrote on it. */
function opened(path) {
  return new Promise((resolve, reject) => {
    const unix = net.connect({ path, allowHalfOpen: true });
    unix.once('error', reject);
    unix.once('connect', () => {
      unix.off('error', reject);
      unix.on('error', () => unix.destroy());
      readByte(unix).then((mode) => resolve({ unix, mode }));
    });
  });
}

/**
 * A spare: on the go byte, joined to 127.0.0.1:port inside, and the next spare opened. A spare sbx
 * closes without a go (its run is ending) is not replaced.
 */
function serve(unix, path, port) {
  readByte(unix).then((go) => {
    if (go !== GO) return unix.destroy();
    opened(path)
      .then((next) => (next.mode === SERVE ? serve(next.unix, path, port) : next.unix.destroy()))
      .catch(() => {});
    // Nothing listening inside yet: the host client sees its connection closed, as for a closed port.
    join(net.connect({ host: '127.0.0.1', port, allowHalfOpen: true, noDelay: true }), unix);
  });
}

/** Joined: each client of 127.0.0.1:port inside goes to sbx's socket, after the JOIN and CLIENT bytes. */
function joinedTo(path) {
  return net.createServer({ allowHalfOpen: true, noDelay: true }, (tcp) => {
    tcp.on('error', () => tcp.destroy());
    opened(path).then(
      ({ unix, mode }) => {
        if (mode !== JOIN) {
          tcp.destroy();
          unix.destroy();
          return;
        }
        unix.write(Buffer.from([CLIENT]));
        join(tcp, unix);
      },
      () => tcp.destroy(),
    );
  });
}

/**
 * --publish PORT <socket>, resolved once it is in place (so CMD starts with it): a spare waiting on
 * sbx's socket, or the port's listener inside when sbx says another run serves it.
 */
async function publish(path, port) {
  const { unix, mode } = await opened(path);
  if (mode === SERVE) return serve(unix, path, port);
  unix.destroy();
  if (mode !== JOIN) throw new Error(`${path}: sbx did not say how to publish port ${port}`);
  await listen(joinedTo(path), port);
}

/** `--proxy H S --host-port P S... --publish P S... -- CMD...` → the parts, or a usage error. */
function parseArgs(argv) {
  const usage =
    'usage: bridge.cjs [--announce FD] [--proxy <http-socket> <socks-socket>] [--host-port PORT <socket>]... [--publish PORT <socket>]... -- CMD [ARGS...]';
  const out = { announce: null, proxy: null, hostPorts: [], publish: [], command: [] };
  let i = 0;
  const port = (text) => (/^[1-9][0-9]{0,4}$/.test(text || '') && Number(text) <= 65535 ? Number(text) : die(usage, 2));
  if (argv[0] === '--announce') {
    out.announce = /^[0-9]{1,5}$/.test(argv[1] || '') ? Number(argv[1]) : die(usage, 2);
    i = 2;
  }
  for (; i < argv.length && argv[i] !== '--'; i += 3) {
    const [flag, a, b] = argv.slice(i, i + 3);
    if (b === undefined) die(usage, 2);
    if (flag === '--proxy' && !out.proxy) out.proxy = [a, b];
    else if (flag === '--host-port') out.hostPorts.push([port(a), b]);
    else if (flag === '--publish') out.publish.push([port(a), b]);
    else die(usage, 2);
  }
  out.command = argv.slice(i + 1);
  if (argv[i] !== '--' || out.command.length === 0) die(usage, 2);
  return out;
}

async function main(argv) {
  const args = parseArgs(argv);
  // Fixed ports first: an ephemeral port taken by the proxy's listeners could be one of them.
  await Promise.all(args.hostPorts.map(([port, path]) => listen(forwardTo(path), port)));
  await Promise.all(args.publish.map(([port, path]) => publish(path, port)));
  const ports = args.proxy ? await Promise.all(args.proxy.map((path) => listen(forwardTo(path), 0))) : null;
  const proxy = ports ? proxyEnv(ports[0], ports[1]) : {};
  if (args.announce !== null) {
    if (ports) writeSync(args.announce, `${ports[0]}\n`);
    closeSync(args.announce);
  }
  const child = spawn(args.command[0], args.command.slice(1), { stdio: 'inherit', env: { ...process.env, ...proxy } });
  // The child stays in the bridge's process group so it keeps the terminal. A Ctrl-C from a terminal
  // therefore reaches it twice (kernel, then this forward); signals sbx sends reach only the bridge.
  // Harmless for the usual handlers; see bash(1) on the same trade-off for foreground children.
  const forward = (signal) => child.kill(signal);
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(s, forward);
  child.on('error', (e) =>
    die(`cannot run ${args.command[0]}: ${e.code || e.message}`, e.code === 'ENOENT' ? 127 : 126),
  );
  child.on('exit', (code, signal) => process.exit(signal ? 128 + (constants.signals[signal] || 0) : code));
}

// Required rather than run: the landlock backend's tests compare its proxy variables with these
// (src/backend/shared/proxy-env.ts), which must stay the same list.
if (require.main === module) main(process.argv.slice(2)).catch((e) => die(e.message, 125));
else module.exports = { proxyEnv };
