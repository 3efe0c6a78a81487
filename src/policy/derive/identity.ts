// Who the command is inside, and the names and namespaces it gets: the uid and gid (and whether they
// are root on the host), the hostname, the namespaces unshared.
import type { Profile } from '../../profile/schema.js';
import type { Host } from '../host.js';
import { DEFAULT_HOSTNAME, type Identity, type NetworkPolicy, type Policy } from '../types.js';

/** The uid/gid a root-invoked sandbox runs as inside its namespace: "nobody" on every distribution. */
const NOBODY = 65534;

/** Root inside stays root on the host only for a root caller; a root caller's others run as nobody. */
export function identityOf(profile: Profile, host: Pick<Host, 'uid' | 'gid'>): Identity {
  if (profile.user === 'root') return { uid: 0, gid: 0, hostRoot: host.uid === 0 };
  if (host.uid === 0) return { uid: NOBODY, gid: NOBODY, hostRoot: true };
  return { uid: host.uid, gid: host.gid, hostRoot: false };
}

export function hostnameOf(profile: Profile): string {
  return profile.hostname ?? DEFAULT_HOSTNAME;
}

/** Every namespace is the sandbox's own, but the network's when it shares the host's. */
export function namespacesOf(network: NetworkPolicy): Policy['namespaces'] {
  return { user: true, pid: true, ipc: true, uts: true, net: network.kind !== 'host', cgroup: true };
}
