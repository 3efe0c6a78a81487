// Name → decision → resolution → per-address decision → dial, shared by every front end.
// The rebinding rule: the proxy resolves a name once, checks every address it got, and dials exactly
// those checked addresses by IP literal. Nothing downstream ever resolves the name again (the default
// connect passes a lookup that fails, so a non-literal can never slip through to getaddrinfo).
import { connect as netConnect, type LookupFunction, type Socket } from 'node:net';
import { lookup } from 'node:dns/promises';
import { canonicalIp, decideAddress, decideHost, type EgressDecision, normaliseHost } from '../egress.js';
import type { Violation } from '../../policy/violation.js';
import { carriedInName } from '../credential-scan.js';
import { isAskable } from '../network-asks.js';
import { refuseCarried } from './credential-guard.js';
import type { ProxyContext, Via } from './proxy-context.js';

export type DialResult =
  | { kind: 'connected'; socket: Socket; host: string; address: string; ledger: { discard(): void } }
  | { kind: 'refused'; violation: Violation }
  | { kind: 'failed'; reason: 'unresolvable' | 'unreachable' | 'timeout' | 'closed'; detail: string };

const refuseLookup: LookupFunction = (hostname, _options, callback) => {
  callback(Object.assign(new Error(`refusing to resolve ${hostname} at dial time`), { code: 'ENOTFOUND' }), '', 4);
};

/** The default dialler: a TCP connection to an IP literal, half-close passed through. */
export function connectToAddress(address: string, port: number): Socket {
  return netConnect({ host: address, port, allowHalfOpen: true, noDelay: true, lookup: refuseLookup });
}

/** The default resolver: the system's (getaddrinfo, so /etc/hosts counts), every address. */
export async function resolveSystem(host: string): Promise<string[]> {
  const found = await lookup(host, { all: true, verbatim: true });
  return found.map((a) => a.address);
}

/** A host as it may appear in a violation: printable, bounded. Never a secret: it is only a name. */
export function displayHost(raw: string): string {
  return normaliseHost(raw) ?? raw.replace(/[^\x21-\x7e]/g, '?').slice(0, 255);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function waitConnected(socket: Socket, ms: number): Promise<'connected' | 'timeout' | Error> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish('timeout'), ms);
    const onError = (e: Error): void => finish(e);
    const onConnect = (): void => finish('connected');
    function finish(result: 'connected' | 'timeout' | Error): void {
      clearTimeout(timer);
      socket.off('error', onError);
      socket.off('connect', onConnect);
      // Keep one error listener for the socket's whole life: an unhandled 'error' kills the process.
      socket.on('error', () => socket.destroy());
      if (result !== 'connected') socket.destroy();
      resolve(result);
    }
    socket.once('error', onError);
    socket.once('connect', onConnect);
  });
}

/**
 * The proxy's one decision on a name: every front end's dial (dialChecked) and every DNS answer
 * (dns-server.ts) asks here. A name no allow entry matched is put to the run's asker, when it has one
 * (network-asks.ts): the connection waits for the answer, the others go on, and a refusal's detail
 * says how the question ended. `port` 'any' (DNS, before a connection names a port) asks nothing: such
 * a name resolves, and its connection is asked about with its port. The caller records a refusal.
 */
export async function decideName(ctx: ProxyContext, rawHost: string, port: number | 'any'): Promise<EgressDecision> {
  const byName = decideHost(ctx.rules, rawHost, port);
  if (byName.allowed || !ctx.questions || !isAskable(byName)) return byName;
  if (port === 'any') return { allowed: true };
  const asked = await ctx.questions.settle(normaliseHost(rawHost) as string, port);
  return asked.allowed ? { allowed: true } : { ...byName, detail: `${byName.detail}; ${asked.why}` };
}

export async function dialChecked(ctx: ProxyContext, via: Via, rawHost: string, port: number): Promise<DialResult> {
  const spelled = ctx.credentials ? carriedInName(ctx.credentials.live, rawHost) : undefined;
  if (spelled) {
    const where = { host: displayHost(rawHost), port, plaintext: false };
    return { kind: 'refused', violation: refuseCarried(ctx, via, where, spelled, 'the host name') };
  }
  const byName = await decideName(ctx, rawHost, port);
  if (!byName.allowed)
    return {
      kind: 'refused',
      violation: ctx.refuse(via, displayHost(rawHost), port, byName.rule, byName.detail, byName.key),
    };
  const host = normaliseHost(rawHost) as string; // decideHost refused every host without a normal form
  const literal = canonicalIp(host);
  let addresses: string[];
  if (literal) {
    addresses = [literal];
  } else {
    const found = await withTimeout(
      ctx.resolve(host).catch((e: unknown) => e as Error),
      ctx.timeouts.resolveMs,
    );
    if (found === 'timeout' || found instanceof Error || found.length === 0) {
      const detail = found === 'timeout' ? 'name resolution timed out' : `cannot resolve ${host}`;
      ctx.failed(via, host, port, detail);
      return { kind: 'failed', reason: found === 'timeout' ? 'timeout' : 'unresolvable', detail };
    }
    addresses = found;
  }
  // Every address must pass before any is dialled: a name answering with one public and one private
  // address is a rebinding attempt or a misconfiguration, and either way fails closed.
  const checked: string[] = [];
  for (const a of addresses) {
    const address = canonicalIp(a);
    const byAddress = address
      ? decideAddress(ctx.rules, address, port)
      : { allowed: false as const, rule: 'network.invalid', detail: 'the resolver returned a non-address' };
    if (!byAddress.allowed) {
      const detail = literal ? byAddress.detail : `${host}: ${byAddress.detail}`;
      return { kind: 'refused', violation: ctx.refuse(via, host, port, byAddress.rule, detail, byAddress.key) };
    }
    checked.push(address as string);
  }
  let last = 'unreachable';
  for (const address of checked) {
    if (ctx.closed) return { kind: 'failed', reason: 'closed', detail: 'proxy closed' };
    const socket = ctx.connect(address, port);
    const result = await waitConnected(socket, ctx.timeouts.connectMs);
    if (result === 'connected') {
      if (ctx.closed) {
        socket.destroy();
        return { kind: 'failed', reason: 'closed', detail: 'proxy closed' };
      }
      ctx.track(socket);
      socket.setTimeout(ctx.timeouts.idleMs, () => socket.destroy());
      return { kind: 'connected', socket, host, address, ledger: ctx.opened(via, host, port, address, socket) };
    }
    last = result === 'timeout' ? 'timeout' : ((result as NodeJS.ErrnoException).code ?? 'unreachable');
  }
  const detail = `cannot connect to ${host}:${port} (${last})`;
  ctx.failed(via, host, port, detail);
  return { kind: 'failed', reason: last === 'timeout' ? 'timeout' : 'unreachable', detail };
}
