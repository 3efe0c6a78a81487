#!/usr/bin/env node
// What a credential costs a request: the same HTTPS request through sbx's egress proxy to a host a
// credential names (TLS terminated by the proxy, the value put in, a second TLS session to the server)
// and to a host it does not (an opaque CONNECT tunnel, one TLS session end to end), over loopback.
// Rows: a fresh connection per request (CONNECT, handshake, GET, first byte), requests on one kept-alive
// connection, and a bulk download. A benchmark, not a test: it prints figures and never fails on a time.
//   node bench/credentials.mjs [--requests 200] [--mib 64]
//
// Processes, as in a real run: the proxy alone in this process (sbx's); the HTTPS server and the
// clients in a child "peer" process, so the proxy's event loop is not shared with what it measures.
// The server is the credentials tests' (test/integration/network/fixtures/credentials-*.pem).
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { connect } from 'node:net';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { importSources } from './bundle-sources.mjs';

const self = fileURLToPath(import.meta.url);
const root = fileURLToPath(new URL('..', import.meta.url));
const fixtures = join(root, 'test/integration/network/fixtures');
const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : dflt);
const REQUESTS = opt('--requests', 200);
const MIB = opt('--mib', 64);
const INTERCEPTED = 'api.sbx-cred.test';
const TUNNELLED = 'other.sbx-cred.test';

// ---- the peer: the server, and the clients ----------------------------------------------------------

/** A TLS socket to `host:port` through a CONNECT on the proxy's unix socket. */
async function tunnel(proxyPath, host, port, ca) {
  const s = connect({ path: proxyPath });
  await once(s, 'connect');
  s.write(`CONNECT ${host}:${port} HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`);
  let head = Buffer.alloc(0);
  while (!head.includes('\r\n\r\n')) head = Buffer.concat([head, (await once(s, 'data'))[0]]);
  if (!head.toString().startsWith('HTTP/1.1 200')) throw new Error(`CONNECT failed: ${head}`);
  const t = tlsConnect({ socket: s, servername: host, ca, ALPNProtocols: ['http/1.1'] });
  await once(t, 'secureConnect');
  return t;
}

/** One GET over `agent` (a fresh or a kept-alive connection), until its whole body is read. */
async function get(agent, host, port, path, headers) {
  const req = request({ agent, host, port, path, headers });
  req.end();
  const [res] = await once(req, 'response');
  let bytes = 0;
  for await (const c of res) bytes += c.length;
  if (res.statusCode !== 200) throw new Error(`${host}${path}: ${res.statusCode}`);
  return bytes;
}

function agentOn(proxyPath, host, port, ca, keepAlive) {
  const agent = new Agent({ keepAlive, maxSockets: 1 });
  agent.createConnection = (_o, cb) => {
    tunnel(proxyPath, host, port, ca).then((t) => cb(null, t), cb);
  };
  return agent;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p95 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(0.95 * xs.length))];

async function timed(n, once_) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await once_();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { median: median(times), p95: p95(times) };
}

async function peer() {
  const big = Buffer.alloc(MIB * 2 ** 20, 0x61);
  const server = createServer(
    {
      cert: readFileSync(join(fixtures, 'credentials-server.pem')),
      key: readFileSync(join(fixtures, 'credentials-server-key.pem')),
    },
    (req, res) => {
      if (req.url === '/big') {
        res.writeHead(200, { 'content-length': big.length });
        res.end(big);
      } else res.end('ok');
    },
  );
  server.keepAliveTimeout = 60_000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  process.send({ port });
  const [{ proxyPath, runCa, placeholder }] = await once(process, 'message');
  const testCa = readFileSync(join(fixtures, 'credentials-ca.pem'));
  const paths = {
    tunnelled: { host: TUNNELLED, ca: testCa, headers: {} },
    intercepted: { host: INTERCEPTED, ca: runCa, headers: { authorization: `Bearer ${placeholder}` } },
  };
  const results = {};
  for (const [name, p] of Object.entries(paths)) {
    const fresh = async () => {
      const agent = agentOn(proxyPath, p.host, port, p.ca, false);
      await get(agent, p.host, port, '/', p.headers);
      agent.destroy();
    };
    await timed(20, fresh); // warm-up
    const kept = agentOn(proxyPath, p.host, port, p.ca, true);
    await get(kept, p.host, port, '/', p.headers);
    const t0 = process.hrtime.bigint();
    const bytes = await get(kept, p.host, port, '/big', p.headers);
    const mibps = bytes / 2 ** 20 / (Number(process.hrtime.bigint() - t0) / 1e9);
    results[name] = {
      fresh: await timed(REQUESTS, fresh),
      kept: await timed(REQUESTS, () => get(kept, p.host, port, '/', p.headers)),
      mibps,
    };
    kept.destroy();
  }
  process.send({ results });
  server.close();
  process.exit(0);
}

