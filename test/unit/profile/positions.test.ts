// Where each key and list item was written survives parsing, `extends` and the resolved-profile
// cache; a rule's source is located as the flag that set it, the profile line, or the default.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadProfile, type ProfileSearch } from '../../../src/profile/host/load.js';
import { mergeProfiles } from '../../../src/profile/merge.js';
import { parseProfile } from '../../../src/profile/parse.js';
import {
  keySource,
  locateSource,
  locateViolation,
  parentKey,
  ruleKey,
  type KeyPositions,
} from '../../../src/profile/positions.js';
import { BUILTIN_PROFILES_DIR } from '../../helpers/paths.js';
import { makeTempDir, writeTree } from '../../helpers/tmp.js';

const at = (file: string, line: number, col: number) => ({ file, line, col });

function layer(name: string, text: string) {
  const file = `/p/${name}.yaml`;
  return { name, ...parseProfile(text, file) };
}

describe('parseProfile positions', () => {
  it('records each key at the key and each list item at the item, block and flow', () => {
    const text = [
      'mode: read-only', // 1
      '# a comment', // 2
      'commands:', // 3
      '  deny:', // 4
      '    - wget', // 5
      '    - "@network"', // 6
      '  allow:', // 7
      '    git: { block: ["push --force", "reset --hard"] }', // 8
      'writable_roots:', // 9
      '  - { path: /tmp/a, optional: true }', // 10
      'network: { allow: [example.com, "*.npmjs.org"] }', // 11
    ].join('\n');
    const { positions } = parseProfile(text, '/p/x.yaml');
    expect(positions.mode).toEqual(at('/p/x.yaml', 1, 1));
    expect(positions.commands).toEqual(at('/p/x.yaml', 3, 1));
    expect(positions['commands.deny']).toEqual(at('/p/x.yaml', 4, 3));
    expect(positions['commands.deny[0]']).toEqual(at('/p/x.yaml', 5, 7));
    expect(positions['commands.deny[1]']).toEqual(at('/p/x.yaml', 6, 7));
    expect(positions['commands.allow.git.block[1]']).toEqual(at('/p/x.yaml', 8, 36));
    expect(positions['writable_roots[0]']).toEqual(at('/p/x.yaml', 10, 5));
    expect(positions['writable_roots[0].optional']).toEqual(at('/p/x.yaml', 10, 21));
    expect(positions['network.allow[1]']).toEqual(at('/p/x.yaml', 11, 33));
  });

  it('an empty document has no positions', () => {
    expect(parseProfile('# nothing\n', '/p/x.yaml').positions).toEqual({});
  });
});

describe('positions through extends', () => {
  const parent = layer(
    'base',
    'mode: read-only\nlimits:\n  memory: 1GiB\n  pids: 100\ncommands:\n  deny: [curl, wget]\n',
  );
  const child = layer('child', '\n\nmode: workspace-write\nlimits:\n  memory: 2GiB\ncommands:\n  deny: [wget, rm]\n');

  it("a child's scalar is the child's line; what it leaves alone keeps the parent's", () => {
    const { positions } = mergeProfiles([parent, child]);
    expect(positions.mode).toEqual(at('/p/child.yaml', 3, 1));
    expect(positions['limits.memory']).toEqual(at('/p/child.yaml', 5, 3));
    expect(positions['limits.pids']).toEqual(at('/p/base.yaml', 4, 3));
  });

  it("concatenated lists: each item is its own file's line; a duplicate keeps the parent's", () => {
    const { profile, positions } = mergeProfiles([parent, child]);
    expect(profile.commands?.deny).toEqual(['curl', 'wget', 'rm']);
    expect(positions['commands.deny[0]']).toEqual(at('/p/base.yaml', 6, 10));
    expect(positions['commands.deny[1]']).toEqual(at('/p/base.yaml', 6, 16));
    expect(positions['commands.deny[2]']).toEqual(at('/p/child.yaml', 7, 16));
    expect(positions['commands.deny[3]']).toBeUndefined();
  });

  it('a scalar over a map drops what was under it; a normalised value points at its key', () => {
    const a = layer('a', 'network:\n  allow: [example.com]\nseccomp: { preset: default }\n');
    const b = layer('b', 'network: none\nseccomp: strict\n');
    const { profile, positions } = mergeProfiles([a, b]);
    expect(profile.network).toBe('none');
    expect(positions.network).toEqual(at('/p/b.yaml', 1, 1));
    expect(positions['network.allow']).toBeUndefined();
    expect(positions['network.allow[0]']).toBeUndefined();
    expect(profile.seccomp).toEqual({ preset: 'strict' });
    expect(positions['seccomp.preset']).toEqual(at('/p/b.yaml', 2, 1));
  });
});

