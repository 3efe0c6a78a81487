// The probe plan: everything the policy stage must look at on the host before derivePolicy can run,
// computed once from the profile, the request and the variables. The shell (pipeline/policy-stage.ts)
// probes, pins and scans what it lists; derivePolicy consumes the same plan (its bind specs, the roots
// it keeps out) instead of computing them again, and reads the host only through `fact()`, which
// refuses a path the plan never listed.
import { posix } from 'node:path';
import { SbxError } from '../../errors.js';
import type { Profile } from '../../profile/schema.js';
import { expandPath, type Variables } from '../../profile/variables.js';
import type { Host, PathFact } from '../host.js';
import { sensitivePaths } from '../../sensitive/sensitive.js';
import { xdgDirs } from '../user-dirs.js';
import { type BindSpecs, bindSpecsOf } from './bind-specs.js';
import { JAVA_TRUST_STORE_PATHS, SYSTEM_BUNDLE_PATHS } from '../../network/credential-trust.js';
import { KERNEL_PATHS } from './kernel.js';
import type { RunRequest } from './request.js';

export interface ProbePlan {
  /** The variables every path here was expanded with; `workspace` is the probed realpath of the requested one. */
  readonly vars: Variables;
  /** Every host path derivePolicy may look up, in the order the shell probes (and pins) them. */
  readonly paths: readonly string[];
  /** The binds of the profile and the request, expanded. */
  readonly binds: BindSpecs;
  /**
   * The sensitive roots this run keeps out (masked wherever a bind shows them, refused as a bind):
   * sbx's own secret store, state and cache always; the credential stores unless --allow-sensitive-roots.
   */
  readonly keepOut: readonly string[];
  /** Each root of `keepOut`: why it is kept out (`sbx why` says so), and the profile key that listed it, if one did. */
  readonly keptOutBy: Readonly<Record<string, KeptOut>>;
  /** sbx's config dir and the project's `.sbx` at the workspace and every writable root: read-only wherever a bind shows them. */
  readonly ownPolicy: readonly string[];
  /** sbx's own directories for this user: the shell creates those a mounted tree would hold. */
  readonly ownDirs: Record<'config' | 'state' | 'cache', string>;
  /** The mounted trees walked for secret-looking files: the workspace and every extra bind; none in danger mode. */
  readonly scanRoots: readonly string[];
  /** The system binds walked for root-only entries when the child keeps host uid 0. */
  readonly rootOnlyRoots: readonly string[];
  /** The host paths a writable bind may bring in, as requested (workspace, writable_roots, --bind): their chains meet host state. */
  readonly writable: readonly string[];
}

/** Why a root is kept out: sbx's own directories, its built-in credential stores, or a `sensitive.roots` entry (`key`). */
export interface KeptOut {
  what: string;
  key?: string;
}

/**
 * sbx's own directories for this user. A sandbox that could write them would choose a later run's
 * policy (profiles), what runs unasked (approvals) or what the audit trail says (ledger).
 */
function sbxOwnDirs(vars: Variables, env: Record<string, string>): ProbePlan['ownDirs'] {
  const dirs = xdgDirs(env, vars.home);
  return {
    config: posix.join(dirs.configHome, 'sbx'),
    state: posix.join(dirs.stateHome, 'sbx'),
    cache: posix.join(dirs.cacheHome, 'sbx'),
  };
}

/**
 * The roots kept out. sbx's own secret store, state (approvals decide what runs unasked, the ledger is
 * the audit trail) and cache (compiled rules and profiles a later run trusts) are hidden from every
 * sandbox, whatever the flags; the rest of the config dir (profiles, tools) is bound read-only over
 * itself instead (`ownPolicy`): the agent profile reads tools from it. The built-in credential stores,
 * the agent sockets and the profile's additions are what --allow-sensitive-roots lifts.
 */
