// Probes the host once per run: paths the profile names, the invoking user, bwrap and its features.
// Everything here is cheap synchronous syscalls; the one spawn (`bwrap --version`) is cached by the
// binary's identity. (The pure core's view of the host is policy/host.ts.)
import {
  accessSync,
  constants,
  type Dirent,
  existsSync,
  lstatSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  statSync,
  type Stats,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { SbxError } from '../errors.js';
import { isWithin } from '../path-within.js';
import type { BwrapHost } from '../backend/bwrap/compile.js';
import type { PathFact } from '../policy/host.js';
import { type CacheFile, readCacheFile, writeCacheFile } from './cache-file.js';

export function probePath(path: string): PathFact {
  try {
    const real = realpathSync(path);
    const st = statSync(real);
    const l = lstatSync(path);
    return {
      exists: true,
      real,
      type: st.isDirectory() ? 'dir' : st.isFile() ? 'file' : st.isSocket() ? 'socket' : 'other',
      ...(l.isSymbolicLink() ? { link: readlinkSync(path) } : {}),
      uid: st.uid,
    };
  } catch {
    return { exists: false };
  }
}

export function probePaths(paths: readonly string[]): Record<string, PathFact> {
  return Object.fromEntries(paths.map((p) => [p, probePath(p)]));
}

/**
 * Entries the world may not read under `roots` (pruned at the first such directory). `listing` is
 * told of each directory before the walk reads it: what a cached result depends on (host/warm-cache.ts).
 */
export function scanRootOnly(
  roots: readonly string[],
  listing: (dir: string) => void = () => {},
): { path: string; dir: boolean }[] {
  const out: { path: string; dir: boolean }[] = [];
  const walk = (dir: string) => {
    let entries: Dirent[];
    listing(dir);
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      // Symlinks are resolved inside the sandbox against its own mounts; their targets are checked
      // where they live. Skipping them spares most lstat calls (/etc/ssl/certs is mostly links).
      if (entry.isSymbolicLink()) continue;
      const path = `${dir}/${entry.name}`;
      let mode: number;
      try {
        mode = lstatSync(path).mode;
      } catch {
        continue;
      }
      const isDir = entry.isDirectory();
      if ((mode & 0o004) === 0) out.push({ path, dir: isDir });
      else if (isDir) walk(path);
    }
  };
  for (const root of roots) {
    const f = probePath(root);
    if (f.exists && f.type === 'dir') walk(f.real === '/' ? '' : f.real);
  }
  return out;
}

/**
 * The first executable `name` on PATH. One in a directory that lies in an `exposed` tree (the cwd's
 * project, --workspace, the Actions checkout: what a sandboxed run or a pull request may have
 * written) is refused before anything runs it: a run that planted `bwrap` in an activated
 * `.venv/bin` would otherwise have it run on the host, with the user's rights, by the next sbx
 * (docs/SECURITY.md, "sbx's own launcher"). The directory is judged by its real path, so a link there counts as being there.
 */
function findOnPath(name: string, pathVar: string | undefined, exposed: readonly string[] = []): string | undefined {
  for (const dir of (pathVar ?? '/usr/local/bin:/usr/bin:/bin').split(':')) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      // Most PATH entries lack it: a stat that returns nothing is cheaper than access() throwing.
      if (!statSync(candidate, { throwIfNoEntry: false })) continue;
      accessSync(candidate, constants.X_OK);
    } catch {
      continue;
    }
    refuseExposedLauncher(name, candidate, exposed);
    return candidate;
  }
  return undefined;
}

function refuseExposedLauncher(name: string, candidate: string, exposed: readonly string[]): void {
  if (exposed.length === 0) return;
  let real: string;
  try {
    real = realpathSync(dirname(candidate));
  } catch {
    return;
  }
  const tree = exposed.find((t) => isWithin(real, t));
  if (tree === undefined) return;
  const variable = name === 'bwrap' ? 'SBX_BWRAP' : 'SBX_NSJAIL';
  throw new SbxError(
    'HOST_STATE_WRITABLE',
    `the ${name} first on PATH, ${candidate}, lies in ${tree}, which a sandboxed run can write: it may have been planted there, so sbx does not run it`,
    { hint: `take ${dirname(candidate)} off PATH, or name the real one: ${variable}=/usr/bin/${name}` },
  );
}

const INSTALL_BWRAP_HINT =
  'install bubblewrap: apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap (Fedora), pacman -S bubblewrap (Arch), zypper install bubblewrap (openSUSE)';

function readVersion(bwrap: string): string {
  try {
    return execFileSync(bwrap, ['--version'], {
      encoding: 'utf8',
      env: {},
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
    }).trim();
  } catch (cause) {
    throw new SbxError('BWRAP_MISSING', `${bwrap} does not run: ${(cause as Error).message.split('\n')[0]}`, {
      cause,
      hint: INSTALL_BWRAP_HINT,
    });
  }
}

