// glibc's own resolver against sbx's DNS (docs/DESIGN.md, "Transparent capture"): `getent`, with
// `options use-vc` in resolv.conf, in a user and network namespace of the test's own whose 127.0.0.1:53
// a relay turns into the capture preamble on the proxy's socket (fixtures/dns-relay.cjs: the judge's
// part). The answers must be ones glibc accepts: a pool address for an allowed name, "not found" for
// a denied one, and the violation in the proxy's report.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESOLVER_ADDRESS } from '../../../src/network/address-pool.js';
import { startTestProxy, startUpstreams, type TestProxy, type Upstreams } from './harness.js';

const RELAY = fileURLToPath(new URL('./fixtures/dns-relay.cjs', import.meta.url));
const namespaces = spawnSync('unshare', ['-rnm', 'true']);
const skip = namespaces.status !== 0;
if (skip) console.warn(`skipped: no user and network namespace here (unshare -rnm: ${namespaces.stderr})`);

let up: Upstreams;
let t: TestProxy;
let dir: string;

beforeAll(async () => {
  if (skip) return;
  up = await startUpstreams();
  t = await startTestProxy(up);
  dir = mkdtempSync(join(tmpdir(), 'sbx-resolver-'));
  // The resolver configuration a captured sandbox gets (docs/DESIGN.md, "Transparent capture"): sbx's, over TCP.
  writeFileSync(join(dir, 'resolv.conf'), `nameserver ${RESOLVER_ADDRESS}\noptions use-vc attempts:1 timeout:5\n`);
  writeFileSync(join(dir, 'hosts'), '127.0.0.1 localhost\n');
});
afterAll(async () => {
  await t?.close();
  await up?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `script` run by sh in the namespace, resolv.conf and hosts replaced, the relay on the resolver's address. */
async function inNamespace(script: string): Promise<string> {
  const setup = [
    `mount --bind ${join(dir, 'resolv.conf')} /etc/resolv.conf`,
    `mount --bind ${join(dir, 'hosts')} /etc/hosts`,
    'ip link set lo up',
    `ip addr add ${RESOLVER_ADDRESS}/32 dev lo`,
    `exec ${process.execPath} ${RELAY} ${t.proxy.httpSocket} ${RESOLVER_ADDRESS} "$0"`,
  ].join(' && ');
  // Not spawnSync: the proxy answering the relay runs in this process's event loop.
  const child = spawn('unshare', ['-rnm', 'sh', '-c', setup, script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (err += c));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`namespace run failed (${code}): ${err}`);
  return out;
}

describe.skipIf(skip)("glibc's resolver over TCP", () => {
  it('gets a pool address for an allowed name (A and AAAA asked), "not found" for a denied one', async () => {
    const out = await inNamespace(
      'getent ahostsv4 allowed.test; echo "v4=$?"; getent ahosts other.test; echo "any=$?"; getent hosts denied.test; echo "denied=$?"',
    );
    expect(out).toMatch(/^198\.18\.0\.\d+\s+STREAM allowed\.test$/m);
    expect(out).toMatch(/^198\.18\.0\.\d+\s+STREAM other\.test$/m);
    expect(out).not.toMatch(/^[0-9a-f:]+:[0-9a-f:]*\s+STREAM/m); // no IPv6 answer
    expect(out).toContain('v4=0');
    expect(out).toContain('any=0');
    expect(out).toContain('denied=2'); // getent: key not found
    expect(t.proxy.stats().violations).toEqual([
      expect.objectContaining({
        rule: 'network.deny',
        host: 'denied.test',
        detail: expect.stringContaining('NXDOMAIN'),
      }),
    ]);
    expect(t.dials).toEqual([]);
  });
});
