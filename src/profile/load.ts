// Finds profiles by name, reads them, follows `extends`, and merges. The only module of profile/ that
// touches the filesystem. A resolved profile is cached by the content hash of every file in its
// chain, so a repeated run skips the YAML parser and the schema (about 90 ms of imports) entirely.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { SbxError } from '../errors.js';
import { mergeProfiles, type Origins } from './merge.js';
import type { Profile } from './schema.js';
import { closest } from './suggest.js';

export type ProfileSource = 'path' | 'project' | 'user' | 'builtin';

export interface ProfileLocation {
  name: string;
  file: string;
  source: ProfileSource;
}

export interface ResolvedProfile {
  name: string;
  location: ProfileLocation;
  /** Every file merged, ancestors first, the profile itself last. */
  chain: ProfileLocation[];
  profile: Profile;
  origins: Origins;
  /** sha256 over the chain's file contents: identifies this exact resolved profile. */
  hash: string;
}

export interface ProfileSearch {
  cwd: string;
  /** $XDG_CONFIG_HOME or ~/.config */
  configHome: string;
  builtinDir: string;
  /** Where resolved profiles are cached; undefined disables the cache. */
  cacheDir?: string;
}

const PROFILE_EXT = '.yaml';
const CACHE_FORMAT = 1;

function isPathLike(name: string): boolean {
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
export function locateProfile(name: string, search: ProfileSearch, relativeTo?: string, skipFile?: string): ProfileLocation {
  if (isPathLike(name)) {
    const file = isAbsolute(name) ? name : resolve(relativeTo ?? search.cwd, name);
    if (!existsSync(file)) {
      throw new SbxError('PROFILE_NOT_FOUND', `profile file ${file} does not exist`, { hint: 'check the path given to --profile or extends' });
    }
    return { name, file, source: 'path' };
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) {
    throw new SbxError('PROFILE_NOT_FOUND', `"${name}" is not a valid profile name`, { hint: 'names use letters, digits, ".", "_" and "-"; use a path for a file' });
  }
  const candidates = searchDirs(search).map(({ dir, source }) => ({ file: join(dir, name + PROFILE_EXT), source }));
  // A profile extending its own name continues the search below itself (project → user → builtin).
  const start = skipFile === undefined ? 0 : candidates.findIndex((c) => c.file === skipFile) + 1;
  for (const { file, source } of candidates.slice(start)) {
    if (existsSync(file)) return { name, file, source };
  }
  const known = listProfiles(search).map((p) => p.name);
  const suggestion = closest(name, known);
  throw new SbxError('PROFILE_NOT_FOUND', `unknown profile "${name}"${suggestion ? ` (did you mean "${suggestion}"?)` : ''}`, {
    hint: `known profiles: ${known.join(', ')}; or pass a file path`,
  });
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

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (cause) {
    throw new SbxError('PROFILE_NOT_FOUND', `cannot read profile ${file}: ${(cause as Error).message}`, { cause, hint: 'check the file permissions' });
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

interface CacheEntry {
  format: number;
  /** Each layer as looked up: name, the file it resolved to, and that file's hash. */
  layers: { name: string; file: string; source: ProfileSource; skipFile?: string; relativeTo?: string; sha: string }[];
  profile: Profile;
  origins: Origins;
}

function cacheFile(search: ProfileSearch, location: ProfileLocation, sha: string, version: string): string | undefined {
  if (!search.cacheDir) return undefined;
  return join(search.cacheDir, sha256(`${CACHE_FORMAT}\0${version}\0${location.file}\0${sha}`) + '.json');
}

/** A cached entry is valid only if every layer still resolves to the same file with the same content. */
function readCache(path: string, search: ProfileSearch): CacheEntry | undefined {
  let entry: CacheEntry;
  try {
    entry = JSON.parse(readFileSync(path, 'utf8')) as CacheEntry;
  } catch {
    return undefined;
  }
  if (entry.format !== CACHE_FORMAT) return undefined;
  for (const layer of entry.layers) {
    try {
      const found = locateProfile(layer.name, search, layer.relativeTo, layer.skipFile);
      if (found.file !== layer.file || sha256(readText(found.file)) !== layer.sha) return undefined;
    } catch {
      return undefined;
    }
  }
  return entry;
}

function writeCache(path: string, entry: CacheEntry): void {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(entry), { mode: 0o600 });
    renameSync(tmp, path);
  } catch {
    // The cache is an optimisation: a read-only or full disk must not stop a run.
  }
}

/** Resolve `name` (or a path) to its merged profile. `version` keys the cache to this sbx build. */
export async function loadProfile(name: string, search: ProfileSearch, version: string): Promise<ResolvedProfile> {
  const location = locateProfile(name, search);
  const text = readText(location.file);
  const sha = sha256(text);
  const cachePath = cacheFile(search, location, sha, version);
  const cached = cachePath ? readCache(cachePath, search) : undefined;
  if (cached) {
    return {
      name: location.name,
      location,
      chain: cached.layers.map(({ name: n, file, source }) => ({ name: n, file, source })),
      profile: cached.profile,
      origins: cached.origins,
      hash: sha256(cached.layers.map((l) => l.sha).join('\0')),
    };
  }

  const { parseProfile } = await import('./parse.js');
  const layers: CacheEntry['layers'] = [];
  const raw: { name: string; profile: Profile }[] = [];
  const done = new Set<string>();

  // Depth-first, parents before children, each file once (diamonds merge the shared ancestor once).
  const visit = (loc: ProfileLocation, content: string, stack: string[], lookup: { relativeTo?: string; skipFile?: string }) => {
    if (stack.includes(loc.file)) {
      const cycle = [...stack.slice(stack.indexOf(loc.file)), loc.file].join(' → ');
      throw new SbxError('PROFILE_CYCLE', `profiles extend each other in a cycle: ${cycle}`, { hint: 'remove one of the extends' });
    }
    if (done.has(loc.file)) return;
    const profile = parseProfile(content, loc.file);
    const parents = profile.extends === undefined ? [] : Array.isArray(profile.extends) ? profile.extends : [profile.extends];
    for (const parentName of parents) {
      const relativeTo = dirname(loc.file);
      const skipFile = parentName === loc.name ? loc.file : undefined;
      const parent = locateProfile(parentName, search, relativeTo, skipFile);
      visit(parent, readText(parent.file), [...stack, loc.file], { relativeTo, ...(skipFile ? { skipFile } : {}) });
    }
    done.add(loc.file);
    layers.push({ name: loc.name, file: loc.file, source: loc.source, sha: sha256(content), ...lookup });
    raw.push({ name: loc.name, profile });
  };
  visit(location, text, [], {});

  const { profile, origins } = mergeProfiles(raw);
  if (cachePath) writeCache(cachePath, { format: CACHE_FORMAT, layers, profile, origins });
  return {
    name: location.name,
    location,
    chain: layers.map(({ name: n, file, source }) => ({ name: n, file, source })),
    profile,
    origins,
    hash: sha256(layers.map((l) => l.sha).join('\0')),
  };
}
