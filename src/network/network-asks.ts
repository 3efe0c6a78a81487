// Asking instead of failing (docs/DESIGN.md, "Asking at the proxy"): which refusals may become a
// question, what the answers are, and what an `always` leaves behind for later runs: one exact
// `host:port` allow entry, per profile, in the user's approvals store (commands/host/approval-store.ts).
// Pure.
import type { EgressDecision, EgressRules, HostPattern } from './egress.js';

/** once: this host and port for the rest of this run; always: and for later runs of this profile; deny: refused for the rest of this run. */
export type NetworkAnswer = 'once' | 'always' | 'deny';

/** What the question is about: the host as the client named it (normal form) and the port. */
export interface NetworkRequest {
  host: string;
  port: number;
}

/**
 * Asks someone outside the sandbox whether the run may reach `request`. Only 'once' and 'always'
 * allow; anything else (a throw, a typo, undefined) refuses. `signal` fires when the question no
 * longer matters (it timed out, the run ended): close whatever asks.
 */
export type NetworkAsker = (
  request: NetworkRequest,
  context: { signal: AbortSignal },
) => NetworkAnswer | Promise<NetworkAnswer>;

/** Long enough for a person to read and answer; a client waiting on its CONNECT usually waits as long. */
export const DEFAULT_QUESTION_TIMEOUT_MS = 120_000;
/** Distinct destinations waiting for an answer at once; more are refused unasked (a sandbox must not flood the asker). */
export const MAX_PENDING_QUESTIONS = 4;
/** Questions one run may ask; past it, destinations not yet answered are refused unasked. */
export const MAX_QUESTIONS_PER_RUN = 20;

/**
 * Whether a refusal may become a question: only a name (or literal) that no allow entry matched. A
 * deny-list hit is the profile's explicit word, and an address refusal (a private, loopback or
 * metadata address) or a malformed destination is not a matter of taste: they stay refusals.
 */
export function isAskable(decision: EgressDecision): boolean {
  return !decision.allowed && decision.rule === 'network.allow';
}

/** The allow entry an `always` stands for: exactly this host, exactly this port. */
export function approvedPattern(request: NetworkRequest): HostPattern {
  const shown = request.host.includes(':') ? `[${request.host}]` : request.host;
  return { text: `${shown}:${request.port}`, kind: 'exact', host: request.host, port: request.port };
}

/** The rules with the remembered `always` answers added to `allow`; the deny list still wins over them (decideHost). */
export function withApproved(rules: EgressRules, approved: readonly NetworkRequest[]): EgressRules {
  if (approved.length === 0) return rules;
  return { ...rules, allow: [...rules.allow, ...approved.map(approvedPattern)] };
}
