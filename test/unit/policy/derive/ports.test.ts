// network.host_ports and network.publish, from the profile to the bridge's argv: what derivePolicy
// makes of them (and refuses), the command bwrap and nsjail start, and landlock's refusal by name.
import { describe, expect, it } from 'vitest';
import { compileLandlock } from '../../../../src/backend/landlock/compile.js';
import { commandOf } from '../../../../src/backend/shared/bridge.js';
import { SbxError } from '../../../../src/errors.js';
import { mergeProfiles } from '../../../../src/profile/merge.js';
import type { Policy } from '../../../../src/policy/types.js';
import { FIXTURE_SESSION, runPipeline } from '../../../helpers/hosts.js';
import { rejection } from '../../../helpers/errors.js';

const BRIDGE = { node: '/usr/bin/node', script: '/opt/sbx/dist/bridge.cjs' };
const SESSION = '/run/sbx/session';

function derived(network: object, request: Parameters<typeof runPipeline>[2] extends infer O ? O : never = {}) {
  return runPipeline('default', 'alice', {
    profile: { network: network as never },
    mutateHost: (h) => (h.bridge = BRIDGE),
    ...request,
  });
}

type Filtered = Extract<Policy['network'], { kind: 'filtered' }>;

function filtered(policy: Policy): Filtered {
  if (policy.network.kind !== 'filtered') throw new Error(`expected a filtered network, got ${policy.network.kind}`);
  return policy.network;
}

describe('derivePolicy', () => {
  it('host_ports alone: its own namespace, no proxy rules, the bridge, the ports as listed', async () => {
    const { policy } = await derived({ host_ports: [5432, 6379], publish: [3000] });
    const net = filtered(policy);
    expect(net).toMatchObject({ hostPorts: [5432, 6379], publish: [3000], bridge: BRIDGE });
    expect(net.rules.allow).toEqual([]);
    expect(policy.namespaces.net).toBe(true);
    // The session directory holds sbx's sockets; the sandbox sees it read-only (compiled as --ro-bind).
    expect(policy.mounts).toContainEqual(expect.objectContaining({ kind: 'session-dir', target: SESSION }));
  });

  it('without ports or allow list: no bridge at all', async () => {
    const { policy } = await derived({ unix_sockets: [] });
    expect(filtered(policy)).toMatchObject({ hostPorts: [], publish: [], bridge: null });
  });

  it('--network host over host_ports or publish is refused, naming the keys', async () => {
    const error = await rejection(derived({ host_ports: [5432], publish: [3000] }, { request: { network: 'host' } }));
    expect(error).toMatchObject({ code: 'PROFILE_INVALID' });
    expect(error.message).toBe(
      "--network host cannot be combined with the profile's network.host_ports and network.publish",
    );
    expect(error.hint).toContain('drop --network host');
  });

  it('--network none narrows: no bridge, no host port', async () => {
    const { policy } = await derived({ host_ports: [5432] }, { request: { network: 'none' } });
    expect(policy.network).toEqual({ kind: 'none' });
  });

  it('--allow-domain keeps the profile ports', async () => {
    const { policy } = await derived({ host_ports: [5432] }, { request: { allowDomains: ['example.com'] } });
    expect(filtered(policy)).toMatchObject({ hostPorts: [5432], bridge: BRIDGE });
  });

  it('a port in both lists (as extends can bring together) is refused', async () => {
    const error = await rejection(derived({ host_ports: [5432], publish: [5432] }));
    expect(error).toMatchObject({ code: 'PROFILE_INVALID' });
    expect(error.message).toContain('port 5432 is in both host_ports and publish');
  });
});

describe('the bridge in front of the command', () => {
  it('host ports and published ports only: no proxy sockets', async () => {
    const { policy } = await derived({ host_ports: [5432], publish: [3000, 8080] });
    expect(commandOf(policy)).toEqual([
      '/run/sbx/node',
      '/run/sbx/bridge.cjs',
      '--host-port',
      '5432',
      `${SESSION}/host-port-5432.sock`,
      '--publish',
      '3000',
      `${SESSION}/publish-3000.sock`,
      '--publish',
      '8080',
      `${SESSION}/publish-8080.sock`,
      '--',
      'sh',
      '-c',
      'echo hi',
    ]);
  });

  it('with an allow list: the proxy sockets first, then the ports', async () => {
    const { policy } = await derived({ allow: ['example.com'], host_ports: [5432] });
    expect(commandOf(policy).slice(0, 8)).toEqual([
      '/run/sbx/node',
      '/run/sbx/bridge.cjs',
      '--proxy',
      `${SESSION}/egress-http.sock`,
      `${SESSION}/egress-socks.sock`,
      '--host-port',
      '5432',
      `${SESSION}/host-port-5432.sock`,
    ]);
  });

  it('bwrap shows the session directory read-only at the bridge path', async () => {
    const { argv } = await derived({ publish: [3000] });
    const at = argv.indexOf(SESSION);
    expect(argv.slice(at - 2, at + 1)).toEqual(['--ro-bind', FIXTURE_SESSION.dir, SESSION]);
  });
});

describe('landlock', () => {
  it('refuses publish by name (the command cannot listen without a network namespace), not host_ports', async () => {
    const { policy, host } = await derived({ host_ports: [5432], publish: [3000] });
    let error: unknown;
    try {
      compileLandlock(policy, FIXTURE_SESSION, {
        path: '/usr/lib/sbx/dist/sbx-landlock',
        stdinIsTty: false,
        arch: 'x86_64',
        uid: host.uid,
        gid: host.gid,
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SbxError);
    const all = [(error as SbxError).message, ...(error as SbxError).details].join('\n');
    expect(all).toContain('network.publish (3000): the command cannot listen without a network namespace');
    expect(all).not.toContain('host_ports');
  });
});

describe('extends', () => {
  it('concatenates each list, parents first, a port listed by both once', () => {
    const merged = mergeProfiles([
      { name: 'parent', profile: { network: { host_ports: [5432], publish: [3000] } } },
      { name: 'child', profile: { network: { host_ports: [6379, 5432] } } },
    ]);
    expect(merged.profile.network).toEqual({ host_ports: [5432, 6379], publish: [3000] });
  });
});
