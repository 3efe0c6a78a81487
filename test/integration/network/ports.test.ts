// network.host_ports and network.publish end to end: the real CLI (bin/sbx.js) runs real clients and
// servers inside bwrap, and real clients and servers on the host's loopback talk to them. Each
// isolation claim tries the forbidden thing (an unlisted host port, the host's other addresses, the
// session directory) beside a control showing the same probe works unsandboxed. Runs as root and as
// a normal user alike; postgres runs as 65534 when the suite runs as root (it refuses root).
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IS_ROOT,
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  runSbxRaw,
  SKIP_INTEGRATION,
  start,
  startSbx,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { unprivilegedUser } from '../../helpers/users.js';

let t: TestHost;
const cleanups: (() => unknown)[] = [];

function has(tool: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${tool}`], { env: t.env }).status === 0;
}

function profile(name: string, network: string): string {
  const file = join(t.root, `${name}.yaml`);
  writeFileSync(file, `extends: default\nnetwork:\n${network}`);
  return file;
}

async function listening(server: Server, host: string): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  cleanups.push(() => server.close());
  return (server.address() as AddressInfo).port;
}

/** A port free on the host's loopback right now (the test then binds it again: a narrow, harmless race). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The host's first non-loopback IPv4 address, if it has one. */
function hostAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
}

/** GET http://127.0.0.1:port/path from the host: status and body. */
function hostGet(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

/** Inside the sandbox: connect to each host:port, print `host:port ok` or `host:port errno N`. */
const PROBE = `
import socket, sys
for target in sys.argv[1:]:
    host, port = target.rsplit(':', 1)
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
        print(target, 'ok')
    except OSError as e:
        print(target, 'errno', e.errno)
`;

/** `python3 -m http.server` on the host's loopback, serving `dir`; resolves with its port once it listens. */
async function pythonServer(dir: string): Promise<number> {
  // Lives for the whole file: far past start()'s one-process safety net.
  const server = start('python3', ['-u', '-m', 'http.server', '--bind', '127.0.0.1', '0'], {
    env: t.env,
    cwd: dir,
    timeoutMs: 600_000,
  });
  cleanups.push(() => server.child.kill());
  return Number(/ port (\d+) /.exec(await server.line(/^Serving HTTP on/))?.[1]);
}

describe.skipIf(SKIP_INTEGRATION)('network.host_ports and network.publish', () => {
  let served: string;
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('ports');
    if (!has('python3')) throw new Error('python3 is required for the port bridge tests (apt-get install python3)');
    served = join(t.root, 'served');
    mkdirSync(served);
    writeFileSync(join(served, 'hello.txt'), 'hello from the host\n');
  });
  afterAll(() => {
    for (const c of cleanups.reverse()) c();
    t?.cleanup();
  });

  describe('host_ports', () => {
    let listed: number;
    let unlisted: number;
    let everywhere: number;
    let echo: number;
    beforeAll(async () => {
      listed = await pythonServer(served);
      unlisted = await pythonServer(served);
      // A host service on every address: reachable on loopback and on the host's own addresses.
      everywhere = await listening(
        createServer((s) => s.on('error', () => {}).end('everywhere\n')),
        '0.0.0.0',
      );
      echo = await listening(
        createServer((s) => s.on('error', () => {}).pipe(s)),
        '127.0.0.1',
      );
    });

    it('control: unsandboxed, every one of these host ports is reachable', async () => {
      const r = await runHost(
        ['python3', '-c', PROBE, `127.0.0.1:${listed}`, `127.0.0.1:${unlisted}`, `127.0.0.1:${everywhere}`],
        { env: t.env, cwd: t.workspace },
      );
      expect(r.out).toBe(`127.0.0.1:${listed} ok\n127.0.0.1:${unlisted} ok\n127.0.0.1:${everywhere} ok\n`);
    });

    it("a Python urllib client inside gets the host's HTTP server on a listed port (200); an unlisted one is refused", async () => {
      const p = profile('host-ports', `  host_ports: [${listed}, ${echo}]\n`);
      const fetch = `import urllib.request; r = urllib.request.urlopen("http://127.0.0.1:${listed}/hello.txt"); print(r.status, r.read().decode(), end="")`;
      const r = await runSbx(['-p', p, '--', 'python3', '-c', fetch], { env: t.env, cwd: t.workspace });
      expect(r.err).toBe('');
      expect(r.out).toBe('200 hello from the host\n');
      expect(r.code).toBe(0);

      const refused = await runSbx(
        ['-p', p, '--', 'python3', '-c', PROBE, `127.0.0.1:${unlisted}`, `127.0.0.1:${everywhere}`],
        { env: t.env, cwd: t.workspace },
      );
      // ECONNREFUSED: the sandbox's 127.0.0.1 is its own loopback, where only the listed ports listen.
      expect(refused.err).toBe('');
      expect(refused.out).toBe(`127.0.0.1:${unlisted} errno 111\n127.0.0.1:${everywhere} errno 111\n`);
      expect(refused.code).toBe(0);
    });

    it("the host's other addresses stay unreachable, listed port or not", async (ctx) => {
      const address = hostAddress();
      if (!address) return ctx.skip('this host has no non-loopback IPv4 address to try');
      const control = await runHost(['python3', '-c', PROBE, `${address}:${everywhere}`], {
        env: t.env,
        cwd: t.workspace,
      });
      expect(control.out).toBe(`${address}:${everywhere} ok\n`);
      const p = profile('host-ports-everywhere', `  host_ports: [${everywhere}]\n`);
      const r = await runSbx(['-p', p, '--', 'python3', '-c', PROBE, `${address}:${everywhere}`], {
        env: t.env,
        cwd: t.workspace,
      });
      // ENETUNREACH: the namespace has no route beyond lo.
      expect(r.out).toBe(`${address}:${everywhere} errno 101\n`);
    });

    it('a raw TCP client (Python socket) talks both ways through the bridge, half-close included', async () => {
      const p = profile('host-ports-echo', `  host_ports: [${echo}]\n`);
      const client = `
import socket
s = socket.create_connection(("127.0.0.1", ${echo}))
s.sendall(b"ping " * 20000)
s.shutdown(socket.SHUT_WR)
got = b""
while chunk := s.recv(65536):
    got += chunk
print(len(got), got[:5].decode())
`;
      const r = await runSbx(['-p', p, '--', 'python3', '-c', client], { env: t.env, cwd: t.workspace });
      expect(r.out).toBe('100000 ping \n');
      expect(r.code).toBe(0);
    });

    it('combines with an allow list: the host port directly, the proxy for the rest', async () => {
      const p = profile('host-ports-allow', `  allow: [example.invalid]\n  host_ports: [${listed}]\n`);
      const fetch = `import urllib.request, os; print(urllib.request.urlopen("http://127.0.0.1:${listed}/hello.txt").status, bool(os.environ.get("HTTPS_PROXY")))`;
      const r = await runSbx(['-p', p, '--', 'python3', '-c', fetch], { env: t.env, cwd: t.workspace });
      expect(r.err).toBe('');
      expect(r.out).toBe('200 True\n');
    });

    it('psql inside queries a postgres server on the host through its listed port', async (ctx) => {
      const server = postgresBin();
      if (!has('psql') || server === undefined)
        return ctx.skip('psql, initdb or postgres is not installed (apt-get install postgresql postgresql-client)');
      const port = await startPostgres(server);
      const p = profile('host-ports-pg', `  host_ports: [${port}]\n`);
      const query = [
        'psql',
        '-h',
        '127.0.0.1',
        '-p',
        String(port),
        '-U',
        'sbx',
        '-d',
        'postgres',
        '-tAc',
        'select 40+2',
      ];
      const r = await runSbx(['-p', p, '--', ...query], { env: t.env, cwd: t.workspace });
      expect(r.err).toBe('');
      expect(r.out).toBe('42\n');
      const none = await runSbx(['--', ...query], { env: t.env, cwd: t.workspace });
      expect(none.code).toBe(2); // psql: connection refused, with network none
      expect(none.err).toContain('Connection refused');
    });
  });

  describe('publish', () => {
    /** A one-request Python server inside, on `port`; prints "ready" once it listens. */
    const oneRequestServer = (port: number) => `
import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello from inside " + self.path).encode()
        self.send_response(200); self.send_header("content-length", str(len(body))); self.end_headers()
        self.wfile.write(body)
s = http.server.HTTPServer(("127.0.0.1", ${port}), H)
print("ready", flush=True)
s.handle_request()
`;

    it('a Python server inside answers a client on the host at 127.0.0.1:PORT', async () => {
      const port = await freePort();
      const p = profile('publish', `  publish: [${port}]\n`);
      const sbx = startSbx(['-p', p, '--', 'python3', '-c', oneRequestServer(port)], {
        env: t.env,
        cwd: t.workspace,
      });
      await sbx.line(/^ready$/);
      expect(await hostGet(port, '/x')).toEqual({ status: 200, body: 'hello from inside /x' });
      const r = await sbx.done;
      expect(r.err).toContain('"GET /x HTTP/1.1" 200'); // the server's own log line
      expect(r.code).toBe(0);
    });

    it('serves many host clients at once, each its own connection inside', async () => {
      const port = await freePort();
      const p = profile('publish-many', `  publish: [${port}]\n`);
      const script = `import http.server, sys, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = self.path.encode()
        self.send_response(200); self.send_header("content-length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", ${port}), H)
