// Stage 4, secrets: the profile's secret values, read only now and only into the session: never the
// Policy, argv or a message (runtime/secrets.ts). Its module loads only for profiles that have secrets.
import type { ResolvedProfile } from '../profile/load.js';
import type { Derived } from './policy.js';
import type { Prepared } from './prepare.js';

export async function loadRunSecrets(
  resolved: ResolvedProfile,
  derived: Derived,
  p: Prepared,
): Promise<Record<string, string>> {
  const wanted = resolved.profile.secrets;
  if (!wanted?.length) return {};
  const { loadSecrets } = await import('../runtime/secrets.js');
  const context = { configHome: p.configHome, env: p.env, uid: p.uid, workspace: derived.policy.workspace.host };
  return (await loadSecrets(wanted, context)).vars;
}
