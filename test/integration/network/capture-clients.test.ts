// Transparent capture end to end (docs/DESIGN.md "Transparent capture"): real clients that ignore the
// proxy variables reach an allowed name served from 127.0.0.1, under bwrap, nsjail (when there is one:
// SBX_NSJAIL, as test/integration/nsjail finds it) and landlock, through
// sbx's library with a test resolver (the name resolves, on the host side, to 127.0.0.1, which
// allow_private lets in for exactly the servers' ports): Python's socket.create_connection, Java's
// HttpURLConnection and HttpClient with no proxy property, a Go net/http client with the proxy
// variables unset, and ssh to a local sshd by name (its key exchange and its refusal of our unknown
// key show the connection was made). Beside them: a denied name gets NXDOMAIN and a violation; a
// direct connect to the host listener's address is refused (and reported under landlock, where it is
// the host's; under bwrap and nsjail the sandbox's 127.0.0.1 is its own), and one to an address off lo is refused
// and reported; a UDP send is refused and reported. The controls: the same clients unsandboxed reach
// the servers directly (nothing of theirs asks a proxy), and in a sandbox with the same allow list but
// no capture (a copy of sbx whose network judge was not built: what an allow list was before) they
// cannot resolve the name, so cannot connect. Loopback only (192.0.2.1, TEST-NET-1, is only ever
// captured or unroutable inside, never dialled). Root and normal user alike (.ci/run runs the suite as
// sbxtest too).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Violation } from '../../../src/policy/violation.js';
import { REPO_ROOT } from '../../helpers/paths.js';
import { findNsjail } from '../nsjail/harness.js';
import { missingTools, SSHD, type Sshd, startSshd } from '../ssh-agent/harness.js';

type Api = typeof import('../../../src/api.js');
const skip = process.env.SBX_SKIP_INTEGRATION === '1';
const HELPER = join(REPO_ROOT, 'dist', 'sbx-landlock');
const NAME = 'svc.capture.test';
const DENIED = 'other.capture.test';
const NAMES: Record<string, string[]> = { [NAME]: ['127.0.0.1'], [DENIED]: ['127.0.0.1'] };
const resolve = async (host: string) => NAMES[host] ?? [];

/** Why the landlock half cannot run here, or '' (the helper and a kernel with Landlock ABI 6). */
function landlockMissing(): string {
  if (!existsSync(HELPER)) return 'dist/sbx-landlock was not built (no C compiler)';
  const abi = Number(spawnSync(HELPER, ['--abi'], { encoding: 'utf8' }).stdout.trim());
  return abi >= 6 ? '' : `the kernel has Landlock ABI ${abi}, landlock needs 6`;
}
const LANDLOCK_SKIP = landlockMissing();
const GO_SKIP =
  spawnSync('sh', ['-c', 'command -v go']).status === 0 ? '' : 'go not installed (apt-get install golang-go)';
const SSH_SKIP = missingTools(['ssh', 'ssh-keygen', SSHD]);

let run: Api['run'];
/** The same library from a copy of sbx without the network judge: an allow list without capture. */
let runUncaptured: Api['run'];
let server: Server;
let port: number;
let sshd: Sshd | undefined;
let work: string;
let ws: string;
let env: Record<string, string>;
let profileFile: string;

// HttpClient as it comes: its default (HTTP/2) offers a cleartext server `Upgrade: h2c`, which the
// proxy takes out of the request (docs/DESIGN.md "Plaintext in a tunnel"), so the answer is HTTP/1.1.
const JAVA = `import java.net.*;
import java.net.http.*;
public class Cap {
  public static void main(String[] a) throws Exception {
    HttpURLConnection c = (HttpURLConnection) new URL(a[0] + "/url").openConnection();
    c.setConnectTimeout(10000);
    c.setReadTimeout(10000);
    System.out.println(c.getResponseCode() + " " + new String(c.getInputStream().readAllBytes()).trim());
    HttpClient h = HttpClient.newBuilder().connectTimeout(java.time.Duration.ofSeconds(10)).build();
    HttpResponse<String> r = h.send(HttpRequest.newBuilder(URI.create(a[0] + "/client")).build(), HttpResponse.BodyHandlers.ofString());
    System.out.println(r.statusCode() + " " + r.body().trim());
  }
}
`;

const GO = `package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	c := &http.Client{Timeout: 10 * time.Second}
	r, err := c.Get(os.Args[1])
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	b, _ := io.ReadAll(r.Body)
	fmt.Println(r.StatusCode, strings.TrimSpace(string(b)))
}
`;

