// Finds profiles by name, reads them (guarded-read.ts), follows `extends`, merges, and decides
// whether the chain may be used (trust.ts). With guarded-read.ts and trust-store.ts, the only modules
// of profile/ that touch the filesystem. A resolved profile is cached by the content hash of every
// file in its chain (host/cache-file.ts), so a repeated run skips the YAML parser and the schema
// (about 90 ms of imports); the trust decision is never cached: it is taken on every load, from those
// same hashes.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { isSbxError, SbxError } from '../../errors.js';
import { pruneStaleCacheFiles, readCacheFile, writeCacheFile } from '../../host/cache-file.js';
import { readGuarded, type GuardedText } from '../../host/guarded-read.js';
import { mergeProfiles, type Origins, type ProfileLayer } from '../merge.js';
import type { KeyPositions, ProfileSource } from '../positions.js';
import type { Profile } from '../schema.js';
import { closest } from '../../suggest.js';
import { judgeTrust, needsPin, untrustedError, type TrustContext, type TrustState } from './trust.js';
import { BUILD } from '../../version.js';

export interface ProfileLocation {
  name: string;
  file: string;
  source: ProfileSource;
}

/** One file of a resolved chain: where it was found, what it really is, and its content hash. */
export interface ChainLink extends ProfileLocation {
  /** The real path read (symlinks resolved). */
  real: string;
  sha256: string;
}

export interface ResolvedProfile {
  name: string;
  location: ProfileLocation;
  /** Every file merged, ancestors first, the profile itself last. */
  chain: ChainLink[];
  /** Each chain file's text, by real path (what `sbx trust` pins and shows). */
  texts: Record<string, string>;
  profile: Profile;
  origins: Origins;
  /** Where each key path and list item of `profile` was written: file (real path), line, col. */
  positions: KeyPositions;
  /** sha256 over the chain's file contents: identifies this exact resolved profile (what trust pins). */
  hash: string;
  trust: TrustState;
  /** The built-in profile of the same name that this project or user profile hides. */
  shadows?: string;
}

export interface ProfileSearch {
  cwd: string;
  /** $XDG_CONFIG_HOME or ~/.config */
  configHome: string;
  builtinDir: string;
  /** Where resolved profiles are cached; undefined disables the cache. */
  cacheDir?: string;
  /** The trust pins and this invocation's trusted hashes. Without it no project profile is usable. */
  trust?: TrustContext;
}

export interface LoadOptions {
  /** Resolve an untrusted chain instead of refusing it (`sbx profiles show`, `sbx trust`): never for a run. */
  review?: boolean;
}

const PROFILE_EXT = '.yaml';
/** `-p builtin:NAME` names sbx's own profile whatever a project or the user defines (locateBuiltin). */
export const BUILTIN_PREFIX = 'builtin:';
/** 4: entries carry `positions` (an older entry would resolve a profile whose refusals name no line). */
const CACHE_FORMAT = 4;
/** A profile is a short YAML file; this bounds what a hostile one (or /dev/zero) can make sbx read. */
export const PROFILE_MAX_BYTES = 256 * 1024;
/** One cached resolved profile: the merged result of at most a few such files. */
const CACHE_MAX_BYTES = 4 * 1024 * 1024;

function invokingUid(): number {
  return process.getuid?.() ?? 0;
}

/** Built-ins come with sbx and are trusted; every other file must pass the owner and mode checks. */
function readProfileFile(loc: ProfileLocation): GuardedText {
  return readGuarded(loc.file, {
    what: 'profile',
    maxBytes: PROFILE_MAX_BYTES,
    checkOwner: loc.source !== 'builtin',
    uid: invokingUid(),
  });
}

/**
 * A project profile is read before it is trusted (the refusal names the chain's hash), so the files
 * it may make sbx read are bounded: profiles by name, or files in its own `.sbx/`. A path elsewhere
 * (`extends: ~/.config/sbx/secrets.yaml`) would have sbx parse a file of the user's and quote it in
 * an error. Checked on the real path, before the file is read.
 */
function refuseOutsideProject(childReal: string, parentFile: string): void {
  const parts = childReal.split('/');
  const at = parts.lastIndexOf('.sbx');
  // A `.sbx/profiles` that is a symlink elsewhere: the profile's own directory bounds it.
  const own = at > 0 ? parts.slice(0, at + 1).join('/') : dirname(childReal);
  let real: string;
  try {
    real = realpathSync(parentFile);
  } catch {
    return; // not there: the read that follows says so
  }
  if (real.startsWith(`${own}/`)) return;
  throw new SbxError('PROFILE_UNSAFE', `project profile ${childReal} extends ${parentFile}, outside its ${own}`, {
    hint: 'a project profile extends profiles by name (extends: default) or files in its own .sbx/ directory',
  });
}

