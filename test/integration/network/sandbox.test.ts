// The network modes end to end: sbx's library runs curl inside real bwrap, with the egress proxy and
// bridge as a user gets them. Names resolve through a test map to loopback upstreams (allowed by
// allow_private for exactly their ports); nothing leaves the machine.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CERT_PATH, NAMES, startUpstreams, type Upstreams } from './harness.js';

const root = new URL('../../../', import.meta.url).pathname;
const api = join(root, 'dist', 'api.js');
const skip = process.env.SBX_SKIP_INTEGRATION === '1';

type Api = typeof import('../../../src/api.js');
let run: Api['run'];
let up: Upstreams;
let hostListener: Server;
let hostPort: number;
let work: string;
let ws: string;
let env: Record<string, string>;

const resolve = async (host: string) => NAMES[host] ?? [];

/** Pids whose argv is exactly `argv` (read from /proc, so the search itself never matches). */
function processesRunning(argv: string[]): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1).join('\0') === argv.join('\0');
      } catch {
        return false;
      }
    })
    .map(Number);
}

function profile(name: string, body: string): string {
  const file = join(work, `${name}.yaml`);
  writeFileSync(file, body);
  return file;
}

async function sh(profileFile: string, script: string) {
  return run({
    command: ['sh', '-c', script],
    profile: profileFile,
    cwd: ws,
    stdio: 'capture',
    hostEnv: env,
    resolve,
  });
}

describe.skipIf(skip)('network modes inside the sandbox', () => {
  beforeAll(async () => {
    if (!existsSync(api)) throw new Error(`${api} is missing: run npm run build first (or SBX_SKIP_INTEGRATION=1)`);
    for (const tool of ['bwrap', 'curl']) {
      if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
        throw new Error(`${tool} is not installed (apt-get install ${tool === 'bwrap' ? 'bubblewrap' : tool})`);
    }
    ({ run } = (await import(api)) as Api);
    up = await startUpstreams();
    hostListener = createServer((s) => s.end('host service\n'));
    await new Promise<void>((r) => hostListener.listen(0, '127.0.0.1', r));
    hostPort = (hostListener.address() as { port: number }).port;
    work = mkdtempSync(join(tmpdir(), 'sbx-net-'));
    const home = join(work, 'home');
    env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      XDG_RUNTIME_DIR: join(work, 'run'),
      XDG_CACHE_HOME: join(work, 'cache'),
      XDG_CONFIG_HOME: join(work, 'config'),
    };
    for (const d of [home, env.XDG_RUNTIME_DIR!]) spawnSync('mkdir', ['-p', '-m', '700', d]);
    // The workspace is a directory of its own: one that held HOME or sbx's dirs would be refused.
    ws = join(work, 'ws');
    spawnSync('mkdir', ['-p', ws]);
    copyFileSync(CERT_PATH, join(ws, 'ca.crt'));
  });
  afterAll(async () => {
    await up?.close();
    hostListener?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const filtered = () =>
    profile(
      'filtered',
      `extends: default\nnetwork:\n  allow: [allowed.test, meta.test, ten.test]\n  deny: [denied.test]\n  allow_private: ["127.0.0.1:${up.httpPort}", "127.0.0.1:${up.httpsPort}"]\n`,
    );

  it('reaches an allowed name over plain HTTP, CONNECT (TLS to the upstream) and SOCKS5, and counts the bytes', async () => {
    const o = await sh(
      filtered(),
      [
        `curl -sS http://allowed.test:${up.httpPort}/hello`,
        `curl -sS --cacert ca.crt https://allowed.test:${up.httpsPort}/hello`,
        `curl -sS --proxy "$ALL_PROXY" http://allowed.test:${up.httpPort}/hello`,
      ].join('; '),
    );
    expect(o.stderr.toString()).toBe('');
    expect(o.stdout.toString().split('\n').filter(Boolean)).toEqual([
      `http hello from allowed.test:${up.httpPort}`,
      `https hello from allowed.test:${up.httpsPort}`,
      `http hello from allowed.test:${up.httpPort}`,
    ]);
    expect(o.exitCode).toBe(0);
    expect(o.violations).toEqual([]);
    const counted = o.network?.connections.filter((c) => c.host === 'allowed.test') ?? [];
    expect(counted.reduce((n, c) => n + c.count, 0)).toBe(3);
    expect(counted.every((c) => c.bytesIn > 0 && c.bytesOut > 0)).toBe(true);
  });

  it('refuses a denied name (403) and reports it as a network violation', async () => {
    const o = await sh(filtered(), `curl -s -o /dev/null -w '%{http_code}' http://denied.test:${up.httpPort}/hello`);
    expect(o.stdout.toString()).toBe('403');
    expect(o.violations).toEqual([
      expect.objectContaining({
        phase: 'runtime',
        kind: 'network',
        rule: 'network.deny',
        host: 'denied.test',
        port: up.httpPort,
      }),
    ]);
  });

  it('refuses allowed names that resolve to the metadata address or a private range, and a port not in allow_private', async () => {
    const o = await sh(
      filtered(),
      [
        `http://meta.test:${up.httpPort}/`,
        `http://ten.test:${up.httpPort}/`,
        `http://allowed.test:${up.forbiddenPort}/`,
      ]
        .map((u) => `curl -s -o /dev/null -w '%{http_code} ' ${u}`)
        .join('; '),
    );
    expect(o.stdout.toString().trim().split(' ')).toEqual(['403', '403', '403']);
    expect(o.violations.map((v) => v.rule)).toEqual(['network.private', 'network.private', 'network.private']);
    expect(up.forbiddenConnections()).toBe(0);
  });

  it('cannot reach a host listener on 127.0.0.1 directly, with none or an allow-list; can with host', async () => {
    const probe = `curl -s --noproxy '*' --max-time 3 telnet://127.0.0.1:${hostPort} </dev/null; echo "rc=$?"`;
    const none = await sh('default', probe);
    const allowList = await sh(filtered(), probe);
    const host = await sh('network', probe);
    expect(none.stdout.toString()).toMatch(/rc=7/);
    expect(allowList.stdout.toString()).toMatch(/rc=7/);
    expect(host.stdout.toString()).toContain('host service');
  });

  it('network: none starts no proxy and sets no proxy variables', async () => {
    const o = await sh('default', 'env | grep -ci proxy; ls /run/sbx 2>&1 | head -1');
    expect(o.stdout.toString().split('\n')[0]).toBe('0');
    expect(o.stdout.toString()).toMatch(/No such file or directory/);
    expect(o.network).toBeUndefined();
  });

  it('leaves no proxy socket or sandbox process behind when sbx is killed with SIGKILL mid-run', async () => {
    const marker = `${Date.now() % 100000}.25`;
    const child = spawn(
      join(root, 'bin', 'sbx.js'),
      ['run', '-p', filtered(), '--', 'sh', '-c', `echo ready; exec sleep ${marker}`],
      {
        cwd: ws,
        env,
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    await new Promise<void>((r) => child.stdout.once('data', () => r()));
    const sessions = join(env.XDG_RUNTIME_DIR!, 'sbx');
    const during = readdirSync(sessions);
    expect(during.some((d) => existsSync(join(sessions, d, 'egress-http.sock')))).toBe(true);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const next = await sh('default', 'true');
    expect(next.exitCode).toBe(0);
    expect(readdirSync(sessions)).toEqual([]);
    expect(processesRunning(['sleep', marker])).toEqual([]);
  });
});
