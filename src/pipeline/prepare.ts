// Stage 1, prepare: the caller's options as the rest of the run reads them: the invoking environment
// (defined values only), the working directory, who runs sbx, and where profiles are found.
import { join } from 'node:path';
import { SbxError } from '../errors.js';
import type { ProfileSearch } from '../profile/load.js';
import { isCi } from '../profile/trust.js';
import { trustStoreFile } from '../profile/trust-store.js';
import { userDirs } from '../runtime/user-dirs.js';
import { packageRoot } from '../package-root.js';
import type { CompileOptions } from './options.js';

export interface Prepared {
  env: Record<string, string>;
  cwd: string;
  uid: number;
  gid: number;
  home: string;
  configHome: string;
  search: ProfileSearch;
}

function definedOnly(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

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

/** Where profiles are found, cached and trusted. `trustProfiles`: chain hashes trusted for this invocation (CI). */
export function profileSearch(
  cwd: string,
  env: Record<string, string | undefined>,
  trustProfiles: readonly string[] = [],
): ProfileSearch {
  const dirs = userDirs(env);
  return {
    cwd,
    configHome: dirs.configHome,
    builtinDir: join(packageRoot(), 'profiles'),
    ...(env.SBX_NO_CACHE ? {} : { cacheDir: join(dirs.cacheHome, 'sbx') }),
    trust: { storeFile: trustStoreFile(dirs.stateHome), hashes: trustedHashes(trustProfiles, env), ci: isCi(env) },
  };
}

export function prepare(options: CompileOptions): Prepared {
  const env = definedOnly(options.hostEnv ?? process.env);
  const cwd = options.cwd ?? process.cwd();
  const dirs = userDirs(env);
  return {
    env,
    cwd,
    uid: process.getuid?.() ?? 0,
    gid: process.getgid?.() ?? 0,
    home: dirs.home,
    configHome: dirs.configHome,
    search: profileSearch(cwd, env, options.trustProfiles),
  };
}
