// The network: none, the host's, or filtered through the egress proxy (its rules compiled here, once),
// with the refusals that keep a flag from widening the profile unseen; and what a filtered network
// mounts: the unix sockets it lists and the egress bridge's program and session directory.
import { posix } from 'node:path';
import { SbxError } from '../../errors.js';
import type { Profile } from '../../profile/schema.js';
import { BRIDGE_JUDGE, BRIDGE_NODE, BRIDGE_SCRIPT, BRIDGE_SESSION } from '../../network/bridge-paths.js';
import { hostsContent, resolvConfContent } from '../../network/resolver-files.js';
import { compileEgressRules } from '../../network/egress.js';
import type { Host } from '../host.js';
import { isWithin } from '../../path-within.js';
import type { Mode, Mount, NetworkPolicy } from '../types.js';
import { type BindChecks, credentialStoreError, normalizeTarget } from './bind-checks.js';
import { fact } from './probe-plan.js';
import type { RunRequest } from './request.js';

/** none, host, or filtered: the profile's choice, then --network, then --allow-domain on top. */
export function deriveNetwork(profile: Profile, request: RunRequest, host: Host): NetworkPolicy {
  const fromProfile = profile.network ?? 'none';
  const base = request.network ?? fromProfile;
  const domains = request.allowDomains ?? [];
  if (base === 'host' && typeof fromProfile === 'object') refusePortsOnHostNetwork(fromProfile);
  if (base === 'host') return { kind: 'host' };
  if (base === 'none' && domains.length === 0) return { kind: 'none' };
  const spec =
    typeof base === 'object'
      ? base
      : typeof fromProfile === 'object' && request.network === undefined
        ? fromProfile
        : {};
  const allow = [...(spec.allow ?? []), ...domains];
  const deny = spec.deny ?? [];
  const allowPrivate = [...(spec.allow_private ?? []), ...(request.allowPrivate ?? [])];
  const hostPorts = spec.host_ports ?? [];
  const publish = spec.publish ?? [];
  refuseSharedPort(hostPorts, publish);
  return {
    kind: 'filtered',
    // Compiled now, so a typo is a profile error rather than a refusal at run time, and what the
    // proxy enforces is exactly what `sbx explain --json` shows and the report's policyHash covers.
    rules: compileEgressRules({ allow, deny, allowPrivate, flagsFrom: allow.length - domains.length }),
    unixSockets: (spec.unix_sockets ?? []).map((p) => posix.resolve(host.cwd, p)),
    hostPorts,
    publish,
    bridge: allow.length + hostPorts.length + publish.length > 0 ? bridgeFilesOf(host) : null,
    ...(allow.length > 0 ? { capture: captureOf(host) } : {}),
  };
}

/** The bridge's own files; the judge's, when it runs, are the capture's. */
function bridgeFilesOf(host: Host): { node: string; script: string } {
  return { node: host.bridge.node, script: host.bridge.script };
}

/** Transparent capture needs the network judge (native/sbx-landlock-net.c), built with sbx when a C compiler was there. */
function captureOf(host: Host): NonNullable<Extract<NetworkPolicy, { kind: 'filtered' }>['capture']> {
  const judge = host.bridge.judge;
  if (judge === undefined) {
    const why = 'the network judge (dist/sbx-landlock) was not built: no C compiler when sbx was built';
    return { kind: 'off', why };
  }
  return { kind: 'on', judge, resolvConf: host.bridge.resolvConf ?? '/etc/resolv.conf' };
}

/**
 * `--network host` over a profile with host_ports or publish: the host network reaches every host
 * port, and a server inside would listen on the host's interfaces rather than its 127.0.0.1 only. Both
 * would widen what the profile says without saying so, so the run is refused.
 */
function refusePortsOnHostNetwork(spec: { host_ports?: number[] | undefined; publish?: number[] | undefined }): void {
  const keys = [spec.host_ports?.length ? 'network.host_ports' : '', spec.publish?.length ? 'network.publish' : '']
    .filter(Boolean)
    .join(' and ');
  if (!keys) return;
  throw new SbxError('PROFILE_INVALID', `--network host cannot be combined with the profile's ${keys}`, {
    hint: `drop --network host (the profile already reaches the ports it lists), or use a profile without ${keys}`,
  });
}

