// `sbx proxy` end to end: the real CLI (bin/sbx.js) serves a profile's allow-list on a loopback port;
// HTTP, CONNECT and SOCKS5 clients on that one port reach an allowed loopback upstream by name, and
// are refused a name that resolves to an address allow_private does not list and an address the
// allow-list does not name, beside the control: the same upstream reached directly. Names resolve
// through the system resolver: `localhost` (127.0.0.1 in /etc/hosts); nothing leaves the machine.
import { once } from 'node:events';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  runSbxRaw,
  type Started,
  SBX_BIN,
  SKIP_INTEGRATION,
  start,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { drain, readBytes, startUpstreams, type Upstreams } from './harness.js';

let host: TestHost;
let up: Upstreams;
let profileFile: string;
let proxy: Started;
let port: number;

function startProxy(args: string[]): Started {
  return start(SBX_BIN, ['proxy', ...args], { env: host.env, cwd: host.workspace });
}

/** An absolute-URI request through the proxy: status and body. */
function viaHttp(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: url, headers: { host: new URL(url).host } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function tcp(): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port });
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  return socket;
}

/** CONNECT host:port: the proxy's status line. */
async function viaConnect(authority: string): Promise<string> {
  const socket = await tcp();
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  const [head] = (await once(socket, 'data')) as [Buffer];
  socket.destroy();
  return head.toString().split('\r\n')[0] as string;
}

/** SOCKS5 CONNECT by name (ATYP 3) or IPv4 literal (ATYP 1): the reply code, and the socket. */
async function viaSocks(target: string | number[], targetPort: number): Promise<{ code: number; socket: Socket }> {
  const socket = await tcp();
  socket.write(Buffer.from([0x05, 0x01, 0x00]));
  await readBytes(socket, 2);
  const addr = typeof target === 'string' ? [0x03, target.length, ...Buffer.from(target)] : [0x01, ...target];
  socket.write(Buffer.from([0x05, 0x01, 0x00, ...addr, targetPort >> 8, targetPort & 0xff]));
  const reply = await readBytes(socket, 10);
  return { code: reply[1] as number, socket };
}

