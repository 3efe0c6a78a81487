#!/usr/bin/env node
// Egress proxy cost over loopback: bulk throughput (one download of --mib MiB) and connection set-up
// latency (median/p95 of --conns sequential connections, each until the destination's first byte),
// for: direct TCP, CONNECT and SOCKS5 over the proxy's unix sockets, CONNECT through the in-sandbox
// bridge (TCP → bridge → unix → proxy → TCP, the path a sandboxed child takes), and a captured connect
// (a plain connect() to the pool address sbx's DNS gave the name, taken by the network judge into the
// bridge with the capture preamble: the path of a client that ignores the proxy variables; needs
// dist/sbx-landlock, built by `npm run build` with a C compiler).
// A benchmark, not a test: it prints figures and never fails on a time.
//   node bench/proxy.mjs [--mib 256] [--conns 200] [--starts 20]
// Also: the start-up the bridge adds to a networked run (node bridge.cjs … -- true vs node -e 0).
//
// Processes, as in a real run: the proxy alone in this process (sbx's); destinations and clients in
// a child "peer" process, so the proxy's event loop is not shared with the traffic it measures.
import { fork, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { importSources } from './bundle-sources.mjs';

const self = fileURLToPath(import.meta.url);
const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : dflt);
const MIB = opt('--mib', 256);
const CONNS = opt('--conns', 200);
const STARTS = opt('--starts', 20);

// ---- clients (run in the peer, or inside the bridge) ---------------------------------------------

/** Open a stream to `port` on 127.0.0.1 by `how`; resolves when the tunnel is up (data may follow). */
async function open(how, port) {
  if (how.kind === 'direct') {
    const s = connect({ host: how.host ?? '127.0.0.1', port });
    await once(s, 'connect');
    return s;
  }
  const s = how.path ? connect({ path: how.path }) : connect({ host: '127.0.0.1', port: how.tcpPort });
  await once(s, 'connect');
  if (how.kind === 'connect') {
    s.write(`CONNECT bench.test:${port} HTTP/1.1\r\nHost: bench.test:${port}\r\n\r\n`);
    let head = Buffer.alloc(0);
    while (!head.includes('\r\n\r\n')) {
      const [c] = await once(s, 'data');
      head = Buffer.concat([head, c]);
    }
    const end = head.indexOf('\r\n\r\n') + 4;
    if (!head.subarray(0, 12).toString().includes('200')) throw new Error(`CONNECT failed: ${head.toString()}`);
    s.pause();
    if (end < head.length) s.unshift(head.subarray(end));
    return s;
  }
  // SOCKS5, ATYP domain.
  s.write(Buffer.from([5, 1, 0]));
  await readN(s, 2);
  const name = Buffer.from('bench.test');
  s.write(Buffer.concat([Buffer.from([5, 1, 0, 3, name.length]), name, Buffer.from([port >> 8, port & 0xff])]));
  const reply = await readN(s, 10);
  if (reply[1] !== 0) throw new Error(`SOCKS refused: ${reply[1]}`);
  return s;
}

function readN(s, n) {
  return new Promise((resolve, reject) => {
    const tryRead = () => {
      const b = s.read(n);
      if (b) {
        s.off('readable', tryRead);
        resolve(b);
      }
    };
    s.on('readable', tryRead);
    s.once('error', reject);
    tryRead();
  });
}

async function throughput(how, port) {
  const t0 = process.hrtime.bigint();
  const s = await open(how, port);
  let bytes = 0;
  s.on('data', (c) => (bytes += c.length));
  s.resume();
  await once(s, 'end');
  s.destroy();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return { bytes, mibps: bytes / 2 ** 20 / seconds };
}

async function latency(how, port, n) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const s = await open(how, port);
    s.resume();
    await once(s, 'data'); // the destination's first byte
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    s.destroy();
  }
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  return { median: at(0.5), p95: at(0.95) };
}

/** One A query over TCP (RFC 1035 §4.2.2) to the pool's resolver: captured, answered by sbx's proxy. */
async function resolveCaptured(name) {
  const labels = name.split('.').flatMap((l) => [Buffer.from([l.length]), Buffer.from(l)]);
  const query = Buffer.concat([
    Buffer.from([0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]),
    ...labels,
    Buffer.from([0, 0, 1, 0, 1]),
  ]);
  const s = connect({ host: '198.18.0.1', port: 53 });
  await once(s, 'connect');
  s.write(Buffer.concat([Buffer.from([query.length >> 8, query.length & 0xff]), query]));
  const length = (await readN(s, 2)).readUInt16BE(0);
  const answer = await readN(s, length);
  s.destroy();
  // One question, one A answer: its four bytes of data end the message.
  if (answer.readUInt16BE(6) !== 1) throw new Error(`no answer for ${name} from sbx's DNS`);
  return [...answer.subarray(length - 4)].join('.');
}

async function measure(how, ports) {
  await latency(how, ports.ping, 20); // warm-up
  return { ...(await throughput(how, ports.bulk)), ...(await latency(how, ports.ping, CONNS)) };
}

// ---- roles ---------------------------------------------------------------------------------------