function parseVersion(text: string): [number, number, number] {
  const m = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : [0, 0, 0];
}

function atLeast(v: [number, number, number], want: [number, number, number]): boolean {
  for (let i = 0; i < 3; i++) if (v[i] !== want[i]) return v[i]! > want[i]!;
  return true;
}

export interface BwrapInfo {
  path: string;
  version: string;
  features: BwrapHost['features'];
}

/** What a replaced or rewritten binary cannot keep: ctime changes on every write, rename and chmod. */
function binaryIdentity(path: string, st: Stats): string {
  return `${path}\0${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

/** Versions this process learnt, by binary identity: a long-lived library caller stats bwrap, no more. */
const known = new Map<string, string>();

/** The bwrap version file in sbx's cache directory, owned by this process's uid, which no option can set. */
function versionCache(cacheDir: string): CacheFile {
  return { path: join(cacheDir, 'bwrap.json'), uid: process.getuid?.() ?? 0, maxBytes: 4096 };
}

/** The version cached for exactly this binary; anything unreadable, foreign or malformed is no cache. */
function cachedVersion(file: CacheFile, id: string): string | undefined {
  const text = readCacheFile(file);
  try {
    const cached = text === undefined ? undefined : (JSON.parse(text) as { id?: unknown; version?: unknown });
    return cached?.id === id && typeof cached.version === 'string' ? cached.version : undefined;
  } catch {
    return undefined;
  }
}

/** Locate bwrap (SBX_BWRAP overrides) and learn its version, cached by the binary's identity. */
export function probeBwrap(
  env: Record<string, string | undefined>,
  cacheDir: string | undefined,
  exposed: readonly string[] = [],
): BwrapInfo {
  const path = env.SBX_BWRAP ?? findOnPath('bwrap', env.PATH, exposed);
  if (!path)
    throw new SbxError('BWRAP_MISSING', 'bubblewrap (bwrap) is not installed or not on PATH', {
      hint: INSTALL_BWRAP_HINT,
    });
  let id: string;
  try {
    id = binaryIdentity(path, statSync(path));
  } catch {
    throw new SbxError('BWRAP_MISSING', `${path} does not exist`, { hint: INSTALL_BWRAP_HINT });
  }
  const cacheFile = cacheDir ? versionCache(cacheDir) : undefined;
  let version = known.get(id) ?? (cacheFile ? cachedVersion(cacheFile, id) : undefined);
  if (version === undefined) {
    version = readVersion(path);
    if (cacheFile) writeCacheFile(cacheFile, JSON.stringify({ id, version }));
  }
  known.set(id, version);
  const v = parseVersion(version);
  const since08 = atLeast(v, [0, 8, 0]);
  const features = { tmpfsSize: atLeast(v, [0, 7, 0]), disableUserns: since08, bindFd: since08 };
  return { path, version, features };
}

export interface NsjailInfo {
  path: string;
  /** nsjail has no --version: what its --help shows it can do. */
  version: string;
}

const INSTALL_NSJAIL_HINT =
  'build nsjail (github.com/google/nsjail; most distributions have no package), put it on PATH or set SBX_NSJAIL=/path/to/nsjail, or use --backend bwrap';

/**
 * Locate nsjail (SBX_NSJAIL overrides) and check it runs and has the new mount API sbx compiles
 * for (backend/nsjail/compile.ts: --experimental_mnt new, kernel 5.12+).
 */
export function probeNsjail(env: Record<string, string | undefined>, exposed: readonly string[] = []): NsjailInfo {
  const path = env.SBX_NSJAIL ?? findOnPath('nsjail', env.PATH, exposed);
  if (!path)
    throw new SbxError('NSJAIL_MISSING', 'nsjail is not installed or not on PATH', { hint: INSTALL_NSJAIL_HINT });
  if (!existsSync(path)) throw new SbxError('NSJAIL_MISSING', `${path} does not exist`, { hint: INSTALL_NSJAIL_HINT });
  let help: string;
  try {
    help = execFileSync(path, ['--help'], {
      encoding: 'utf8',
      env: {},
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
    });
  } catch (cause) {
    throw new SbxError('NSJAIL_MISSING', `${path} does not run: ${(cause as Error).message.split('\n')[0]}`, {
      cause,
      hint: INSTALL_NSJAIL_HINT,
    });
  }
  if (!help.includes('experimental_mnt')) {
    throw new SbxError(
      'NSJAIL_MISSING',
      `${path} is too old: it has no --experimental_mnt (the new mount API sbx relies on)`,
      { hint: 'build nsjail from a 2024 or later source' },
    );
  }
  return { path, version: 'nsjail (no version flag; has --experimental_mnt)' };
}
