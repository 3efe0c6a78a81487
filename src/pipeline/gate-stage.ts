// Stage 5, gate: whether this command may run, settled before anything is created: it must exist in the
// sandbox's view (127 when not; a command the sandbox cannot see is not a setup failure), then the
// command rules and, under `default: ask`, an approval (commands/host/command-gate.ts).
import { admitCommand } from '../commands/host/command-gate.js';
import { locateCommand } from '../commands/host/command.js';
import type { RunContext } from './context-stage.js';
import type { Derived } from './policy-stage.js';

export async function gate({
  ctx,
  derived,
  secrets,
}: {
  ctx: RunContext;
  derived: Derived;
  secrets: readonly string[];
}): Promise<void> {
  const { options } = ctx;
  locateCommand(derived.policy);
  await admitCommand({
    policy: derived.policy,
    host: derived.host,
    sessionId: ctx.sessionId,
    allowDenylisted: options.allowDenylistedCommands,
    ...(options.approve ? { approve: options.approve } : {}),
    ...(options.audit ? { audit: options.audit } : {}),
    secrets,
    door: ctx.door,
    ...(options.onNotice ? { onNotice: options.onNotice } : {}),
  });
}
