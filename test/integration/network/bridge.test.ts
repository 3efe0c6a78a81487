// The in-sandbox bridge as a real child process (`node bridge.cjs … -- curl …`) in front of the real
// proxy: curl finds the proxy through the variables the bridge sets, over HTTP, CONNECT and SOCKS5.
// Then the same inside `bwrap --unshare-net`, where the proxy is the only way out: a host listener on
// 127.0.0.1 is reachable through it (when allowed) and unreachable directly.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bridgePath } from '../../../src/network/host/index.js';
import { CERT_PATH, startTestProxy, startUpstreams, type TestProxy, type Upstreams } from './harness.js';

const BRIDGE = bridgePath(new URL('../../../src/network/host/index.ts', import.meta.url).href);

function has(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Run `launcher… node bridge.cjs <sockets> -- cmd…` to completion (no shell). */
async function run(cmd: string[], launcher: string[] = []): Promise<Run> {
  const argv = [
    ...launcher,
    process.execPath,
    BRIDGE,
    '--proxy',
    t.proxy.httpSocket,
    t.proxy.socksSocket,
    '--',
    ...cmd,
  ];
  const child = spawn(argv[0] as string, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
  return { code, signal, stdout, stderr };
}

const CURL = ['curl', '-sS', '--max-time', '20'];

let up: Upstreams;
let t: TestProxy;
beforeAll(async () => {
  if (!has('curl')) throw new Error('curl is required for the bridge tests (apt-get install curl)');
  up = await startUpstreams();
  t = await startTestProxy(up);
});
afterAll(async () => {
  await t?.close();
  await up?.close();
});
let violationsBefore = 0;
let dialsBefore = 0;
beforeEach(() => {
  violationsBefore = t.proxy.stats().violations.length;
  dialsBefore = t.dials.length;
});
const newViolations = () => t.proxy.stats().violations.slice(violationsBefore);
const newDials = () => t.dials.slice(dialsBefore);

describe('bridge as a process', () => {
  it('gives the child the proxy variables, pointing at listening ports', async () => {
    const script = `const v=process.env; const http=require('http');
      const u=new URL(v.http_proxy);
      http.get({host:u.hostname,port:u.port,path:'http://allowed.test:${up.httpPort}/hello',headers:{host:'allowed.test:${up.httpPort}'}},r=>{
        let b='';r.on('data',c=>b+=c);r.on('end',()=>console.log(JSON.stringify({env:v,body:b})));});`;
    const r = await run(['node', '-e', script]);
    expect(r.code).toBe(0);
    const { env, body } = JSON.parse(r.stdout) as { env: Record<string, string>; body: string };
    expect(body).toBe(`http hello from allowed.test:${up.httpPort}\n`);
    const http = env.HTTP_PROXY as string;
    expect(http).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(env.ALL_PROXY).toMatch(/^socks5h:\/\/127\.0\.0\.1:\d+$/);
    for (const name of [
      'HTTP_PROXY',
      'http_proxy',
      'HTTPS_PROXY',
      'https_proxy',
      'npm_config_proxy',
      'npm_config_https_proxy',
      'YARN_HTTP_PROXY',
      'YARN_HTTPS_PROXY',
      'CARGO_HTTP_PROXY',
    ]) {
      expect(env[name], name).toBe(http);
    }
    expect(env.all_proxy).toBe(env.ALL_PROXY);
    expect(env.NO_PROXY).toBe('localhost,127.0.0.1,::1');
    expect(env.no_proxy).toBe(env.NO_PROXY);
  });

  it('curl: plain HTTP through http_proxy', async () => {
    const r = await run([...CURL, `http://allowed.test:${up.httpPort}/hello`]);
    expect(r).toMatchObject({ code: 0, stdout: `http hello from allowed.test:${up.httpPort}\n` });
    expect(newDials()).toEqual([['127.0.0.1', up.httpPort]]);
  });

  it('curl: HTTPS through CONNECT (HTTPS_PROXY), certificate checked end to end', async () => {
    const r = await run([...CURL, '--cacert', CERT_PATH, `https://allowed.test:${up.httpsPort}/`]);
    expect(r).toMatchObject({ code: 0, stdout: 'https hello from allowed.test:' + up.httpsPort + '\n' });
  });

  it('curl: SOCKS5 with remote name resolution (--socks5-hostname)', async () => {
    const r = await run([
      'sh',
      '-c',
      `exec ${CURL.join(' ')} --socks5-hostname "\${ALL_PROXY#socks5h://}" http://allowed.test:${up.httpPort}/hello`,
    ]);
    expect(r).toMatchObject({ code: 0, stdout: `http hello from allowed.test:${up.httpPort}\n` });
    expect(newDials()).toEqual([['127.0.0.1', up.httpPort]]);
  });

  it('curl: a denied name gets 403 over HTTP, a failed CONNECT over HTTPS, and a violation each', async () => {
    const plain = await run([...CURL, '-o', '/dev/null', '-w', '%{http_code}', `http://denied.test:${up.httpPort}/`]);
    expect(plain.stdout).toBe('403');
    const tls = await run([...CURL, '--cacert', CERT_PATH, `https://denied.test:${up.httpsPort}/`]);
    expect(tls.code).toBe(56); // CURLE_RECV_ERROR: "CONNECT tunnel failed, response 403"
    expect(newViolations().map((v) => [v.rule, v.host])).toEqual([
      ['network.deny', 'denied.test'],
      ['network.deny', 'denied.test'],
    ]);
    expect(newDials()).toEqual([]);
  });

  it('curl: metadata and private addresses are refused without a dial', async () => {
    const meta = await run([...CURL, '-o', '/dev/null', '-w', '%{http_code}', 'http://meta.test/latest/meta-data/']);
    const ten = await run([
      'sh',
      '-c',
      `exec ${CURL.join(' ')} --socks5-hostname "\${ALL_PROXY#socks5h://}" http://ten.test/`,
    ]);
    expect(meta.stdout).toBe('403');
    expect(ten.code).toBe(97); // CURLE_PROXY: the SOCKS5 server refused (reply 0x02)
    expect(newViolations().map((v) => [v.rule, v.host])).toEqual([
      ['network.private', 'meta.test'],
      ['network.private', 'ten.test'],
    ]);
    expect(newDials()).toEqual([]);
  });

  it('curl: SNI naming another host than the CONNECT target is refused', async () => {
    // --connect-to makes curl CONNECT to allowed.test while its TLS names other.test.
    const r = await run([
      ...CURL,
      '--cacert',
      CERT_PATH,
      '--connect-to',
      `other.test:${up.httpsPort}:allowed.test:${up.httpsPort}`,
      `https://other.test:${up.httpsPort}/`,
    ]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/access denied/i);
    expect(newViolations()).toEqual([expect.objectContaining({ rule: 'network.sni', host: 'allowed.test' })]);
  });

  it('passes the exit code through, 128+signal for a signalled child, 127 when not found', async () => {
    expect((await run(['sh', '-c', 'exit 7'])).code).toBe(7);
    expect((await run(['sh', '-c', 'kill -TERM $$'])).code).toBe(143);
    const missing = await run(['/nonexistent/cmd']);
    expect(missing.code).toBe(127);
    expect(missing.stderr).toContain('sbx-bridge: cannot run /nonexistent/cmd');
  });

  it('forwards SIGTERM to the child', async () => {
    const argv = [
      BRIDGE,
      '--proxy',
      t.proxy.httpSocket,
      t.proxy.socksSocket,
      '--',
      process.execPath,
      '-e',
      "process.on('SIGTERM',()=>process.exit(42));console.log('ready');setInterval(()=>{},1e6)",
    ];
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    await once(child.stdout, 'data');
    child.kill('SIGTERM');
    const [code] = await once(child, 'close');
    expect(code).toBe(42);
  });
});

describe('bridge inside bwrap --unshare-net', () => {
  let bwrap: string[];
  beforeAll(() => {
    if (!has('bwrap')) throw new Error('bwrap is required (apt-get install bubblewrap)');
    bwrap = [
      'bwrap',
      '--unshare-net',
      '--die-with-parent',
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      '--bind',
      t.dir,
      t.dir,
    ];
    // Prerequisite: this host lets us make a network namespace at all.
    execFileSync(bwrap[0] as string, [...bwrap.slice(1), 'true']);
  });

  it('control: unsandboxed, the same direct request reaches the host listener', async () => {
    // Async on purpose: the listener lives in this process, a sync spawn would block it.
    const r = await run([...CURL, '--noproxy', '*', `http://127.0.0.1:${up.httpPort}/hello`]);
    expect(r).toMatchObject({ code: 0, stdout: 'http hello from 127.0.0.1:' + up.httpPort + '\n' });
  });

  it('the child cannot reach a host listener on 127.0.0.1 directly', async () => {
    const r = await run([...CURL, '--noproxy', '*', `http://127.0.0.1:${up.httpPort}/hello`], bwrap);
    expect(r.code).toBe(7); // CURLE_COULDNT_CONNECT: its 127.0.0.1 is its own, empty, loopback
    expect(newDials()).toEqual([]);
  });

  it('the child reaches allowed.test only through the proxy (HTTP, CONNECT, SOCKS5)', async () => {
    const http = await run([...CURL, `http://allowed.test:${up.httpPort}/hello`], bwrap);
    const https = await run([...CURL, '--cacert', CERT_PATH, `https://allowed.test:${up.httpsPort}/`], bwrap);
    const socks = await run(
      [
        'sh',
        '-c',
        `exec ${CURL.join(' ')} --socks5-hostname "\${ALL_PROXY#socks5h://}" http://allowed.test:${up.httpPort}/hello`,
      ],
      bwrap,
    );
    expect([http.code, https.code, socks.code]).toEqual([0, 0, 0]);
    expect(http.stdout).toContain('http hello from allowed.test');
    expect(https.stdout).toContain('https hello from allowed.test');
    expect(socks.stdout).toContain('http hello from allowed.test');
    expect(newDials()).toEqual([
      ['127.0.0.1', up.httpPort],
      ['127.0.0.1', up.httpsPort],
      ['127.0.0.1', up.httpPort],
    ]);
  });

  it('the child cannot resolve or reach names the proxy refuses', async () => {
    const r = await run([...CURL, '-o', '/dev/null', '-w', '%{http_code}', 'http://ten.test/'], bwrap);
    expect(r.stdout).toBe('403');
    expect(newViolations()).toEqual([expect.objectContaining({ rule: 'network.private', host: 'ten.test' })]);
    expect(newDials()).toEqual([]);
  });
});
