// Stage 8, egress: whatever the in-sandbox bridge dials, listening before the sandbox starts. Under an
// allow-list network, the proxy; for network.host_ports and network.publish, the port bridges, with
// the published ports bound on the host's 127.0.0.1 first (a taken one refuses the run here, before
// anything runs, unless another run of the same workspace serves it: then this run joins that server). Only runs that need them load and pay for them. A backend without a network
// namespace (`egressOn: 'loopback'`, landlock) gets the proxy on the host's 127.0.0.1 and no bridges:
// its launcher connects the command to the proxy and to host ports itself, and refuses publish.
// The proxy enforces the Policy's rules plus the destinations the user answered `always` for this
// profile, and, when the caller gave an asker, asks about a name no allow entry matched (network/network-asks.ts).
import type { Session } from '../backend/launch.js';
import type { Policy } from '../policy/types.js';
import type { ChosenBackend } from '../backend/host/registry.js';
import type { EgressProxy } from '../network/host/index.js';
import type { CleanupStack } from './cleanup.js';
import type { RunContext } from './context-stage.js';
import type { RunCredentials } from './credentials-stage.js';
import { withApproved } from '../network/network-asks.js';

export async function startEgress({
  ctx,
  policy,
  session,
  backend,
  credentials,
  command,
  cleanup,
}: {
  ctx: RunContext;
  policy: Policy;
  session: Session;
  backend: ChosenBackend;
  /** The run's credentials: the proxy terminates TLS for their hosts with a CA made now (credential-broker.ts). */
  credentials: RunCredentials | undefined;
  /** The run's command as the ledger records it (secrets redacted): each network answer's record names it. */
  command: readonly string[];
  cleanup: CleanupStack;
}): Promise<EgressProxy | undefined> {
  const net = policy.network;
  if (net.kind !== 'filtered' || !net.bridge) return undefined;
  const on = backend.egressOn;
  const network = await import('../network/host/index.js');
  if (on === 'session-dir' && (net.hostPorts.length > 0 || net.publish.length > 0)) {
    // A published port another run of this workspace serves is joined (network/host/published.ts).
    const join = { sessionDir: session.dir, workspace: policy.workspace.host, uid: ctx.uid };
    const published = await network.bindPublishedPorts(net.publish, join);
    cleanup.defer(() => published.close());
    for (const [port, { session: other }] of published.joined)
      ctx.options.onNotice?.(
        `sbx: publish ${port}: another sbx run of this workspace (session ${other}) serves it; 127.0.0.1:${port} inside leads to that server, and this run publishes nothing there`,
      );
    const bridges = await network.startPortBridges({ hostPorts: net.hostPorts, published, socketDir: session.dir });
    cleanup.defer(() => bridges.close());
  }
  if (net.rules.allow.length === 0) return undefined;
  const { resolve } = ctx.options;
  const broker = credentials
    ? (await import('../network/host/credential-broker.js')).openCredentialBroker({
        live: credentials.live,
        trust: credentials.trust,
        sessionDir: session.dir,
        java: policy.credentials?.javaTrustStore === true,
      })
    : undefined;
  const asking = await import('../network/host/run-questions.js');
  const store = { stateHome: ctx.dirs.stateHome, uid: ctx.uid, workspace: policy.workspace.host };
  const notice = (line: string) => ctx.options.onNotice?.(line);
  const profile = policy.profile.name;
  const { onNetworkRequest: ask } = ctx.options;
  const questions = ask
    ? asking.runQuestions({
        ask,
        timeoutMs: ctx.options.networkRequestTimeoutMs,
        store,
        profile,
        sessionId: ctx.sessionId,
        argv: command,
        audit: ctx.options.audit,
        notice,
      })
    : undefined;
  const proxy = await network.startEgressProxy({
    // Compiled once by derivePolicy: the proxy enforces exactly the rules the Policy (and its hash) holds,
    // and the exact host:port entries the user answered `always` for this profile (never a deny entry's).
    rules: withApproved(net.rules, asking.rememberedDestinations(store, profile, notice)),
    socketDir: session.dir,
    ...(on === 'loopback' ? { loopback: { uid: ctx.uid } } : {}),
    ...(resolve ? { resolve } : {}),
    ...(broker ? { credentials: broker } : {}),
    ...(questions ? { questions } : {}),
  });
  cleanup.defer(() => proxy.close());
  return proxy;
}
