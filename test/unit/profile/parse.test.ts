// Profile text → Profile, or every YAML and schema issue at file:line:col with its key path.
// Each bad fixture (test/fixtures/profiles/bad-*.yaml) states what it expects in its leading comments:
//   # expect: CODE line:col            (required, first line)
//   # path: key.path                   (the key path the message starts with)
//   # message: text                    (the message after "path: ", exactly)
//   # message-includes: text           (a part of it)
//   # details: l:c path, l:c path      (every further issue, in order)
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode, SbxError } from '../../../src/errors.js';
import { formatKeyPath, parseProfile } from '../../../src/profile/parse.js';
import { FIXTURES_DIR } from '../../helpers/paths.js';

const PROFILES_DIR = join(FIXTURES_DIR, 'profiles');

interface Expectation {
  code: string;
  line: number;
  col: number;
  path?: string;
  message?: string;
  messageIncludes?: string;
  details?: { line: number; col: number; path: string }[];
}

function readExpectation(file: string, text: string): Expectation {
  const lines = text.split('\n');
  const first = /^# expect: ([A-Z_]+) (\d+):(\d+)$/.exec(lines[0] ?? '');
  if (!first) throw new Error(`${file}: first line must be "# expect: CODE line:col"`);
  const exp: Expectation = { code: first[1]!, line: Number(first[2]), col: Number(first[3]) };
  for (const line of lines.slice(1)) {
    const m = /^# ([a-z-]+): (.*)$/.exec(line);
    if (!m) continue;
    const [, key, value] = m as unknown as [string, string, string];
    if (key === 'path') exp.path = value;
    else if (key === 'message') exp.message = value;
    else if (key === 'message-includes') exp.messageIncludes = value;
    else if (key === 'details') {
      exp.details = value.split(', ').map((d) => {
        const dm = /^(\d+):(\d+) (.+)$/.exec(d);
        if (!dm) throw new Error(`${file}: bad details entry ${d}`);
        return { line: Number(dm[1]), col: Number(dm[2]), path: dm[3]! };
      });
    }
  }
  return exp;
}

function parseError(text: string, file: string): SbxError {
  try {
    parseProfile(text, file);
  } catch (error) {
    if (error instanceof SbxError) return error;
    throw error;
  }
  throw new Error(`${file} parsed without error`);
}

const badFixtures = readdirSync(PROFILES_DIR)
  .filter((f) => f.startsWith('bad-') && f.endsWith('.yaml'))
  .sort();
const goodFixtures = readdirSync(PROFILES_DIR)
  .filter((f) => f.startsWith('good-') && f.endsWith('.yaml'))
  .sort();

describe('bad fixtures', () => {
  it('exist for every kind of mistake', () => {
    expect(badFixtures).toEqual(
      expect.arrayContaining([
        'bad-unknown-key.yaml',
        'bad-nested-unknown-key.yaml',
        'bad-wrong-type.yaml',
        'bad-enum.yaml',
        'bad-yaml-syntax.yaml',
        'bad-duplicate-key.yaml',
        'bad-env-name.yaml',
        'bad-hostname.yaml',
        'bad-many-issues.yaml',
      ]),
    );
  });

  for (const name of badFixtures) {
    const file = join(PROFILES_DIR, name);
    const text = readFileSync(file, 'utf8');
    const exp = readExpectation(name, text);
    it(`${name}: ${exp.code} at ${exp.line}:${exp.col}`, () => {
      const error = parseError(text, file);
      expect(error.code).toBe(exp.code);
      expect(error.exitCode).toBe(ExitCode.SETUP);
      expect(error.location).toEqual({ file, line: exp.line, col: exp.col });
      expect(error.hint).toEqual(expect.any(String));
      if (exp.path !== undefined)
        expect(
          error.message.startsWith(`${exp.path}: `),
          `message "${error.message}" starts with "${exp.path}: "`,
        ).toBe(true);
      if (exp.message !== undefined) expect(error.message).toBe(`${exp.path}: ${exp.message}`);
      if (exp.messageIncludes !== undefined) expect(error.message).toContain(exp.messageIncludes);
      if (exp.details !== undefined) {
        expect(error.details.map((d) => /^(.*):(\d+):(\d+): ([^:]+):/.exec(d)?.slice(1))).toEqual(
          exp.details.map((d) => [file, String(d.line), String(d.col), d.path]),
        );
      } else {
        expect(error.details).toEqual([]);
      }
    });
  }
});

