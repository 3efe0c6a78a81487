// `sbx approvals list|revoke|clear`: the remembered approval answers (commands/host/approval-store.ts), which
// otherwise only a run consults. The store is sbx's state ($XDG_STATE_HOME/sbx/approvals.json): read
// bounded and owner-checked, rewritten atomically under its lock, as a run does.
import { SbxError } from '../errors.js';
import { userDirs } from '../host/invoking-user.js';
import {
  type ApprovalStore,
  type Entry,
  expiryOf,
  forgetDecisions,
  listDecisions,
  openApprovalStore,
} from '../commands/host/approval-store.js';
import { printable } from './printable.js';
import { confirmOnTerminal } from './prompt.js';
import { shellJoin } from './quote.js';

export interface ApprovalsFlags {
  json?: boolean;
  yes?: boolean;
}

/** Shown of a fingerprint; `revoke` takes any unambiguous prefix of at least MIN_PREFIX. */
const SHOWN_FINGERPRINT = 12;
const MIN_PREFIX = 4;

const out = (line: string) => process.stdout.write(`${line}\n`);

function store(): ApprovalStore {
  const uid = process.getuid?.() ?? 0;
  return openApprovalStore({ stateHome: userDirs(process.env).stateHome, uid });
}

/** The command (or, for a network answer, the destination) as answered; from the store, which a command may have named: escaped. */
function commandOf(e: Entry): string {
  if (e.network) return printable(`network ${e.network.host}:${e.network.port}`);
  return e.argv ? printable(shellJoin(e.argv)) : '(not recorded: answered before sbx kept the command)';
}

function answerOf(e: Entry): string {
  return e.decision === 'always' ? 'allow always' : 'deny';
}

function expiryText(e: Entry, nowMs: number): string {
  const at = expiryOf(e);
  if (at === undefined) return 'never';
  const minutes = Math.max(1, Math.ceil((at - nowMs) / 60_000));
  return `${new Date(at).toISOString()} (in ${minutes} min)`;
}

export function listApprovals(flags: ApprovalsFlags, nowMs = Date.now()): void {
  const s = store();
  const entries = listDecisions(s, nowMs);
  if (flags.json) {
    for (const e of entries) {
      const expiry = expiryOf(e);
      out(
        JSON.stringify({
          profile: e.profile,
          fingerprint: e.fingerprint,
          command: e.argv ?? null,
          ...(e.network ? { network: e.network } : {}),
          answer: e.decision,
          answeredAt: new Date(e.atMs).toISOString(),
          expires: expiry === undefined ? null : new Date(expiry).toISOString(),
        }),
      );
    }
    return;
  }
  if (entries.length === 0) {
    out(`sbx: no remembered approval answers (store: ${s.path})`);
    return;
  }
  for (const e of entries) {
    out(
      `${printable(e.profile)}  ${e.fingerprint.slice(0, SHOWN_FINGERPRINT)}  ${answerOf(e)}  expires ${expiryText(e, nowMs)}`,
    );
    out(`  ${commandOf(e)}`);
  }
}

export async function revokeApproval(prefix: string, nowMs = Date.now()): Promise<void> {
  if (!/^[0-9a-f]+$/.test(prefix) || prefix.length < MIN_PREFIX)
    throw new SbxError('USAGE', `approvals revoke ${printable(prefix)}: not a fingerprint prefix`, {
      hint: `give at least ${MIN_PREFIX} hex digits of a fingerprint \`sbx approvals list\` shows`,
    });
  const s = store();
  const matches = listDecisions(s, nowMs).filter((e) => e.fingerprint.startsWith(prefix));
  if (matches.length === 0)
    throw new SbxError('USAGE', `no remembered answer has a fingerprint starting with ${prefix}`, {
      hint: '`sbx approvals list` shows them',
    });
  const fingerprints = new Set(matches.map((e) => e.fingerprint));
  if (fingerprints.size > 1)
    throw new SbxError(
      'USAGE',
      `fingerprint prefix ${prefix} is ambiguous: ${[...fingerprints].map((f) => f.slice(0, SHOWN_FINGERPRINT)).join(', ')}`,
      {
        hint: 'give more digits',
      },
    );
  // The same fingerprint under several profiles is impossible (the profile is hashed into it).
  const gone = await forgetDecisions(s, (e) => fingerprints.has(e.fingerprint), nowMs);
  for (const e of gone) out(`sbx: forgot ${answerOf(e)} for ${printable(e.profile)}: ${commandOf(e)}`);
}

export async function clearApprovals(flags: ApprovalsFlags, nowMs = Date.now()): Promise<void> {
  const s = store();
  const count = listDecisions(s, nowMs).length;
  if (count === 0) {
    out(`sbx: no remembered approval answers (store: ${s.path})`);
    return;
  }
  if (!flags.yes)
    await confirmOnTerminal(
      `sbx: forget all ${count} remembered approval answer${count === 1 ? '' : 's'}?`,
      'sbx approvals clear',
    );
  const gone = await forgetDecisions(s, () => true, nowMs);
  out(`sbx: forgot ${gone.length} remembered approval answer${gone.length === 1 ? '' : 's'}`);
}
