// What of the running host a sandbox can reach, through real bwrap (`node bin/sbx.js run`): a TCP
// listener on the host's 127.0.0.1 (not with the default profile, yes with `-p network`), and a host
// process (invisible and unsignalable from the own pid namespace).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  pidsWithArgv,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  uniqueSleepArg,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
let server: Server;
let port: number;
let accepted = 0;
const GREETING = `host-service-${process.pid}`;

describe.skipIf(SKIP_INTEGRATION)('host network and processes (real bwrap via bin/sbx.js)', () => {
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    t = makeTestHost('reach');
    server = createServer((socket) => {
      accepted++;
      socket.end(`${GREETING}\n`);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    server?.close();
    t?.cleanup();
  });

  describe('a TCP listener on the host 127.0.0.1', () => {
    // bash's /dev/tcp: connect(2), then read the greeting.
    const probe = () => ['bash', '-c', `exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3`];

    it('control: reachable unsandboxed', async () => {
      const before = accepted;
      const r = await runHost(probe(), { env: t.env, cwd: t.workspace });
      expect(r).toMatchObject({ code: 0, out: `${GREETING}\n` });
      expect(accepted).toBe(before + 1);
    });

    it('default profile: connect fails with ECONNREFUSED (own network namespace) and the listener sees nothing', async () => {
      const before = accepted;
      const r = await runSbx(['--', ...probe()], { env: t.env, cwd: t.workspace });
      expect(r.code).toBe(1);
      expect(r.err).toContain('bash: connect: Connection refused');
      expect(r.err).toContain(`/dev/tcp/127.0.0.1/${port}: Connection refused`);
      expect(r.out).toBe('');
      expect(accepted).toBe(before);
    });

    it('control: -p network reaches it from inside', async () => {
      const before = accepted;
      const r = await runSbx(['-p', 'network', '--', ...probe()], { env: t.env, cwd: t.workspace });
      expect(r).toMatchObject({ code: 0, out: `${GREETING}\n` });
      expect(accepted).toBe(before + 1);
    });
  });

  describe('a host process', () => {
    let sleeper: ChildProcess;
    let marker: string;
    beforeAll(async () => {
      marker = uniqueSleepArg();
      sleeper = spawn('sleep', [marker], { stdio: 'ignore' });
      await once(sleeper, 'spawn');
    });
    afterAll(() => {
      sleeper?.kill('SIGKILL');
    });

    const probe = () => [
      'sh',
      '-c',
      `kill -0 ${sleeper.pid}; echo "kill=$?"; ls -d /proc/${sleeper.pid}; echo "ls=$?"; ps -eo pid=,args= | grep -c "[s]leep ${marker}"`,
    ];

    it('control: visible and signalable unsandboxed', async () => {
      expect(pidsWithArgv(['sleep', marker])).toEqual([sleeper.pid]);
      const r = await runHost(probe(), { env: t.env, cwd: t.workspace });
      expect(r.out).toBe(`kill=0\n/proc/${sleeper.pid}\nls=0\n1\n`);
    });

    it('inside: kill -0 fails (No such process), /proc has no such pid, ps does not list it', async () => {
      const r = await runSbx(['--', ...probe()], { env: t.env, cwd: t.workspace });
      expect(r.out).toBe('kill=1\nls=2\n0\n');
      expect(r.err).toContain('kill: No such process');
      expect(r.err).toContain(`ls: cannot access '/proc/${sleeper.pid}': No such file or directory`);
      expect(r.code).toBe(1); // grep -c found nothing
      expect(sleeper.exitCode).toBeNull(); // still alive on the host
      expect(pidsWithArgv(['sleep', marker])).toEqual([sleeper.pid]);
    });
  });
});