describe('parseProfile', () => {
  it.each(goodFixtures)('%s parses', (name) => {
    const text = readFileSync(join(PROFILES_DIR, name), 'utf8');
    expect(() => parseProfile(text, name)).not.toThrow();
  });

  it('returns the profile as written (no defaults filled in)', () => {
    const text = readFileSync(join(PROFILES_DIR, 'good-full.yaml'), 'utf8');
    expect(parseProfile(text, 'good-full.yaml').profile).toEqual({
      description: 'a profile that uses every key',
      extends: ['default', './good-minimal.yaml'],
      mode: 'workspace-write',
      workspace: { path: '${cwd}', mountAt: '/work' },
      writable_roots: ['~/.cache/npm', { path: '${home}/.cache/pip', optional: true }],
      read_only: ['/opt/tools', { path: '~/skills', mountAt: '/skills', optional: true }],
      system: ['/usr', '/etc'],
      tmp: { size: '256MiB' },
      env: { keep: ['PATH', 'LC_*'], set: { CI: 'true', NODE_ENV: 'test' } },
      network: 'none',
      user: 'sandbox',
      hostname: 'build-01',
    });
  });

  it('an empty or comment-only document is the empty profile', () => {
    expect(parseProfile('', 'x.yaml').profile).toEqual({});
    expect(parseProfile('# nothing\n', 'x.yaml').profile).toEqual({});
  });

  it('reports every issue at once, sorted by position, the first in the message', () => {
    const text = 'user: admin\nmode: sandboxed\nhostname: "a b"\n';
    const error = parseError(text, 'p.yaml');
    expect(error.code).toBe('PROFILE_INVALID');
    expect(error.location).toEqual({ file: 'p.yaml', line: 1, col: 7 });
    expect(error.message.startsWith('user: ')).toBe(true);
    expect(error.details.map((d) => d.split(': ')[0])).toEqual(['p.yaml:2:7', 'p.yaml:3:11']);
    expect(error.details.map((d) => d.split(': ')[1])).toEqual(['mode', 'hostname']);
  });

  it('reports several unknown keys of one object separately, each at its key', () => {
    const error = parseError('workspace:\n  pth: /x\n  mountat: /y\n', 'p.yaml');
    expect(error.location).toEqual({ file: 'p.yaml', line: 2, col: 3 });
    expect(error.message).toBe('workspace.pth: unknown key "pth" (did you mean "path"?)');
    expect(error.details).toEqual(['p.yaml:3:3: workspace.mountat: unknown key "mountat" (did you mean "mountAt"?)']);
  });

  it('offers no suggestion when no key is close', () => {
    const error = parseError('zzzzzzzz: 1\n', 'p.yaml');
    expect(error.message).toBe('zzzzzzzz: unknown key "zzzzzzzz"');
  });

  it('refuses duplicate keys at any depth', () => {
    const error = parseError('env:\n  keep: [PATH]\n  keep: [HOME]\n', 'p.yaml');
    expect(error.code).toBe('PROFILE_PARSE');
    expect(error.location).toEqual({ file: 'p.yaml', line: 3, col: 3 });
  });

  it('refuses env.set names that bwrap could read as an option, and keep patterns with other characters', () => {
    for (const name of ['--chdir', '-x', 'A=B', 'A B', '1ABC', '']) {
      expect(() => parseProfile(`env:\n  set:\n    "${name}": v\n`, 'p.yaml'), name).toThrow(SbxError);
    }
    for (const pattern of ['LC_$', '-*', 'A.B']) {
      expect(() => parseProfile(`env:\n  keep: ["${pattern}"]\n`, 'p.yaml'), pattern).toThrow(SbxError);
    }
    expect(parseProfile('env:\n  set:\n    _A1: v\n  keep: ["LC_*", "*"]\n', 'p.yaml').profile).toEqual({
      env: { set: { _A1: 'v' }, keep: ['LC_*', '*'] },
    });
  });

  it('accepts valid hostnames and refuses invalid ones', () => {
    for (const ok of ['a', 'sbx', 'build-01', 'A1'])
      expect(parseProfile(`hostname: ${ok}\n`, 'p.yaml').profile.hostname).toBe(ok);
    for (const bad of ['-a', 'a-', 'a.b', 'a_b', 'x'.repeat(64), '""'])
      expect(() => parseProfile(`hostname: ${bad}\n`, 'p.yaml'), bad).toThrow(SbxError);
  });

  it('refuses an empty extends list and empty paths', () => {
    expect(parseError('extends: []\n', 'p.yaml').message.startsWith('extends: ')).toBe(true);
    expect(parseError('read_only: [""]\n', 'p.yaml').message.startsWith('read_only[0]')).toBe(true);
  });
});

describe('formatKeyPath', () => {
  it('joins keys with dots and indexes with brackets', () => {
    expect(formatKeyPath([])).toBe('');
    expect(formatKeyPath(['env', 'keep', 2])).toBe('env.keep[2]');
    expect(formatKeyPath(['read_only', 0, 'mountAt'])).toBe('read_only[0].mountAt');
    expect(formatKeyPath([0])).toBe('[0]');
  });
});
