// Project profiles are used only when the user trusted that exact chain: the store's pin or a hash
// named for the invocation. Location grants nothing; the cache never stands in for the check.
import { chmodSync, existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lineDiff } from '../../../../src/cli/line-diff.js';
import { loadProfile, type ProfileSearch, type ResolvedProfile } from '../../../../src/profile/host/load.js';
import { changedFiles } from '../../../../src/profile/host/trust.js';
import {
  readTrustStore,
  trustStoreFile,
  writeTrustStore,
  type TrustPin,
} from '../../../../src/profile/host/trust-store.js';
import { BUILTIN_PROFILES_DIR } from '../../../helpers/paths.js';
import { makeTempDir, writeTree } from '../../../helpers/tmp.js';
import { rejection } from '../../../helpers/errors.js';

const UID = process.getuid!();

function setup(
  files: Record<string, string> = { 'repo/.sbx/profiles/default.yaml': 'extends: default\nnetwork: host\n' },
) {
  const root = makeTempDir();
  writeTree(root, { 'repo/src/.keep': '', ...files });
  const storeFile = trustStoreFile(join(root, 'state'));
  const search = (hashes: string[] = [], extra: Partial<ProfileSearch> = {}): ProfileSearch => ({
    cwd: join(root, 'repo/src'),
    configHome: join(root, 'config'),
    builtinDir: BUILTIN_PROFILES_DIR,
    trust: { storeFile, hashes },
    ...extra,
  });
  return { root, storeFile, search };
}

function pin(resolved: ResolvedProfile): TrustPin {
  return {
    hash: resolved.hash,
    files: resolved.chain.map((l) => ({ file: l.real, sha256: l.sha256, text: resolved.texts[l.real] })),
    trustedAt: 'now',
  };
}

function trust(storeFile: string, resolved: ResolvedProfile): void {
  const store = readTrustStore(storeFile, UID);
  writeTrustStore(storeFile, UID, { ...store, pins: { ...store.pins, [resolved.chain.at(-1)!.real]: pin(resolved) } });
}