/** The schema refuses a port in both lists within one file; `extends` can still bring them together. */
function refuseSharedPort(hostPorts: readonly number[], publish: readonly number[]): void {
  const shared = publish.find((p) => hostPorts.includes(p));
  if (shared === undefined) return;
  throw new SbxError('PROFILE_INVALID', `network: port ${shared} is in both host_ports and publish (after extends)`, {
    hint: `remove ${shared} from one of the two lists: inside the sandbox a port is either the host's or the sandbox's own`,
  });
}

/** network.unix_sockets: each a socket file, bound writable at its own path. */
export function unixSocketLayers(network: NetworkPolicy, mode: Mode, checks: BindChecks): Mount[] {
  const where = 'network.unix_sockets';
  return (network.kind === 'filtered' ? network.unixSockets : []).map((path): Mount => {
    const f = fact(checks.host, path);
    if (!f.exists) {
      const hint = 'start the service first, or fix the path';
      throw new SbxError('BIND_SOURCE_MISSING', `${where}: ${path} does not exist`, { hint });
    }
    // Bound writable (connecting needs write permission on the socket inode), so only a socket: never
    // a directory or file (which would hand over e.g. /etc), never a credential store's agent socket.
    if (f.type !== 'socket') {
      const what = f.type === 'dir' ? 'a directory' : f.type === 'file' ? 'a regular file' : 'not a socket';
      const resolved = f.real !== path ? ` (${f.real})` : '';
      throw new SbxError('UNIX_SOCKET_INVALID', `${where}: ${path}${resolved} is ${what}`, {
        hint:
          'list the socket files of running services only (e.g. /run/user/1000/docker.sock); ' +
          'bind directories with read_only or writable_roots',
      });
    }
    if (checks.keepOut.some((root) => isWithin(f.real, root))) throw credentialStoreError(where, path);
    if (mode === 'read-only') {
      const why = 'needs write access to it, and mode: read-only promises no writes';
      throw new SbxError('UNIX_SOCKET_INVALID', `${where}: connecting to ${path} ${why}`, {
        hint: 'remove network.unix_sockets from the profile, or use mode: workspace-write',
      });
    }
    const target = normalizeTarget(path, where);
    return { kind: 'bind', source: f.real, target, access: 'rw', optional: false, reason: where, role: 'socket' };
  });
}

/**
 * The egress bridge's program and script, and the session directory holding the proxy's sockets; under
 * capture, the network judge that starts the bridge and the resolver files that send every name to sbx
 * (network/resolver-files.ts): roles `bridge` and `capture`, which a launcher without a network namespace omits.
 */
export function bridgeLayers(network: NetworkPolicy, hostname: string): Mount[] {
  if (network.kind !== 'filtered' || !network.bridge) return [];
  const capture = network.capture?.kind === 'on' ? network.capture : undefined;
  return [
    ...(capture
      ? [
          {
            kind: 'bind',
            source: capture.judge,
            target: BRIDGE_JUDGE,
            access: 'ro',
            optional: false,
            reason: 'transparent capture: the network judge',
            role: 'capture',
          } as const,
          {
            kind: 'file',
            target: capture.resolvConf,
            content: resolvConfContent(),
            mode: 0o444,
            reason: "transparent capture: names are asked of sbx's proxy, over TCP",
            role: 'capture',
          } as const,
          {
            kind: 'file',
            target: '/etc/hosts',
            content: hostsContent(hostname),
            mode: 0o444,
            reason: 'transparent capture: only the loopback names and the hostname stay local',
            role: 'capture',
          } as const,
        ]
      : []),
    {
      kind: 'bind',
      source: network.bridge.node,
      target: BRIDGE_NODE,
      access: 'ro',
      optional: false,
      reason: 'egress bridge: node',
      role: 'bridge',
    },
    {
      kind: 'bind',
      source: network.bridge.script,
      target: BRIDGE_SCRIPT,
      access: 'ro',
      optional: false,
      reason: 'egress bridge: script',
      role: 'bridge',
    },
    { kind: 'session-dir', target: BRIDGE_SESSION, reason: "egress bridge: the proxy's sockets", role: 'bridge' },
  ];
}
