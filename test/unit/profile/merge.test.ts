// `extends`: the merge rules (pure), then profile lookup, chains, cycles and the resolved-profile
// cache through the real loader on temporary directories.
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listProfiles, loadProfile, locateProfile, type ProfileSearch } from '../../../src/profile/host/load.js';
import { mergeProfiles } from '../../../src/profile/merge.js';
import type { Profile } from '../../../src/profile/schema.js';
import { BUILTIN_PROFILES_DIR } from '../../helpers/paths.js';
import { makeTempDir, writeTree } from '../../helpers/tmp.js';
import { rejection } from '../../helpers/errors.js';

const PARSE_MODULE = '../../../src/profile/parse.js';
const LOAD_MODULE = '../../../src/profile/host/load.js';

function layer(name: string, profile: Profile) {
  return { name, profile };
}

describe('mergeProfiles', () => {
  it('scalars: the later profile wins', () => {
    const { profile } = mergeProfiles([
      layer('base', { mode: 'read-only', network: 'none', hostname: 'base', tmp: { size: '1GiB' } }),
      layer('child', { mode: 'workspace-write', tmp: { size: 64 * 1024 * 1024 } }),
    ]);
    expect(profile).toEqual({
      mode: 'workspace-write',
      network: 'none',
      hostname: 'base',
      tmp: { size: 64 * 1024 * 1024 },
    });
  });

  it('arrays: concatenated parents first, exact duplicates dropped', () => {
    const { profile } = mergeProfiles([
      layer('base', { env: { keep: ['PATH', 'LANG'] }, read_only: ['/opt/a', { path: '/opt/b', optional: true }] }),
      layer('child', {
        env: { keep: ['LANG', 'TERM', 'PATH'] },
        read_only: [{ path: '/opt/b', optional: true }, '/opt/c', { path: '/opt/a' }],
      }),
    ]);
    expect(profile.env?.keep).toEqual(['PATH', 'LANG', 'TERM']);
    // `{ path: '/opt/a' }` is not the same entry as '/opt/a': kept (only exact duplicates go).
    expect(profile.read_only).toEqual(['/opt/a', { path: '/opt/b', optional: true }, '/opt/c', { path: '/opt/a' }]);
  });

  it('a child can add to an inherited list but never remove from it', () => {
    const { profile } = mergeProfiles([layer('base', { system: ['/usr', '/etc'] }), layer('child', { system: [] })]);
    expect(profile.system).toEqual(['/usr', '/etc']);
  });

  it('maps: merged key by key, the child winning per key', () => {
    const { profile } = mergeProfiles([
      layer('base', { env: { set: { A: 'base', B: 'base' } }, workspace: { path: '/w' } }),
      layer('child', { env: { set: { B: 'child', C: 'child' } }, workspace: { mountAt: '/work' } }),
    ]);
    expect(profile.env?.set).toEqual({ A: 'base', B: 'child', C: 'child' });
    expect(profile.workspace).toEqual({ path: '/w', mountAt: '/work' });
  });

  it("a credential's source is replaced whole: never two sources, never an argv extended", () => {
    const { profile } = mergeProfiles([
      layer('base', {
        credentials: {
          A: { from: { env: 'A' }, hosts: ['a.example'] },
          B: { from: { command: ['vault', 'read'] }, hosts: ['b.example'] },
        },
      }),
      layer('child', {
        credentials: {
          A: { from: { file: '/run/a' }, hosts: ['c.example'] },
          B: { from: { command: ['pass', 'b'] }, hosts: ['b.example'], header: 'X-Key' },
        },
      }),
    ]);
    expect(profile.credentials).toEqual({
      A: { from: { file: '/run/a' }, hosts: ['a.example', 'c.example'] },
      B: { from: { command: ['pass', 'b'] }, hosts: ['b.example'], header: 'X-Key' },
    });
  });

  it('description and extends are not inherited', () => {
    const withDescription = mergeProfiles([
      layer('base', { description: 'base', extends: 'root', mode: 'read-only' }),
      layer('child', { description: 'child', extends: 'base' }),
    ]).profile;
    expect(withDescription).toEqual({ description: 'child', mode: 'read-only' });
    const without = mergeProfiles([
      layer('base', { description: 'base', mode: 'read-only' }),
      layer('child', { network: 'host' }),
    ]).profile;
    expect(without).toEqual({ mode: 'read-only', network: 'host' });
    expect('description' in without).toBe(false);
  });

  it('several parents merge left to right, then the child', () => {
    const { profile, origins } = mergeProfiles([
      layer('p1', { mode: 'read-only', hostname: 'p1', env: { keep: ['A'] } }),
      layer('p2', { mode: 'danger', env: { keep: ['B'] } }),
      layer('child', { hostname: 'child', env: { keep: ['C'] } }),
    ]);
    expect(profile).toEqual({ mode: 'danger', hostname: 'child', env: { keep: ['A', 'B', 'C'] } });
    expect(origins).toEqual({ mode: ['p2'], hostname: ['child'], 'env.keep': ['p1', 'p2', 'child'] });
  });

  it('records which profile set each value', () => {
    const { origins } = mergeProfiles([
      layer('base', { network: 'none', env: { set: { A: '1' }, keep: ['PATH'] }, tmp: { size: '1GiB' } }),
      layer('child', { network: 'host', env: { set: { B: '2' }, keep: ['PATH'] } }),
    ]);
    expect(origins).toEqual({
      network: ['child'],
      'env.set.A': ['base'],
      'env.set.B': ['child'],
      'env.keep': ['base', 'child'],
      'tmp.size': ['base'],
    });
  });

  it('does not alias or mutate its inputs', () => {
    const base: Profile = { env: { keep: ['PATH'], set: { A: '1' } }, read_only: [{ path: '/x' }] };
    const snapshot = structuredClone(base);
    const { profile } = mergeProfiles([layer('base', base), layer('child', { env: { keep: ['TERM'] } })]);
    profile.env!.keep!.push('MUTATED');
    profile.env!.set!.A = 'MUTATED';
    expect(base).toEqual(snapshot);
  });
});