describe('loadProfile: project profiles need trust', () => {
  it('a never-trusted project profile is PROFILE_UNTRUSTED, naming the file, the hash and the commands', async () => {
    const { root, search } = setup();
    const file = join(root, 'repo/.sbx/profiles/default.yaml');
    const error = await rejection(loadProfile('default', search(), 't'));
    expect(error.code).toBe('PROFILE_UNTRUSTED');
    expect(error.message).toMatch(
      new RegExp(`^project profile "default" \\(${file}\\) is not trusted: .*\\(chain sha256 [0-9a-f]{64}\\)$`),
    );
    expect(error.hint).toMatch(
      /^review it with `sbx profiles show default`, then `sbx trust default` \(CI: --trust-profile [0-9a-f]{64} or SBX_TRUST_PROFILE\); for sbx's own, -p builtin:default$/,
    );
  });

  it('no trust context at all: refused (fail closed)', async () => {
    const { search } = setup();
    const { trust: _none, ...bare } = search();
    expect((await rejection(loadProfile('default', bare, 't'))).code).toBe('PROFILE_UNTRUSTED');
  });

  it('review mode resolves it (to show it), marked untrusted; the hash is what CI names', async () => {
    const { search } = setup();
    const reviewed = await loadProfile('default', search(), 't', { review: true });
    expect(reviewed.trust).toEqual({ kind: 'untrusted' });
    expect(reviewed.shadows).toBe(join(BUILTIN_PROFILES_DIR, 'default.yaml'));
    const ci = await loadProfile('default', search([reviewed.hash]), 't');
    expect(ci.trust).toEqual({ kind: 'trusted', by: 'hash' });
    expect(ci.profile.network).toBe('host');
    const wrong = await rejection(loadProfile('default', search(['0'.repeat(64)]), 't'));
    expect(wrong.code).toBe('PROFILE_UNTRUSTED');
  });

  it('a pin trusts exactly that content: a change refuses it, naming the file and old → new hashes', async () => {
    const { root, storeFile, search } = setup();
    const file = join(root, 'repo/.sbx/profiles/default.yaml');
    const first = await loadProfile('default', search(), 't', { review: true });
    trust(storeFile, first);
    expect((await loadProfile('default', search(), 't')).trust).toEqual({ kind: 'trusted', by: 'pin' });

    writeFileSync(file, 'extends: default\nnetwork: host\nmode: danger\n');
    const error = await rejection(loadProfile('default', search(), 't'));
    expect(error.code).toBe('PROFILE_UNTRUSTED');
    const before = first.chain.at(-1)!.sha256.slice(0, 12);
    expect(error.message).toContain(`changed since you trusted it: ${file} ${before} → `);
    expect(error.message).toContain(`(chain sha256 ${first.hash.slice(0, 12)} → `);
  });

  it('everything a project profile extends is pinned with it', async () => {
    const { root, storeFile, search } = setup({
      'repo/.sbx/profiles/ci.yaml': 'extends: ../base.yaml\n',
      'repo/.sbx/base.yaml': 'extends: default\nnetwork: none\n',
    });
    trust(storeFile, await loadProfile('ci', search(), 't', { review: true }));
    expect((await loadProfile('ci', search(), 't')).profile.network).toBe('none');
    writeFileSync(join(root, 'repo/.sbx/base.yaml'), 'extends: default\nnetwork: host\n');
    const error = await rejection(loadProfile('ci', search(), 't'));
    expect(error.code).toBe('PROFILE_UNTRUSTED');
    expect(error.message).toContain(join(root, 'repo/.sbx/base.yaml'));
  });

  it('a project profile may not make sbx read a file outside its .sbx/ (refused before the file is read)', async () => {
    const { root, search } = setup({
      'repo/.sbx/profiles/ci.yaml': 'extends: ../../../home/secrets.yaml\n',
      'home/secrets.yaml': 'anthropic_api_key: sk-ant-TOPSECRET\n',
    });
    const error = await rejection(loadProfile('ci', search(), 't', { review: true }));
    expect(error.code).toBe('PROFILE_UNSAFE');
    expect(error.message).toBe(
      `project profile ${join(root, 'repo/.sbx/profiles/ci.yaml')} extends ${join(root, 'home/secrets.yaml')}, outside its ${join(root, 'repo/.sbx')}`,
    );
    expect(JSON.stringify(error)).not.toContain('TOPSECRET');
    expect(JSON.stringify(error)).not.toContain('anthropic_api_key');
  });

  it('the cache never bypasses the check: a cached chain whose pin was revoked is refused', async () => {
    const { root, storeFile, search } = setup();
    const cached = search([], { cacheDir: join(root, 'cache') });
    trust(storeFile, await loadProfile('default', cached, 't', { review: true }));
    await loadProfile('default', cached, 't');
    expect(readdirSync(join(root, 'cache'))).toHaveLength(1);
    writeTrustStore(storeFile, UID, { format: 1, pins: {} });
    expect((await rejection(loadProfile('default', cached, 't'))).code).toBe('PROFILE_UNTRUSTED');
  });

  it('the cache never bypasses the owner checks: a cached layer made group-writable is PROFILE_UNSAFE', async () => {
    // The parent is read only through the cache's check of its layers on the second load.
    const { root, search } = setup({
      'config/sbx/profiles/mine.yaml': 'extends: base\n',
      'config/sbx/profiles/base.yaml': 'extends: default\n',
    });
    const cached = search([], { cacheDir: join(root, 'cache') });
    await loadProfile('mine', cached, 't');
    expect(readdirSync(join(root, 'cache'))).toHaveLength(1);
    chmodSync(join(root, 'config/sbx/profiles/base.yaml'), 0o664);
    expect((await rejection(loadProfile('mine', cached, 't'))).code).toBe('PROFILE_UNSAFE');
  });

  it('-p PATH: outside .sbx it needs no pin (owner checks only); inside a .sbx it does', async () => {
    const { root, search } = setup({
      'repo/mine.yaml': 'extends: default\n',
      'repo/.sbx/profiles/x.yaml': 'extends: default\n',
    });
    expect((await loadProfile(join(root, 'repo/mine.yaml'), search(), 't')).trust).toEqual({ kind: 'owner-checked' });
    const error = await rejection(loadProfile(join(root, 'repo/.sbx/profiles/x.yaml'), search(), 't'));
    expect(error.code).toBe('PROFILE_UNTRUSTED');
    expect(error.hint).toContain(`sbx trust ${join(root, 'repo/.sbx/profiles/x.yaml')}`);
  });

  it('a user profile that extends a project profile by name is a project chain', async () => {
    const { search } = setup({
      'repo/.sbx/profiles/base.yaml': 'extends: default\n',
      'config/sbx/profiles/mine.yaml': 'extends: base\n',
    });
    expect((await rejection(loadProfile('mine', search(), 't'))).code).toBe('PROFILE_UNTRUSTED');
  });

  it("a built-in's extends names only built-ins: a project `default` does not slip into `agent`", async () => {
    const { search } = setup();
    const agent = await loadProfile('agent', search(), 't');
    expect(agent.chain.map((l) => l.source)).toEqual(['builtin', 'builtin']);
    expect(agent.trust).toEqual({ kind: 'builtin' });
    expect(agent.shadows).toBeUndefined();
  });

  it('a user profile passes on its owner checks, and reports the built-in it shadows', async () => {
    const { search } = setup({ 'config/sbx/profiles/default.yaml': 'extends: default\n' });
    const resolved = await loadProfile('default', { ...search(), cwd: makeTempDir() }, 't');
    expect([resolved.location.source, resolved.trust.kind, resolved.shadows]).toEqual([
      'user',
      'owner-checked',
      join(BUILTIN_PROFILES_DIR, 'default.yaml'),
    ]);
  });

  it('an unsafe project file is PROFILE_UNSAFE before any trust question', async () => {
    const { root, search } = setup();
    chmodSync(join(root, 'repo/.sbx/profiles/default.yaml'), 0o666);
    expect((await rejection(loadProfile('default', search(), 't'))).code).toBe('PROFILE_UNSAFE');
  });
});