function search(root: string): ProfileSearch {
  return {
    cwd: root,
    configHome: join(root, 'config'),
    builtinDir: BUILTIN_PROFILES_DIR,
    cacheDir: join(root, 'cache'),
  };
}

describe('positions of resolved profiles', () => {
  it('every list item of every built-in profile points at a line that holds it', async () => {
    const root = makeTempDir();
    for (const name of readdirSync(BUILTIN_PROFILES_DIR).filter((f) => f.endsWith('.yaml'))) {
      const { profile, positions } = await loadProfile(`builtin:${name.slice(0, -5)}`, search(root), 'test');
      const items = Object.entries(positions).filter(([key]) => /\[\d+\]$/.test(key));
      expect(items.length, name).toBeGreaterThan(0);
      for (const [key, p] of items) {
        const value = key
          .split(/\.|(?=\[)/)
          .reduce<unknown>((v, part) => (v as Record<string, unknown>)?.[part.replace(/^\[(\d+)\]$/, '$1')], profile);
        if (typeof value !== 'string') continue;
        const line = readFileSync(p.file, 'utf8').split('\n')[p.line - 1]!;
        expect(line.slice(p.col - 1), `${name} ${key}`).toMatch(
          new RegExp(`^["']?${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
        );
      }
    }
  });

  it("a project profile's lines and its built-in parent's, fresh and from the cache alike", async () => {
    const root = makeTempDir();
    writeTree(root, { 'p.yaml': 'extends: agent\ncommands:\n  deny: [make]\n' });
    const fresh = await loadProfile('./p.yaml', search(root), 'test', { review: true });
    const cached = await loadProfile('./p.yaml', search(root), 'test', { review: true });
    expect(cached.positions).toEqual(fresh.positions);
    const deny = fresh.profile.commands?.deny ?? [];
    expect(deny.at(-1)).toBe('make');
    expect(fresh.positions[`commands.deny[${deny.length - 1}]`]).toEqual(at(join(root, 'p.yaml'), 3, 10));
    expect(fresh.positions['commands.deny[0]']?.file).toBe(join(BUILTIN_PROFILES_DIR, 'agent.yaml'));
    expect(readdirSync(join(root, 'cache')).length).toBe(1);
  });
});

describe('locating a rule', () => {
  const positions: KeyPositions = {
    network: at('/p/x.yaml', 3, 1),
    'limits.memory': at('/p/x.yaml', 8, 3),
    'commands.deny[1]': at('/p/x.yaml', 5, 7),
  };
  const sources = { positions, flags: { 'limits.pids': '--pids' } };

  it('a flag of this run first, then the key or its nearest written parent, else the default', () => {
    expect(locateSource({ key: 'limits.pids' }, sources)).toEqual({ key: '--pids', origin: 'flag' });
    expect(locateSource({ key: 'limits.memory' }, sources)).toEqual({
      key: 'limits.memory',
      ...positions['limits.memory'],
      origin: 'profile',
    });
    expect(locateSource({ key: 'network.allow' }, sources)).toEqual({
      key: 'network.allow',
      ...positions.network,
      origin: 'profile',
    });
    expect(locateSource({ key: 'seccomp' }, sources)).toEqual({ key: 'seccomp', origin: 'default' });
    expect(locateSource({ key: '--bind', origin: 'flag' }, sources)).toEqual({ key: '--bind', origin: 'flag' });
  });

  it('a violation is located by its own key, else by its rule id; a signal has no source', () => {
    const deny = { phase: 'preflight', kind: 'command', rule: 'commands.deny', detail: 'x' } as const;
    expect(locateViolation({ ...deny, source: { key: 'commands.deny[1]' } }, sources).source).toMatchObject({
      line: 5,
      col: 7,
    });
    const offline = { phase: 'preflight', kind: 'command', rule: 'commands.offline', detail: 'x' } as const;
    expect(locateViolation(offline, sources).source).toMatchObject({ key: 'network', line: 3 });
    const signal = { phase: 'runtime', kind: 'signal', rule: 'signal', detail: 'x' } as const;
    expect(locateViolation(signal, sources)).toEqual(signal);
  });

  it('rule ids and message subjects as keys', () => {
    expect(ruleKey('paths.escape')).toBe('commands.paths');
    expect(ruleKey('network.private')).toBe('network.allow_private');
    expect(ruleKey('network.invalid')).toBeUndefined();
    expect(ruleKey('limits.timeout')).toBe('limits.timeout');
    expect(keySource('writable_roots[2]')).toEqual({ key: 'writable_roots[2]' });
    expect(keySource('--bind')).toEqual({ key: '--bind', origin: 'flag' });
    expect(keySource("the git worktree's shared git directory")).toBeUndefined();
    expect(parentKey('commands.allow.git.block[1]')).toBe('commands.allow.git.block');
    expect(parentKey('mode')).toBe('');
  });
});
