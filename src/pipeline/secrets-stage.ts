// Stage 4, secrets: the profile's secret values, read only now and only into the session: never the
// Policy, argv or a message (env/host/secrets.ts). Its module loads only for profiles that have secrets.
import type { ResolvedProfile } from '../profile/host/load.js';
import type { Derived } from './policy-stage.js';
import type { RunContext } from './context-stage.js';

export async function loadRunSecrets({
  ctx,
  resolved,
  derived,
}: {
  ctx: RunContext;
  resolved: ResolvedProfile;
  derived: Derived;
}): Promise<Record<string, string>> {
  const wanted = resolved.profile.secrets;
  if (!wanted?.length) return {};
  const { loadSecrets } = await import('../env/host/secrets.js');
  const context = {
    configHome: ctx.dirs.configHome,
    env: ctx.env,
    uid: ctx.uid,
    workspace: derived.policy.workspace.host,
  };
  return (await loadSecrets(wanted, context)).vars;
}
