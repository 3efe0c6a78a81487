// Where bin/sbx.js lets Node keep its compile cache (Node 22.1+: the V8 code of the modules it loads,
// about 4 ms of a launch). Node's default, os.tmpdir()/node-compile-cache, is a directory any local
// user can create first and fill with code that sbx would then run. Here: sbx's own cache dir, which
// every sandbox has hidden (policy/derive/probe-plan.ts keepOut), and only while it is the user's alone
// and nobody else can write to a directory above it (host/cache-file.ts, the rule of sbx's caches).
// Bundled alone as dist/compile-cache.js: it runs before the CLI is loaded.
import { join } from 'node:path';
import { makePrivateDir } from './cache-file.js';
import { userDirs } from './invoking-user.js';

/** `$XDG_CACHE_HOME/sbx/node-compile-cache` when it is safe to use, else undefined (no cache). */
export function compileCacheDir(env: Record<string, string | undefined>): string | undefined {
  const uid = process.getuid?.();
  if (env.SBX_NO_CACHE || uid === undefined) return undefined;
  try {
    const dir = join(userDirs(env).cacheHome, 'sbx', 'node-compile-cache');
    return makePrivateDir(dir, uid) ? dir : undefined;
  } catch {
    // An unusable HOME, a read-only disk: run without the cache.
    return undefined;
  }
}
