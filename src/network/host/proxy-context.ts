// Per-proxy state shared by the HTTP and SOCKS front ends: the rules, the seams, the timeouts, the
// sockets to end on close(), and the ledger of refusals and connections. One per startEgressProxy()
// call (house rule: no module-level state).
import type { Socket } from 'node:net';
import type { EgressRules } from '../egress.js';
import type { Violation } from '../../policy/violation.js';
import type { AddressPool } from '../address-pool.js';
import type { CredentialBroker } from './credential-broker.js';
import type { EgressQuestions } from './egress-questions.js';

/**
 * How a client reached the proxy: plain HTTP request, HTTP CONNECT, SOCKS5 CONNECT, a connect the
 * judge captured (capture.ts), or a name asked of sbx's DNS (dns-server.ts).
 */
export type Via = 'http' | 'connect' | 'socks' | 'capture' | 'dns';

/** Observability hook. Carries host and port only: never a URL path, query, userinfo or header. */
export type EgressEvent =
  | { kind: 'refused'; via: Via; violation: Violation }
  | { kind: 'failed'; via: Via; host: string; port: number; reason: string }
  | { kind: 'open'; via: Via; host: string; port: number; address: string }
  | { kind: 'close'; via: Via; host: string; port: number; bytesIn: number; bytesOut: number };

export interface EgressTimeouts {
  /** A connection with no traffic either way for this long is ended. */
  idleMs: number;
  /** Time allowed for a client to finish its request head or SOCKS handshake. */
  headMs: number;
  /** Time allowed for a TLS ClientHello to complete once its first byte has arrived. */
  helloMs: number;
  /** Time allowed for each TCP connect to an upstream address. */
  connectMs: number;
  /** Time allowed for name resolution. */
  resolveMs: number;
}

export const DEFAULT_TIMEOUTS: EgressTimeouts = Object.freeze({
  idleMs: 300_000,
  headMs: 30_000,
  helloMs: 10_000,
  connectMs: 10_000,
  resolveMs: 10_000,
});

/** Names refused by DNS that are remembered, so that each is one violation however often it is asked. */
export const MAX_REFUSED_NAMES = 4096;

/** Bytes per destination (host as the client named it, normalised). `count`: connections made. */
export interface DestinationStats {
  host: string;
  port: number;
  count: number;
  /** From the destination to the client. */
  bytesIn: number;
  /** From the client to the destination. */
  bytesOut: number;
}

export interface EgressStats {
  violations: Violation[];
  /** Refusals beyond the first MAX_VIOLATIONS, counted but not kept (a looping client must not exhaust memory). */
  violationsDropped: number;
  connections: DestinationStats[];
}

export const MAX_VIOLATIONS = 1000;

export interface ProxyContext {
  rules: EgressRules;
  resolve: (host: string) => Promise<string[]>;
  connect: (address: string, port: number) => Socket;
  timeouts: EgressTimeouts;
  /** The run's credentials: the hosts whose TLS the proxy terminates, and what it puts in their requests. */
  credentials: CredentialBroker | undefined;
  /** The addresses sbx's DNS handed out this run, and the names they stand for (network/address-pool.ts). */
  pool: AddressPool;
  /** The host's /etc/hosts, read once as the proxy started: address → names (network/hosts-file.ts). */
  hosts: ReadonlyMap<string, readonly string[]>;
  /** Who is asked about a destination no allow entry matched (egress-questions.ts); none: refused as ever. */
  questions: EgressQuestions | undefined;
  readonly closed: boolean;
  /** Record a refusal; returns the violation for the reply text. */
  /** `key`: the profile entry that refused, when the rule id does not name it (EgressDecision). */
  refuse(via: Via, host: string, port: number, rule: string, detail: string, key?: string): Violation;
  /**
   * Record a name refused before any port is known (DNS): once per name for the proxy's life (the
   * first MAX_REFUSED_NAMES names; past them every refusal is recorded, and counted past MAX_VIOLATIONS).
   */
  refuseName(via: Via, host: string, rule: string, detail: string, key?: string): void;
  /** Record a credential refusal (a `credential` violation: `key` is the credential's hosts). */
  refuseCredential(via: Via, host: string, port: number, rule: string, detail: string, key: string): Violation;
  failed(via: Via, host: string, port: number, reason: string): void;
  /** Count an upstream connection's bytes when it closes. discard(): it was refused after all. */
  opened(via: Via, host: string, port: number, address: string, upstream: Socket): { discard(): void };
  /** Remember a socket so close() can end it. */
  track(socket: Socket): void;
}

export interface ProxyState extends ProxyContext {
  stats(): EgressStats;
  /** Destroy every tracked socket; later dials are dropped. */
  shutdown(): void;
}

