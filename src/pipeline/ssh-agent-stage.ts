// Stage 8b, ssh-agent: under a profile's `ssh_agent`, the filter in front of the caller's agent,
// its keys resolved and its socket listening before the sandbox starts. Only such runs load it.
import type { Session } from '../backend/launch.js';
import { SbxError } from '../errors.js';
import type { Policy } from '../policy/types.js';
import type { CleanupStack } from './cleanup.js';
import type { RunContext } from './context-stage.js';

export async function startSshAgent({
  ctx,
  policy,
  session,
  cleanup,
}: {
  ctx: RunContext;
  policy: Policy;
  session: Session;
  cleanup: CleanupStack;
}): Promise<void> {
  if (!policy.sshAgent) return;
  // The invoking environment as the door read it: never anything the sandbox could set.
  const upstream = ctx.env.SSH_AUTH_SOCK;
  if (!upstream?.startsWith('/')) {
    throw new SbxError('SSH_AGENT_UNAVAILABLE', 'ssh_agent: SSH_AUTH_SOCK is not set to a socket path', {
      hint: 'run sbx where your ssh-agent is reachable (`eval "$(ssh-agent)"; ssh-add`), or remove ssh_agent from the profile',
    });
  }
  const { startSshAgentFilter } = await import('../ssh-agent/host/filter-server.js');
  const filter = await startSshAgentFilter({ upstream, selectors: policy.sshAgent.keys, sessionDir: session.dir });
  cleanup.defer(() => filter.close());
}
