// Stage 8, egress: under an allow-list network, the proxy the in-sandbox bridge dials, listening in the
// session directory before the sandbox starts. Only allow-list runs load and pay for it.
import type { Session } from '../backend/launch.js';
import type { Policy } from '../policy/types.js';
import type { EgressProxy } from '../runtime/network/index.js';
import type { CleanupStack } from './cleanup.js';
import type { RunOptions } from './options.js';

export async function startEgress(
  policy: Policy,
  session: Session,
  options: RunOptions,
  cleanup: CleanupStack,
): Promise<EgressProxy | undefined> {
  const net = policy.network;
  if (net.kind !== 'filtered' || !net.bridge) return undefined;
  const [{ startEgressProxy }, { compileEgressRules }] = await Promise.all([
    import('../runtime/network/index.js'),
    import('../policy/egress.js'),
  ]);
  const proxy = await startEgressProxy({
    rules: compileEgressRules({ allow: net.allow, deny: net.deny, allowPrivate: net.allowPrivate }),
    socketDir: session.dir,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  cleanup.defer(() => proxy.close());
  return proxy;
}
