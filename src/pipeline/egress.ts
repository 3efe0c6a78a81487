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
  const { startEgressProxy } = await import('../runtime/network/index.js');
  const proxy = await startEgressProxy({
    // Compiled once by derivePolicy: the proxy enforces exactly the rules the Policy (and its hash) holds.
    rules: net.rules,
    socketDir: session.dir,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  cleanup.defer(() => proxy.close());
  return proxy;
}