describe('loadProfile: where a name is found', () => {
  function setup(): { root: string; search: ProfileSearch } {
    const root = makeTempDir();
    writeTree(root, {
      'builtin/default.yaml': 'description: builtin default\nmode: workspace-write\nenv:\n  keep: [PATH]\n',
      'builtin/only-builtin.yaml': 'description: builtin\n',
      'builtin/shared.yaml': 'hostname: builtin\n',
      'config/sbx/profiles/shared.yaml': 'hostname: user\n',
      'config/sbx/profiles/only-user.yaml': 'hostname: user\n',
      'home/repo/.sbx/profiles/shared.yaml': 'hostname: project-top\n',
      'home/repo/.sbx/profiles/only-project.yaml': 'hostname: project-top\n',
      'home/repo/pkg/.sbx/profiles/only-project.yaml': 'hostname: project-nearest\n',
      'home/repo/pkg/src/.keep': '',
      'elsewhere/shared.yaml': 'hostname: path\n',
    });
    return {
      root,
      search: {
        cwd: join(root, 'home/repo/pkg/src'),
        configHome: join(root, 'config'),
        builtinDir: join(root, 'builtin'),
      },
    };
  }

  it('path > project > user > builtin', async () => {
    const { root, search } = setup();
    const byPath = await loadProfile(join(root, 'elsewhere/shared.yaml'), search, 't');
    expect([byPath.location.source, byPath.profile.hostname]).toEqual(['path', 'path']);
    // Lookup only: whether a project profile may be used is trust.test.ts's subject.
    const shared = await loadProfile('shared', search, 't', { review: true });
    expect(shared.location).toEqual({
      name: 'shared',
      file: join(root, 'home/repo/.sbx/profiles/shared.yaml'),
      source: 'project',
    });
    expect(shared.profile.hostname).toBe('project-top');
    const user = await loadProfile('only-user', search, 't');
    expect(user.location).toEqual({
      name: 'only-user',
      file: join(root, 'config/sbx/profiles/only-user.yaml'),
      source: 'user',
    });
    const builtin = await loadProfile('only-builtin', search, 't');
    expect(builtin.location).toEqual({
      name: 'only-builtin',
      file: join(root, 'builtin/only-builtin.yaml'),
      source: 'builtin',
    });
  });

  it('user beats builtin when no project profile has the name', async () => {
    const { root, search } = setup();
    const fromOutside = { ...search, cwd: join(root, 'elsewhere') };
    const shared = await loadProfile('shared', fromOutside, 't');
    expect([shared.location.source, shared.profile.hostname]).toEqual(['user', 'user']);
  });

  it('project dirs are searched upward from cwd, nearest first', async () => {
    const { root, search } = setup();
    const nearest = await loadProfile('only-project', search, 't', { review: true });
    expect(nearest.location.file).toBe(join(root, 'home/repo/pkg/.sbx/profiles/only-project.yaml'));
    expect(nearest.profile.hostname).toBe('project-nearest');
  });

  it('a relative path is resolved against cwd', async () => {
    const { root, search } = setup();
    const resolved = await loadProfile('../../../../elsewhere/shared.yaml', search, 't');
    expect(resolved.location).toEqual({
      name: '../../../../elsewhere/shared.yaml',
      file: join(root, 'elsewhere/shared.yaml'),
      source: 'path',
    });
  });

  it('lists every visible profile once, with the one --profile NAME would use', () => {
    const { root, search } = setup();
    const list = listProfiles(search);
    expect(list.map((p) => `${p.name}:${p.source}`).sort()).toEqual(
      ['default:builtin', 'only-builtin:builtin', 'only-project:project', 'only-user:user', 'shared:project'].sort(),
    );
    expect(list.find((p) => p.name === 'only-project')!.file).toBe(
      join(root, 'home/repo/pkg/.sbx/profiles/only-project.yaml'),
    );
  });

  it('an unknown name lists the known profiles and suggests the closest', async () => {
    const { search } = setup();
    const error = await rejection(loadProfile('only-usr', search, 't'));
    expect(error.code).toBe('PROFILE_NOT_FOUND');
    expect(error.message).toBe('unknown profile "only-usr" (did you mean "only-user"?)');
    const known = /^known profiles: (.*); or pass a file path$/.exec(error.hint ?? '')?.[1]?.split(', ');
    expect(known?.sort()).toEqual(['default', 'only-builtin', 'only-project', 'only-user', 'shared']);
  });

  it('an unknown name far from every profile gets no suggestion', async () => {
    const { search } = setup();
    expect((await rejection(loadProfile('zzzzzzzzzzzz', search, 't'))).message).toBe('unknown profile "zzzzzzzzzzzz"');
  });

  it('a missing path and an invalid name are PROFILE_NOT_FOUND', async () => {
    const { root, search } = setup();
    expect((await rejection(loadProfile(join(root, 'nope.yaml'), search, 't'))).code).toBe('PROFILE_NOT_FOUND');
    expect((await rejection(loadProfile('bad name', search, 't'))).code).toBe('PROFILE_NOT_FOUND');
    expect(() => locateProfile('.hidden', search)).toThrow(expect.objectContaining({ code: 'PROFILE_NOT_FOUND' }));
  });

  it('the built-in profiles resolve from an empty directory', async () => {
    const empty = makeTempDir();
    const search = { cwd: empty, configHome: empty, builtinDir: BUILTIN_PROFILES_DIR };
    const agent = await loadProfile('agent', search, 't');
    expect(agent.chain.map((c) => `${c.name}:${c.source}`)).toEqual(['default:builtin', 'agent:builtin']);
  });
});

