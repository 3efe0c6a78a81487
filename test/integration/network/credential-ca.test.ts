// The run's CA as TLS clients judge it: Node's TLS (OpenSSL), `openssl verify -x509_strict` and
// Python's ssl with VERIFY_X509_STRICT (3.13's default) accept its leaves for the credentials' hosts,
// and refuse a leaf it made for any other name (its critical name constraint), beside the control.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer, type Server } from 'node:tls';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileEgressRules } from '../../../src/network/egress.js';
import { createRunCa, permittedNames } from '../../../src/network/host/credential-ca.js';
import { trustStore } from '../../../src/network/pkcs12.js';
import { X509Certificate } from 'node:crypto';
import { spawnSync } from 'node:child_process';

const run = promisify(execFile);
const ca = createRunCa(
  permittedNames(compileEgressRules({ allow: ['api.sbx-cred.test'], deny: [], allowPrivate: [] }).allow),
  new Date(),
);
let dir: string;
let server: Server;
let port: number;
/** The leaf the server presents: set per test (SNI chooses nothing here). */
let presented = ca.leafFor('api.sbx-cred.test');

function handshake(servername: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, servername, ca: ca.certPem }, () => {
      socket.end();
      resolve('ok');
    });
    socket.on('error', (e: Error) => resolve(e.message));
  });
}

describe('the run CA as TLS clients verify it', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sbx-ca-'));
    writeFileSync(join(dir, 'ca.pem'), ca.certPem);
    server = createServer({ SNICallback: (_name, cb) => cb(null, undefined) }, (s) => s.end());
    server.on('tlsClientError', () => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => {
    server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const serve = (host: string) => {
    presented = ca.leafFor(host);
    server.setSecureContext({ cert: presented.cert, key: presented.key });
  };

  it("Node's TLS accepts a leaf for a credential host, and refuses one for another name: the name constraint (control)", async () => {
    serve('api.sbx-cred.test');
    expect(await handshake('api.sbx-cred.test')).toBe('ok');
    serve('evil.sbx-cred.test');
    expect(await handshake('evil.sbx-cred.test')).toBe('permitted subtree violation');
  });

  it('openssl verify -x509_strict: the chain holds for the host, not for another name (control)', async () => {
    for (const [host, ok] of [
      ['api.sbx-cred.test', true],
      ['evil.sbx-cred.test', false],
    ] as const) {
      const leaf = ca.leafFor(host).cert.split(/(?<=-----END CERTIFICATE-----\n)/)[0]!;
      writeFileSync(join(dir, 'leaf.pem'), leaf);
      const result = await run('openssl', [
        'verify',
        '-x509_strict',
        '-CAfile',
        join(dir, 'ca.pem'),
        join(dir, 'leaf.pem'),
      ]).then(
        (r) => r.stdout,
        (e: { stdout: string; stderr: string }) => e.stdout + e.stderr,
      );
      if (ok) expect(result.trim()).toBe(`${join(dir, 'leaf.pem')}: OK`);
      else expect(result).toMatch(/permitted subtree violation/);
    }
  });

  it("Python's ssl with VERIFY_X509_STRICT accepts the leaf (a missing key identifier would refuse it)", async () => {
    serve('api.sbx-cred.test');
    const script = [
      'import socket, ssl, sys',
      `ctx = ssl.create_default_context(cafile="${join(dir, 'ca.pem')}")`,
      'ctx.verify_flags |= ssl.VERIFY_X509_STRICT',
      `s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", ${port})), server_hostname="api.sbx-cred.test")`,
      'print("ok", s.version())',
    ].join('\n');
    const { stdout } = await run('python3', ['-c', script]);
    expect(stdout).toMatch(/^ok TLSv1\.[23]\n$/);
  });

  const hasKeytool = spawnSync('sh', ['-c', 'command -v keytool']).status === 0;
  it.skipIf(!hasKeytool)(
    'keytool reads the Java trust store as trusted certificates, with any password or none (skipped without keytool)',
    async () => {
      const store = join(dir, 'store.p12');
      writeFileSync(store, trustStore([{ der: new X509Certificate(ca.certPem).raw, alias: 'sbx-run-ca' }]));
      for (const password of ['changeit', '']) {
        const { stdout } = await run('keytool', ['-list', '-keystore', store, '-storepass', password]);
        expect(stdout).toMatch(/Your keystore contains 1 entry/);
        expect(stdout).toMatch(/^sbx-run-ca, .*, trustedCertEntry,/m);
      }
    },
  );
});
