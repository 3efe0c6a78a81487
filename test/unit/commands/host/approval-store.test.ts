// The approval store on a real temp directory: fingerprints, "always" for good, "deny" for DENY_TTL_MS
// (by injected clock), refusal of a store others could write or the sandbox could reach, the lock
// (a writer waiting on it keeps the holder's decision; stale locks are broken), and 20 real processes
// recording at once without losing one decision.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { SbxError } from '../../../../src/errors.js';
import {
  type ApprovalStore,
  DENY_TTL_MS,
  STALE_LOCK_MS,
  fingerprintOf,
  lookupDecision,
  networkApprovals,
  networkFingerprintOf,
  openApprovalStore,
  recordDecision,
  recordNetworkApproval,
  stateHomeOf,
} from '../../../../src/commands/host/approval-store.js';
import { REPO_ROOT } from '../../../helpers/paths.js';
import { makeTempDir } from '../../../helpers/tmp.js';
import { sbxErrorOf } from '../../../helpers/errors.js';

const UID = process.getuid!();
const T0 = 1_700_000_000_000;
const FP = fingerprintOf('agent', ['git', 'push', 'origin', 'main']);

function newStore(): ApprovalStore {
  return openApprovalStore({ stateHome: makeTempDir('sbx-state-'), uid: UID, workspace: makeTempDir('sbx-ws-') });
}

function storedDecisions(store: ApprovalStore): unknown[] {
  return (JSON.parse(readFileSync(store.path, 'utf8')) as { decisions: unknown[] }).decisions;
}

describe('fingerprintOf', () => {
  it('is sha256 hex, and separates profile and arguments unambiguously', () => {
    expect(FP).toMatch(/^[0-9a-f]{64}$/);
    expect(fingerprintOf('agent', ['git', 'push'])).toBe(fingerprintOf('agent', ['git', 'push']));
    expect(fingerprintOf('agent', ['git', 'push'])).not.toBe(fingerprintOf('agent', ['git push']));
    expect(fingerprintOf('agent', ['git', 'push'])).not.toBe(fingerprintOf('other', ['git', 'push']));
    expect(fingerprintOf('a', ['b'])).not.toBe(fingerprintOf('a', ['b', '']));
  });
});

describe('stateHomeOf', () => {
  it('uses an absolute XDG_STATE_HOME, else ~/.local/state (a relative one is invalid per the XDG spec)', () => {
    expect(stateHomeOf({ XDG_STATE_HOME: '/s' }, '/home/u')).toBe('/s');
    expect(stateHomeOf({ XDG_STATE_HOME: 'rel' }, '/home/u')).toBe('/home/u/.local/state');
    expect(stateHomeOf({}, '/home/u')).toBe('/home/u/.local/state');
  });
});

describe('openApprovalStore', () => {
  it('creates a 0700 directory and names approvals.json in it', () => {
    const stateHome = join(makeTempDir('sbx-state-'), 'deep', 'state');
    const store = openApprovalStore({ stateHome, uid: UID, workspace: makeTempDir('sbx-ws-') });
    expect(store).toEqual({ path: join(stateHome, 'sbx', 'approvals.json'), uid: UID });
    expect(statSync(join(stateHome, 'sbx')).mode & 0o777).toBe(0o700);
  });

  it('refuses a store inside the workspace, where the sandbox could approve itself', () => {
    const workspace = makeTempDir('sbx-ws-');
    const error = sbxErrorOf(() =>
      openApprovalStore({ stateHome: join(workspace, '.local', 'state'), uid: UID, workspace }),
    );
    expect(error.code).toBe('APPROVAL_DENIED');
    expect(error.message).toMatch(/lies inside the workspace/);
  });

  it('refuses a directory others can write, or another uid owns', () => {
    const stateHome = makeTempDir('sbx-state-');
    mkdirSync(join(stateHome, 'sbx'), { mode: 0o700 });
    chmodSync(join(stateHome, 'sbx'), 0o777);
    expect(sbxErrorOf(() => openApprovalStore({ stateHome, uid: UID, workspace: '/nonexistent' })).message).toMatch(
      /writable by group or others/,
    );
    chmodSync(join(stateHome, 'sbx'), 0o755);
    expect(openApprovalStore({ stateHome, uid: UID, workspace: '/nonexistent' }).uid).toBe(UID);
    expect(sbxErrorOf(() => openApprovalStore({ stateHome, uid: UID + 1, workspace: '/nonexistent' })).message).toMatch(
      /not a directory owned by uid/,
    );
  });
});

