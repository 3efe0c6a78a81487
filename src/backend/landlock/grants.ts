// The grant set the landlock backend builds from a Policy (compile.ts hands it to sbx-landlock, one
// record a grant), and one mount of the Policy as grants: without a mount namespace each mount becomes a
// Landlock grant on the host path itself, and what that cannot express is refused by name (LANDLOCK_GAPS
// in gaps.ts) or approximated, for the report. Pure.
import type { Mount } from '../../policy/types.js';

/** The nodes bwrap --dev binds from the host. */
const DEV_NODES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'];

export interface Refusal {
  feature: string;
  message: string;
  hint: string;
  /** One line per item when the refusal names several (every exposed secret). */
  details?: string[];
}

export const OTHER_BACKEND = 'or run where user namespaces work and use --backend bwrap';

/** The Policy as Landlock grants. */
export interface Grants {
  ro: string[];
  rw: string[];
  dev: string[];
  except: string[];
  /** Bind sources: the helper grants them through the descriptors the runtime pinned (host/pins.ts). */
  pinned: string[];
  /** Per-session directories standing in for /tmp and HOME: target → directory. */
  private: Map<string, string>;
  /** Paths inside a read-write grant that must not change: the helper snapshots and restores them. */
  guards: string[];
  /** Secrets the command can read and write (a mask or credential view inside a grant): refused unless opted in. */
  exposed: { path: string; what: string }[];
  refusals: Refusal[];
  approximations: Set<string>;
  /** What an approximation concerns in this policy (the exposed files, the PATH entries dropped), by feature. */
  listed: Map<string, string[]>;
  /** The command's PATH without the entries it could not search (grantedPath). */
  path?: string;
}

export function deny(g: Grants, feature: string, message: string, hint: string): void {
  g.refusals.push({ feature, message, hint });
}

export function approximate(g: Grants, feature: string, item?: string): void {
  g.approximations.add(feature);
  if (item !== undefined) g.listed.set(feature, [...(g.listed.get(feature) ?? []), item]);
}

/**
 * One mount as grants, or the refusal of what Landlock cannot express. `readOnly`: the targets a
 * remount-ro makes read-only; `stand-in`: the per-session directory for a tmpfs at /tmp or HOME.
 */
export function grantMount(g: Grants, m: Mount, readOnly: ReadonlySet<string>, standIn: string | undefined): void {
  const access = (asked: 'ro' | 'rw') => (readOnly.has(m.target) ? 'ro' : asked);
  switch (m.kind) {
    case 'bind':
      if (m.source !== m.target) {
        deny(
          g,
          'mounts.bind',
          `${m.source} is bound at ${m.target}: without a mount namespace a path cannot appear elsewhere`,
          `bind it at its own path, ${OTHER_BACKEND}`,
        );
      } else if (m.target === '/') {
        deny(g, 'mode', 'mode: danger binds the host root writable', 'use --backend bwrap for --danger runs');
      } else {
        g[access(m.access)].push(m.source);
        g.pinned.push(m.source);
      }
      break;
    case 'tmpfs':
      // No /dev/shm is granted at all (mounts.dev-nodes): the host's is shared by every process.
      if (m.target === '/dev/shm') break;
      if (standIn === undefined) {
        deny(g, 'mounts.tmpfs', `a tmpfs at ${m.target}: only /tmp and HOME have per-session stand-ins`, OTHER_BACKEND);
      } else {
        g.private.set(m.target, standIn);
        g[access('rw')].push(standIn);
        g.approximations.add(m.target === '/tmp' ? 'mounts.tmp' : 'mounts.home');
      }
      break;
    case 'proc':
      if (m.target !== '/proc') deny(g, 'mounts.proc', `procfs at ${m.target}`, OTHER_BACKEND);
      g.ro.push('/proc');
      g.approximations.add('mounts.proc-host');
      break;
    case 'kernel':
      break; // inside the read-only grant of /proc (mounts.kernel)
    case 'dev':
      if (m.target !== '/dev') deny(g, 'mounts.dev', `/dev at ${m.target}`, OTHER_BACKEND);
      g.dev.push(...DEV_NODES.map((n) => `/dev/${n}`));
      g.approximations.add('mounts.dev-nodes');
      break;
    case 'mask':
    case 'file':
      break; // checked against the grants (grantAroundMasks)
    case 'session-dir':
      deny(g, 'mounts.session-dir', `the session directory at ${m.target}`, OTHER_BACKEND);
      break;
    case 'symlink':
      // The host's own link is what the command resolves (derivePolicy copies the host's merged-/usr
      // links); Landlock checks the path it resolves to, which a bind grants.
      break;
    case 'remount-ro':
      break; // folded into the grant of the mount it names (readOnly); `/` is never granted anyway
  }
}
