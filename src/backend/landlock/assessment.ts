// What a Policy needs of the landlock backend, worked out once for a compile and for the report and
// `sbx explain`: the grants (grants.ts, nested-grants.ts), the refusals of what it cannot do, and the
// approximations it gets (LANDLOCK_GAPS in gaps.ts). Depends on the policy only: a planned session
// stands in for explain. Pure.
import { posix } from 'node:path';
import { isWithin } from '../../path-within.js';
import { DEFAULT_HOSTNAME, type Mount, type Policy } from '../../policy/types.js';
import type { Session } from '../launch.js';
import { LANDLOCK_GAPS } from './gaps.js';
import { approximate, deny, grantMount, type Grants } from './grants.js';
import { dropNestedReadWrite, grantAroundMasks, guardReadOnlyInsideReadWrite, refuseExposed } from './nested-grants.js';
import { assessFiltered, landlockGovernsTcp } from './network-judge.js';
import { policyDeniesIoUring } from './seccomp-rules.js';

/** The session explain and the report assess with: a policy's grants do not depend on which session runs it. */
const DESCRIBED_SESSION: Session = { id: 'session', dir: '<session>', emptyFile: '<session>/empty' };

function privateDir(m: Mount, policy: Policy, session: Session): string | undefined {
  if (m.target === '/tmp') return posix.join(session.dir, 'tmp');
  if (m.target === policy.env.vars.HOME) return posix.join(session.dir, 'home');
  return undefined;
}

function mountGrants(policy: Policy, session: Session): Grants {
  const g: Grants = {
    ...{ ro: [], rw: [], dev: [], except: [], pinned: [], guards: [], exposed: [] },
    ...{ private: new Map(), refusals: [], approximations: new Set<string>(), listed: new Map() },
  };
  const readOnly = new Set(policy.mounts.flatMap((m) => (m.kind === 'remount-ro' ? [m.target] : [])));
  // The bwrap bridge's files and sockets, and transparent capture's judge and resolver files, are for a
  // network namespace this backend does not build: here the helper's own network judge connects the
  // command to the proxy on the host's loopback. The CA's mounts belong to credentials, refused by name (assess).
  for (const m of policy.mounts) {
    if (m.role !== 'bridge' && m.role !== 'capture' && m.role !== 'trust')
      grantMount(g, m, readOnly, privateDir(m, policy, session));
  }
  dropNestedReadWrite(g);
  guardReadOnlyInsideReadWrite(g, policy.mounts);
  grantAroundMasks(g, policy.mounts);
  refuseExposed(g, policy);
  return g;
}

/**
 * PATH entries outside every grant: the shell's lookup stops there with EACCES instead of looking
 * further, where bwrap shows nothing and the lookup falls through. They are dropped from the
 * command's PATH and listed. A merged-/usr link the Policy copies (/bin → usr/bin) is followed first.
 */
function grantedPath(g: Grants, policy: Policy): string | undefined {
  const path = policy.env.vars.PATH;
  if (path === undefined) return undefined;
  const links = policy.mounts.flatMap((m) => (m.kind === 'symlink' ? [m] : []));
  const trees = [...g.ro, ...g.rw, ...g.private.values()];
  const reachable = (entry: string) => {
    const link = links.find((l) => isWithin(entry, l.target));
    const real = link
      ? posix.join(posix.resolve(posix.dirname(link.target), link.linkTo), posix.relative(link.target, entry))
      : entry;
    return trees.some((t) => isWithin(real, t)) && !g.except.some((e) => isWithin(real, e));
  };
  const kept = path.split(':').filter((entry) => {
    if (!entry.startsWith('/') || reachable(posix.normalize(entry))) return true;
    approximate(g, 'env.path', entry);
    return false;
  });
  return kept.join(':');
}

/** What this policy needs that landlock cannot do, and which approximations it gets. Depends on the policy only. */
export function assess(policy: Policy, session: Session): Grants {
  const g = mountGrants(policy, session);
  if (policy.mode === 'danger' && !g.refusals.some((r) => r.feature === 'mode')) {
    deny(g, 'mode', 'mode: danger', 'use --backend bwrap for --danger runs');
  }
  if (policy.network.kind === 'filtered') assessFiltered(g, policy.network);
  if (policy.credentials)
    deny(
      g,
      'credentials',
      `credentials (${policy.credentials.rules.map((r) => r.name).join(', ')})`,
      'use --backend bwrap',
    );
  if (policy.network.kind === 'none') g.approximations.add('network.none');
  if (landlockGovernsTcp(policy)) g.approximations.add('network.tcp-fastopen');
  g.approximations.add('landlock.unix-sockets');
  if (!policyDeniesIoUring(policy)) g.approximations.add('seccomp.io_uring');
  if (policy.hostname !== DEFAULT_HOSTNAME) approximate(g, 'hostname', policy.hostname);
  if (policy.identity.hostRoot && policy.identity.uid !== 0) g.approximations.add('identity.root');
  if (policy.namespaces.pid) g.approximations.add('namespaces.pid');
  if (policy.namespaces.ipc) g.approximations.add('namespaces.ipc');
  if (policy.namespaces.uts) g.approximations.add('namespaces.uts');
  for (const [name, value] of Object.entries(policy.env.vars)) {
    if (name === '' || /[=\0]/.test(name) || value.includes('\0')) {
      deny(
        g,
        'env.vars',
        `environment variable ${JSON.stringify(name)}: a name with '=' or NUL, or a value with NUL`,
        'fix env.set in the profile',
      );
    }
  }
  const path = grantedPath(g, policy);
  if (path !== undefined) g.path = path;
  return g;
}

/** The approximations a run of this policy gets (the report lists them). They do not depend on the session. */
export function landlockApproximations(policy: Policy): string[] {
  const g = assess(policy, DESCRIBED_SESSION);
  return LANDLOCK_GAPS.filter((gap) => gap.effect === 'weaker' && g.approximations.has(gap.key)).map(
    (gap) => `${gap.key}: ${gap.detail}${listedOf(g, gap.key)}`,
  );
}

/** The masked paths a run of this policy leaves readable (only with --expose-workspace-secrets: else it is refused). */
export function landlockExposed(policy: Policy): string[] {
  return policy.exposeWorkspaceSecrets ? assess(policy, DESCRIBED_SESSION).exposed.map((e) => e.path) : [];
}

function listedOf(g: Grants, feature: string): string {
  const items = g.listed.get(feature);
  return items ? `: ${items.join(', ')}` : '';
}

/** For `sbx explain --backend landlock`: what would be refused, and what it enforces more weakly (approximates). */
export function describeLandlockGaps(policy: Policy): string[] {
  const refused = assess(policy, DESCRIBED_SESSION).refusals.map((r) => `refused ${r.feature}: ${r.message}`);
  return [...refused, ...landlockApproximations(policy).map((a) => `weaker ${a}`)];
}