// ---- sbx's side: the proxy -----------------------------------------------------------------------

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'sbx-bench-cred-'));
  try {
    const m = await importSources(
      [
        "export { startEgressProxy } from './src/network/host/proxy.ts';",
        "export { compileEgressRules } from './src/network/egress.ts';",
        "export { compileCredentials } from './src/network/credentials.ts';",
        "export { liveCredentials, openCredentialBroker } from './src/network/host/credential-broker.ts';",
      ],
      work,
    );
    const child = fork(self, ['--peer', '--requests', String(REQUESTS), '--mib', String(MIB)]);
    const [{ port }] = await once(child, 'message');
    const rules = m.compileEgressRules({
      allow: [INTERCEPTED, TUNNELLED],
      deny: [],
      allowPrivate: [`127.0.0.1:${port}`],
    });
    const live = m.liveCredentials(
      m.compileCredentials({ TOKEN: { from: { env: 'TOKEN' }, hosts: [INTERCEPTED] } }, rules),
      new Map([['TOKEN', `ghp_${'B'.repeat(36)}`]]),
    );
    const trust = { roots: readFileSync(join(fixtures, 'credentials-ca.pem'), 'utf8'), extra: [] };
    const credentials = m.openCredentialBroker({ live, trust, sessionDir: work });
    const proxy = await m.startEgressProxy({ rules, socketDir: work, resolve: async () => ['127.0.0.1'], credentials });
    child.send({
      proxyPath: proxy.httpSocket,
      runCa: readFileSync(join(work, 'ca', 'ca.pem'), 'utf8'),
      placeholder: live[0].placeholder,
    });
    const [{ results }] = await once(child, 'message');
    await proxy.close();
    const t = results.tunnelled;
    const i = results.intercepted;
    const rows = [
      ['HTTPS request through the proxy', 'tunnelled', 'intercepted', 'added'],
      [
        'fresh connection: CONNECT, TLS, GET (median ms)',
        t.fresh.median.toFixed(2),
        i.fresh.median.toFixed(2),
        (i.fresh.median - t.fresh.median).toFixed(2),
      ],
      ['  p95 ms', t.fresh.p95.toFixed(2), i.fresh.p95.toFixed(2), (i.fresh.p95 - t.fresh.p95).toFixed(2)],
      [
        'kept-alive connection: GET (median ms)',
        t.kept.median.toFixed(3),
        i.kept.median.toFixed(3),
        (i.kept.median - t.kept.median).toFixed(3),
      ],
      ['  p95 ms', t.kept.p95.toFixed(3), i.kept.p95.toFixed(3), (i.kept.p95 - t.kept.p95).toFixed(3)],
      [
        `download of ${MIB} MiB (MiB/s)`,
        t.mibps.toFixed(0),
        i.mibps.toFixed(0),
        `${((100 * i.mibps) / t.mibps).toFixed(0)}%`,
      ],
    ];
    const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
    console.log(`credentials: ${REQUESTS} requests a row over loopback (node ${process.version})`);
    for (const r of rows)
      console.log(r.map((c, k) => (k === 0 ? c.padEnd(widths[k]) : c.padStart(widths[k]))).join('  '));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (argv[0] === '--peer') await peer();
else await main();