describe('lookupDecision / recordDecision', () => {
  it('knows nothing before the first decision (no file yet)', () => {
    const store = newStore();
    expect(lookupDecision(store, 'agent', FP, T0)).toBeUndefined();
    expect(existsSync(store.path)).toBe(false);
  });

  it('"always" persists, for that profile only, and writes a 0600 file', async () => {
    const store = newStore();
    await recordDecision(store, 'agent', FP, 'always', T0);
    expect(lookupDecision(store, 'agent', FP, T0 + 365 * 24 * 3600_000)).toBe('allow');
    expect(lookupDecision(store, 'other', FP, T0)).toBeUndefined();
    expect(lookupDecision(store, 'agent', fingerprintOf('agent', ['git', 'status']), T0)).toBeUndefined();
    expect(statSync(store.path).mode & 0o777).toBe(0o600);
    // A new handle (a later sbx run) reads the same decision.
    expect(lookupDecision({ ...store }, 'agent', FP, T0 + 1)).toBe('allow');
  });

  it('"deny" is auto-denied for DENY_TTL_MS, then asked again', async () => {
    const store = newStore();
    await recordDecision(store, 'agent', FP, 'deny', T0);
    expect(lookupDecision(store, 'agent', FP, T0)).toBe('deny');
    expect(lookupDecision(store, 'agent', FP, T0 + DENY_TTL_MS - 1)).toBe('deny');
    expect(lookupDecision(store, 'agent', FP, T0 + DENY_TTL_MS)).toBeUndefined();
  });

  it('drops expired denials on write, keeps "always", and lets a later answer replace an earlier one', async () => {
    const store = newStore();
    const other = fingerprintOf('agent', ['curl', 'example.com']);
    await recordDecision(store, 'agent', FP, 'deny', T0);
    await recordDecision(store, 'agent', other, 'always', T0);
    await recordDecision(store, 'agent', fingerprintOf('agent', ['ls']), 'deny', T0 + DENY_TTL_MS);
    expect(storedDecisions(store)).toEqual([
      { profile: 'agent', fingerprint: other, decision: 'always', atMs: T0 },
      { profile: 'agent', fingerprint: fingerprintOf('agent', ['ls']), decision: 'deny', atMs: T0 + DENY_TTL_MS },
    ]);
    await recordDecision(store, 'agent', other, 'deny', T0 + DENY_TTL_MS + 1);
    expect(lookupDecision(store, 'agent', other, T0 + DENY_TTL_MS + 2)).toBe('deny');
    expect(storedDecisions(store)).toHaveLength(2);
  });

  it('refuses to trust a store file others can write (it could hold a planted "always")', async () => {
    const store = newStore();
    await recordDecision(store, 'agent', FP, 'always', T0);
    chmodSync(store.path, 0o666);
    const error = sbxErrorOf(() => lookupDecision(store, 'agent', FP, T0));
    expect(error.code).toBe('APPROVAL_DENIED');
    expect(error.hint).toBe(`remove it (rm ${store.path}); sbx will ask again`);
    await expect(recordDecision(store, 'agent', FP, 'always', T0)).rejects.toThrow(/not a private file/);
  });

  it('refuses a corrupt store instead of forgetting it', async () => {
    const store = newStore();
    writeFileSync(store.path, '{"version":1,"decisions":[{"profile":"agent"', { mode: 0o600 });
    expect(sbxErrorOf(() => lookupDecision(store, 'agent', FP, T0)).message).toMatch(/not valid JSON/);
    writeFileSync(store.path, '{"version":2,"decisions":[]}');
    expect(sbxErrorOf(() => lookupDecision(store, 'agent', FP, T0)).message).toMatch(
      /not in the format this sbx writes/,
    );
    await expect(recordDecision(store, 'agent', FP, 'deny', T0)).rejects.toBeInstanceOf(SbxError);
  });
});