const PYTHON =
  'import socket, sys\n' +
  's = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)\n' +
  "s.sendall(b'GET /py HTTP/1.0\\r\\nHost: ' + sys.argv[1].encode() + b'\\r\\n\\r\\n')\n" +
  "data = b''\n" +
  'while True:\n' +
  '    chunk = s.recv(4096)\n' +
  '    if not chunk: break\n' +
  '    data += chunk\n' +
  "print(data.split(b'\\r\\n')[0].decode(), data.split(b'\\r\\n\\r\\n', 1)[1].decode().strip())\n";

/** The proxy variables, gone: what a client that never read them sees. */
const NO_PROXY_VARS =
  'unset HTTP_PROXY http_proxy HTTPS_PROXY https_proxy ALL_PROXY all_proxy NO_PROXY no_proxy npm_config_proxy npm_config_https_proxy';

async function sh(
  backend: 'bwrap' | 'nsjail' | 'landlock',
  script: string,
  runner: Api['run'] = run,
): Promise<{ out: string; err: string; code: number | null; violations: Violation[] }> {
  const o = await runner({
    command: ['sh', '-c', script],
    profile: profileFile,
    backend,
    cwd: ws,
    stdio: 'capture',
    hostEnv: backend === 'nsjail' && 'path' in NSJAIL ? { ...env, SBX_NSJAIL: NSJAIL.path } : env,
    resolve,
  });
  return { out: o.stdout.toString(), err: o.stderr.toString(), code: o.exitCode, violations: o.violations };
}

