// Credentials end to end (README "Credentials"): sbx's library runs real bwrap with a profile whose
// GITHUB_TOKEN holds a placeholder inside, against a local HTTPS server with its own test CA (passed
// with network.extra_ca_certs). The names resolve through a test map to 127.0.0.1 (allow_private
// lists the servers' ports), so nothing leaves the machine and no host file changes. Each client of
// the issue (curl, Node's fetch, Python requests, git) reaches the server with the placeholder inside
// and the value at the server; beside each refusal, the control that the same request passes.
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIALS_CA_PATH, type CredentialUpstream, startCredentialUpstream } from './credential-upstream.js';

const root = new URL('../../../', import.meta.url).pathname;
const api = join(root, 'dist', 'api.js');
const skip = process.env.SBX_SKIP_INTEGRATION === '1';

type Api = typeof import('../../../src/api.js');
let run: Api['run'];
let up: CredentialUpstream;
let work: string;
let ws: string;
let env: Record<string, string>;

/** The value: shaped like a GitHub token, so the placeholder is too. */
const TOKEN = `ghp_${'Kq7rT2mXw9ZbV4nLp8sYc3HdF6gJ1aE5uRk0'.slice(0, 36)}`;
const OTHER_VALUE = 'other-service-key-0123456789abcdef';
const API = 'api.sbx-cred.test';
const OTHER = 'other.sbx-cred.test';
const THIRD = 'third.sbx-cred.test';
const resolve = async (host: string) => (host.endsWith('.sbx-cred.test') ? ['127.0.0.1'] : []);

function profile(name: string, body: string): string {
  const file = join(work, `${name}.yaml`);
  writeFileSync(file, body);
  return file;
}

/** The profile of most tests: GITHUB_TOKEN for the API host, OTHER_KEY (in X-Api-Key only) for the other. */
function credentialProfile(extra = ''): string {
  return profile(
    'credentials',
    [
      'extends: default',
      'network:',
      `  allow: [${API}, ${OTHER}, ${THIRD}]`,
      `  allow_private: ["127.0.0.1:${up.httpsPort}", "127.0.0.1:${up.httpPort}"]`,
      `  extra_ca_certs: [${CREDENTIALS_CA_PATH}]`,
      'credentials:',
      '  GITHUB_TOKEN:',
      '    from: { env: REAL_GITHUB_TOKEN }',
      `    hosts: [${API}]`,
      '  OTHER_KEY:',
      `    from: { command: [printf, "%s", ${OTHER_VALUE}] }`,
      `    hosts: [${OTHER}]`,
      '    header: X-Api-Key',
      extra,
    ].join('\n'),
  );
}

async function sh(profileFile: string, script: string, hostEnv: Record<string, string> = env) {
  return run({ shell: script, profile: profileFile, cwd: ws, stdio: 'capture', hostEnv, resolve });
}

const out = (o: { stdout?: Buffer }) => o.stdout?.toString() ?? '';
const err = (o: { stderr?: Buffer }) => o.stderr?.toString() ?? '';
const https = (host: string, path: string) => `https://${host}:${up.httpsPort}${path}`;

/** What arrived at the server since `from`. */
const since = (from: number) => up.arrived.slice(from);