describe('loadProfile: extends', () => {
  it('merges the chain, ancestors first, and names every file in it', async () => {
    const root = makeTempDir();
    writeTree(root, {
      'builtin/base.yaml': 'mode: read-only\nenv:\n  keep: [PATH]\n',
      'builtin/mid.yaml': 'extends: base\nenv:\n  keep: [TERM]\n',
      'builtin/top.yaml': 'description: top\nextends: mid\nnetwork: host\n',
    });
    const search = { cwd: root, configHome: join(root, 'none'), builtinDir: join(root, 'builtin') };
    const top = await loadProfile('top', search, 't');
    expect(top.chain.map((c) => c.name)).toEqual(['base', 'mid', 'top']);
    expect(top.profile).toEqual({
      description: 'top',
      mode: 'read-only',
      network: 'host',
      env: { keep: ['PATH', 'TERM'] },
    });
    expect(top.origins['env.keep']).toEqual(['base', 'mid']);
    expect(top.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a project `default` that extends `default` gets the built-in one', async () => {
    const root = makeTempDir();
    writeTree(root, { 'proj/.sbx/profiles/default.yaml': 'extends: default\nnetwork: host\nenv:\n  keep: [EXTRA]\n' });
    const search = { cwd: join(root, 'proj'), configHome: join(root, 'config'), builtinDir: BUILTIN_PROFILES_DIR };
    const resolved = await loadProfile('default', search, 't', { review: true });
    expect(resolved.chain).toEqual([
      expect.objectContaining({ name: 'default', file: join(BUILTIN_PROFILES_DIR, 'default.yaml'), source: 'builtin' }),
      expect.objectContaining({
        name: 'default',
        file: join(root, 'proj/.sbx/profiles/default.yaml'),
        source: 'project',
      }),
    ]);
    expect(resolved.profile.network).toBe('host');
    expect(resolved.profile.mode).toBe('workspace-write');
    expect(resolved.profile.env?.keep?.at(-1)).toBe('EXTRA');
    expect(resolved.profile.env?.keep).toContain('PATH');
  });

  it('a project default → user default → built-in default chain of same-name extends resolves', async () => {
    const root = makeTempDir();
    writeTree(root, {
      'proj/.sbx/profiles/default.yaml': 'extends: default\nhostname: project\n',
      'config/sbx/profiles/default.yaml': 'extends: default\nnetwork: host\n',
    });
    const search = { cwd: join(root, 'proj'), configHome: join(root, 'config'), builtinDir: BUILTIN_PROFILES_DIR };
    const resolved = await loadProfile('default', search, 't', { review: true });
    expect(resolved.chain.map((c) => c.source)).toEqual(['builtin', 'user', 'project']);
    expect(resolved.profile).toMatchObject({ hostname: 'project', network: 'host', mode: 'workspace-write' });
  });

  it('resolves a relative extends against the file that names it', async () => {
    const root = makeTempDir();
    writeTree(root, {
      'a/profile.yaml': 'extends: ../b/base.yaml\nnetwork: host\n',
      'b/base.yaml': 'mode: read-only\n',
    });
    const search = { cwd: join(root, 'elsewhere'), configHome: root, builtinDir: join(root, 'builtin') };
    const resolved = await loadProfile(join(root, 'a/profile.yaml'), search, 't');
    expect(resolved.chain.map((c) => c.file)).toEqual([join(root, 'b/base.yaml'), join(root, 'a/profile.yaml')]);
    expect(resolved.profile).toEqual({ mode: 'read-only', network: 'host' });
  });

  it('merges a shared ancestor once (diamond), parents left to right', async () => {
    const root = makeTempDir();
    writeTree(root, {
      'p/base.yaml': 'env:\n  keep: [BASE]\nhostname: base\n',
      'p/left.yaml': 'extends: base\nenv:\n  keep: [LEFT]\nhostname: left\n',
      'p/right.yaml': 'extends: base\nenv:\n  keep: [RIGHT]\nhostname: right\n',
      'p/child.yaml': 'extends: [left, right]\n',
    });
    const search = { cwd: root, configHome: root, builtinDir: join(root, 'p') };
    const resolved = await loadProfile('child', search, 't');
    expect(resolved.chain.map((c) => c.name)).toEqual(['base', 'left', 'right', 'child']);
    expect(resolved.profile).toEqual({ env: { keep: ['BASE', 'LEFT', 'RIGHT'] }, hostname: 'right' });
  });

  it('detects a cycle and names it (PROFILE_CYCLE)', async () => {
    const root = makeTempDir();
    writeTree(root, {
      'p/a.yaml': 'extends: b\n',
      'p/b.yaml': 'extends: c\n',
      'p/c.yaml': 'extends: a\n',
    });
    const search = { cwd: root, configHome: root, builtinDir: join(root, 'p') };
    const error = await rejection(loadProfile('a', search, 't'));
    expect(error.code).toBe('PROFILE_CYCLE');
    const cycle = /cycle: (.*)$/.exec(error.message)?.[1]?.split(' → ');
    expect(cycle).toEqual(['a', 'b', 'c', 'a'].map((n) => join(root, `p/${n}.yaml`)));
  });

  it('detects a profile that extends itself by path', async () => {
    const root = makeTempDir();
    writeTree(root, { 'self.yaml': 'extends: ./self.yaml\n' });
    const error = await rejection(
      loadProfile(join(root, 'self.yaml'), { cwd: root, configHome: root, builtinDir: root }, 't'),
    );
    expect(error.code).toBe('PROFILE_CYCLE');
    expect(/cycle: (.*)$/.exec(error.message)?.[1]?.split(' → ')).toEqual([
      join(root, 'self.yaml'),
      join(root, 'self.yaml'),
    ]);
  });

  it('an unknown parent is PROFILE_NOT_FOUND, and a bad parent reports its own file', async () => {
    const root = makeTempDir();
    writeTree(root, { 'p/a.yaml': 'extends: nope\n', 'p/b.yaml': 'extends: bad\n', 'p/bad.yaml': 'netwrok: host\n' });
    const search = { cwd: root, configHome: root, builtinDir: join(root, 'p') };
    expect((await rejection(loadProfile('a', search, 't'))).code).toBe('PROFILE_NOT_FOUND');
    const bad = (await rejection(loadProfile('b', search, 't'))) as { code?: string; location?: { file: string } };
    expect(bad.code).toBe('PROFILE_INVALID');
    expect(bad.location?.file).toBe(join(root, 'p/bad.yaml'));
  });
});

describe('loadProfile: cache', () => {
  afterEach(() => {
    vi.doUnmock(PARSE_MODULE);
    vi.resetModules();
  });

  function setup() {
    const root = makeTempDir();
    writeTree(root, {
      'p/base.yaml': 'mode: read-only\nenv:\n  keep: [PATH]\n',
      // A user profile: a built-in's `extends` only ever names built-ins.
      'config/sbx/profiles/child.yaml': 'extends: base\nnetwork: host\n',
    });
    const search: ProfileSearch = {
      cwd: join(root, 'cwd'),
      configHome: join(root, 'config'),
      builtinDir: join(root, 'p'),
      cacheDir: join(root, 'cache'),
    };
    return { root, search };
  }

  /** A fresh loader (fresh module graph) that counts how often it imports the parser. */
  async function countingLoader(): Promise<{ load: typeof loadProfile; parserImports: () => number }> {
    let imports = 0;
    vi.resetModules();
    vi.doMock(PARSE_MODULE, async (importOriginal) => {
      imports++;
      return importOriginal();
    });
    const { loadProfile: load } = (await import(LOAD_MODULE)) as typeof import('../../../src/profile/host/load.js');
    return { load, parserImports: () => imports };
  }

  it('a second load is served from the cache without importing the parser', async () => {
    const { search } = setup();
    const first = await loadProfile('child', search, 'v1');
    const files = readdirSync(search.cacheDir!);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^[0-9a-f]{64}\.json$/);

    const { load, parserImports } = await countingLoader();
    const second = await load('child', search, 'v1');
    expect(second).toEqual(first);
    expect(parserImports()).toBe(0);
  });

  it('the cache is what is returned (not a re-parse)', async () => {
    const { search } = setup();
    await loadProfile('child', search, 'v1');
    const file = join(search.cacheDir!, readdirSync(search.cacheDir!)[0]!);
    const entry = JSON.parse(readFileSync(file, 'utf8')) as { profile: Profile };
    entry.profile.hostname = 'from-cache';
    writeFileSync(file, JSON.stringify(entry));
    expect((await loadProfile('child', search, 'v1')).profile.hostname).toBe('from-cache');
  });

  it("changing a parent file's content invalidates the entry", async () => {
    const { root, search } = setup();
    const first = await loadProfile('child', search, 'v1');
    writeFileSync(join(root, 'p/base.yaml'), 'mode: workspace-write\nenv:\n  keep: [PATH]\n');

    const { load, parserImports } = await countingLoader();
    const second = await load('child', search, 'v1');
    expect(parserImports()).toBe(1);
    expect(second.profile.mode).toBe('workspace-write');
    expect(second.hash).not.toBe(first.hash);
    // ... and the fresh result is cached in turn.
    const { load: again, parserImports: againImports } = await countingLoader();
    expect((await again('child', search, 'v1')).profile.mode).toBe('workspace-write');
    expect(againImports()).toBe(0);
  });

  it('a new profile shadowing a parent invalidates the entry', async () => {
    const { root, search } = setup();
    await loadProfile('child', search, 'v1');
    writeTree(root, { 'config/sbx/profiles/base.yaml': 'mode: danger\n' });
    const { load, parserImports } = await countingLoader();
    const resolved = await load('child', search, 'v1');
    expect(parserImports()).toBe(1);
    expect(resolved.profile.mode).toBe('danger');
    expect(resolved.chain[0]).toEqual(
      expect.objectContaining({ name: 'base', file: join(root, 'config/sbx/profiles/base.yaml'), source: 'user' }),
    );
  });

  it('an entry from another sbx version is not used', async () => {
    const { search } = setup();
    await loadProfile('child', search, 'v1');
    const { load, parserImports } = await countingLoader();
    await load('child', search, 'v2');
    expect(parserImports()).toBe(1);
  });

  it("another profile's entry copied under this one's name is ignored", async () => {
    const { root, search } = setup();
    writeTree(root, { 'config/sbx/profiles/other.yaml': 'extends: base\nnetwork: none\n' });
    await loadProfile('child', search, 'v1');
    const [childEntry] = readdirSync(search.cacheDir!);
    await loadProfile('other', search, 'v1');
    const otherEntry = readdirSync(search.cacheDir!).find((f) => f !== childEntry)!;
    const cache = (f: string) => join(search.cacheDir!, f);
    writeFileSync(cache(childEntry!), readFileSync(cache(otherEntry)));
    const { load, parserImports } = await countingLoader();
    expect((await load('child', search, 'v1')).profile.network).toBe('host');
    expect(parserImports()).toBe(1);
  });

  it.each([
    ['is not JSON', (file: string) => writeFileSync(file, '{"format": 3, "lay')],
    ['others can write', (file: string) => chmodSync(file, 0o666)],
  ])('an entry that %s is ignored, never an error', async (_, spoil) => {
    const { search } = setup();
    const first = await loadProfile('child', search, 'v1');
    spoil(join(search.cacheDir!, readdirSync(search.cacheDir!)[0]!));
    const { load, parserImports } = await countingLoader();
    expect(await load('child', search, 'v1')).toEqual(first);
    expect(parserImports()).toBe(1);
  });

  it('no cacheDir, no cache file', async () => {
    const { root, search } = setup();
    const { cacheDir: _unused, ...noCache } = search;
    await loadProfile('child', noCache, 'v1');
    expect(existsSync(join(root, 'cache'))).toBe(false);
  });
});
