// Merge rules for `extends`, pure. One rule per value shape, applied recursively:
//   - scalars (mode, network, user, hostname, ...): the later profile wins;
//   - lists (writable_roots, read_only, system, env.keep, ...): concatenated, parents first, exact
//     duplicates dropped — a child can add to what it inherits, never silently remove it;
//   - maps and objects (env, env.set, workspace, tmp): merged key by key with these same rules;
//   - a credential's `from` is one source, replaced whole: `{ env }` over `{ file }` must not become both,
//     and a child's `command` must not extend its parent's argv;
//   - `extends` and `description` belong to one profile and are never inherited.
// Several parents merge left to right, then the child on top. Positions follow the values: a key is
// where the profile that set it last wrote it, a list item where the profile that added it wrote it.
import { parentKey, type KeyPositions } from './positions.js';
import type { Profile } from './schema.js';

/** Which profile set each value: key path → profile names, in merge order. */
export type Origins = Record<string, string[]>;

export interface MergedProfile {
  profile: Profile;
  origins: Origins;
  /** Where each key path of the merged profile, and each list item, was written (positions.ts). */
  positions: KeyPositions;
}

/** One profile of the chain, with where its keys were written (parse.ts), if known. */
export interface ProfileLayer {
  name: string;
  profile: Profile;
  positions?: KeyPositions;
}

/** What one layer's merge writes to: the origins and positions of the merged result. */
interface Tracking {
  from: string;
  origins: Origins;
  /** The layer's own positions, by its own key paths. */
  layer: KeyPositions;
  merged: KeyPositions;
}

type Json = string | number | boolean | null | Json[] | { [k: string]: Json };

const NOT_INHERITED = new Set(['extends', 'description']);

function isPlainObject(v: unknown): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A layer's position of a key path, or of the nearest enclosing key (a value the schema normalised, `seccomp: strict`). */
function layerPosition(layer: KeyPositions, path: string): KeyPositions[string] | undefined {
  for (let key = path; key !== ''; key = parentKey(key)) if (layer[key]) return layer[key];
  return undefined;
}

function place(t: Tracking, mergedPath: string, layerPath: string): void {
  const at = layerPosition(t.layer, layerPath);
  if (at) t.merged[mergedPath] = at;
  else delete t.merged[mergedPath];
}

/** Positions under a key whose value a scalar or a list replaced: nothing under it is the parent's any more. */
function dropBelow(t: Tracking, path: string): void {
  for (const key of Object.keys(t.merged))
    if (key.startsWith(`${path}.`) || key.startsWith(`${path}[`)) delete t.merged[key];
}

/** Values that are one thing, however they are written: the later profile's replaces the earlier's whole. */
const REPLACED_WHOLE = /^credentials\.[^.]+\.from$/;

function mergeValue(inherited: Json | undefined, over: Json, path: string, t: Tracking): Json {
  const whole = REPLACED_WHOLE.test(path);
  if (whole && inherited !== undefined) dropBelow(t, path);
  const base = whole ? undefined : inherited;
  if (Array.isArray(over)) {
    if (!Array.isArray(base)) dropBelow(t, path);
    const out = Array.isArray(base) ? [...base] : [];
    const seen = new Set(out.map((v) => JSON.stringify(v)));
    over.forEach((item, i) => {
      const key = JSON.stringify(item);
      if (seen.has(key)) return;
      seen.add(key);
      place(t, `${path}[${out.length}]`, `${path}[${i}]`);
      out.push(item);
    });
    t.origins[path] = [...(Array.isArray(base) ? (t.origins[path] ?? []) : []), t.from].filter(
      (v, i, a) => a.indexOf(v) === i,
    );
    place(t, path, path);
    return out;
  }
  if (isPlainObject(over)) {
    if (!isPlainObject(base)) dropBelow(t, path);
    const out: Record<string, Json> = isPlainObject(base) ? { ...base } : {};
    for (const [key, value] of Object.entries(over)) {
      out[key] = mergeValue(out[key], value, path ? `${path}.${key}` : key, t);
    }
    place(t, path, path);
    return out;
  }
  t.origins[path] = [t.from];
  if (base !== null && typeof base === 'object') dropBelow(t, path);
  place(t, path, path);
  return over;
}

/**
 * Merge raw profiles in order: the flattened `extends` chain (ancestors first, each profile once)
 * with the requested profile last. Only the last layer's `description` is kept.
 */
export function mergeProfiles(layers: readonly ProfileLayer[]): MergedProfile {
  const merged: Record<string, Json> = {};
  const origins: Origins = {};
  const positions: KeyPositions = {};
  layers.forEach((layer, index) => {
    const isSelf = index === layers.length - 1;
    const t: Tracking = { from: layer.name, origins, layer: layer.positions ?? {}, merged: positions };
    for (const [key, value] of Object.entries(layer.profile as Record<string, Json>)) {
      if (key === 'extends' || (!isSelf && NOT_INHERITED.has(key))) continue;
      merged[key] = mergeValue(merged[key], value, key, t);
    }
  });
  return { profile: merged as Profile, origins, positions };
}
