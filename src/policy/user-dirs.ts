// HOME and the XDG base directories, validated before anything is read from or written below them.
// Pure: the passwd entry's home arrives as a function (host/invoking-user.ts passes os.userInfo).
// Every reader of HOME / XDG_* goes through here, so `HOME=/proc` cannot send a profile search, a
// tree scan or the trust store into /proc (it once spun forever walking it).
import { isWithin } from '../path-within.js';
import { posix } from 'node:path';
import { SbxError } from '../errors.js';

/** Kernel pseudo-filesystems: their files are endless, blocking or alias other descriptors. */
const PSEUDO_ROOTS = ['/proc', '/sys', '/dev'];

export interface UserDirs {
  home: string;
  /** $XDG_CONFIG_HOME, else ~/.config */
  configHome: string;
  /** $XDG_STATE_HOME, else ~/.local/state */
  stateHome: string;
  /** $XDG_CACHE_HOME, else ~/.cache */
  cacheHome: string;
}

export function isPseudoFsPath(path: string): boolean {
  return PSEUDO_ROOTS.some((root) => isWithin(path, root));
}

/** Absolute, no `.`/`..` segment (it could climb out of what was checked), no NUL, not a pseudo filesystem. */
export function isUsableDir(path: string | undefined): path is string {
  if (!path || !posix.isAbsolute(path) || path.includes('\0')) return false;
  if (path.split('/').some((seg) => seg === '..' || seg === '.')) return false;
  return !isPseudoFsPath(posix.normalize(path));
}

/** XDG base directory spec: an invalid (e.g. relative) value is ignored, as if unset. */
function xdgDir(value: string | undefined, home: string, fallback: string): string {
  return isUsableDir(value) ? posix.normalize(value) : posix.join(home, fallback);
}

/** The XDG dirs for an already validated `home`. */
export function xdgDirs(env: Record<string, string | undefined>, home: string): Omit<UserDirs, 'home'> {
  return {
    configHome: xdgDir(env.XDG_CONFIG_HOME, home, '.config'),
    stateHome: xdgDir(env.XDG_STATE_HOME, home, '.local/state'),
    cacheHome: xdgDir(env.XDG_CACHE_HOME, home, '.cache'),
  };
}

/** $XDG_RUNTIME_DIR when valid (it has no fallback in the spec; the caller picks one). */
export function xdgRuntimeDir(env: Record<string, string | undefined>): string | undefined {
  const value = env.XDG_RUNTIME_DIR;
  return isUsableDir(value) ? posix.normalize(value) : undefined;
}

/** $HOME when valid, else the passwd entry's home, else HOME_INVALID. */
export function resolveHome(env: Record<string, string | undefined>, passwdHome: () => string | undefined): string {
  if (isUsableDir(env.HOME)) return posix.normalize(env.HOME);
  const fallback = passwdHome();
  if (isUsableDir(fallback)) return posix.normalize(fallback);
  throw new SbxError(
    'HOME_INVALID',
    `HOME=${JSON.stringify(env.HOME ?? '')} is not usable and the passwd entry has no usable home`,
    {
      hint: 'set HOME to an absolute directory outside /proc, /sys and /dev, with no ".." segment',
    },
  );
}

export function resolveUserDirs(
  env: Record<string, string | undefined>,
  passwdHome: () => string | undefined,
): UserDirs {
  const home = resolveHome(env, passwdHome);
  return { home, ...xdgDirs(env, home) };
}
