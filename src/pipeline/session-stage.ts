// Stage 7, session: the run's private directory (mask source, file mounts' content, egress sockets),
// removed when the run's cleanup stack unwinds.
import type { Session } from '../backend/launch.js';
import type { Policy } from '../policy/types.js';
import { openSession, writeFileMounts } from '../host/session.js';
import type { CleanupStack } from './cleanup.js';
import type { RunContext } from './context-stage.js';

export function openRunSession({
  ctx,
  policy,
  secretEnv,
  cleanup,
}: {
  ctx: RunContext;
  policy: Policy;
  secretEnv: Record<string, string>;
  cleanup: CleanupStack;
}): Session {
  const session = openSession(ctx.env, ctx.uid, ctx.sessionId);
  cleanup.defer(() => session.close());
  writeFileMounts(session, policy.mounts);
  return { ...session, secretEnv };
}
