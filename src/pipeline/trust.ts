// Stage 2, trust: the profile resolved (name or path, its extends chain), validated, and used only when
// its owner and content are trusted (profile/trust.ts: project profiles need a pin).
import { loadProfile, type ResolvedProfile } from '../profile/load.js';
import { VERSION } from '../version.js';
import type { CompileOptions, KnownFacts, ProfileInfo } from './options.js';
import type { Prepared } from './prepare.js';

export function describeProfile(resolved: ResolvedProfile): ProfileInfo {
  return {
    name: resolved.name,
    file: resolved.location.file,
    source: resolved.location.source,
    hash: resolved.hash,
    ...(resolved.shadows ? { shadows: resolved.shadows } : {}),
  };
}

export async function trustProfile(
  options: CompileOptions,
  prepared: Prepared,
  known: KnownFacts,
): Promise<ResolvedProfile> {
  const resolved = await loadProfile(options.profile ?? 'default', prepared.search, VERSION);
  known.profile = describeProfile(resolved);
  options.onProfile?.(known.profile);
  return resolved;
}