export function createProxyState(init: {
  rules: EgressRules;
  resolve: (host: string) => Promise<string[]>;
  connect: (address: string, port: number) => Socket;
  timeouts: EgressTimeouts;
  credentials?: CredentialBroker | undefined;
  pool: AddressPool;
  hosts: ReadonlyMap<string, readonly string[]>;
  questions?: EgressQuestions | undefined;
  onEvent: ((event: EgressEvent) => void) | undefined;
}): ProxyState {
  const emit = (event: EgressEvent): void => {
    // A throwing observer must not take a connection (or the proxy) down with it.
    try {
      init.onEvent?.(event);
    } catch {
      /* ignored on purpose */
    }
  };
  const refusals = violationLog(emit);
  const connections = connectionLedger(emit);
  const sockets = socketTracker();
  const refusedNames = new Set<string>();
  return {
    rules: init.rules,
    resolve: init.resolve,
    connect: init.connect,
    timeouts: init.timeouts,
    credentials: init.credentials,
    pool: init.pool,
    hosts: init.hosts,
    questions: init.questions,
    get closed() {
      return sockets.closed;
    },
    refuse: (via, host, port, rule, detail, key) => refusals.refuse('network', via, host, port, rule, detail, key),
    refuseName(via, host, rule, detail, key) {
      if (refusedNames.has(host)) return;
      if (refusedNames.size < MAX_REFUSED_NAMES) refusedNames.add(host);
      refusals.refuse('network', via, host, undefined, rule, detail, key);
    },
    refuseCredential: (via, host, port, rule, detail, key) =>
      refusals.refuse('credential', via, host, port, rule, detail, key),
    failed(via, host, port, reason) {
      emit({ kind: 'failed', via, host, port, reason });
    },
    opened: connections.opened,
    track: sockets.track,
    stats: () => ({ ...refusals.snapshot(), connections: connections.snapshot() }),
    shutdown() {
      init.questions?.close();
      sockets.shutdown();
      connections.destroyLive();
    },
  };
}

/** The refusals, the first MAX_VIOLATIONS kept. */
function violationLog(emit: (event: EgressEvent) => void) {
  const violations: Violation[] = [];
  let violationsDropped = 0;
  return {
    refuse(
      kind: 'network' | 'credential',
      via: Via,
      host: string,
      port: number | undefined,
      rule: string,
      detail: string,
      key?: string,
    ): Violation {
      const source = key ? { source: { key } } : {};
      const at = port === undefined ? {} : { port };
      const violation: Violation = { phase: 'runtime', kind, rule, detail, host, ...at, ...source };
      if (violations.length < MAX_VIOLATIONS) violations.push(violation);
      else violationsDropped++;
      emit({ kind: 'refused', via, violation });
      return violation;
    },
    snapshot: (): Pick<EgressStats, 'violations' | 'violationsDropped'> => ({
      violations: [...violations],
      violationsDropped,
    }),
  };
}

/** Adds one destination's counts into `into`, keyed by host and port. */
function addStats(into: Map<string, DestinationStats>, d: DestinationStats): void {
  const key = `${d.host} ${d.port}`;
  const entry = into.get(key) ?? { host: d.host, port: d.port, count: 0, bytesIn: 0, bytesOut: 0 };
  entry.count += d.count;
  entry.bytesIn += d.bytesIn;
  entry.bytesOut += d.bytesOut;
  into.set(key, entry);
}

/** Bytes per destination: the connections that closed, and the live ones as they stand. */
function connectionLedger(emit: (event: EgressEvent) => void) {
  const done = new Map<string, DestinationStats>();
  const live = new Set<{ host: string; port: number; upstream: Socket }>();
  const liveStats = (l: { host: string; port: number; upstream: Socket }): DestinationStats => ({
    host: l.host,
    port: l.port,
    count: 1,
    bytesIn: l.upstream.bytesRead,
    bytesOut: l.upstream.bytesWritten,
  });
  return {
    opened(via: Via, host: string, port: number, address: string, upstream: Socket): { discard(): void } {
      const record = { host, port, upstream };
      let discarded = false;
      live.add(record);
      emit({ kind: 'open', via, host, port, address });
      upstream.once('close', () => {
        live.delete(record);
        if (discarded) return;
        const closed = liveStats(record);
        addStats(done, closed);
        emit({ kind: 'close', via, host, port, bytesIn: closed.bytesIn, bytesOut: closed.bytesOut });
      });
      return {
        discard() {
          discarded = true;
          live.delete(record);
        },
      };
    },
    snapshot(): DestinationStats[] {
      const all = new Map<string, DestinationStats>();
      for (const d of done.values()) addStats(all, d);
      for (const l of live) addStats(all, liveStats(l));
      return [...all.values()];
    },
    destroyLive(): void {
      for (const l of live) l.upstream.destroy();
    },
  };
}

/** The client sockets to end on shutdown; once shut, a new one is destroyed at once. */
function socketTracker() {
  const sockets = new Set<Socket>();
  let closed = false;
  return {
    get closed() {
      return closed;
    },
    track(socket: Socket): void {
      if (closed) {
        socket.destroy();
        return;
      }
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    },
    shutdown(): void {
      closed = true;
      for (const s of sockets) s.destroy();
    },
  };
}