describe('the lock', () => {
  it('a writer waits for the holder, then merges over what the holder wrote', async () => {
    const store = newStore();
    const lock = `${store.path}.lock`;
    // Another (live) process holds the lock: this one, standing in for it.
    writeFileSync(lock, `${process.pid} holder`, { flag: 'wx', mode: 0o600 });
    const theirs = fingerprintOf('agent', ['make', 'deploy']);
    const waiting = recordDecision(store, 'agent', FP, 'always', T0);
    let settled = false;
    void waiting.then(() => (settled = true));
    // The holder commits its own decision while the writer waits, then releases.
    await new Promise((r) => setImmediate(r));
    writeFileSync(
      store.path,
      JSON.stringify({
        version: 1,
        decisions: [{ profile: 'agent', fingerprint: theirs, decision: 'deny', atMs: T0 }],
      }),
      { mode: 0o600 },
    );
    expect(settled).toBe(false);
    rmSync(lock);
    await waiting;
    expect(lookupDecision(store, 'agent', theirs, T0)).toBe('deny');
    expect(lookupDecision(store, 'agent', FP, T0)).toBe('allow');
    expect(existsSync(lock)).toBe(false);
  });

  it('breaks a lock older than STALE_LOCK_MS, even of a live pid', async () => {
    const store = newStore();
    const lock = `${store.path}.lock`;
    writeFileSync(lock, `${process.pid} abandoned`, { mode: 0o600 });
    const old = (Date.now() - STALE_LOCK_MS - 1000) / 1000;
    utimesSync(lock, old, old);
    await recordDecision(store, 'agent', FP, 'always', T0);
    expect(lookupDecision(store, 'agent', FP, T0)).toBe('allow');
    expect(readdirSync(join(store.path, '..')).sort()).toEqual(['approvals.json']);
  });

  it('breaks a fresh lock whose holder has exited', async () => {
    const store = newStore();
    const child = spawn(process.execPath, ['-e', '']);
    await once(child, 'exit');
    writeFileSync(`${store.path}.lock`, `${child.pid} crashed`, { mode: 0o600 });
    await recordDecision(store, 'agent', FP, 'deny', T0);
    expect(lookupDecision(store, 'agent', FP, T0)).toBe('deny');
  });

  it('20 processes recording at once: every decision survives', async () => {
    const dir = makeTempDir('sbx-approvals-bundle-');
    const entry = join(dir, 'writer.ts');
    writeFileSync(
      entry,
      [
        `import { openApprovalStore, recordDecision, fingerprintOf } from ${JSON.stringify(join(REPO_ROOT, 'src/commands/host/approval-store.ts'))};`,
        `const [stateHome, workspace, i] = process.argv.slice(2);`,
        `const store = openApprovalStore({ stateHome, workspace, uid: process.getuid() });`,
        `const profile = 'p' + (Number(i) % 3);`,
        `await recordDecision(store, profile, fingerprintOf(profile, ['cmd', i]), Number(i) % 2 ? 'deny' : 'always', ${T0} + Number(i));`,
      ].join('\n'),
    );
    await build({
      entryPoints: [entry],
      outfile: join(dir, 'writer.mjs'),
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      logLevel: 'error',
    });
    const stateHome = makeTempDir('sbx-state-');
    const workspace = makeTempDir('sbx-ws-');
    const N = 20;
    const children = Array.from({ length: N }, (_, i) =>
      spawn(process.execPath, [join(dir, 'writer.mjs'), stateHome, workspace, String(i)], {
        stdio: ['ignore', 'ignore', 'pipe'],
      }),
    );
    const results = await Promise.all(
      children.map(async (child) => {
        let stderr = '';
        child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
        const [code] = (await once(child, 'exit')) as [number];
        return { code, stderr };
      }),
    );
    expect(results).toEqual(Array.from({ length: N }, () => ({ code: 0, stderr: '' })));
    const store = openApprovalStore({ stateHome, workspace, uid: UID });
    for (let i = 0; i < N; i++) {
      expect(
        lookupDecision(store, `p${i % 3}`, fingerprintOf(`p${i % 3}`, ['cmd', String(i)]), T0 + N),
        `writer ${i}`,
      ).toBe(i % 2 ? 'deny' : 'allow');
    }
    expect(storedDecisions(store)).toHaveLength(N);
    expect(readdirSync(join(stateHome, 'sbx'))).toEqual(['approvals.json']);
  });
});

describe('network answers in the store', () => {
  const request = { host: 'registry.example', port: 443 };

  it('an always is kept per profile, host and port, beside the command answers, and never matches a command', async () => {
    const store = newStore();
    await recordDecision(store, 'agent', FP, 'always', T0, ['git', 'push', 'origin', 'main']);
    await recordNetworkApproval(store, 'agent', request, T0);
    await recordNetworkApproval(store, 'agent', request, T0 + 1);
    await recordNetworkApproval(store, 'ci', { host: 'other.example', port: 80 }, T0);
    expect(networkApprovals(store, 'agent', T0 + DENY_TTL_MS * 10)).toEqual([request]);
    expect(networkApprovals(store, 'ci', T0)).toEqual([{ host: 'other.example', port: 80 }]);
    expect(networkApprovals(store, 'default', T0)).toEqual([]);
    // The command answer is untouched and still found; the network entry is one, not two.
    expect(lookupDecision(store, 'agent', FP, T0)).toBe('allow');
    expect(storedDecisions(store)).toHaveLength(3);
    const fingerprint = networkFingerprintOf('agent', request);
    expect(fingerprint).toMatch(/^[0-9a-f]{64}$/);
    // No profile and argv spell it: a command's input always holds a NUL, the network one never.
    expect(fingerprint).not.toBe(fingerprintOf('agent', ['network', 'registry.example', '443']));
    expect(fingerprint).not.toBe(fingerprintOf('', ['network', 'agent', 'registry.example', '443']));
    expect(networkFingerprintOf('agent', { ...request, port: 444 })).not.toBe(fingerprint);
  });

  it('a store whose network entry is malformed is refused, as any entry not in the format', () => {
    const store = newStore();
    const entry = { profile: 'agent', fingerprint: 'f', decision: 'always', atMs: T0, network: { host: 'x', port: 0 } };
    writeFileSync(store.path, JSON.stringify({ version: 1, decisions: [entry] }), { mode: 0o600 });
    expect(sbxErrorOf(() => networkApprovals(store, 'agent', T0)).code).toBe('APPROVAL_DENIED');
  });
});