threading.Thread(target=s.serve_forever, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()`;
      const sbx = startSbx(['-p', p, '--', 'python3', '-c', script], { env: t.env, cwd: t.workspace, stdin: 'pipe' });
      await sbx.line(/^ready$/);
      const paths = Array.from({ length: 20 }, (_, i) => `/${i}`);
      const answers = await Promise.all(paths.map((path) => hostGet(port, path)));
      sbx.stdin?.end();
      expect(answers).toEqual(paths.map((body) => ({ status: 200, body })));
      expect((await sbx.done).code).toBe(0);
    });

    it("listens on the host's 127.0.0.1 only, and the sandbox cannot write the session directory", async () => {
      const port = await freePort();
      const p = profile('publish-lo', `  publish: [${port}]\n`);
      const script = `import os, sys
try:
    open("/run/sbx/session/planted", "w")
except OSError as e:
    print("session dir errno", e.errno, flush=True)
print("ready", flush=True)
sys.stdin.read()`;
      const sbx = startSbx(['-p', p, '--', 'python3', '-c', script], {
        env: t.env,
        cwd: t.workspace,
        stdin: 'pipe',
      });
      expect(await sbx.line(/^session dir/)).toBe('session dir errno 30'); // EROFS
      await sbx.line(/^ready$/);
      const address = hostAddress();
      const probes = [`127.0.0.1:${port}`, ...(address ? [`${address}:${port}`] : [])];
      const r = await runHost(['python3', '-c', PROBE, ...probes], { env: t.env, cwd: t.workspace });
      sbx.stdin?.end();
      await sbx.done;
      // Loopback: sbx accepts (nothing listens inside, so the connection is then closed).
      expect(r.out).toBe(`127.0.0.1:${port} ok\n${address ? `${address}:${port} errno 111\n` : ''}`);
    });

    it('refuses a port already taken on the host, naming it, and runs nothing', async () => {
      const taken = await listening(createServer(), '127.0.0.1');
      const p = profile('publish-taken', `  publish: [${taken}]\n`);
      const r = await runSbx(['-p', p, '--', 'touch', 'ran'], { env: t.env, cwd: t.workspace });
      expect(r.code).toBe(125);
      expect(r.err).toContain(`network.publish: 127.0.0.1:${taken} is already in use on the host`);
      expect(r.err).toContain('hint:');
      expect(spawnSync('test', ['-e', join(t.workspace, 'ran')]).status).toBe(1);
    });

    it('sbx explain shows the bridges, and refuses --allow-private without an allow list', async () => {
      const p = profile('explain', `  host_ports: [5432]\n  publish: [3000]\n`);
      const r = await runSbxRaw(['explain', '-p', p, '--', 'true'], { env: t.env, cwd: t.workspace });
      expect(r.out).toContain("host port 5432: 127.0.0.1:5432 inside -> the host's 127.0.0.1:5432");
      expect(r.out).toContain("published 3000: the host's 127.0.0.1:3000 -> 127.0.0.1:3000 inside");
      // Without an allow list no proxy runs, so --allow-private would be dropped: refused instead.
      const idle = await runSbxRaw(['explain', '-p', p, '--allow-private', '10.0.0.5', '--', 'true'], {
        env: t.env,
        cwd: t.workspace,
      });
      expect(idle.code).toBe(2);
      expect(idle.err).toContain('--allow-private 10.0.0.5: this run has no allow list');
    });
  });

  /** Where initdb and postgres are: on PATH, else Debian's versioned directory (not on PATH), newest first. */
  function postgresBin(): string | undefined {
    if (has('initdb') && has('postgres')) return '';
    const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql') : [];
    const dirs = versions.sort((a, b) => Number(b) - Number(a)).map((v) => `/usr/lib/postgresql/${v}/bin/`);
    return dirs.find((d) => existsSync(`${d}initdb`) && existsSync(`${d}postgres`));
  }

  /** initdb and postgres (from `bin`) on a free loopback port, as this user (or 65534 under root); resolves with the port. */
  async function startPostgres(bin: string): Promise<number> {
    // Its own temp dir: the test host's root is private to this user, and postgres may run as another.
    const dir = mkdtempSync(join(tmpdir(), 'sbx-pg-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const as = IS_ROOT ? unprivilegedUser() : undefined;
    if (as) chownSync(dir, as.uid, as.gid);
    const data = join(dir, 'data');
    const init = spawnSync(`${bin}initdb`, ['-D', data, '-U', 'sbx', '--auth=trust', '-N'], {
      env: t.env,
      cwd: dir,
      encoding: 'utf8',
      ...as,
    });
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
    const port = await freePort();
    const args = ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1'];
    const pg = spawn(`${bin}postgres`, args, { env: t.env, cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], ...as });
    cleanups.push(() => pg.kill());
    await new Promise<void>((resolve, reject) => {
      let err = '';
      pg.stderr.on('data', (c) => {
        err += c;
        if (err.includes('ready to accept connections')) resolve();
      });
      pg.once('exit', (code) => reject(new Error(`postgres exited ${code}: ${err}`)));
    });
    return port;
  }
});