export function isPathLike(name: string): boolean {
  return name.includes('/') || name.endsWith('.yaml') || name.endsWith('.yml');
}

/** Project profile dirs: `.sbx/profiles` in cwd and every parent, nearest first. */
function projectDirs(cwd: string): string[] {
  const dirs: string[] = [];
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    dirs.push(join(dir, '.sbx', 'profiles'));
    if (dirname(dir) === dir) return dirs;
  }
}

function searchDirs(search: ProfileSearch): { dir: string; source: ProfileSource }[] {
  return [
    ...projectDirs(search.cwd).map((dir) => ({ dir, source: 'project' as const })),
    { dir: join(search.configHome, 'sbx', 'profiles'), source: 'user' },
    { dir: search.builtinDir, source: 'builtin' },
  ];
}

/**
 * Find a profile by name or path. `relativeTo` is the directory of the file that names it (for
 * `extends: ./base.yaml`); `skipFile` lets a project `default` extend the built-in `default`.
 */
export function locateProfile(
  name: string,
  search: ProfileSearch,
  relativeTo?: string,
  skipFile?: string,
): ProfileLocation {
  if (name.startsWith(BUILTIN_PREFIX)) return locateBuiltin(name.slice(BUILTIN_PREFIX.length), search);
  if (isPathLike(name)) {
    const file = isAbsolute(name) ? name : resolve(relativeTo ?? search.cwd, name);
    if (!existsSync(file)) {
      throw new SbxError('PROFILE_NOT_FOUND', `profile file ${file} does not exist`, {
        hint: 'check the path given to --profile or extends',
      });
    }
    return { name, file, source: 'path' };
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) {
    throw new SbxError('PROFILE_NOT_FOUND', `"${name}" is not a valid profile name`, {
      hint: 'names use letters, digits, ".", "_" and "-"; use a path for a file',
    });
  }
  // A built-in's `extends: default` means the built-in default: a project `default` must not slip
  // into the chain of `agent` or `untrusted`.
  const dirs =
    relativeTo === search.builtinDir ? [{ dir: search.builtinDir, source: 'builtin' as const }] : searchDirs(search);
  const candidates = dirs.map(({ dir, source }) => ({ file: join(dir, name + PROFILE_EXT), source }));
  // A profile extending its own name continues the search below itself (project → user → builtin).
  const start = skipFile === undefined ? 0 : candidates.findIndex((c) => c.file === skipFile) + 1;
  for (const { file, source } of candidates.slice(start)) {
    if (existsSync(file)) return { name, file, source };
  }
  const known = listProfiles(search).map((p) => p.name);
  const suggestion = closest(name, known);
  throw new SbxError(
    'PROFILE_NOT_FOUND',
    `unknown profile "${name}"${suggestion ? ` (did you mean "${suggestion}"?)` : ''}`,
    {
      hint: `known profiles: ${known.join(', ')}; or pass a file path`,
    },
  );
}

/**
 * `builtin:NAME`: sbx's own profile, never a project's or the user's of the same name. CI names the
 * built-in this way, so a pull request that adds `.sbx/profiles/untrusted.yaml` cannot shadow it.
 * The built-in's own `extends` resolve among the built-ins, as always.
 */
function locateBuiltin(name: string, search: ProfileSearch): ProfileLocation {
  const file = join(search.builtinDir, name + PROFILE_EXT);
  if (/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name) && existsSync(file)) return { name, file, source: 'builtin' };
  const known = listBuiltins(search);
  const suggestion = closest(name, known);
  throw new SbxError(
    'PROFILE_NOT_FOUND',
    `no built-in profile "${name}"${suggestion ? ` (did you mean "${BUILTIN_PREFIX}${suggestion}"?)` : ''}`,
    { hint: `built-in profiles: ${known.map((n) => BUILTIN_PREFIX + n).join(', ')}` },
  );
}

function listBuiltins(search: ProfileSearch): string[] {
  try {
    return readdirSync(search.builtinDir)
      .filter((e) => e.endsWith(PROFILE_EXT))
      .map((e) => e.slice(0, -PROFILE_EXT.length))
      .sort();
  } catch {
    return [];
  }
}

