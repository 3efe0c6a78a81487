// The command's environment: the caller's variables filtered by env.keep (env/env.ts), env.set and
// --env, what sbx injects, the toolchains' variables, and the secret names whose values only the
// runtime holds.
import type { Profile } from '../../profile/schema.js';
import { expandVariables, type Variables } from '../../profile/variables.js';
import { buildEnv } from '../../env/env.js';
import type { Host } from '../host.js';
import { SSH_AGENT_SANDBOX_SOCKET } from '../../ssh-agent/ssh-agent.js';
import { applyToolchainEnv, factsWithinReach, reachOf, type ToolchainFacts } from '../../toolchains/toolchains.js';
import type { Mode, Policy } from '../types.js';
import type { RunRequest } from './request.js';

const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin';

/**
 * The PATH's toolchains when the profile asks for them (toolchains: true or machine); never in danger
 * mode, which shows the host's HOME already.
 */
export function toolchainFactsOf(
  profile: Profile,
  host: Pick<Host, 'toolchains' | 'home'>,
  mode: Mode,
): ToolchainFacts | undefined {
  const reach = reachOf(profile.toolchains);
  if (mode === 'danger' || reach === undefined || host.toolchains === undefined) return undefined;
  return factsWithinReach(host.toolchains, reach, host.home);
}

/** What the environment is built from besides the profile and the request. */
export interface EnvContext {
  vars: Variables;
  hostEnv: Record<string, string>;
  profileName: string;
  /** The workspace's path inside (SBX_WORKSPACE). */
  workspaceSandbox: string;
  tools: ToolchainFacts | undefined;
}

export function envOf(profile: Profile, request: RunRequest, context: EnvContext): Policy['env'] {
  const { vars } = context;
  const profileSet = Object.entries(profile.env?.set ?? {}).map(
    ([k, v]) => [k, expandVariables(v, vars, `env.set.${k}`)] as [string, string],
  );
  const env = buildEnv({
    host: context.hostEnv,
    keep: [...(profile.env?.keep ?? []), ...(request.keepEnv ?? [])],
    set: [...profileSet, ...Object.entries(request.env ?? {})],
    setBy: {
      ...Object.fromEntries(profileSet.map(([k]) => [k, `env.set.${k}`])),
      ...Object.fromEntries(Object.keys(request.env ?? {}).map((k) => [k, '--env'])),
    },
    injected: {
      HOME: vars.home,
      SBX_SESSION_ID: vars.session,
      SBX_PROFILE: context.profileName,
      SBX_WORKSPACE: context.workspaceSandbox,
      // Injected, so the caller's own agent path never reaches the sandbox, whatever env.keep says.
      ...(profile.ssh_agent ? { SSH_AUTH_SOCK: SSH_AGENT_SANDBOX_SOCKET } : {}),
    },
  });
  env.vars.PATH ??= DEFAULT_PATH;
  applyToolchainEnv(env.vars, context.tools);
  // Secrets are set by the runtime (their values never enter the Policy): a kept or set variable of
  // the same name gives way.
  const secrets = [...new Set((profile.secrets ?? []).map((s) => s.as ?? s.name))];
  for (const name of secrets) delete env.vars[name];
  return { ...env, secrets };
}
