// One run's side of asking at the proxy (network/network-asks.ts): the destinations the user answered
// `always` for this profile in earlier runs, and the questions this run asks, each answer written to
// the audit ledger as it comes and an `always` to the user's approvals store (never a project file).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  networkApprovals,
  networkFingerprintOf,
  openApprovalStore,
  recordNetworkApproval,
  type ApprovalStoreContext,
} from '../../commands/host/approval-store.js';
import { appendAuditRecordOrWarn } from '../../report/host/ledger.js';
import type { NetworkAsker, NetworkRequest } from '../network-asks.js';
import { type EgressQuestions, egressQuestions } from './egress-questions.js';

/** Whose store, and the workspace it must lie outside (approval-store.ts). */
export interface RunStore extends ApprovalStoreContext {
  workspace: string;
}

/**
 * The destinations answered `always` for `profile`. None when the store does not exist (a run that
 * never asked creates nothing); a store that cannot vouch for itself (not the user's, writable by
 * others) adds nothing, and the run is told: it fails closed to the profile's own rules.
 */
export function rememberedDestinations(
  store: RunStore,
  profile: string,
  notice: (line: string) => void,
): NetworkRequest[] {
  if (!existsSync(join(store.stateHome, 'sbx', 'approvals.json'))) return [];
  try {
    return networkApprovals(openApprovalStore(store), profile, Date.now());
  } catch (error) {
    notice(`sbx: warning: remembered network answers not used: ${(error as Error).message}`);
    return [];
  }
}

export interface RunQuestionsInit {
  ask: NetworkAsker;
  timeoutMs: number;
  store: RunStore;
  profile: string;
  sessionId: string;
  /** The run's command as the ledger has it (secrets redacted). */
  argv: readonly string[];
  audit: { file: string } | undefined;
  notice: (line: string) => void;
}

export function runQuestions(init: RunQuestionsInit): EgressQuestions {
  const { profile } = init;
  return egressQuestions({
    ask: init.ask,
    timeoutMs: init.timeoutMs,
    notice: init.notice,
    record(request, outcome) {
      if (!init.audit) return;
      appendAuditRecordOrWarn(
        init.audit.file,
        {
          v: 1,
          time: new Date().toISOString(),
          type: 'approval',
          sessionId: init.sessionId,
          profile,
          argv: [...init.argv],
          fingerprint: networkFingerprintOf(profile, request),
          decision: outcome.decision,
          by: outcome.by,
          network: { host: request.host, port: request.port },
        },
        init.notice,
      );
    },
    async remember(request) {
      await recordNetworkApproval(openApprovalStore(init.store), profile, request, Date.now());
    },
  });
}
