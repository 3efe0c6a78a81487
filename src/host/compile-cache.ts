// Where bin/sbx.js lets Node keep its compile cache (Node 22.1+: the V8 code of the modules it loads,
// about 4 ms of a launch). Node's default, os.tmpdir()/node-compile-cache, is a directory any local
// user can create first and fill with code that sbx would then run. Here: sbx's own cache dir, which
// every sandbox has hidden (policy/derive/probe-plan.ts keepOut), and only while nobody else can write to it or
// to a directory above it (the rule of host/guarded-read.ts). Bundled alone as
// dist/compile-cache.js: it runs before the CLI is loaded.
import { lstatSync, mkdirSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { userDirs } from './invoking-user.js';

/** Owned by `uid` or root, and writable by no one else (a sticky directory such as /tmp excepted). */
function ownedSafely(path: string, uid: number): boolean {
  const st = lstatSync(path);
  if (st.uid !== uid && st.uid !== 0) return false;
  return (st.mode & 0o022) === 0 || (st.isDirectory() && (st.mode & 0o1000) !== 0);
}

/** `dir` created private when missing; true when it, and every directory above it, is safe to use. */
function isPrivateDir(dir: string, uid: number): boolean {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const real = realpathSync(dir);
  const st = lstatSync(real);
  if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) return false;
  for (let p = dirname(real); ; p = dirname(p)) {
    if (!ownedSafely(p, uid)) return false;
    if (dirname(p) === p) return true;
  }
}

/** `$XDG_CACHE_HOME/sbx/node-compile-cache` when it is safe to use, else undefined (no cache). */
export function compileCacheDir(env: Record<string, string | undefined>): string | undefined {
  const uid = process.getuid?.();
  if (env.SBX_NO_CACHE || uid === undefined) return undefined;
  try {
    const dir = join(userDirs(env).cacheHome, 'sbx', 'node-compile-cache');
    return isPrivateDir(dir, uid) ? dir : undefined;
  } catch {
    // An unusable HOME, a read-only disk: run without the cache.
    return undefined;
  }
}