describe.skipIf(SKIP_INTEGRATION)('sbx proxy', () => {
  beforeAll(async () => {
    host = makeTestHost('proxy');
    up = await startUpstreams();
    profileFile = join(host.root, 'egress.yaml');
    // Every upstream is allowed by name; only the HTTP and HTTPS ones by address: localhost:forbiddenPort
    // must be refused at the address check, after the name passed.
    writeFileSync(
      profileFile,
      [
        'network:',
        `  allow: [localhost:${up.httpPort}, localhost:${up.httpsPort}, localhost:${up.forbiddenPort}]`,
        `  allow_private: [127.0.0.1:${up.httpPort}, 127.0.0.1:${up.httpsPort}]`,
        '',
      ].join('\n'),
    );
    proxy = startProxy(['-p', profileFile, '--listen', '127.0.0.1:0', '--json-log']);
    const ready = JSON.parse(await proxy.line(/"event":"listening"/));
    expect(ready).toMatchObject({ event: 'listening', address: '127.0.0.1', allow: 3, deny: 0, allowPrivate: 2 });
    port = ready.port;
  });

  afterAll(async () => {
    proxy?.child.kill('SIGKILL');
    await up?.close();
    host?.cleanup();
  });

  it('control: the loopback upstream the proxy must refuse is reachable directly', async () => {
    const before = up.forbiddenConnections();
    const socket = connect({ host: '127.0.0.1', port: up.forbiddenPort });
    socket.on('error', () => undefined);
    await once(socket, 'close');
    expect(up.forbiddenConnections()).toBe(before + 1);
  });

  it('serves an allowed name over plain HTTP, and logs host and port, never the path or query', async () => {
    const reply = await viaHttp(`http://localhost:${up.httpPort}/hello?token=s3cret-query`);
    expect(reply).toEqual({ status: 200, body: `http hello from localhost:${up.httpPort}\n` });
    const open = JSON.parse(await proxy.line(new RegExp(`"event":"open".*"port":${up.httpPort}`)));
    expect(open).toMatchObject({
      event: 'open',
      via: 'http',
      host: 'localhost',
      port: up.httpPort,
      address: '127.0.0.1',
    });
    expect(open.time).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('tunnels CONNECT and SOCKS5 on the same port', async () => {
    expect(await viaConnect(`localhost:${up.httpsPort}`)).toBe('HTTP/1.1 200 Connection Established');
    const { code, socket } = await viaSocks('localhost', up.httpPort);
    expect(code).toBe(0x00);
    socket.end(`GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
    expect((await drain(socket)).toString()).toContain('http hello from localhost');
    await proxy.line(/"event":"open","via":"socks"/);
  });

  it('refuses an allowed name whose address allow_private does not list, and an address not allowed', async () => {
    const before = up.forbiddenConnections();
    const byName = await viaHttp(`http://localhost:${up.forbiddenPort}/x`);
    expect(byName.status).toBe(403);
    expect(byName.body).toContain('network.private');
    expect(await viaConnect(`localhost:${up.forbiddenPort}`)).toBe('HTTP/1.1 403 Forbidden');
    const { code, socket } = await viaSocks([127, 0, 0, 1], up.forbiddenPort);
    socket.destroy();
    expect(code).toBe(0x02); // RFC 1928: connection not allowed by ruleset
    expect(up.forbiddenConnections()).toBe(before);
    const refused = JSON.parse(await proxy.line(/"event":"refused","via":"socks"/));
    expect(refused).toMatchObject({ host: '127.0.0.1', port: up.forbiddenPort, rule: 'network.allow' });
    const private_ = JSON.parse(await proxy.line(/"event":"refused","via":"http"/));
    expect(private_).toMatchObject({ host: 'localhost', port: up.forbiddenPort, rule: 'network.private' });
  });

  it('exits 0 on SIGTERM, saying so', async () => {
    proxy.child.kill('SIGTERM');
    const ran = await proxy.done;
    expect(ran.err).toBe('');
    expect({ code: ran.code, signal: ran.signal }).toEqual({ code: 0, signal: null });
    const stopped = JSON.parse(ran.out.trim().split('\n').at(-1) as string);
    expect(stopped).toMatchObject({ event: 'stopped', signal: 'SIGTERM', refused: 3 });
    expect(ran.out).not.toContain('s3cret-query');
    expect(ran.out).not.toContain('/hello');
  });
});

describe.skipIf(SKIP_INTEGRATION)('sbx proxy refuses', () => {
  beforeAll(() => {
    host = makeTestHost('proxy-refuse');
  });
  afterAll(() => host?.cleanup());

  it('a profile without an allow-list (exit 2, PROXY_NO_ALLOW_LIST), and starts nothing', async () => {
    const ran = await startProxy(['-p', 'default', '--listen', '127.0.0.1:0']).done;
    expect(ran.code).toBe(2);
    expect(ran.err).toContain('profile default allows no destination');
    expect(ran.out).toBe('');
    const host_ = await startProxy(['-p', 'network', '--listen', '127.0.0.1:0']).done;
    expect(host_.code).toBe(2);
    expect(host_.err).toContain('network: host');
  });

  it('a non-loopback address without --allow-remote (exit 2)', async () => {
    const ran = await startProxy(['--allow-domain', 'example.com', '--listen', '0.0.0.0:0']).done;
    expect(ran.code).toBe(2);
    expect(ran.err).toContain('--allow-remote');
    expect(ran.out).toBe('');
  });
});

describe.skipIf(SKIP_INTEGRATION)('the proxy `sbx export k8s` emits', () => {
  beforeAll(async () => {
    host = makeTestHost('proxy-export');
    up = await startUpstreams();
  });
  afterAll(async () => {
    proxy?.child.kill('SIGKILL');
    await up?.close();
    host?.cleanup();
  });

  it("runs as its Deployment says, and enforces the profile's allow-list", async () => {
    const file = join(host.root, 'egress.yaml');
    writeFileSync(file, `network:\n  allow: [localhost:${up.httpPort}]\n  allow_private: [127.0.0.1:${up.httpPort}]\n`);
    const exported = await runSbxRaw(
      ['export', 'k8s', '-p', file, '--json', '--out', join(host.root, 'out'), '--', 'true'],
      { env: host.env, cwd: host.workspace },
    );
    expect(exported.code, exported.err).toBe(0);
    const { manifests } = JSON.parse(exported.out);
    const deployment = manifests.find((m: { kind: string }) => m.kind === 'Deployment');
    const command: string[] = deployment.spec.template.spec.containers[0].command;
    expect(command.slice(0, 4)).toEqual(['sbx', 'proxy', '--listen', '0.0.0.0:3128']);
    // The same argv, on a free loopback port of this host instead of the pod's 0.0.0.0:3128.
    proxy = start(SBX_BIN, [...command.slice(1, 3), '127.0.0.1:0', ...command.slice(4)], {
      env: host.env,
      cwd: host.workspace,
    });
    port = JSON.parse(await proxy.line(/"event":"listening"/)).port;
    const before = up.forbiddenConnections();
    expect((await viaHttp(`http://localhost:${up.httpPort}/hello`)).status).toBe(200);
    expect((await viaHttp(`http://localhost:${up.forbiddenPort}/hello`)).status).toBe(403);
    expect(up.forbiddenConnections()).toBe(before);
    proxy.child.kill('SIGTERM');
    expect((await proxy.done).code).toBe(0);
  });
});