/** Every profile visible from `cwd`, first hit per name (the one `--profile NAME` would use). */
export function listProfiles(search: ProfileSearch): ProfileLocation[] {
  const seen = new Map<string, ProfileLocation>();
  for (const { dir, source } of searchDirs(search)) {
    let entries: string[];
    try {
      entries = readdirSync(dir);
    } catch {
      continue;
    }
    for (const entry of entries.sort()) {
      if (!entry.endsWith(PROFILE_EXT)) continue;
      const name = entry.slice(0, -PROFILE_EXT.length);
      if (!seen.has(name)) seen.set(name, { name, file: join(dir, entry), source });
    }
  }
  return [...seen.values()];
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

interface CacheEntry {
  format: number;
  /** The sbx build that resolved it (version.ts): a schema or merge change makes every entry stale. */
  build: string;
  /** Each layer as looked up: name, the file it resolved to, and that file's hash. The last is the profile itself. */
  layers: {
    name: string;
    file: string;
    real: string;
    source: ProfileSource;
    skipFile?: string;
    relativeTo?: string;
    sha: string;
  }[];
  profile: Profile;
  origins: Origins;
  positions: KeyPositions;
}

/** The profile's file as found and read now: what the cache key and an entry's last layer must match. */
interface CacheKey {
  location: ProfileLocation;
  top: GuardedText;
  sha: string;
  build: string;
}

function cacheFile(search: ProfileSearch, key: CacheKey): string | undefined {
  if (!search.cacheDir) return undefined;
  const material = `${CACHE_FORMAT}\0${key.build}\0${key.location.file}\0${key.sha}`;
  return join(search.cacheDir, sha256(material) + '.json');
}

/** Written by this build for this very file: anything else (an older format, a copy of another profile's entry) is ignored. */
function isEntryFor(entry: CacheEntry, key: CacheKey): boolean {
  if (entry?.format !== CACHE_FORMAT || entry.build !== key.build || !Array.isArray(entry.layers)) return false;
  if (typeof entry.positions !== 'object' || entry.positions === null) return false;
  if (!entry.layers.every((l) => typeof l?.name === 'string')) return false;
  const last = entry.layers.at(-1);
  return (
    last?.file === key.location.file &&
    last.source === key.location.source &&
    last.real === key.top.real &&
    last.sha === key.sha &&
    last.relativeTo === undefined &&
    last.skipFile === undefined
  );
}

/**
 * A cached entry is valid only if every layer still resolves to the same file with the same content,
 * read under the same guards (the profile itself was just read so, for the key). Returns the entry
 * and the texts read; the trust check follows as for a fresh load. An entry that cannot be read
 * safely (another owner, a writable directory, too large, not JSON) is ignored, never an error.
 */
function readCache(
  path: string,
  search: ProfileSearch,
  key: CacheKey,
): { entry: CacheEntry; texts: Record<string, string> } | undefined {
  const text = readCacheFile({ path, uid: invokingUid(), maxBytes: CACHE_MAX_BYTES });
  if (text === undefined) return undefined;
  let entry: CacheEntry;
  try {
    entry = JSON.parse(text) as CacheEntry;
  } catch {
    return undefined;
  }
  if (!isEntryFor(entry, key)) return undefined;
  const texts: Record<string, string> = {};
  for (const layer of entry.layers.slice(0, -1)) {
    let found: ProfileLocation;
    let read: GuardedText;
    try {
      found = locateProfile(layer.name, search, layer.relativeTo, layer.skipFile);
      read = readProfileFile(found);
    } catch (error) {
      // A layer that is gone makes the entry stale; an unsafe file is an error, cached or not.
      if (isSbxError(error) && error.code === 'PROFILE_NOT_FOUND') return undefined;
      throw error;
    }
    if (
      found.file !== layer.file ||
      found.source !== layer.source ||
      read.real !== layer.real ||
      sha256(read.text) !== layer.sha
    )
      return undefined;
    texts[read.real] = read.text;
  }
  texts[key.top.real] = key.top.text;
  return { entry, texts };
}

/** The cache is an optimisation: an entry that cannot be written (a read-only or full disk) leaves the run as it is. */
function writeCache(path: string, entry: CacheEntry): void {
  if (writeCacheFile({ path, uid: invokingUid(), maxBytes: CACHE_MAX_BYTES }, JSON.stringify(entry)))
    pruneStaleCacheFiles(dirname(path), (name) => PROFILE_CACHE_NAME.test(name), Date.now());
}

/** A resolved profile's cache file: the sha256 of its key (cacheFile). */
const PROFILE_CACHE_NAME = /^[0-9a-f]{64}\.json$/;

/** The built-in this project or user profile hides, so that it never does so silently. */
function shadowedBuiltin(location: ProfileLocation, search: ProfileSearch): string | undefined {
  if (location.source === 'builtin' || isPathLike(location.name)) return undefined;
  const builtin = join(search.builtinDir, location.name + PROFILE_EXT);
  return existsSync(builtin) ? builtin : undefined;
}

/** Parse every layer, parents before children, each file once (diamonds merge the shared ancestor once). */
async function resolveLayers(location: ProfileLocation, top: GuardedText, search: ProfileSearch) {
  const { parseProfile } = await import('../parse.js');
  const layers: CacheEntry['layers'] = [];
  const raw: ProfileLayer[] = [];
  const texts: Record<string, string> = {};
  const done = new Set<string>();

  const visit = (
    loc: ProfileLocation,
    read: GuardedText,
    stack: string[],
    lookup: { relativeTo?: string; skipFile?: string },
  ) => {
    if (stack.includes(read.real)) {
      const cycle = [...stack.slice(stack.indexOf(read.real)), read.real].join(' → ');
      throw new SbxError('PROFILE_CYCLE', `profiles extend each other in a cycle: ${cycle}`, {
        hint: 'remove one of the extends',
      });
    }
    if (done.has(read.real)) return;
    const { profile, positions } = parseProfile(read.text, loc.file);
    const parents =
      profile.extends === undefined ? [] : Array.isArray(profile.extends) ? profile.extends : [profile.extends];
    for (const parentName of parents) {
      const relativeTo = dirname(loc.file);
      const skipFile = parentName === loc.name ? loc.file : undefined;
      const parent = locateProfile(parentName, search, relativeTo, skipFile);
      if (isPathLike(parentName) && needsPin({ source: loc.source, real: read.real }))
        refuseOutsideProject(read.real, parent.file);
      visit(parent, readProfileFile(parent), [...stack, read.real], { relativeTo, ...(skipFile ? { skipFile } : {}) });
    }
    done.add(read.real);
    texts[read.real] = read.text;
    layers.push({
      name: loc.name,
      file: loc.file,
      real: read.real,
      source: loc.source,
      sha: sha256(read.text),
      ...lookup,
    });
    raw.push({ name: loc.name, profile, positions });
  };
  visit(location, top, [], {});
  return { layers, texts, ...mergeProfiles(raw) };
}

/**
 * Resolve `name` (or a path) to its merged profile. `version` (with version.ts's BUILD) keys the cache to this sbx build.
 * Throws PROFILE_UNTRUSTED for a project chain the user has not trusted (unless `review`).
 */
export async function loadProfile(
  name: string,
  search: ProfileSearch,
  version: string,
  options: LoadOptions = {},
): Promise<ResolvedProfile> {
  const location = locateProfile(name, search);
  const top = readProfileFile(location);
  const key: CacheKey = { location, top, sha: sha256(top.text), build: `${version}+${BUILD}` };
  const cachePath = cacheFile(search, key);
  const cached = cachePath ? readCache(cachePath, search, key) : undefined;
  const resolved = cached ? { ...cached.entry, texts: cached.texts } : await resolveLayers(location, top, search);
  if (cachePath && !cached)
    writeCache(cachePath, {
      format: CACHE_FORMAT,
      build: key.build,
      layers: resolved.layers,
      profile: resolved.profile,
      origins: resolved.origins,
      positions: resolved.positions,
    });

  const chain = resolved.layers.map(({ name: n, file, real, source, sha }) => ({
    name: n,
    file,
    real,
    source,
    sha256: sha,
  }));
  const hash = sha256(chain.map((l) => l.sha256).join('\0'));
  const trust = judgeTrust(chain, hash, search.trust, invokingUid());
  const shadows = shadowedBuiltin(location, search);
  if (trust.kind === 'untrusted' && !options.review)
    throw untrustedError(location.name, chain, hash, trust.pin, {
      shadows: shadows !== undefined,
      ci: search.trust?.ci ?? false,
      ...(search.trust?.exposed ? { exposed: search.trust.exposed } : {}),
    });
  return {
    name: location.name,
    location,
    chain,
    texts: resolved.texts,
    profile: resolved.profile,
    origins: resolved.origins,
    positions: resolved.positions,
    hash,
    trust,
    ...(shadows ? { shadows } : {}),
  };
}
