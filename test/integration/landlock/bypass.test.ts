// Network paths past the landlock backend's two gates (seccomp's socket() rule, Landlock's connect
// rule), tried for real with socket-probe.c under `sbx run --backend landlock` and network none:
// io_uring's IORING_OP_SOCKET (a UDP datagram and a host unix socket) and TCP Fast Open (a send that
// connects). Each beside a control that shows the probe reaching the test's loopback listeners
// unsandboxed, and the helper driven without a filter shows that Landlock alone lets both through,
// which is why src/backend/landlock/seccomp-rules.ts adds its own rules whatever the preset. Root and normal user.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LANDLOCK_NETWORK_NONE } from '../../../src/backend/landlock/seccomp-rules.js';
import { REPO_ROOT } from '../../helpers/paths.js';
import { datagramListener, type Listener, streamListener } from './listeners.js';
import {
  makeTestHost,
  runHost,
  runSbx,
  runSbxRaw,
  SBX_BIN,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

const HELPER = join(REPO_ROOT, 'dist', 'sbx-landlock');
const PROBE_SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'socket-probe.c');
/** The profiles, as files passed with -p: each lets io_uring through, but for the built-in default. */
const PROFILES = {
  default: 'extends: default\n',
  'seccomp: off': 'extends: default\nseccomp: off\n',
  'io_uring: true': 'extends: default\nseccomp:\n  io_uring: true\n',
} as const;
type ProfileName = keyof typeof PROFILES;

let t: TestHost;
let probe: string;
let profiles: Record<ProfileName, string>;
let udp: { port: number; listener: Listener };
let tcp: { port: number; listener: Listener };
let unix: { path: string; listener: Listener };

