// The egress proxy enforces the rules the Policy carries, as derived: derivePolicy compiles the
// profile's network lists once into plain data (policy/types.ts NetworkPolicy), and the proxy takes
// that data as it is (src/api.ts passes `policy.network.rules`), with no second compilation that
// could drop a field.
import { once } from 'node:events';
import { type IncomingMessage, request } from 'node:http';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import * as egress from '../../../../src/network/egress.js';
import type { Policy } from '../../../../src/policy/types.js';
import { type EgressProxy, startEgressProxy } from '../../../../src/network/host/proxy.js';
import { runPipeline } from '../../../helpers/hosts.js';
import { makeTempDir } from '../../../helpers/tmp.js';

vi.mock('../../../../src/network/egress.js', { spy: true });

const BRIDGE = { node: '/usr/bin/node', script: '/opt/sbx/dist/bridge.cjs' };
/** Public addresses (decideAddress lets them through unless a rule says otherwise). */
const GOOD = '93.184.216.34';
const BAD = '93.184.216.35';
const NAMES: Record<string, string> = {
  'api.example.com': GOOD,
  'evil.example.com': GOOD,
  'rebound.example.com': BAD,
};

async function derivedRules(network: object): Promise<Extract<Policy['network'], { kind: 'filtered' }>['rules']> {
  const { policy } = await runPipeline('default', 'alice', {
    profile: { network: network as never },
    mutateHost: (h) => (h.bridge = BRIDGE),
  });
  if (policy.network.kind !== 'filtered') throw new Error(`expected a filtered network, got ${policy.network.kind}`);
  return policy.network.rules;
}

/** CONNECT host:port through the proxy's HTTP socket: the status and body it answers with. */
async function connectThrough(proxy: EgressProxy, target: string): Promise<{ status: number; body: string }> {
  const req = request({ socketPath: proxy.httpSocket, method: 'CONNECT', path: target, headers: { host: target } });
  req.end();
  const [res, socket, head] = await new Promise<[IncomingMessage, Socket, Buffer]>((resolve, reject) => {
    req.once('connect', (...args) => resolve(args));
    req.once('error', reject);
  });
  const status = res.statusCode ?? 0;
  if (status === 200) {
    socket.destroy();
    return { status, body: '' };
  }
  // The refusal's body may have come with the head.
  const chunks: Buffer[] = [head];
  socket.on('data', (c: Buffer) => chunks.push(c));
  await once(socket, 'close');
  return { status, body: Buffer.concat(chunks).toString() };
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A proxy over `rules` whose dials all reach one loopback listener; `dials` records the addresses asked for. */
async function proxyOver(rules: egress.EgressRules) {
  const upstream = createServer((s) => s.end());
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  cleanups.push(() => new Promise<void>((r) => upstream.close(() => r())));
  const port = (upstream.address() as AddressInfo).port;
  const dials: string[] = [];
  const proxy = await startEgressProxy({
    rules,
    socketDir: makeTempDir('sbx-policy-rules-'),
    resolve: async (host) => [NAMES[host] ?? '192.0.2.1'],
    connect: (address) => {
      dials.push(address);
      return connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    },
  });
  cleanups.push(() => proxy.close());
  return { proxy, dials };
}

describe('the Policy carries the egress rules the proxy enforces', () => {
  it('derivePolicy compiles the profile lists into plain data, entries as written', async () => {
    const rules = await derivedRules({ allow: ['*.example.com:443'], deny: ['Evil.example.com'], allow_private: [] });
    expect(rules).toEqual(
      egress.compileEgressRules({ allow: ['*.example.com:443'], deny: ['Evil.example.com'], allowPrivate: [] }),
    );
    expect(rules.deny).toStrictEqual([{ text: 'Evil.example.com', kind: 'exact', host: 'evil.example.com' }]);
    // JSON in, JSON out: what `sbx explain --json` prints and policyHash hashes is all there is.
    expect(JSON.parse(JSON.stringify(rules))).toStrictEqual(rules);
  });

  it("a deny rule of the profile refuses at the proxy, with no compilation after derivePolicy's", async () => {
    vi.mocked(egress.compileEgressRules).mockClear();
    const derived = await derivedRules({ allow: ['*.example.com'], deny: ['evil.example.com', BAD] });
    // As `sbx explain --json` prints them: only plain data can survive this.
    const rules = JSON.parse(JSON.stringify(derived)) as egress.EgressRules;
    // The spy sees derivePolicy's call: its silence below is the proxy's.
    expect(egress.compileEgressRules).toHaveBeenCalledTimes(1);
    vi.mocked(egress.compileEgressRules).mockClear();
    const { proxy, dials } = await proxyOver(rules);

    expect(await connectThrough(proxy, 'api.example.com:443')).toEqual({ status: 200, body: '' });
    const byName = await connectThrough(proxy, 'evil.example.com:443');
    expect(byName.status).toBe(403);
    expect(byName.body).toContain('network.deny');
    // An IP literal in deny refuses the address whatever name led to it (decideAddress).
    const byAddress = await connectThrough(proxy, 'rebound.example.com:443');
    expect(byAddress.status).toBe(403);
    expect(byAddress.body).toContain(`matches network.deny "${BAD}"`);

    expect(dials).toEqual([GOOD]);
    expect(proxy.stats().violations.map((v) => [v.host, v.rule])).toEqual([
      ['evil.example.com', 'network.deny'],
      ['rebound.example.com', 'network.deny'],
    ]);
    expect(egress.compileEgressRules).not.toHaveBeenCalled();
  });
});
