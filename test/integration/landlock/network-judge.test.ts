// An allow-list network under `sbx run --backend landlock`, red-teamed: the command reaches an allowed
// upstream on 127.0.0.1 through sbx's proxy (curl over HTTP and SOCKS, node, a second thread, a thread
// with a descriptor table of its own), and every direct way out fails: a TCP connect to any address is
// captured into the proxy, which refuses it (ECONNREFUSED) and reports its rule (the upstream itself,
// another loopback address on the proxy's port, IPv6 and v4-mapped IPv6, TCP Fast Open); what is not
// TCP fails with the judge's EACCES and a `network.direct` violation (UDP, MPTCP, AF_UNSPEC after a
// proxy connect, listen()). Each beside a control that shows the same probe reaching its listener
// unsandboxed. Loopback only. Root and normal user alike (the judge needs no privilege).
import { execFileSync, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { connect, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Violation } from '../../../src/policy/violation.js';
import { REPO_ROOT } from '../../helpers/paths.js';
import {
  IS_ROOT,
  makeTestHost,
  type Ran,
  runHost,
  runSbx,
  runSbxRaw,
  SBX_BIN,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { datagramListener, type Listener, streamListener } from './listeners.js';

const HELPER = join(REPO_ROOT, 'dist', 'sbx-landlock');
const PROBE_SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'socket-probe.c');

let t: TestHost;
let probe: string;
let profile: string;
let upstream: { server: HttpServer; port: number; paths: string[] };
/** Direct targets: a TCP listener on 127.0.0.1 and one on 127.0.0.2, a UDP one, one on ::1 if the host has it. */
let sink: { port: number; listener: Listener };
let sink2: { port: number; listener: Listener };
let sink6: { port: number; listener: Listener } | undefined;
let udp: { port: number; listener: Listener };
let reports = 0;

async function tcpSink(host: string): Promise<{ port: number; listener: Listener }> {
  const server = createServer().listen(0, host);
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  return { port, listener: streamListener(server, () => connect(port, host)) };
}

beforeAll(async () => {
  if (SKIP_INTEGRATION) return;
  for (const file of [HELPER, join(REPO_ROOT, 'dist', 'cli.js')]) {
    if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build (with a C compiler) first`);
  }
  for (const tool of ['gcc', 'curl']) {
    if (spawnSync(tool, ['--version'], { stdio: 'ignore' }).error)
      throw new Error(`${tool} is required (apt-get install ${tool === 'gcc' ? 'gcc libc6-dev' : tool})`);
  }
  t = makeTestHost('landlock-judge');
  probe = join(t.workspace, 'socket-probe');
  execFileSync('gcc', ['-O1', '-Wall', '-Werror', '-pthread', '-o', probe, PROBE_SOURCE]);

  const paths: string[] = [];
  const server = createHttpServer((req, res) => {
    paths.push(req.url ?? '');
    res.end(`upstream ${req.url}\n`);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  upstream = { server, port: (server.address() as { port: number }).port, paths };
  profile = join(t.root, 'allow-upstream.yaml');
  const yaml = `extends: default\nnetwork:\n  allow: ["127.0.0.1"]\n  allow_private: ["127.0.0.1:${upstream.port}"]\n`;
  writeFileSync(profile, yaml, { mode: 0o600 });

  sink = await tcpSink('127.0.0.1');
  sink2 = await tcpSink('127.0.0.2');
  sink6 = await tcpSink('::1').catch(() => undefined);
  udp = await datagramListener();
});

afterAll(() => {
  upstream?.server.close();
  for (const s of [sink, sink2, sink6, udp]) s?.listener.close();
  t?.cleanup();
});

const opts = () => ({ env: t.env, cwd: t.workspace });

/** `sh -c SCRIPT` under the allow-list profile; `$P` is the proxy's HTTP port inside. Its report's violations. */
async function inside(script: string): Promise<{ r: Ran; violations: Violation[] }> {
  const file = join(t.root, `report-${reports++}.json`);
  const withPort = `P=\${HTTP_PROXY##*:}; ${script}`;
  const r = await runSbx(
    ['--backend', 'landlock', '-p', profile, '--report-file', file, '--', 'sh', '-c', withPort],
    opts(),
  );
  const report = JSON.parse(readFileSync(file, 'utf8')) as { violations: Violation[] };
  return { r, violations: report.violations };
}

/** The violation sbx's proxy reports for a captured connect() it refused. */
const refusedBy = (rule: string, host: string, port?: number) =>
  expect.objectContaining({ phase: 'runtime', kind: 'network', rule, host, ...(port === undefined ? {} : { port }) });

describe.skipIf(SKIP_INTEGRATION)('controls: unsandboxed, every probe reaches its listener', () => {
  it('TCP to 127.0.0.1 and 127.0.0.2, v4-mapped IPv6, UDP, AF_UNSPEC, listen, connects from threads', async () => {
    const run = async (...args: string[]) => (await runHost([probe, ...args], opts())).out;
    expect(await run('connect4', '127.0.0.1', String(sink.port))).toBe('connect4 ok\n');
    expect(await run('connect6', '::ffff:127.0.0.1', String(sink.port))).toBe('connect6 ok\n');
    expect(await run('thread', '127.0.0.1', String(sink.port))).toBe('thread ok\n');
    expect(await run('thread-unshared', '127.0.0.1', String(sink.port))).toBe('thread-unshared ok\n');
    expect(await sink.listener.drain()).toEqual(['connect4\n', 'connect6\n', 'thread\n', 'thread-unshared\n']);
    expect(await run('connect4', '127.0.0.2', String(sink2.port))).toBe('connect4 ok\n');
    expect(await sink2.listener.drain()).toEqual(['connect4\n']);
    expect(await run('udp', String(udp.port))).toBe('udp ok\n');
    expect(await udp.listener.drain()).toEqual(['udp\n']);
    expect(await run('unspec', '127.0.0.1', String(sink.port))).toBe('unspec ok\n');
    expect(await run('listen')).toBe('listen ok\n');
    await sink.listener.drain();
  });

  it.skipIf(!sink6)('IPv6 to ::1 (skipped: no IPv6 loopback on this host)', async () => {
    expect((await runHost([probe, 'connect6', '::1', String(sink6!.port)], opts())).out).toBe('connect6 ok\n');
    expect(await sink6!.listener.drain()).toEqual(['connect6\n']);
  });
});

describe.skipIf(SKIP_INTEGRATION)('sbx run --backend landlock with network.allow: through the proxy', () => {
  it('curl over HTTP and SOCKS, node, and connects from a second thread reach the upstream; no violation', async () => {
    const url = `http://127.0.0.1:${upstream.port}`;
    const node =
      `require('http').get({ host: '127.0.0.1', port: +process.env.P, path: '${url}/node', headers: { host: '127.0.0.1:${upstream.port}' } }, ` +
      `(res) => res.pipe(process.stdout))`;
    const { r, violations } = await inside(
      [
        // NO_PROXY names 127.0.0.1, as the bwrap bridge sets it: --noproxy '' sends even it through.
        `curl -sS --noproxy '' ${url}/http`,
        `curl -sS --noproxy '' --proxy "$ALL_PROXY" ${url}/socks`,
        `P=$P node -e "${node}"`,
        `${probe} thread 127.0.0.1 $P`,
        `${probe} thread-unshared 127.0.0.1 $P`,
      ].join('; '),
    );
    expect(r.err).not.toMatch(/refused|error/i);
    expect(r.out.split('\n').slice(0, 3)).toEqual(['upstream /http', 'upstream /socks', 'upstream /node']);
    // The proxy answers the probes' non-HTTP line itself: what matters is that their connect() worked.
    expect(r.out).toContain('thread ok\n');
    expect(r.out).toContain('thread-unshared ok\n');
    expect(upstream.paths.splice(0)).toEqual(['/http', '/socks', '/node']);
    expect(r.code).toBe(0);
    expect(violations).toEqual([]);
  });
});

describe.skipIf(SKIP_INTEGRATION)('sbx run --backend landlock with network.allow: every direct way out', () => {
  it('the upstream itself, and another loopback address on the proxy port: captured, refused by the proxy (ECONNREFUSED), reported, nothing arrives', async () => {
    const { r, violations } = await inside(
      `${probe} connect4 127.0.0.1 ${sink.port}; ${probe} connect4 127.0.0.2 $P; ${probe} connect4 127.0.0.2 ${sink2.port}`,
    );
    expect(r.out).toBe(Array(3).fill('connect4 connect:ECONNREFUSED\n').join(''));
    expect(await sink.listener.drain()).toEqual([]);
    expect(await sink2.listener.drain()).toEqual([]);
    // The proxy decides and reports: the literal 127.0.0.1 is allowed, its port is not in allow_private;
    // 127.0.0.2 is no name's address.
    expect(violations).toEqual([
      refusedBy('network.private', '127.0.0.1', sink.port),
      refusedBy('network.allow', '127.0.0.2'),
      refusedBy('network.allow', '127.0.0.2', sink2.port),
    ]);
    expect(upstream.paths).toEqual([]);
  });

  it('IPv6 and v4-mapped IPv6: captured and refused by the proxy; v4-mapped to the proxy port is the proxy', async () => {
    const targets = [`::ffff:127.0.0.1 ${sink.port}`, ...(sink6 ? [`::1 ${sink6.port}`] : [])];
    const { r, violations } = await inside(
      [...targets.map((a) => `${probe} connect6 ${a}`), `${probe} connect6 ::ffff:127.0.0.1 $P`].join('; '),
    );
    expect(r.out).toBe([...targets.map(() => 'connect6 connect:ECONNREFUSED\n'), 'connect6 ok\n'].join(''));
    expect(await sink.listener.drain()).toEqual([]);
    if (sink6) expect(await sink6.listener.drain()).toEqual([]);
    expect(violations[0]).toEqual(refusedBy('network.private', '127.0.0.1', sink.port));
    if (sink6) expect(violations[1]).toEqual(refusedBy('network.allow', '::1', sink6.port));
  });

  it('UDP and MPTCP sockets: socket() fails with EACCES, reported; nothing arrives', async () => {
    const { r, violations } = await inside(`${probe} udp ${udp.port}; ${probe} mptcp 127.0.0.1 ${sink.port}`);
    expect(r.out).toBe('udp socket:EACCES\nmptcp socket:EACCES\n');
    expect(await udp.listener.drain()).toEqual([]);
    expect(await sink.listener.drain()).toEqual([]);
    expect(violations.map((v) => v.detail)).toEqual([
      'socket refused: UDP (DNS, QUIC) is not carried: clients fall back to TCP; sbx answers DNS over TCP',
      expect.stringMatching(/^socket refused: stream, not TCP/),
    ]);
  });

  it('AF_UNSPEC after a proxy connect, and listen() on an autobound port: EACCES, reported', async () => {
    const { r, violations } = await inside(`${probe} unspec 127.0.0.1 $P; ${probe} listen`);
    expect(r.out).toBe('unspec unspec:EACCES\nlisten listen:EACCES\n');
    expect(violations.map((v) => v.detail)).toEqual([
      expect.stringContaining('connect to AF_UNSPEC'),
      expect.stringMatching(/^listen refused/),
    ]);
  });

  it('TCP Fast Open: a MSG_FASTOPEN send fails (EOPNOTSUPP), TCP_FASTOPEN_CONNECT is judged at connect()', async () => {
    const { r, violations } = await inside(
      `${probe} hand-socket ${probe} tfo-sendto ${sink.port}; ${probe} hand-socket ${probe} tfo-connect ${sink.port}`,
    );
    expect(r.out).toBe('tfo-sendto sendto:EOPNOTSUPP\ntfo-connect connect:ECONNREFUSED\n');
    expect(await sink.listener.drain()).toEqual([]);
    expect(violations).toEqual([refusedBy('network.private', '127.0.0.1', sink.port)]);
  });
});

const NETNS_SKIP = !IS_ROOT
  ? 'needs root to make a network namespace with a second interface'
  : spawnSync('ip', ['-V'], { stdio: 'ignore' }).error
    ? 'needs ip (apt-get install iproute2)'
    : undefined;

describe.skipIf(SKIP_INTEGRATION || NETNS_SKIP !== undefined)(
  `a socket bound to another device${NETNS_SKIP ? ` (skipped: ${NETNS_SKIP})` : ''}`,
  () => {
    // SO_BINDTODEVICE needs no capability on a fresh socket: connected by the judge as it stood, the SYN
    // to 127.0.0.1 would leave on that device (with the TTL, TOS and MSS the command set). In a network
    // namespace of the test's own, with a veth pair (d0, d1) and a default route through d0, so that a
    // failure sends nothing anywhere real.
    it('is refused by the judge (EACCES, reported); one bound to lo reaches the proxy', async () => {
      const file = join(t.root, 'bound-device.json');
      const script =
        'ip link set lo up && ip link add d0 type veth peer name d1 && ip link set d0 up && ip link set d1 up && ' +
        'ip addr add 10.99.0.1/24 dev d0 && ip route add default via 10.99.0.254 dev d0 && ' +
        `exec ${SBX_BIN} run --backend landlock -p ${profile} --report-file ${file} -- sh -c ` +
        `'P=\${HTTP_PROXY##*:}; ${probe} bindtodevice d0 127.0.0.1 $P; ${probe} bindtodevice lo 127.0.0.1 $P'`;
      const r = await runHost(['unshare', '-n', 'sh', '-c', script], opts());
      expect(r.out).toBe('bindtodevice connect:EACCES\nbindtodevice ok\n');
      const { violations } = JSON.parse(readFileSync(file, 'utf8')) as { violations: Violation[] };
      expect(violations.map((v) => v.detail)).toEqual([
        expect.stringContaining('bound to a network device other than lo'),
      ]);
    });
  },
);

describe.skipIf(SKIP_INTEGRATION)('sbx run --backend landlock with network.host_ports', () => {
  it('the judge connects the listed host port and nothing else; no proxy, no bridge', async () => {
    const file = join(t.root, 'host-port.yaml');
    writeFileSync(file, `extends: default\nnetwork:\n  host_ports: [${sink.port}]\n`, { mode: 0o600 });
    const r = await runSbx(
      [
        '--backend',
        'landlock',
        '-p',
        file,
        '--',
        'sh',
        '-c',
        `${probe} connect4 127.0.0.1 ${sink.port}; ${probe} connect4 127.0.0.2 ${sink2.port}; echo "[$HTTP_PROXY]"`,
      ],
      opts(),
    );
    expect(r.out).toBe('connect4 ok\nconnect4 connect:EACCES\n[]\n');
    expect(await sink.listener.drain()).toEqual(['connect4\n']);
    expect(await sink2.listener.drain()).toEqual([]);
  });
});

describe.skipIf(SKIP_INTEGRATION)('where the judge cannot work, the probe names the step', () => {
  it('control: here it works; inside a judged run a second listener is refused (EBUSY), so nesting is refused', async () => {
    expect((await runHost([HELPER, '--probe-judge'], opts())).out).toBe('ok\n');
    const copy = join(t.workspace, 'sbx-landlock');
    copyFileSync(HELPER, copy);
    const { r } = await inside(`${copy} --probe-judge`);
    expect(r.out).toBe('seccomp user notification: Device or resource busy\n');
  });
});

describe.skipIf(SKIP_INTEGRATION)('sbx explain --backend landlock with network.allow', () => {
  it('shows the judge: net=filtered, the proxy ports as placeholders, the approximation', async () => {
    const r = await runSbxRaw(['explain', '--backend', 'landlock', '-p', profile, '--', 'true'], opts());
    expect(r.code, r.err).toBe(0);
    const lines = r.out.split('\n');
    expect(lines.find((l) => l.startsWith('network '))).toMatch(
      /^network {3}filtered: no network namespace \(the host's network\); Landlock denies TCP, the helper's judge takes each connect\(\) into sbx's proxy/,
    );
    expect(lines).toContain('net=filtered');
    expect(lines).toContain('connect=<proxy-http-port>');
    // Every other TCP connect is captured into the proxy's HTTP port.
    expect(lines).toContain('capture=<proxy-http-port>');
    expect(lines.some((l) => /^ {2}weaker network\.filtered:/.test(l))).toBe(true);
  });
});
