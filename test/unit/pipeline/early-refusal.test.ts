// A run refused before its policy exists (an unknown profile, a bad --trust-profile) still has its
// session from the first stage: the ledger record carries the id the error and the report carry, so
// `sbx log --session ID` finds it (issue 23: such records had `sessionId: ''`). Refused before
// anything is probed or spawned: no bwrap needed. The same through the CLI: test/integration/policy/files-secrets-audit.test.ts.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../../src/api.js';
import { readAuditRecords } from '../../../src/report/host/ledger.js';
import { rejection } from '../../helpers/errors.js';
import { makeTempDir } from '../../helpers/tmp.js';
import type { SbxError } from '../../../src/errors.js';

/** A run with a HOME, XDG dirs and ledger of its own; resolves to what it rejected with. */
async function refusedRun(profile: string, env: Record<string, string>) {
  const root = makeTempDir('sbx-early-');
  const file = join(root, 'state', 'audit.jsonl');
  const hostEnv = { HOME: root, PATH: '/usr/bin:/bin', XDG_CONFIG_HOME: join(root, 'config'), ...env };
  const error = (await rejection(
    run({ command: ['true'], profile, cwd: root, hostEnv, audit: { file }, stdio: 'ignore' }),
  )) as SbxError;
  return { error, file };
}

describe('a refusal before the policy stage', () => {
  it.each([
    ['an unknown profile', 'no-such-profile', {}, 'PROFILE_NOT_FOUND'],
    ['a malformed SBX_TRUST_PROFILE', 'default', { SBX_TRUST_PROFILE: 'not-a-hash' }, 'USAGE'],
  ])('%s: its ledger record carries the run’s session id, found by session', async (_, profile, env, code) => {
    const { error, file } = await refusedRun(profile, env);
    expect(error.code).toBe(code);
    const sessionId = error.run?.sessionId ?? '';
    expect(sessionId).toMatch(/^[0-9a-z]+-[0-9a-f]{8}$/);
    const found = readAuditRecords(file, { session: sessionId });
    expect(found).toEqual([
      expect.objectContaining({ type: 'run', sessionId, setBy: 'sbx', error: expect.objectContaining({ code }) }),
    ]);
    // Control: no record of the file is left without a session.
    expect(readAuditRecords(file).map((r) => r.sessionId)).toEqual([sessionId]);
  });
});