describe.skipIf(skip)('credentials: a placeholder inside, the value added by the proxy', () => {
  beforeAll(async () => {
    if (!existsSync(api)) throw new Error(`${api} is missing: run npm run build first (or SBX_SKIP_INTEGRATION=1)`);
    for (const [tool, pkg] of [
      ['bwrap', 'bubblewrap'],
      ['curl', 'curl'],
      ['git', 'git'],
    ])
      if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
        throw new Error(`${tool} is not installed (apt-get install ${pkg})`);
    // The system's Python, as the sandbox shows it (a toolchain's may lack requests).
    if (spawnSync('/usr/bin/python3', ['-c', 'import requests']).status !== 0)
      throw new Error('Python requests is not installed (apt-get install python3-requests)');
    ({ run } = (await import(api)) as Api);
    work = mkdtempSync(join(tmpdir(), 'sbx-cred-'));
    const gitRoot = join(work, 'git');
    mkdirSync(gitRoot);
    const repo = join(gitRoot, 'repo.git');
    const git = (...args: string[]) => spawnSync('git', args, { encoding: 'utf8' });
    git('init', '-q', '--bare', repo);
    const seed = join(work, 'seed');
    git('init', '-q', seed);
    writeFileSync(join(seed, 'README'), 'hello from the credential test\n');
    git('-C', seed, 'add', 'README');
    git('-C', seed, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'seed');
    git('-C', seed, 'push', '-q', repo, 'HEAD:refs/heads/main');
    git('-C', repo, 'symbolic-ref', 'HEAD', 'refs/heads/main');
    up = await startCredentialUpstream(TOKEN, gitRoot);
    const home = join(work, 'home');
    env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      XDG_RUNTIME_DIR: join(work, 'run'),
      XDG_CACHE_HOME: join(work, 'cache'),
      XDG_CONFIG_HOME: join(work, 'config'),
      REAL_GITHUB_TOKEN: TOKEN,
    };
    for (const d of [home, env.XDG_RUNTIME_DIR!]) spawnSync('mkdir', ['-p', '-m', '700', d]);
    ws = join(work, 'ws');
    mkdirSync(ws);
  });
  afterAll(async () => {
    await up?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('env inside shows only the placeholder, shaped like the token; a secret of the same source shows the value (control)', async () => {
    const o = await sh(credentialProfile(), 'env; cat /proc/self/environ | tr "\\0" "\\n" | grep GITHUB_TOKEN');
    const lines = out(o).split('\n');
    const placeholder = lines.find((l) => l.startsWith('GITHUB_TOKEN='))?.slice('GITHUB_TOKEN='.length) ?? '';
    expect(placeholder).toMatch(/^ghp_[A-Za-z0-9]{36}$/);
    expect(placeholder).not.toBe(TOKEN);
    expect(out(o) + err(o)).not.toContain(TOKEN);
    expect(out(o)).not.toContain(OTHER_VALUE);
    expect(lines).toContain(`GITHUB_TOKEN=${placeholder}`);
    expect(lines).toContain('SSL_CERT_FILE=/run/sbx/ca/bundle.pem');
    expect(lines).toContain('NODE_EXTRA_CA_CERTS=/run/sbx/ca/ca.pem');
    // Control: `secrets:` puts the value itself in, and the same probe shows it.
    const secret = profile(
      'secret',
      'extends: default\nsecrets:\n  - { name: REAL_GITHUB_TOKEN, from: env, as: GITHUB_TOKEN }\n',
    );
    expect(out(await sh(secret, 'env'))).toContain(`GITHUB_TOKEN=${TOKEN}`);
  });

  it('curl (HTTP/1.1 and HTTP/2, bearer and basic auth) reaches the server with the value; the placeholder itself is refused there (control)', async () => {
    const from = up.arrived.length;
    const o = await sh(
      credentialProfile(),
      [
        `curl -sS --http1.1 -H "Authorization: Bearer $GITHUB_TOKEN" ${https(API, '/auth/bearer')}`,
        `curl -sS --http2 -w '%{http_version}\\n' -H "Authorization: token $GITHUB_TOKEN" ${https(API, '/auth/h2')}`,
        `curl -sS -u "x-access-token:$GITHUB_TOKEN" ${https(API, '/auth/basic')}`,
        'echo "$GITHUB_TOKEN"',
      ].join('; '),
    );
    expect(err(o)).toBe('');
    const [a, b, version, c, placeholder] = out(o).split('\n');
    expect([a, b, c]).toEqual(['https ok authorised', 'https ok authorised', 'https ok authorised']);
    expect(version).toBe('2');
    expect(o.violations).toEqual([]);
    const seen = since(from);
    expect(seen.map((r) => r.headers.authorization)).toEqual([
      `Bearer ${TOKEN}`,
      `token ${TOKEN}`,
      `Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`,
    ]);
    // Control: the placeholder sent straight to the server (no proxy to put the value in) is refused.
    // Not spawnSync: the server answers on this process's event loop.
    const direct = await promisify(execFile)('curl', [
      ...['-sS', '--cacert', CREDENTIALS_CA_PATH, '--resolve', `${API}:${up.httpsPort}:127.0.0.1`],
      ...['-H', `Authorization: Bearer ${placeholder}`, https(API, '/auth/direct')],
    ]);
    expect(direct.stdout).toBe('unauthorised\n');
  });

  // nsjail mounts the CA's files and sets the placeholder as bwrap does (its gap table: `credentials`).
  const nsjail = process.env.SBX_NSJAIL;
  it.skipIf(!nsjail)(
    'under nsjail too: the placeholder inside, the value at the server (skipped without SBX_NSJAIL)',
    async () => {
      const from = up.arrived.length;
      const o = await run({
        shell: `echo "$GITHUB_TOKEN" | cut -c1-4; curl -sS -H "Authorization: Bearer $GITHUB_TOKEN" ${https(API, '/auth/nsjail')}`,
        profile: credentialProfile(),
        backend: 'nsjail',
        cwd: ws,
        stdio: 'capture',
        hostEnv: { ...env, SBX_NSJAIL: nsjail as string },
        resolve,
      });
      expect(err(o)).toBe('');
      expect(out(o)).toBe('ghp_\nhttps ok authorised\n');
      expect(since(from).map((r) => r.headers.authorization)).toEqual([`Bearer ${TOKEN}`]);
    },
  );

  it("Node's fetch, Python requests and git over HTTPS reach the server with the value", async () => {
    const from = up.arrived.length;
    // Node 24 reads HTTPS_PROXY itself (NODE_USE_ENV_PROXY, which the bridge sets); before it, fetch's
    // dispatcher is given a connector that opens the CONNECT tunnel (undici's EnvHttpProxyAgent does the same).
    const fetchScript = `
      const net = require('node:net'), tls = require('node:tls');
      const key = Symbol.for('undici.globalDispatcher.1');
      async function main() {
        if (Number(process.versions.node.split('.')[0]) < 24) {
          await fetch('http://127.0.0.1:1/').catch(() => {});
          const proxy = new URL(process.env.HTTPS_PROXY);
          const connect = (o, cb) => {
            const s = net.connect(Number(proxy.port), proxy.hostname, () => s.write('CONNECT ' + o.hostname + ':' + o.port + ' HTTP/1.1\\r\\n\\r\\n'));
            s.once('error', cb);
            s.once('data', (d) => {
              if (!/^HTTP\\/1\\.1 200/.test(d.toString())) return cb(new Error(d.toString()));
              const t = tls.connect({ socket: s, servername: o.servername || o.hostname, ALPNProtocols: ['http/1.1'] }, () => cb(null, t));
              t.once('error', cb);
            });
          };
          globalThis[key] = new (globalThis[key].constructor)({ connect });
        }
        const r = await fetch('${https(API, '/auth/fetch')}', { headers: { authorization: 'Bearer ' + process.env.GITHUB_TOKEN } });
        process.stdout.write(await r.text());
      }
      main().catch((e) => { console.error(e); process.exit(1); });`;
    writeFileSync(join(ws, 'fetch.cjs'), fetchScript);
    const pythonScript = [
      'import os, requests',
      `r = requests.get("${https(API, '/auth/requests')}", headers={"Authorization": "Bearer " + os.environ["GITHUB_TOKEN"]})`,
      'print(r.text, end="")',
    ].join('\n');
    writeFileSync(join(ws, 'get_with_requests.py'), pythonScript);
    const helper = '!f() { echo username=x-access-token; echo "password=$GITHUB_TOKEN"; }; f';
    const o = await sh(
      credentialProfile(),
      [
        'node fetch.cjs',
        '/usr/bin/python3 get_with_requests.py',
        `git -c credential.helper='${helper}' clone -q ${https(API, '/git/repo.git')} /tmp/clone && cat /tmp/clone/README`,
      ].join(' && '),
    );
    expect(err(o)).toBe('');
    expect(out(o).split('\n')).toEqual([
      'https ok authorised',
      'https ok authorised',
      'hello from the credential test',
      '',
    ]);
    expect(o.exitCode).toBe(0);
    const seen = since(from);
    expect(seen.find((r) => r.url === '/auth/fetch')?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(seen.find((r) => r.url === '/auth/requests')?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    const gitAuth = seen.filter((r) => r.url.startsWith('/git/')).map((r) => r.headers.authorization);
    expect(gitAuth).toContain(`Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`);
    expect(seen.some((r) => JSON.stringify(r).includes('ghp_') && !JSON.stringify(r).includes(TOKEN))).toBe(false);
  });

  it('sbx explain shows each credential, its source and hosts, never its value (nor does --json)', async () => {
    const explain = (json: boolean) =>
      promisify(execFile)(
        process.execPath,
        [join(root, 'bin/sbx.js'), 'explain', ...(json ? ['--json'] : []), '-p', credentialProfile(), '--', 'true'],
        {
          cwd: ws,
          env,
        },
      );
    const text = (await explain(false)).stdout;
    expect(text).toContain(
      `credential GITHUB_TOKEN: a placeholder inside; the value ($REAL_GITHUB_TOKEN, read at run time) goes only to ${API}, in any request header`,
    );
    expect(text).toContain(
      `credential OTHER_KEY: a placeholder inside; the value (the output of printf %s ${OTHER_VALUE}`,
    );
    const json = (await explain(true)).stdout;
    expect(JSON.parse(json).policy.credentials.rules.map((r: { name: string }) => r.name)).toEqual([
      'GITHUB_TOKEN',
      'OTHER_KEY',
    ]);
    expect(text + json).not.toContain(TOKEN);
  });

  it("npm's .npmrc token and pip's index URL userinfo reach the server as the value (the README's recipes)", async () => {
    const from = up.arrived.length;
    const registry = https(API, '/auth/npm/');
    const index = `https://__token__:$GITHUB_TOKEN@${API}:${up.httpsPort}/auth/pip/`;
    await sh(
      credentialProfile(),
      [
        // A .npmrc in the workspace is masked (a credential file name): the config goes in /tmp.
        `printf '%s:_authToken=\${GITHUB_TOKEN}\\n' '${registry.replace(/^https:/, '')}' > /tmp/npmrc`,
        `NPM_CONFIG_USERCONFIG=/tmp/npmrc npm view left-pad --registry ${registry} >/dev/null 2>&1`,
        `/usr/bin/python3 -m pip download -q --no-deps -d /tmp/dl --index-url "${index}" left-pad >/dev/null 2>&1`,
        'true',
      ].join('; '),
    );
    const seen = since(from);
    expect(seen.find((r) => r.url.startsWith('/auth/npm/'))?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(seen.find((r) => r.url.startsWith('/auth/pip/'))?.headers.authorization).toBe(
      `Basic ${Buffer.from(`__token__:${TOKEN}`).toString('base64')}`,
    );
  });

  // Java reads no proxy variable and no CA variable: it gets the proxy as -D flags, and its default trust
  // store (the system's cacerts, covered by the run's PKCS#12 one) holds the run's CA.
  const hasJdk = spawnSync('sh', ['-c', 'command -v javac']).status === 0;
  it.skipIf(!hasJdk)(
    "Java's default trust store trusts the run's CA: HttpURLConnection reaches the server with the value (skipped without a JDK)",
    async () => {
      const from = up.arrived.length;
      writeFileSync(
        join(ws, 'Get.java'),
        [
          'import java.net.*; import java.io.*;',
          'public class Get { public static void main(String[] a) throws Exception {',
          '  HttpURLConnection c = (HttpURLConnection) new URL(a[0]).openConnection();',
          '  c.setRequestProperty("Authorization", "Bearer " + System.getenv("GITHUB_TOKEN"));',
          '  System.out.print(new String(c.getInputStream().readAllBytes()));',
          '} }',
        ].join('\n'),
      );
      const o = await sh(
        credentialProfile(),
        `p=\${HTTPS_PROXY##*:}; java -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=\${p%/} Get.java ${https(API, '/auth/java')}`,
      );
      expect(err(o)).toBe('');
      expect(out(o)).toBe('https ok authorised\n');
      expect(since(from).map((r) => r.headers.authorization)).toEqual([`Bearer ${TOKEN}`]);
    },
  );

  it('the placeholder sent to another allowed host is refused and reported, in the query, a header, a body (raw, base64, URL-encoded); the same requests without it pass (control)', async () => {
    const from = up.arrived.length;
    const status = (args: string) => `curl -sS -o /dev/null -w '%{http_code}\\n' ${args}`;
    const o = await sh(
      credentialProfile(),
      [
        // Intercepted (OTHER_KEY names it), so the proxy sees the request: controls first.
        status(`-H "X-Api-Key: $OTHER_KEY" ${https(OTHER, '/ok')}`),
        status(`${https(OTHER, '/leak?t=$GITHUB_TOKEN')}`),
        status(`-H "X-Leak: $GITHUB_TOKEN" ${https(OTHER, '/leak-header')}`),
        status(`--data-binary "t=$(printf %s "$GITHUB_TOKEN" | base64 -w0)" ${https(OTHER, '/leak-base64')}`),
        status(
          `--data-urlencode "t=$(printf %s "$GITHUB_TOKEN" | od -An -tx1 | tr -d ' \\n' | sed 's/../%&/g')" ${https(OTHER, '/leak-urlenc')}`,
        ),
        // Not intercepted, but plain HTTP: the proxy sees it too.
        status(`http://${THIRD}:${up.httpPort}/ok`),
        status(`-H "X-Leak: $GITHUB_TOKEN" http://${THIRD}:${up.httpPort}/leak-plain`),
        // Its own host, but without TLS: the value is never put into cleartext.
        status(`-H "Authorization: Bearer $GITHUB_TOKEN" http://${API}:${up.httpPort}/auth/plain`),
      ].join('; '),
    );
    expect(out(o).split('\n').filter(Boolean)).toEqual(['200', '403', '403', '403', '403', '200', '403', '403']);
    const refused = o.violations.filter((v) => v.kind === 'credential');
    expect(refused.map((v) => [v.rule, v.host])).toEqual([
      ['credential.host', OTHER],
      ['credential.host', OTHER],
      ['credential.host', OTHER],
      ['credential.host', OTHER],
      ['credential.host', THIRD],
      ['credential.plaintext', API],
    ]);
    for (const v of refused) {
      expect(v.detail).toMatch(/^GITHUB_TOKEN's placeholder in /);
      expect(v.source?.key).toBe('credentials.GITHUB_TOKEN.hosts');
    }
    expect(JSON.stringify(o)).not.toContain(TOKEN);
    // The server saw the controls and no refused request, and OTHER_KEY's value arrived in its header only.
    expect(since(from).map((r) => r.url)).toEqual(['/ok', '/ok']);
    expect(since(from)[0]?.headers['x-api-key']).toBe(OTHER_VALUE);
  });

  it("the CA's key is nowhere inside: only certificates under /run/sbx/ca, no host process visible; the CA does sign for the host (control)", async () => {
    const o = await sh(
      credentialProfile(),
      [
        'ls /run/sbx/ca',
        // Everything the session shows (not /run/sbx/node, whose OpenSSL has the words as strings).
        'grep -rls "PRIVATE KEY" /run/sbx/ca /run/sbx/session /tmp "$HOME" 2>/dev/null | wc -l',
        // vites[t]: the search's own command line does not match itself.
        'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " " | grep -c "vites[t]"',
        `curl -sS --cacert /run/sbx/ca/ca.pem ${https(API, '/ca')}`,
      ].join('; '),
    );
    // The Java trust store is there when the host has one to cover (Debian's ca-certificates-java).
    const java = existsSync('/etc/ssl/certs/java/cacerts') ? ['java-cacerts.p12'] : [];
    expect(out(o).split('\n')).toEqual(['bundle.pem', 'ca.pem', ...java, '0', '0', 'https ok anonymous', '']);
    // Control: the same process search on the host finds this test.
    const host = spawnSync('sh', ['-c', 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " " | grep -c "vites[t]"'], {
      encoding: 'utf8',
    });
    expect(Number(host.stdout)).toBeGreaterThan(0);
  });

  it('the upstream certificate is verified: without extra_ca_certs the proxy refuses the test CA (502), with it the request passes (control)', async () => {
    const without = profile(
      'no-ca',
      [
        'extends: default',
        'network:',
        `  allow: [${API}]`,
        `  allow_private: ["127.0.0.1:${up.httpsPort}"]`,
        'credentials:',
        '  GITHUB_TOKEN:',
        '    from: { env: REAL_GITHUB_TOKEN }',
        `    hosts: [${API}]`,
      ].join('\n'),
    );
    const probe = `curl -sS -o /dev/null -w '%{http_code}\\n' -H "Authorization: Bearer $GITHUB_TOKEN" ${https(API, '/auth/verify')}`;
    expect(out(await sh(without, probe))).toBe('502\n');
    expect(out(await sh(credentialProfile(), probe))).toBe('200\n');
  });

  it('a failing from.command refuses the run before anything runs; a succeeding one runs (control)', async () => {
    const marker = join(ws, 'ran');
    const failing = profile(
      'failing',
      [
        'extends: default',
        'network:',
        `  allow: [${API}]`,
        'credentials:',
        '  GITHUB_TOKEN:',
        '    from: { command: [/bin/false] }',
        `    hosts: [${API}]`,
      ].join('\n'),
    );
    const refusal = await sh(failing, `touch ${marker}`).catch((e: unknown) => e);
    expect(refusal).toMatchObject({ code: 'CREDENTIAL_UNAVAILABLE', exitCode: 125 });
    expect((refusal as Error).message).toBe('credentials.GITHUB_TOKEN: /bin/false exited with status 1');
    expect(existsSync(marker)).toBe(false);
    const working = profile(
      'working',
      (await import('node:fs'))
        .readFileSync(failing, 'utf8')
        .replace('[/bin/false]', '[printf, "%s", a-token-from-a-command]'),
    );
    const o = await sh(working, `touch ${marker}`);
    expect(o.exitCode).toBe(0);
    expect(existsSync(marker)).toBe(true);
  });

  it('a value the sandbox would hold anyway (a kept variable) refuses the run; without it the run proceeds (control)', async () => {
    const keeping = credentialProfile('env:\n  keep: [REAL_GITHUB_TOKEN]');
    const refusal = await sh(keeping, 'true').catch((e: unknown) => e);
    expect(refusal).toMatchObject({ code: 'CREDENTIAL_EXPOSED' });
    expect((refusal as Error).message).toBe(
      'credentials.GITHUB_TOKEN: its value is also in the variable REAL_GITHUB_TOKEN, which the sandbox sees',
    );
    expect((await sh(credentialProfile(), 'true')).exitCode).toBe(0);
  });

  it('the value typed on the command line refuses the run, and the ledger records the refusal without it', async () => {
    const ledger = join(work, 'audit.jsonl');
    const refusal = await run({
      command: ['echo', `token=${TOKEN}`],
      profile: credentialProfile(),
      cwd: ws,
      stdio: 'capture',
      hostEnv: env,
      resolve,
      audit: { file: ledger },
    }).catch((e: unknown) => e);
    expect(refusal).toMatchObject({ code: 'CREDENTIAL_EXPOSED' });
    expect((refusal as Error).message).toBe(
      'credentials.GITHUB_TOKEN: its value is also in argument 1 of the command, which the sandbox sees',
    );
    const recorded = readFileSync(ledger, 'utf8');
    expect(recorded).toContain('CREDENTIAL_EXPOSED');
    expect(recorded).not.toContain(TOKEN);
    expect(JSON.stringify(refusal)).not.toContain(TOKEN);
  });
});
