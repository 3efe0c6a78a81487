// Paths inside a grant (grants.ts). Landlock only adds access going down a tree, so what the Policy
// narrows below a granted directory cannot be expressed there: a read-write grant inside another is
// dropped, a read-only bind of git state or .sbx and a git view are guarded instead (snapshotted and put
// back by native/sbx-guard.c, reported by guard.ts), a mask under a read-only grant becomes an `except`
// record, and anything else is refused, or listed when the caller opted in to exposed secrets. Pure.
import { posix } from 'node:path';
import { isWithin } from '../../path-within.js';
import type { Mount, MountRole, Policy } from '../../policy/types.js';
import { approximate, deny, type Grants, OTHER_BACKEND } from './grants.js';

/** Generated files over host state that can be guarded instead: the host file is put back after the run. */
const GUARDED_VIEWS: ReadonlySet<MountRole> = new Set(['guard', 'git-config']);

/**
 * A read-write grant inside another adds nothing (Landlock grants add up). derivePolicy binds the
 * directories above protected git state over themselves so that they cannot be renamed (pinParents):
 * here they are left out, and the guard of what lies below them watches their identity instead.
 */
export function dropNestedReadWrite(g: Grants): void {
  const nested = new Set(g.rw.filter((p) => g.rw.some((tree) => tree !== p && isWithin(p, tree))));
  g.rw = g.rw.filter((p) => !nested.has(p));
  g.pinned = g.pinned.filter((p) => !nested.has(p) || g.ro.includes(p));
}

/**
 * Landlock only adds access going down a tree: a read-only grant inside a read-write one means
 * nothing. Git hooks and sbx's policy files are guarded instead (the command's changes are undone
 * after it, and reported); any other read-only path there is refused.
 */
export function guardReadOnlyInsideReadWrite(g: Grants, mounts: readonly Mount[]): void {
  const guardable = new Set(mounts.flatMap((m) => (m.kind === 'bind' && m.role === 'guard' ? [m.source] : [])));
  const inside = new Set(g.ro.filter((ro) => g.rw.some((tree) => tree !== ro && isWithin(ro, tree))));
  for (const ro of inside) {
    const rw = g.rw.find((tree) => tree !== ro && isWithin(ro, tree));
    if (guardable.has(ro)) {
      g.guards.push(ro);
      approximate(g, 'mounts.guarded', ro);
    } else {
      deny(
        g,
        'mounts.read-only-inside',
        `${ro} must stay read-only inside the read-write tree ${rw}: ` +
          'Landlock cannot narrow access below a granted directory',
        `use a workspace without it, ${OTHER_BACKEND}`,
      );
    }
  }
  g.ro = g.ro.filter((p) => !inside.has(p));
  g.pinned = g.pinned.filter((p) => !inside.has(p));
}

/**
 * A mask under a read-write grant cannot be expressed: the secret is exposed (refuseExposed). Under
 * a read-only grant the helper grants its siblings instead (native/sbx-landlock.c grant()). A git
 * view cannot be placed either: the host file is what the command sees, guarded when it is writable;
 * a config whose view withholds credentials exposes them. Other generated files are refused.
 */
export function grantAroundMasks(g: Grants, mounts: readonly Mount[]): void {
  for (const m of mounts) {
    // Transparent capture's resolver files are for a network namespace this backend does not build
    // (assessment.ts mountGrants): here the command reads the host's, and the judge captures its DNS.
    if ((m.kind !== 'mask' && m.kind !== 'file') || m.role === 'capture') continue;
    const rw = g.rw.find((tree) => isWithin(m.target, tree));
    const granted = rw !== undefined || g.ro.some((tree) => isWithin(m.target, tree));
    if (m.kind === 'file' && GUARDED_VIEWS.has(m.role)) {
      if (rw) {
        g.guards.push(m.target);
        approximate(g, 'mounts.guarded', m.target);
      }
      // A repository without a hooks directory: the scan protects only what exists, and the helper
      // guards an absent path too (anything created there is removed after the run). `commondir`
      // is absent in a main gitdir; created, it points git's config and hooks at any directory.
      for (const name of ['hooks', 'commondir']) {
        const state = posix.join(posix.dirname(m.target), name);
        if (rw && m.role === 'git-config' && !inside(g, state)) {
          g.guards.push(state);
          approximate(g, 'mounts.guarded', state);
        }
      }
      // The exclude view only adds the masked files' stand-ins, which this backend never places.
      if (granted && m.withheld) g.exposed.push({ path: m.target, what: `credentials: ${m.withheld.join(', ')}` });
    } else if (m.kind === 'file' && granted && m.mode !== 0) {
      deny(
        g,
        'mounts.file',
        `${m.target} (${m.reason}) would be replaced by a generated file: Landlock cannot put one over a host path`,
        OTHER_BACKEND,
      );
    } else if (rw) {
      g.exposed.push({ path: m.target, what: m.reason });
    } else if (granted) {
      // Masks outside every grant need nothing: what is not granted is denied.
      g.except.push(m.target);
      if (!g.ro.includes(m.target)) g.approximations.add('mounts.masked-parents');
    }
  }
}

/** Whether a guarded path already covers `path`. */
function inside(g: Grants, path: string): boolean {
  return g.guards.some((guard) => isWithin(path, guard));
}

/**
 * A secret inside a grant is readable (and, in a read-write tree, writable) by the command: Landlock
 * cannot deny one path beneath a granted directory, and without a mount namespace nothing can be put
 * over it (docs/SECURITY.md "Git state and workspace secrets under Landlock"). Refused, naming every one, unless the
 * caller opted in (`--expose-workspace-secrets`, a run option a profile cannot set); then each is listed.
 */
export function refuseExposed(g: Grants, policy: Policy): void {
  if (g.exposed.length === 0) return;
  const items = g.exposed.map((e) => `${e.path} (${e.what})`);
  if (policy.exposeWorkspaceSecrets) {
    for (const item of items) approximate(g, 'mounts.mask.exposed', item);
    return;
  }
  const count = items.length === 1 ? `${items[0]} would be` : `${items.length} secrets would be`;
  g.refusals.push({
    feature: 'mounts.mask',
    message:
      `${count} readable by the command: Landlock cannot hide a path beneath a granted directory` +
      (items.length === 1 ? '' : ` (${items.join(', ')})`),
    hint:
      'move them out of the workspace; or run with them readable, listed in the report: ' +
      `--expose-workspace-secrets (library: exposeWorkspaceSecrets: true); ${OTHER_BACKEND}`,
    details: items.map((item) => `exposed: ${item}`),
  });
}
