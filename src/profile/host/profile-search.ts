// Where profiles are found, cached and trusted for one invocation (ProfileSearch, load.ts): the
// user's config dir, sbx's built-ins, the cache, the trust store, the hashes trusted for this
// invocation, and the trees whose profile files are pinned like a project's.
import { realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SbxError } from '../../errors.js';
import { userDirs } from '../../host/invoking-user.js';
import { packageRoot } from '../../package-root.js';
import { isWithin } from '../../path-within.js';
import type { UserDirs } from '../../policy/user-dirs.js';
import { detectProjectRoot } from '../../workspace/host/project-root-probe.js';
import type { ProfileSearch } from './load.js';
import { isCi } from './trust.js';
import { trustStoreFile } from './trust-store.js';

/** Chain hashes named for one invocation: each a full sha256 (a prefix could be ground to collide). */
function trustedHashes(given: readonly string[], env: Record<string, string | undefined>): string[] {
  const fromEnv = (env.SBX_TRUST_PROFILE ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  const all = [...given, ...fromEnv];
  const bad = all.find((h) => !/^[0-9a-f]{64}$/.test(h));
  if (bad !== undefined) {
    const message = `--trust-profile / SBX_TRUST_PROFILE: "${bad}" is not a sha256 (64 lowercase hex digits)`;
    throw new SbxError('USAGE', message, {
      hint: 'use the chain hash `sbx trust NAME` or `sbx profiles show NAME` prints',
    });
  }
  return all;
}

function realOrUndefined(path: string | undefined): string | undefined {
  if (path === undefined || path === '') return undefined;
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The trees whose profile files are pinned like a project's (TrustContext.exposed): the cwd and its
 * project's top level (where an earlier plain `sbx run` from here wrote), the workspace asked for,
 * and in GitHub Actions the checkout. A tree that holds HOME is left out: no run may write it whole
 * (host-state/host-state.ts), and a file below it in a tree some run did write is the workspace's case.
 */
function exposedTrees(
  cwd: string,
  env: Record<string, string | undefined>,
  home: string,
  uid: number,
  workspace: string | undefined,
): string[] {
  const real = realOrUndefined(cwd);
  const root = real ? detectProjectRoot(real, home, uid)?.path : undefined;
  const checkout = env.GITHUB_ACTIONS === 'true' ? realOrUndefined(env.GITHUB_WORKSPACE) : undefined;
  const asked = workspace === undefined ? undefined : realOrUndefined(resolve(cwd, workspace));
  const realHome = realOrUndefined(home) ?? home;
  const trees = [real, root, asked].filter((t): t is string => t !== undefined && !isWithin(realHome, t));
  // The checkout is the pull request's even when HOME lies inside it (HOME=$GITHUB_WORKSPACE).
  return [...new Set([...trees, ...(checkout ? [checkout] : [])])];
}

/** What a search may be told besides where it starts. */
export interface SearchOptions {
  /** Chain hashes trusted for this invocation (CI: --trust-profile). */
  trustProfiles?: readonly string[];
  dirs?: UserDirs;
  /** The workspace asked for, whose profile files need a pin. */
  workspace?: string;
}

/** Where profiles are found, cached and trusted, for a search from `cwd` by the user `uid`. */
export function profileSearch(
  cwd: string,
  env: Record<string, string | undefined>,
  uid: number,
  { trustProfiles = [], dirs = userDirs(env), workspace }: SearchOptions = {},
): ProfileSearch {
  return {
    cwd,
    configHome: dirs.configHome,
    builtinDir: join(packageRoot(), 'profiles'),
    ...(env.SBX_NO_CACHE ? {} : { cacheDir: join(dirs.cacheHome, 'sbx') }),
    trust: {
      storeFile: trustStoreFile(dirs.stateHome),
      hashes: trustedHashes(trustProfiles, env),
      ci: isCi(env),
      exposed: exposedTrees(cwd, env, dirs.home, uid, workspace),
    },
  };
}
