// `sbx approvals`: the store lists live answers with their command and expiry, forgets by
// fingerprint under the lock, keeps the others, and refuses a store it cannot vouch for.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import {
  type ApprovalStore,
  DENY_TTL_MS,
  expiryOf,
  fingerprintOf,
  forgetDecisions,
  listDecisions,
  lookupDecision,
  networkApprovals,
  networkFingerprintOf,
  openApprovalStore,
  recordDecision,
  recordNetworkApproval,
} from '../../../src/commands/host/approval-store.js';
import { listApprovals, revokeApproval } from '../../../src/cli/approvals-command.js';
import { sbxErrorOf } from '../../helpers/errors.js';
import { makeTempDir } from '../../helpers/tmp.js';

const UID = process.getuid!();
const T0 = 1_700_000_000_000;
const PUSH = ['git', 'push', 'origin', 'main'];
const RM = ['rm', '-rf', 'build'];

async function filled(): Promise<ApprovalStore> {
  const store = openApprovalStore({ stateHome: makeTempDir('sbx-state-'), uid: UID });
  await recordDecision(store, 'agent', fingerprintOf('agent', PUSH), 'always', T0, PUSH);
  await recordDecision(store, 'agent', fingerprintOf('agent', RM), 'deny', T0 + 1, RM);
  return store;
}

describe('listDecisions / forgetDecisions', () => {
  it('lists each live answer with its command; a denial expires after DENY_TTL_MS, "always" never', async () => {
    const store = await filled();
    const live = listDecisions(store, T0 + 10);
    expect(live.map((e) => [e.profile, e.decision, e.argv])).toEqual([
      ['agent', 'always', PUSH],
      ['agent', 'deny', RM],
    ]);
    expect(expiryOf(live[0]!)).toBeUndefined();
    expect(expiryOf(live[1]!)).toBe(T0 + 1 + DENY_TTL_MS);
    expect(listDecisions(store, T0 + 1 + DENY_TTL_MS).map((e) => e.decision)).toEqual(['always']);
  });

  it('forgets only the matching answer (the next run asks again) and rewrites the file privately', async () => {
    const store = await filled();
    const fp = fingerprintOf('agent', PUSH);
    const gone = await forgetDecisions(store, (e) => e.fingerprint.startsWith(fp.slice(0, 8)), T0 + 10);
    expect(gone.map((e) => e.argv)).toEqual([PUSH]);
    expect(lookupDecision(store, 'agent', fp, T0 + 10)).toBeUndefined();
    expect(lookupDecision(store, 'agent', fingerprintOf('agent', RM), T0 + 10)).toBe('deny');
    expect(statSync(store.path).mode & 0o777).toBe(0o600);
    expect(await forgetDecisions(store, () => true, T0 + 10)).toHaveLength(1);
    expect(listDecisions(store, T0 + 10)).toEqual([]);
  });

  it('entries written before the command was kept still list (without it)', async () => {
    const store = await filled();
    const doc = JSON.parse(readFileSync(store.path, 'utf8'));
    delete doc.decisions[0].argv;
    writeFileSync(store.path, JSON.stringify(doc), { mode: 0o600 });
    expect(listDecisions(store, T0 + 10)[0]!.argv).toBeUndefined();
  });

  it('refuses a store larger than the bound, or with a malformed argv (fail closed)', async () => {
    const store = await filled();
    const doc = JSON.parse(readFileSync(store.path, 'utf8'));
    doc.decisions[0].argv = [1, 2];
    writeFileSync(store.path, JSON.stringify(doc));
    expect(sbxErrorOf(() => listDecisions(store, T0)).code).toBe('APPROVAL_DENIED');
    writeFileSync(store.path, ' '.repeat(4 * 1024 * 1024 + 1));
    expect(sbxErrorOf(() => listDecisions(store, T0)).message).toMatch(/larger than/);
  });
});

describe('sbx approvals list: a network answer', () => {
  it('is listed as the destination it allows, and revoked by its fingerprint like any other', async () => {
    const stateHome = makeTempDir('sbx-state-');
    const store = openApprovalStore({ stateHome, uid: UID });
    const request = { host: 'registry.example', port: 443 };
    await recordNetworkApproval(store, 'agent', request, T0);
    const lines: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    const saved = process.env.XDG_STATE_HOME;
    process.env.XDG_STATE_HOME = stateHome;
    try {
      listApprovals({}, T0 + 10);
      listApprovals({ json: true }, T0 + 10);
      await revokeApproval(networkFingerprintOf('agent', request).slice(0, 8), T0 + 10);
    } finally {
      if (saved === undefined) delete process.env.XDG_STATE_HOME;
      else process.env.XDG_STATE_HOME = saved;
      write.mockRestore();
    }
    expect(lines[0]).toMatch(/^agent {2}[0-9a-f]{12} {2}allow always {2}expires never\n$/);
    expect(lines[1]).toBe('  network registry.example:443\n');
    expect(JSON.parse(lines[2]!)).toMatchObject({ profile: 'agent', answer: 'always', network: request });
    expect(lines[3]).toBe('sbx: forgot allow always for agent: network registry.example:443\n');
    expect(networkApprovals(store, 'agent', T0 + 10)).toEqual([]);
  });
});