/** The same script unsandboxed, with the proxy variables pointing at nothing (async: the server is ours). */
async function host(script: string): Promise<{ out: string; code: number | null }> {
  const child = spawn('sh', ['-c', script], {
    cwd: ws,
    env: {
      ...env,
      HTTP_PROXY: 'http://127.0.0.1:9',
      HTTPS_PROXY: 'http://127.0.0.1:9',
      ALL_PROXY: 'socks5h://127.0.0.1:9',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  return { out, code };
}

const clients = {
  python: (name: string) => `/usr/bin/python3 cap.py ${name} ${port}`,
  java: (name: string) => `${NO_PROXY_VARS}; java -cp . Cap http://${name}:${port}`,
  go: (name: string) => `${NO_PROXY_VARS}; ./gocap http://${name}:${port}/go`,
  ssh: (name: string) =>
    `ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null ` +
    `-o ConnectTimeout=10 -p ${sshd?.port} capture@${name} true 2>&1; true`,
};

/** What each client prints when it reached the server at `name`. */
const reached = {
  python: 'HTTP/1.1 200 OK hello /py',
  java: '200 hello /url\n200 hello /client',
  go: '200 hello /go',
  ssh: 'Permission denied (publickey)',
};

beforeAll(async () => {
  if (skip) return;
  const api = join(REPO_ROOT, 'dist', 'api.js');
  if (!existsSync(api)) throw new Error(`${api} is missing: run npm run build first (or SBX_SKIP_INTEGRATION=1)`);
  for (const tool of ['bwrap', 'python3', 'javac', 'java']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
      throw new Error(`${tool} is not installed (apt-get install bubblewrap python3 default-jdk-headless)`);
  }
  ({ run } = (await import(api)) as Api);
  work = mkdtempSync(join(tmpdir(), 'sbx-capture-'));
  // A copy of sbx without dist/sbx-landlock: policy derivation finds no judge, so capture is off.
  const copy = join(work, 'sbx-uncaptured');
  for (const part of ['dist', 'profiles', 'package.json'])
    cpSync(join(REPO_ROOT, part), join(copy, part), { recursive: true });
  rmSync(join(copy, 'dist', 'sbx-landlock'));
  ({ run: runUncaptured } = (await import(join(copy, 'dist', 'api.js'))) as Api);

  server = createServer((req, res) => res.end(`hello ${req.url}\n`));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as { port: number }).port;
  if (!SSH_SKIP) {
    const sshDir = join(work, 'sshd');
    mkdirSync(sshDir);
    writeFileSync(join(sshDir, 'authorized_keys'), '');
    sshd = await startSshd(sshDir, join(sshDir, 'authorized_keys'));
  }
  const home = join(work, 'home');
  env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    XDG_RUNTIME_DIR: join(work, 'run'),
    XDG_CACHE_HOME: join(work, 'cache'),
    XDG_CONFIG_HOME: join(work, 'config'),
  };
  for (const d of [home, env.XDG_RUNTIME_DIR!]) mkdirSync(d, { recursive: true, mode: 0o700 });
  ws = join(work, 'ws');
  mkdirSync(ws);
  writeFileSync(join(ws, 'cap.py'), PYTHON);
  writeFileSync(join(ws, 'Cap.java'), JAVA);
  execFileSync('javac', ['Cap.java'], { cwd: ws });
  if (!GO_SKIP) {
    writeFileSync(join(ws, 'gocap.go'), GO);
    // cgo on (the default where gcc is): under landlock Go then resolves through glibc, which reads RES_OPTIONS.
    execFileSync('go', ['build', '-o', 'gocap', 'gocap.go'], {
      cwd: ws,
      env: { ...process.env, GOCACHE: join(work, 'gocache'), GOPATH: join(work, 'gopath'), GOFLAGS: '-mod=mod' },
    });
  }
  profileFile = join(work, 'capture.yaml');
  const privates = [port, ...(sshd ? [sshd.port] : [])].map((p) => `"127.0.0.1:${p}"`).join(', ');
  writeFileSync(
    profileFile,
    `extends: default\nnetwork:\n  allow: [${NAME}]\n  deny: [${DENIED}]\n  allow_private: [${privates}]\n`,
  );
}, 120_000);

afterAll(() => {
  server?.close();
  sshd?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(skip)('controls: each client ignores the proxy variables, and needs capture inside', () => {
  it.each(['python', 'java', 'go', 'ssh'] as const)(
    '%s, unsandboxed: reaches the server directly',
    async (client) => {
      if ((client === 'go' && GO_SKIP) || (client === 'ssh' && SSH_SKIP)) return;
      const r = await host(clients[client]('127.0.0.1'));
      expect(r.out).toContain(reached[client]);
    },
    60_000,
  );

  it.each(['python', 'java', 'go', 'ssh'] as const)(
    '%s, under the same allow list without capture (bwrap): the name does not resolve, nothing connects',
    async (client) => {
      if ((client === 'go' && GO_SKIP) || (client === 'ssh' && SSH_SKIP)) return;
      const r = await sh('bwrap', clients[client](NAME), runUncaptured);
      expect(`${r.out}${r.err}`).not.toContain(reached[client]);
      // Each fails at the name: no resolver answers inside (glibc, Java and Go each say it their way).
      expect(`${r.out}${r.err}`).toMatch(
        /name resolution|Name or service not known|UnknownHost|lookup svc|Could not resolve/i,
      );
    },
    60_000,
  );
});

const NSJAIL = findNsjail();
const BACKENDS = [
  { backend: 'bwrap' as const, why: '' },
  { backend: 'nsjail' as const, why: 'missing' in NSJAIL ? NSJAIL.missing : '' },
  { backend: 'landlock' as const, why: LANDLOCK_SKIP },
];

describe.skipIf(skip).each(BACKENDS)('transparent capture under $backend', ({ backend, why }) => {
  it.skipIf(why !== '')(
    `python socket.create_connection by name${why ? ` (skipped: ${why})` : ''}`,
    async () => {
      const r = await sh(backend, clients.python(NAME));
      expect(r.out).toBe(`${reached.python}\n`);
      expect(r.violations).toEqual([]);
    },
    60_000,
  );

  it.skipIf(why !== '')(
    'java HttpURLConnection and HttpClient, no proxy properties',
    async () => {
      const r = await sh(backend, clients.java(NAME));
      expect(r.out).toBe(`${reached.java}\n`);
      expect(r.violations).toEqual([]);
    },
    90_000,
  );

  it.skipIf(why !== '' || GO_SKIP !== '')(
    `go net/http, proxy variables unset${GO_SKIP ? ` (skipped: ${GO_SKIP})` : ''}`,
    async () => {
      const r = await sh(backend, clients.go(NAME));
      expect(r.out).toBe(`${reached.go}\n`);
      expect(r.violations).toEqual([]);
    },
    60_000,
  );

  it.skipIf(why !== '' || SSH_SKIP !== '')(
    `ssh to a local sshd by name: key exchange done, our unknown key refused${SSH_SKIP ? ` (skipped: ${SSH_SKIP})` : ''}`,
    async () => {
      const r = await sh(backend, clients.ssh(NAME));
      expect(r.out).toContain(reached.ssh);
      expect(r.violations).toEqual([]);
    },
    60_000,
  );

  it.skipIf(why !== '')(
    'a denied name gets NXDOMAIN inside and a violation naming it',
    async () => {
      const r = await sh(backend, `getent hosts ${DENIED}; echo "getent $?"; ${clients.python(DENIED)}`);
      expect(r.out).toContain('getent 2\n');
      expect(r.err).toMatch(/Name or service not known/);
      expect(r.violations).toContainEqual(
        expect.objectContaining({ phase: 'runtime', kind: 'network', rule: 'network.deny', host: DENIED }),
      );
    },
    60_000,
  );

  it.skipIf(why !== '')(
    "a direct connect to the host listener's address is refused; one off lo is refused and reported",
    async () => {
      // 192.0.2.1 (TEST-NET-1) is captured before any route is looked up and never dialled: no name resolved to it.
      const connect = (address: string) =>
        `/usr/bin/python3 -c "import socket; socket.create_connection(('${address}', ${port}), timeout=10)" 2>&1 | tail -1`;
      const r = await sh(backend, `${connect('127.0.0.1')}; ${connect('192.0.2.1')}`);
      expect(r.out).toMatch(/^ConnectionRefusedError.*\nConnectionRefusedError/);
      const refused = (host: string) => expect.objectContaining({ phase: 'runtime', kind: 'network', host, port });
      expect(r.violations).toContainEqual(refused('192.0.2.1'));
      // Under bwrap 127.0.0.1 is the sandbox's own loopback: the host's listener is not there to reach,
      // so nothing is captured and nothing reported. Under landlock it is the host's, captured and refused.
      if (backend === 'landlock') expect(r.violations).toContainEqual(refused('127.0.0.1'));
    },
    60_000,
  );

  it.skipIf(why !== '')(
    'a UDP send is refused and reported (not under nsjail, where it is refused only): clients are told to use TCP',
    async () => {
      const r = await sh(
        backend,
        `/usr/bin/python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('192.0.2.1', 53))" 2>&1 | tail -1`,
      );
      expect(r.out).toMatch(backend === 'landlock' ? /PermissionError/ : /Network is unreachable/);
      // nsjail names no sandbox init for sbx to open the namespace's counters by (README "Network"):
      // refused there too, not reported.
      if (backend === 'nsjail') return;
      expect(r.violations).toContainEqual(
        expect.objectContaining({
          kind: 'network',
          detail: expect.stringContaining(
            'UDP (DNS, QUIC) is not carried: clients fall back to TCP; sbx answers DNS over TCP',
          ),
        }),
      );
    },
    60_000,
  );
});

describe.skipIf(skip)("the judge inside bwrap: the command's filter, the monitor out of its reach", () => {
  // The command is `sh -c`: its parent is the bridge (node), whose parent is the judge's monitor.
  const monitor = `M=$(awk '/^PPid/ {print $2}' /proc/$PPID/status)`;

  it("the command stays under sbx's seccomp filter; the monitor's descriptors and memory are closed to it, the bridge's (the control) are not", async () => {
    const r = await sh(
      'bwrap',
      [
        monitor,
        'tr "\\0" " " < /proc/$M/cmdline; echo',
        'unshare -U true 2>/dev/null; echo "unshare $?"',
        'readlink /proc/$PPID/fd/0 >/dev/null 2>&1; echo "bridge fd $?"',
        'readlink /proc/$M/fd/0 >/dev/null 2>&1; echo "monitor fd $?"',
        'head -c1 /proc/$M/environ >/dev/null 2>&1; echo "monitor environ $?"',
      ].join('; '),
    );
    const lines = r.out.split('\n');
    expect(lines[0]).toMatch(/^\/run\/sbx\/sbx-landlock --judge /);
    // unshare(2) is in sbx's default filter: the judge installed it for the command.
    expect(lines.slice(1, 5)).toEqual(['unshare 1', 'bridge fd 0', 'monitor fd 1', 'monitor environ 1']);
  }, 60_000);

  it("the timeout's SIGTERM reaches the command through the monitor and the bridge (124, the command's trap ran)", async () => {
    const o = await run({
      command: ['sh', '-c', 'trap "echo got TERM; exit 3" TERM; sleep 60 & wait'],
      profile: profileFile,
      backend: 'bwrap',
      cwd: ws,
      stdio: 'capture',
      hostEnv: env,
      resolve,
      // Far past the sandbox's start even under load: the trap must be set before the signal comes.
      limits: { timeout: '8s' },
    });
    expect([o.exitCode, o.stdout.toString()]).toEqual([124, 'got TERM\n']);
  }, 60_000);

  it('a command that kills the monitor ends the sandbox: nothing connects after it (fail closed)', async () => {
    const r = await sh('bwrap', `${monitor}; kill -KILL $M; ${clients.python(NAME)}; echo "after $?"`);
    expect(r.out).not.toContain('hello');
    expect(r.out).not.toMatch(/after 0/);
  }, 60_000);
});