function keepOutOf(
  profile: Profile,
  request: RunRequest,
  vars: Variables,
  env: Record<string, string>,
  own: ProbePlan['ownDirs'],
): Record<string, KeptOut> {
  const kept: Record<string, KeptOut> = {};
  for (const root of [posix.join(own.config, 'secrets.yaml'), own.state, own.cache])
    kept[root] = { what: "sbx's own secret store, state or cache, hidden from every sandbox" };
  if (request.allowSensitiveRoots) return kept;
  const extra = (profile.sensitive?.roots ?? []).map((p, i) =>
    posix.resolve(vars.cwd, expandPath(p, vars, `sensitive.roots[${i}]`)),
  );
  for (const root of sensitivePaths(vars.home, env, extra))
    kept[root] ??= { what: "a credential store or agent socket on sbx's built-in list (src/sensitive/sensitive.ts)" };
  // A profile's entry names its line, even where it repeats a built-in root.
  extra.forEach((root, i) => {
    const key = `sensitive.roots[${i}]`;
    kept[root] = { what: `a sensitive root the profile lists (${key})`, key };
  });
  return kept;
}

/**
 * System binds to scan for root-only entries when the child keeps host uid 0. The binary trees
 * (/usr, /bin, /lib...) hold no secrets by convention and are too large to walk on every run.
 */
function rootOnlyRootsOf(binds: BindSpecs): string[] {
  const binaryTrees = /^\/(usr|bin|sbin|lib|lib32|lib64|libx32)(\/|$)/;
  return binds.system.map((s) => s.path).filter((p) => !binaryTrees.test(p));
}

export function probePlanOf(
  profile: Profile,
  request: RunRequest,
  vars: Variables,
  env: Record<string, string>,
): ProbePlan {
  const binds = bindSpecsOf(profile, request, vars);
  const specs = [...binds.system, ...binds.readOnly, ...binds.writableRoots, ...binds.requestRo, ...binds.requestRw];
  const sockets =
    typeof profile.network === 'object'
      ? (profile.network.unix_sockets ?? []).map((p) => posix.resolve(vars.cwd, p))
      : [];
  const ownDirs = sbxOwnDirs(vars, env);
  const keptOutBy = keepOutOf(profile, request, vars, env, ownDirs);
  const keepOut = Object.keys(keptOutBy);
  const writable = [vars.workspace, ...[...binds.writableRoots, ...binds.requestRw].map((s) => s.path)];
  const ownPolicy = [ownDirs.config, ...writable.map((root) => posix.join(root, '.sbx'))];
  const extraBinds = [...binds.readOnly, ...binds.writableRoots, ...binds.requestRo, ...binds.requestRw];
  // Danger mode mounts the whole host and is not scanned (its sensitive roots are still masked).
  const danger = (profile.mode ?? 'workspace-write') === 'danger';
  return {
    vars,
    paths: [
      ...new Set([
        vars.workspace,
        ...specs.map((s) => s.path),
        // Where a bind lands, for checkMountPoints (overlay.ts): inside the writable workspace (at its
        // own path) an existing directory is a mount point that needs nothing created on the host.
        ...specs.flatMap((s) => (s.mountAt && posix.isAbsolute(s.mountAt) ? [posix.normalize(s.mountAt)] : [])),
        ...sockets,
        ...keepOut,
        ...ownPolicy,
        vars.home,
        ...KERNEL_PATHS,
        // The trust stores a run with credentials covers with its own (derive/credentials.ts).
        ...(profile.credentials || request.credentials ? [...SYSTEM_BUNDLE_PATHS, ...JAVA_TRUST_STORE_PATHS] : []),
      ]),
    ],
    binds,
    keepOut,
    keptOutBy,
    ownPolicy,
    ownDirs,
    scanRoots: danger ? [] : [...new Set([vars.workspace, ...extraBinds.map((s) => s.path)])],
    rootOnlyRoots: rootOnlyRootsOf(binds),
    writable,
  };
}

/**
 * What the policy stage found at a path of the plan. A path it never probed is a bug, not an
 * absence: for a sensitive root, "absent" would mean "nothing to keep out", so guessing would fail open.
 */
export function fact(host: Pick<Host, 'paths'>, path: string): PathFact {
  const found = host.paths[path];
  if (found) return found;
  throw new SbxError('INTERNAL', `internal error: the policy needs ${path}, which the host probe never looked at`, {
    hint: 'this is a bug in sbx, and nothing ran: please report it with the command line and profile',
  });
}
