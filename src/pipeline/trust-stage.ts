// Stage 2, trust: the profile resolved (name or path, its extends chain), validated, and used only when
// its owner and content are trusted (profile/host/trust.ts: project profiles need a pin).
import { loadProfile, type ResolvedProfile } from '../profile/host/load.js';
import { VERSION } from '../version.js';
import type { RunContext } from './context-stage.js';
import type { ProfileInfo } from './run-options.js';

export function describeProfile(resolved: ResolvedProfile): ProfileInfo {
  return {
    name: resolved.name,
    file: resolved.location.file,
    source: resolved.location.source,
    hash: resolved.hash,
    ...(resolved.shadows ? { shadows: resolved.shadows } : {}),
  };
}

/** The trusted profile, and what the run learns of it (SbxError.run, the report). */
export async function trustProfile({
  ctx,
}: {
  ctx: RunContext;
}): Promise<{ resolved: ResolvedProfile; profile: ProfileInfo }> {
  const resolved = await loadProfile(ctx.options.profile, ctx.search, VERSION);
  const profile = describeProfile(resolved);
  ctx.options.onProfile?.(profile);
  return { resolved, profile };
}
