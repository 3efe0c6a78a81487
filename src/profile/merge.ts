// Merge rules for `extends`, pure. One rule per value shape, applied recursively:
//   - scalars (mode, network, user, hostname, ...): the later profile wins;
//   - lists (writable_roots, read_only, system, env.keep, ...): concatenated, parents first, exact
//     duplicates dropped — a child can add to what it inherits, never silently remove it;
//   - maps and objects (env, env.set, workspace, tmp): merged key by key with these same rules;
//   - `extends` and `description` belong to one profile and are never inherited.
// Several parents merge left to right, then the child on top.
import type { Profile } from './schema.js';

/** Which profile set each value: key path → profile names, in merge order. */
export type Origins = Record<string, string[]>;

export interface MergedProfile {
  profile: Profile;
  origins: Origins;
}

type Json = string | number | boolean | null | Json[] | { [k: string]: Json };

const NOT_INHERITED = new Set(['extends', 'description']);

function isPlainObject(v: unknown): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function mergeValue(base: Json | undefined, over: Json, path: string, from: string, origins: Origins): Json {
  if (Array.isArray(over)) {
    const out = Array.isArray(base) ? [...base] : [];
    const seen = new Set(out.map((v) => JSON.stringify(v)));
    for (const item of over) {
      const key = JSON.stringify(item);
      if (!seen.has(key)) {
        seen.add(key);
        out.push(item);
      }
    }
    origins[path] = [...(Array.isArray(base) ? (origins[path] ?? []) : []), from].filter(
      (v, i, a) => a.indexOf(v) === i,
    );
    return out;
  }
  if (isPlainObject(over)) {
    const out: Record<string, Json> = isPlainObject(base) ? { ...base } : {};
    for (const [key, value] of Object.entries(over)) {
      out[key] = mergeValue(out[key], value, path ? `${path}.${key}` : key, from, origins);
    }
    return out;
  }
  origins[path] = [from];
  return over;
}

/**
 * Merge raw profiles in order: the flattened `extends` chain (ancestors first, each profile once)
 * with the requested profile last. Only the last layer's `description` is kept.
 */
export function mergeProfiles(layers: readonly { name: string; profile: Profile }[]): MergedProfile {
  const merged: Record<string, Json> = {};
  const origins: Origins = {};
  layers.forEach((layer, index) => {
    const isSelf = index === layers.length - 1;
    for (const [key, value] of Object.entries(layer.profile as Record<string, Json>)) {
      if (key === 'extends' || (!isSelf && NOT_INHERITED.has(key))) continue;
      merged[key] = mergeValue(merged[key], value, key, layer.name, origins);
    }
  });
  return { profile: merged as Profile, origins };
}