if (argv[0] === '--peer') {
  // Destinations: `bulk` sends MIB MiB and ends; `ping` sends one byte and ends.
  const chunk = Buffer.alloc(1 << 20, 0x61);
  const bulk = createServer((s) => {
    let left = MIB;
    const pump = () => {
      while (left > 0) {
        left--;
        if (!s.write(chunk)) return void s.once('drain', pump);
      }
      s.end();
    };
    s.on('error', () => s.destroy());
    pump();
  });
  const ping = createServer((s) => {
    s.on('error', () => s.destroy());
    s.end('x');
  });
  await Promise.all([bulk, ping].map((srv) => new Promise((r) => srv.listen(0, '127.0.0.1', r))));
  const ports = { bulk: bulk.address().port, ping: ping.address().port };
  process.send({ ports });
  const [{ http, socks }] = await once(process, 'message');
  const results = {};
  results['direct TCP'] = await measure({ kind: 'direct' }, ports);
  results['CONNECT (unix)'] = await measure({ kind: 'connect', path: http }, ports);
  results['SOCKS5 (unix)'] = await measure({ kind: 'socks', path: socks }, ports);
  process.send({ results });
  await once(process, 'message'); // keep serving while the bridge run goes on
  process.exit(0);
} else if (argv[0] === '--captured-client') {
  // Under the judge: the name through sbx's DNS (a captured TCP connect to port 53), then plain connects.
  const ports = JSON.parse(argv[1]);
  const host = await resolveCaptured('bench.test');
  const r = await measure({ kind: 'direct', host }, ports);
  process.stdout.write(JSON.stringify(r));
} else if (argv[0] === '--bridge-client') {
  const ports = JSON.parse(argv[1]);
  const tcpPort = Number(new URL(process.env.HTTP_PROXY).port);
  const r = await measure({ kind: 'connect', tcpPort }, ports);
  process.stdout.write(JSON.stringify(r));
} else {
  await main();
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'sbx-bench-proxy-'));
  try {
    const { startEgressProxy, compileEgressRules } = await importSources(
      [
        "export { startEgressProxy } from './src/network/host/proxy.ts';",
        "export { compileEgressRules } from './src/network/egress.ts';",
      ],
      work,
    );
    const peer = fork(self, ['--peer', '--mib', String(MIB), '--conns', String(CONNS)]);
    const [{ ports }] = await once(peer, 'message');
    const proxy = await startEgressProxy({
      rules: compileEgressRules({
        allow: ['bench.test'],
        deny: [],
        allowPrivate: [`127.0.0.1:${ports.bulk}`, `127.0.0.1:${ports.ping}`],
      }),
      socketDir: work,
      resolve: async () => ['127.0.0.1'],
    });
    peer.send({ http: proxy.httpSocket, socks: proxy.socksSocket });
    const [{ results }] = await once(peer, 'message');

    const bridge = spawn(
      process.execPath,
      [
        join(root, 'src/network/host/bridge.cjs'),
        '--proxy',
        proxy.httpSocket,
        proxy.socksSocket,
        '--',
        process.execPath,
        self,
        '--bridge-client',
        JSON.stringify(ports),
        '--mib',
        String(MIB),
        '--conns',
        String(CONNS),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    bridge.stdout.on('data', (c) => (out += c));
    await once(bridge, 'close');
    results['CONNECT via bridge (tcp)'] = JSON.parse(out);
    const judge = join(root, 'dist', 'sbx-landlock');
    if (existsSync(judge)) {
      // The judge as bwrap starts it (src/backend/shared/bridge.ts), here without a namespace: the
      // pool address is off lo, so its connect is captured into the bridge's port on this host's lo.
      const captured = spawn(
        judge,
        [
          ...['--judge', '-', '3', '4', '--', process.execPath, join(root, 'src/network/host/bridge.cjs')],
          ...['--announce', '4', '--proxy', proxy.httpSocket, proxy.socksSocket, '--', process.execPath, self],
          ...['--captured-client', JSON.stringify(ports), '--mib', String(MIB), '--conns', String(CONNS)],
        ],
        { stdio: ['ignore', 'pipe', 'inherit', 'pipe'] },
      );
      let got = '';
      captured.stdout.on('data', (c) => (got += c));
      captured.stdio[3].resume();
      await once(captured, 'close');
      results['captured connect (judge, bridge)'] = JSON.parse(got);
    } else console.log('(no dist/sbx-landlock: the captured connect is not measured; npm run build with a C compiler)');
    peer.send({ done: true });
    await proxy.close();

    const direct = results['direct TCP'];
    const rows = [['path', 'MiB/s', '% of direct', 'setup median ms', 'p95 ms', 'added median ms']];
    for (const [name, r] of Object.entries(results)) {
      if (r.bytes !== MIB * 2 ** 20)
        throw new Error(`${name}: transferred ${r.bytes} bytes, expected ${MIB * 2 ** 20}`);
      rows.push([
        name,
        r.mibps.toFixed(0),
        `${((100 * r.mibps) / direct.mibps).toFixed(0)}%`,
        r.median.toFixed(3),
        r.p95.toFixed(3),
        (r.median - direct.median).toFixed(3),
      ]);
    }
    const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
    console.log(`egress proxy over loopback: ${MIB} MiB transfer, ${CONNS} connections (node ${process.version})`);
    for (const r of rows)
      console.log(r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  '));

    // What the bridge adds to every networked run: a node start-up, two listeners, one spawn.
    const bridgeScript = join(root, 'src/network/host/bridge.cjs');
    const bridgeArgs = [bridgeScript, '--proxy', proxy.httpSocket, proxy.socksSocket, '--', 'true'];
    const starts = {
      true: ['true', []],
      'node -e 0': [process.execPath, ['-e', '0']],
      'node bridge.cjs … -- true': [process.execPath, bridgeArgs],
    };
    console.log(`\nstart-up, median of ${STARTS} runs:`);
    for (const [name, [file, args]] of Object.entries(starts)) {
      const times = [];
      for (let i = 0; i < STARTS; i++) {
        const t0 = process.hrtime.bigint();
        await once(spawn(file, args, { stdio: 'ignore' }), 'close');
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      times.sort((a, b) => a - b);
      console.log(`  ${name.padEnd(26)} ${times[Math.floor(STARTS / 2)].toFixed(1).padStart(7)} ms`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
