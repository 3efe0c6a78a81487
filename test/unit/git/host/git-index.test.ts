// The index reader (git/host/git-index.ts) against indexes real git wrote, in each on-disk version
// (2, 3 with extended flags, 4 with prefix-compressed paths), then against hostile ones: truncated,
// inconsistent, or claiming content it does not have.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isIndexFormatError, queryIndex, verifyTracked } from '../../../../src/git/host/git-index.js';
import { makeTempDir, writeTree } from '../../../helpers/tmp.js';

function git(cwd: string, ...args: string[]): string {
  const r = spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A repository with names that exercise the format: shared prefixes, UTF-8, a name over 4095 bytes. */
function makeRepo(version: 2 | 3 | 4): { dir: string; index: Buffer } {
  const dir = makeTempDir('sbx-gitidx-');
  git(dir, 'init', '-q');
  writeTree(dir, {
    'src/secrets.ts': 'export const x = 1;\n',
    'src/secrets.test.ts': 'test\n',
    'src/secretsmanager/index.ts': 'y\n',
    'password-policy.md': '# rules\n',
    'clé/パスワード.txt': 'z\n',
    'ignored-later.txt': 'w\n',
  });
  git(dir, 'add', '-A');
  writeFileSync(join(dir, 'intent.txt'), 'i\n');
  // Intent-to-add needs the extended flags of version 3 (git then writes 3 at least).
  if (version >= 3) git(dir, 'add', '-N', 'intent.txt');
  git(dir, 'update-index', '--index-version', String(version));
  if (version >= 3) git(dir, 'update-index', '--skip-worktree', 'ignored-later.txt');
  return { dir, index: readFileSync(join(dir, '.git', 'index')) };
}

describe.each([2, 3, 4] as const)('index version %i written by git', (version) => {
  it('finds tracked files with their blob ids, and every entry below a directory', () => {
    const { dir, index } = makeRepo(version);
    expect(index.readUInt32BE(4)).toBe(version);
    const files = new Set(['src/secrets.ts', 'clé/パスワード.txt', 'src/secret', 'missing', 'src']);
    const answer = queryIndex(index, { files, dirs: ['src', 'clé', 'none'] });
    const blob = (path: string) => git(dir, 'rev-parse', `:${path}`).trim();
    expect([...answer.files.keys()].sort()).toEqual(['clé/パスワード.txt', 'src/secrets.ts']);
    const oid = blob('src/secrets.ts');
    expect(answer.files.get('src/secrets.ts')).toEqual({ path: 'src/secrets.ts', oid, mode: 0o100644, size: 20 });
    const below = answer.dirs.get('src')!.map((e) => e.path);
    expect(below).toEqual(['src/secrets.test.ts', 'src/secrets.ts', 'src/secretsmanager/index.ts']);
    expect(answer.dirs.get('clé')!.map((e) => e.path)).toEqual(['clé/パスワード.txt']);
    expect(answer.dirs.get('none')).toEqual([]);
  });

  it('verifies a tracked file by content: unchanged yes, edited or emptied no', () => {
    const { dir, index } = makeRepo(version);
    const entry = queryIndex(index, { files: new Set(['src/secrets.ts']), dirs: [] }).files.get('src/secrets.ts')!;
    expect(verifyTracked(join(dir, 'src/secrets.ts'), entry)).toBe(true);
    writeFileSync(join(dir, 'src/secrets.ts'), 'export const x = 2;\n');
    expect(verifyTracked(join(dir, 'src/secrets.ts'), entry)).toBe(false);
    writeFileSync(join(dir, 'src/secrets.ts'), '');
    expect(verifyTracked(join(dir, 'src/secrets.ts'), entry)).toBe(false);
  });

  it('leaves out intent-to-add entries (git add -N: no content in the store)', () => {
    const { index } = makeRepo(version);
    expect(queryIndex(index, { files: new Set(['intent.txt']), dirs: [] }).files.size).toBe(0);
  });

  it('every truncation of the index is refused, never read past', () => {
    const { index } = makeRepo(version);
    const query = { files: new Set(['password-policy.md', 'src/secrets.ts']), dirs: ['src'] };
    const full = queryIndex(index, query);
    expect(full.files.size).toBe(2);
    for (let cut = 0; cut < index.length - 20; cut += 7) {
      let answer: ReturnType<typeof queryIndex>;
      try {
        answer = queryIndex(index.subarray(0, cut), query);
      } catch (error) {
        expect(isIndexFormatError(error), String(error)).toBe(true);
        continue;
      }
      // A cut inside the extensions or the checksum leaves every entry whole.
      expect(answer).toEqual(full);
    }
  });
});

describe('index names of 4095 bytes and more (the flags hold 0xFFF)', () => {
  it.each([2, 4] as const)('version %i', (version) => {
    const dir = makeTempDir('sbx-gitidx-');
    git(dir, 'init', '-q');
    // Longer than PATH_MAX: staged without a file (the index holds whatever it is given).
    const name = Array.from({ length: 20 }, (_, i) => String.fromCharCode(97 + i).repeat(250)).join('/') + '/x.pem';
    expect(name.length).toBeGreaterThan(4095);
    writeTree(dir, { 'z.pem': 'z\n' });
    git(dir, 'add', '-A');
    const oid = git(dir, 'rev-parse', ':z.pem').trim();
    git(dir, 'update-index', '--add', '--cacheinfo', `100644,${oid},${name}`);
    git(dir, 'update-index', '--index-version', String(version));
    const index = readFileSync(join(dir, '.git', 'index'));
    expect([...queryIndex(index, { files: new Set([name, 'z.pem']), dirs: [] }).files.keys()]).toEqual([name, 'z.pem']);
  });
});

describe('hostile indexes', () => {
  it('refuses a bad signature, an unknown version, an extended flag in version 2', () => {
    const { index } = makeRepo(2);
    const q = { files: new Set(['src/secrets.ts']), dirs: [] };
    const bad = (mutate: (b: Buffer) => void) => {
      const copy = Buffer.from(index);
      mutate(copy);
      return () => queryIndex(copy, q);
    };
    expect(bad((b) => b.write('XXXX', 0))).toThrow(/signature/);
    expect(bad((b) => b.writeUInt32BE(5, 4))).toThrow(/version 5/);
    // The first entry's flags: set the extended bit.
    expect(bad((b) => b.writeUInt16BE(b.readUInt16BE(12 + 60) | 0x4000, 12 + 60))).toThrow(/extended/);
    // A name length that disagrees with the NUL.
    expect(bad((b) => b.writeUInt16BE((b.readUInt16BE(12 + 60) & ~0xfff) | 3, 12 + 60))).toThrow(/name length/);
    // More entries claimed than present.
    expect(bad((b) => b.writeUInt32BE(1_000_000, 8))).toThrow(isIndexFormatErrorMessage);
  });

  it('an entry that names a file with another blob id does not vouch for it (a staged empty stand-in)', () => {
    const { dir } = makeRepo(2);
    writeFileSync(join(dir, '.env'), 'API_KEY=real\n');
    // What `git add -f .env` would stage from inside a sandbox where .env was masked: an empty file.
    const empty = git(dir, 'hash-object', '-w', '--stdin').trim();
    git(dir, 'update-index', '--add', '--cacheinfo', `100644,${empty},.env`);
    const index = readFileSync(join(dir, '.git', 'index'));
    const entry = queryIndex(index, { files: new Set(['.env']), dirs: [] }).files.get('.env')!;
    expect(entry.oid).toBe('e69de29bb2d1d6434b8b29ae775ad8c2e48c5391');
    expect(verifyTracked(join(dir, '.env'), entry)).toBe(false);
    // Control: the real content's id does vouch (that content is then in the object store).
    const real = git(dir, 'hash-object', '.env').trim();
    expect(verifyTracked(join(dir, '.env'), { ...entry, oid: real, size: 13 })).toBe(true);
  });

  it('a symlink, a FIFO or a directory at the path is never verified', () => {
    const { dir, index } = makeRepo(2);
    const entry = queryIndex(index, { files: new Set(['src/secrets.ts']), dirs: [] }).files.get('src/secrets.ts')!;
    spawnSync('ln', ['-s', 'src/secrets.ts', join(dir, 'link')]);
    spawnSync('mkfifo', [join(dir, 'fifo')]);
    expect(verifyTracked(join(dir, 'link'), entry)).toBe(false);
    expect(verifyTracked(join(dir, 'fifo'), entry)).toBe(false);
    expect(verifyTracked(join(dir, 'src'), entry)).toBe(false);
  });
});

const isIndexFormatErrorMessage = /git index:/;