describe('trust store', () => {
  it('written 0600 in a 0700 dir, atomically (no temp file left), read back', () => {
    const root = makeTempDir();
    const file = trustStoreFile(join(root, 'state'));
    expect(readTrustStore(file, UID)).toEqual({ format: 1, pins: {} });
    const p: TrustPin = {
      hash: 'a'.repeat(64),
      files: [{ file: '/x/.sbx/profiles/a.yaml', sha256: 'b'.repeat(64), text: 'x: 1\n' }],
      trustedAt: 'now',
    };
    writeTrustStore(file, UID, { format: 1, pins: { '/x/.sbx/profiles/a.yaml': p } });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(root, 'state/sbx')).mode & 0o777).toBe(0o700);
    expect(readdirSync(join(root, 'state/sbx'))).toEqual(['trust.json']);
    expect(readTrustStore(file, UID).pins['/x/.sbx/profiles/a.yaml']).toEqual(p);
  });

  it('a corrupt, malformed or group-writable store is TRUST_STORE (never "no pins")', () => {
    const root = makeTempDir();
    const file = trustStoreFile(root);
    writeTrustStore(file, UID, { format: 1, pins: {} });
    writeFileSync(file, '{not json');
    expect(() => readTrustStore(file, UID)).toThrow(expect.objectContaining({ code: 'TRUST_STORE' }));
    writeFileSync(file, JSON.stringify({ format: 1, pins: { '/a': { hash: 1 } } }));
    expect(() => readTrustStore(file, UID)).toThrow(
      expect.objectContaining({ code: 'TRUST_STORE', message: expect.stringContaining('malformed') }),
    );
    writeFileSync(file, JSON.stringify({ format: 1, pins: {} }));
    chmodSync(file, 0o620);
    expect(() => readTrustStore(file, UID)).toThrow(
      expect.objectContaining({ code: 'TRUST_STORE', message: expect.stringContaining('writable by group') }),
    );
    chmodSync(file, 0o600);
    chmodSync(join(root, 'sbx'), 0o770);
    expect(() => writeTrustStore(file, UID, { format: 1, pins: {} })).toThrow(
      expect.objectContaining({ code: 'TRUST_STORE' }),
    );
    expect(existsSync(file)).toBe(true);
  });

  it('changedFiles: changed, added and removed files of a chain', () => {
    const chain = [
      { name: 'a', file: '/a', real: '/a', source: 'project' as const, sha256: '1' },
      { name: 'b', file: '/b', real: '/b', source: 'project' as const, sha256: '2' },
    ];
    const p: TrustPin = {
      hash: 'h',
      files: [
        { file: '/a', sha256: '1' },
        { file: '/b', sha256: 'old' },
        { file: '/c', sha256: '3' },
      ],
      trustedAt: 'now',
    };
    expect(changedFiles(chain, p)).toEqual([
      { file: '/b', before: 'old', after: '2' },
      { file: '/c', before: '3' },
    ]);
  });
});

describe('lineDiff', () => {
  it('the lines removed and added, numbered', () => {
    expect(lineDiff('a\nb\nc', 'a\nB\nc\nd')).toEqual(['-   2 b', '+   2 B', '+   4 d']);
    expect(lineDiff('same', 'same')).toEqual([]);
  });
  it('too large to diff: undefined (the caller summarises)', () => {
    const big = Array.from({ length: 3000 }, (_, i) => String(i)).join('\n');
    expect(lineDiff(big, big + '\nx')).toBeUndefined();
  });
});
