// HOME and the XDG dirs of the invoking user: policy/user-dirs.ts's rules with the passwd entry as
// the fallback for an unusable HOME.
import { userInfo } from 'node:os';
import { resolveUserDirs, type UserDirs } from '../policy/user-dirs.js';

/** The passwd entry's home; undefined when there is none (a uid without an entry, in a container). */
export function passwdHome(): string | undefined {
  try {
    return userInfo().homedir;
  } catch {
    return undefined;
  }
}

export function userDirs(env: Record<string, string | undefined>): UserDirs {
  return resolveUserDirs(env, passwdHome);
}