beforeAll(async () => {
  if (SKIP_INTEGRATION) return;
  for (const file of [HELPER, join(REPO_ROOT, 'dist', 'cli.js')]) {
    if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build (with a C compiler) first`);
  }
  if (spawnSync('gcc', ['--version'], { stdio: 'ignore' }).error) {
    throw new Error('gcc is required to build socket-probe.c (apt-get install gcc libc6-dev)');
  }
  t = makeTestHost('landlock-bypass');
  // In the workspace: the sandbox can execute it there.
  probe = join(t.workspace, 'socket-probe');
  execFileSync('gcc', ['-O1', '-Wall', '-Werror', '-o', probe, PROBE_SOURCE]);
  profiles = Object.fromEntries(
    Object.entries(PROFILES).map(([name, yaml], i) => {
      const file = join(t.root, `profile-${i}.yaml`);
      writeFileSync(file, yaml, { mode: 0o600 });
      return [name, file];
    }),
  ) as Record<ProfileName, string>;

  udp = await datagramListener();

  const tcpServer = createServer().listen(0, '127.0.0.1');
  await once(tcpServer, 'listening');
  const tcpPort = (tcpServer.address() as { port: number }).port;
  tcp = { port: tcpPort, listener: streamListener(tcpServer, () => connect(tcpPort, '127.0.0.1')) };

  // A host service on a pathname socket (a Docker or dbus socket stands for it), outside every grant.
  const path = join(t.root, 'host-service.sock');
  const unixServer = createServer().listen(path);
  await once(unixServer, 'listening');
  unix = { path, listener: streamListener(unixServer, () => connect(path)) };
});

afterAll(() => {
  udp?.listener.close();
  tcp?.listener.close();
  unix?.listener.close();
  t?.cleanup();
});

const opts = () => ({ env: t.env, cwd: t.workspace });
/** The probe under `sbx run --backend landlock -p PROFILE` (network none in each). */
const sandboxed = (profile: ProfileName, args: string[]) =>
  runSbx(['--backend', 'landlock', '-p', profiles[profile], '--', probe, ...args], opts());
/** The same with an unconnected TCP socket as the command's stdin (socket() itself is refused inside). */
const sandboxedWithSocket = (profile: ProfileName, args: string[]) =>
  runHost(
    [probe, 'hand-socket', SBX_BIN, 'run', '--backend', 'landlock', '-p', profiles[profile], '--', probe, ...args],
    opts(),
  );

describe.skipIf(SKIP_INTEGRATION)('io_uring under sbx run --backend landlock, network none', () => {
  it('control: unsandboxed, IORING_OP_SOCKET reaches the UDP listener and the host unix socket', async () => {
    expect((await runHost([probe, 'uring-udp', String(udp.port)], opts())).out).toBe('uring-udp ok\n');
    expect((await runHost([probe, 'uring-unix', unix.path], opts())).out).toBe('uring-unix ok\n');
    expect(await udp.listener.drain()).toEqual(['uring-udp\n']);
    expect(await unix.listener.drain()).toEqual(['uring-unix\n']);
  });

  it.each(Object.keys(PROFILES) as ProfileName[])('%s: io_uring_setup fails with EPERM, nothing arrives', async (p) => {
    const datagram = await sandboxed(p, ['uring-udp', String(udp.port)]);
    expect([datagram.code, datagram.out]).toEqual([0, 'uring-udp io_uring_setup:EPERM\n']);
    const stream = await sandboxed(p, ['uring-unix', unix.path]);
    expect([stream.code, stream.out]).toEqual([0, 'uring-unix io_uring_setup:EPERM\n']);
    expect(await udp.listener.drain()).toEqual([]);
    expect(await unix.listener.drain()).toEqual([]);
  });
});

/** dgram-recv on PATH, unsandboxed: resolves once it is bound; `result` is what it received, or "none". */
async function datagramReceiver(path: string): Promise<{ result: Promise<string> }> {
  const child = spawn(probe, ['dgram-recv', path], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8');
  const ready = new Promise<void>((resolve) =>
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      if (out.startsWith('ready\n')) resolve();
    }),
  );
  const exited = once(child, 'exit');
  await Promise.race([ready, exited]);
  return { result: exited.then(() => out.replace(/^ready\n/, '')) };
}

describe.skipIf(SKIP_INTEGRATION)('a datagram socketpair under sbx run --backend landlock', () => {
  // socket(AF_UNIX) is refused, but a pair's sendto() with a pathname reaches a host datagram socket
  // (journald's /dev/log stands for it) past Landlock, whatever the network.
  it('control: unsandboxed, sendto() from the pair reaches the host datagram socket', async () => {
    const receiver = await datagramReceiver(join(t.root, 'control.dgram'));
    expect((await runHost([probe, 'dgram-pair', join(t.root, 'control.dgram')], opts())).out).toBe('dgram-pair ok\n');
    expect(await receiver.result).toBe('dgram-pair\n');
  });

  it.each(Object.keys(PROFILES) as ProfileName[])(
    '%s: socketpair(SOCK_DGRAM) fails with EOPNOTSUPP, nothing arrives',
    async (p) => {
      const path = join(t.root, `${p.replace(/\W/g, '')}.dgram`);
      const receiver = await datagramReceiver(path);
      const r = await sandboxed(p, ['dgram-pair', path]);
      expect([r.code, r.out]).toEqual([0, 'dgram-pair socketpair:EOPNOTSUPP\n']);
      expect(await receiver.result).toBe('none\n');
    },
  );
});

describe.skipIf(SKIP_INTEGRATION)('TCP Fast Open under sbx run --backend landlock, network none', () => {
  const sends = ['tfo-sendto', 'tfo-sendmsg', 'tfo-sendmmsg'];

  it('control: unsandboxed, each MSG_FASTOPEN send and TCP_FASTOPEN_CONNECT deliver to the listener', async () => {
    for (const name of [...sends, 'tfo-connect']) {
      const r = await runHost([probe, 'hand-socket', probe, name, String(tcp.port)], opts());
      expect(r.out).toBe(`${name} ok\n`);
    }
    await tcp.listener.arrived('tfo-data\n');
    expect(await tcp.listener.drain()).toEqual(Array(4).fill('tfo-data\n'));
  });

  it.each(Object.keys(PROFILES) as ProfileName[])('%s: each MSG_FASTOPEN send fails with EOPNOTSUPP', async (p) => {
    for (const name of sends) {
      const r = await sandboxedWithSocket(p, [name, String(tcp.port)]);
      expect([r.code, r.out]).toEqual([0, `${name} ${name.slice(4)}:EOPNOTSUPP\n`]);
    }
    expect(await tcp.listener.drain()).toEqual([]);
  });

  it('TCP_FASTOPEN_CONNECT still calls connect(), which Landlock denies (EACCES)', async () => {
    const r = await sandboxedWithSocket('seccomp: off', ['tfo-connect', String(tcp.port)]);
    expect([r.code, r.out]).toEqual([0, 'tfo-connect connect:EACCES\n']);
    expect(await tcp.listener.drain()).toEqual([]);
  });
});

describe.skipIf(SKIP_INTEGRATION)(
  'why the rules are the backend’s: Landlock alone, the helper without a filter',
  () => {
    /** sbx-landlock confining the probe with TCP governed (no net=host), no seccomp record, stdin a TCP socket. */
    async function unfiltered(args: string[]): Promise<string> {
      const records = [
        ...['ro=/usr', 'ro=/etc', 'ro=/proc', `rw=${t.workspace}`, 'env=PATH=/usr/bin:/bin', `cwd=${t.workspace}`],
        ...[probe, ...args].map((a) => `arg=${a}`),
      ];
      const child = spawn(probe, ['hand-socket', HELPER], {
        stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
        env: {},
      });
      let out = '';
      child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
      const [, , , config, filter] = child.stdio as unknown as [
        unknown,
        unknown,
        unknown,
        NodeJS.WritableStream,
        NodeJS.WritableStream,
      ];
      config.end(records.map((r) => r + '\0').join(''));
      filter.end();
      await once(child, 'close');
      return out;
    }

    it('a MSG_FASTOPEN send connects past the connect rule; plain connect() is denied', async () => {
      expect(await unfiltered(['tfo-connect', String(tcp.port)])).toBe('tfo-connect connect:EACCES\n');
      expect(await unfiltered(['tfo-sendto', String(tcp.port)])).toBe('tfo-sendto ok\n');
      await tcp.listener.arrived('tfo-data\n');
      expect(await tcp.listener.drain()).toEqual(['tfo-data\n']);
    });

    it('io_uring creates the sockets that socket() would have to ask for', async () => {
      expect(await unfiltered(['uring-udp', String(udp.port)])).toBe('uring-udp ok\n');
      expect(await udp.listener.drain()).toEqual(['uring-udp\n']);
    });
  },
);

describe.skipIf(SKIP_INTEGRATION)('sbx explain --backend landlock', () => {
  it("prints network none as the backend holds it, and the filter's own rules even with seccomp off", async () => {
    const r = await runSbxRaw(
      ['explain', '--backend', 'landlock', '-p', profiles['seccomp: off'], '--', 'true'],
      opts(),
    );
    expect(r.code, r.err).toBe(0);
    const lines = r.out.split('\n');
    expect(lines.filter((l) => /^(network|seccomp) /.test(l))).toEqual([
      `network   ${LANDLOCK_NETWORK_NONE}`,
      "seccomp   off: none from the profile; landlock's own: socket socketpair prlimit64 io_uring_setup io_uring_enter io_uring_register " +
        'shmget shmat shmdt shmctl msgget msgsnd msgrcv msgctl semget semop semtimedop semctl ' +
        'mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr sendto sendmsg sendmmsg',
    ]);
    const approximated = lines.filter((l) => /^ {2}weaker (seccomp\.io_uring|network\.tcp-fastopen):/.test(l));
    expect(approximated).toHaveLength(2);
  });

  it("the host's interfaces are visible (no network namespace); control: the same list unsandboxed", async () => {
    const names = 'import socket\nprint(sorted(n for _, n in socket.if_nameindex()))\n';
    const host = await runHost(['python3', '-c', names], opts());
    expect(host.out).toMatch(/'lo'/);
    const r = await runSbx(['--backend', 'landlock', '--', 'python3', '-c', names], opts());
    expect(r.out).toBe(host.out);
  });
});
