// The walk of a mounted tree (sensitive/host/sensitive-scan.ts) on small real trees: what it tells its
// reader and in what order, a directory that vanishes or turns into a file while it walks, the work
// trees and git files it finds on the way, a hinted directory searched, and across the mounted trees:
// a matched link resolved into another tree, a root nested in another, a tree walked through another
// path, the entry bound. The built-in rules' verdicts on a large tree are in
// test/integration/sensitive/scan.test.ts; git's decisions in test/integration/sensitive/git-aware.test.ts.
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scanMountedTrees, scanSensitiveFiles } from '../../../../src/sensitive/host/sensitive-scan.js';
import type { ScanReader } from '../../../../src/sensitive/scan-result.js';
import { compileSensitiveRules } from '../../../../src/sensitive/sensitive-files.js';
import { makeTempDir, writeTree } from '../../../helpers/tmp.js';

const rules = compileSensitiveRules();

/** A reader that records what it is told, and runs `then` for each report before the scan goes on. */
function recorder(then: (path: string, what: string) => void = () => {}) {
  const reads: [string, string][] = [];
  const read: ScanReader = (path, what) => {
    reads.push([path, what]);
    then(path, what);
  };
  return { reads, read };
}

const paths = (entries: { path: string }[]) => entries.map((e) => e.path);

describe('scanSensitiveFiles: the walk', () => {
  it('tells the reader of each directory it lists, the root first, and of nothing it does not descend', () => {
    const root = makeTempDir('sbx-walk-');
    writeTree(root, { '.env': 'A=1', 'src/app/main.ts': '', 'node_modules/pkg/.env': '', 'outside/.env': '' });
    symlinkSync(join(root, 'outside'), join(root, 'linked'));
    const { reads, read } = recorder();
    const scan = scanSensitiveFiles(root, rules, { read });
    expect(reads[0]).toEqual([root, 'dir']);
    const dirs = reads.filter(([, what]) => what === 'dir').map(([path]) => path);
    expect(dirs.sort()).toEqual([root, join(root, 'outside'), join(root, 'src'), join(root, 'src/app')]);
    expect(paths(scan.masks)).toEqual([join(root, '.env'), join(root, 'outside/.env')]);
    // Entries listed: the root's 5, src's 1, src/app's 1, outside's 1; node_modules and the link are not listed.
    expect(scan.scanned).toBe(8);
  });

  it('a directory removed or replaced by a file after its parent was listed holds nothing to mask', () => {
    const root = makeTempDir('sbx-walk-');
    writeTree(root, { 'gone/.env': '', 'swapped/.env': '', 'kept/.env': '' });
    const { read } = recorder((path, what) => {
      if (what !== 'dir') return;
      if (path === join(root, 'gone')) rmSync(path, { recursive: true });
      if (path === join(root, 'swapped')) {
        rmSync(path, { recursive: true });
        writeFileSync(path, '');
      }
    });
    const scan = scanSensitiveFiles(root, rules, { read });
    expect(paths(scan.masks)).toEqual([join(root, 'kept/.env')]);
    expect(scan.truncated).toBe(false);
  });

  it('a root removed before it is listed throws: nothing below it can be vouched for', () => {
    const root = join(makeTempDir('sbx-walk-'), 'tree');
    mkdirSync(root);
    const { read } = recorder((path) => {
      if (path === root) rmSync(root, { recursive: true });
    });
    expect(() => scanSensitiveFiles(root, rules, { read })).toThrow(/ENOENT/);
  });

  it('finds the repositories on the way: each config a view, a missing hooks directory made and protected, a .git file held', () => {
    const root = makeTempDir('sbx-walk-');
    writeTree(root, {
      '.git/HEAD': 'ref: refs/heads/main\n',
      '.git/config': '[core]\n\tbare = false\n',
      '.git/modules/lib/HEAD': 'ref: refs/heads/main\n',
      '.git/modules/lib/config': '[core]\n\tworktree = ../../../lib\n',
      'lib/.git': 'gitdir: ../.git/modules/lib\n',
      'lib/README': '',
    });
    const { reads, read } = recorder();
    const scan = scanSensitiveFiles(root, rules, { read });
    expect(paths(scan.views)).toEqual([join(root, '.git/config'), join(root, '.git/modules/lib/config')]);
    expect(scan.protect).toEqual([
      join(root, '.git/hooks'),
      join(root, '.git/modules/lib/hooks'),
      join(root, 'lib/.git'),
    ]);
    expect(existsSync(join(root, '.git/hooks'))).toBe(true);
    expect(existsSync(join(root, '.git/modules/lib/hooks'))).toBe(true);
    // Every config whose text decides a view was told to the reader.
    expect(reads).toContainEqual([join(root, '.git/config'), 'file']);
    expect(reads).toContainEqual([join(root, '.git/modules/lib/config'), 'file']);
  });

  it('a hinted directory is searched: its data files are masked, its code and a repository inside it are not', () => {
    const root = makeTempDir('sbx-walk-');
    writeTree(root, {
      'secrets/notes.txt': '',
      'secrets/reader.ts': '',
      'secrets/repo/.git/HEAD': 'ref: refs/heads/main\n',
      'secrets/repo/.git/description': '',
    });
    const scan = scanSensitiveFiles(root, rules);
    expect(paths(scan.masks)).toEqual([join(root, 'secrets/notes.txt')]);
    expect(scan.protect).toEqual([]);
  });

  it('the entry bound counts every listed entry; past it there are no lists at all', () => {
    const root = makeTempDir('sbx-walk-');
    writeTree(root, { 'a/.env': '', 'a/b': '', c: '' });
    // The root's 2 entries and a's 2.
    expect(scanSensitiveFiles(root, rules, { maxEntries: 4 })).toMatchObject({ scanned: 4, truncated: false });
    expect(scanSensitiveFiles(root, rules, { maxEntries: 3 })).toEqual({
      masks: [],
      protect: [],
      views: [],
      unmasked: [],
      links: [],
      scanned: 2,
      truncated: true,
    });
  });
});

describe('scanMountedTrees: every tree a run mounts', () => {
  it('a matched link into another mounted tree masks its target; one leading out of every tree masks nothing', () => {
    const base = makeTempDir('sbx-walk-');
    const [work, data] = [join(base, 'work'), join(base, 'data')];
    writeTree(work, { 'README.md': '' });
    writeTree(data, { 'token.txt': 'secret' });
    writeTree(base, { 'elsewhere/key.txt': 'secret' });
    symlinkSync(join(data, 'token.txt'), join(work, '.env'));
    symlinkSync(join(base, 'elsewhere/key.txt'), join(work, 'id_rsa'));
    const scan = scanMountedTrees([work, data], rules);
    expect(scan.masks).toEqual([{ path: join(data, 'token.txt'), dir: false }]);
  });

  it('a root inside another mounted root is walked once, with it', () => {
    const outer = makeTempDir('sbx-walk-');
    writeTree(outer, { 'inner/.env': '', '.env': '' });
    const both = scanMountedTrees([outer, join(outer, 'inner')], rules);
    const alone = scanMountedTrees([outer], rules);
    expect(both).toEqual(alone);
    expect(paths(both.masks).sort()).toEqual([join(outer, '.env'), join(outer, 'inner/.env')]);
  });

  it('a tree walked through another path (its pin) reports the paths under its root', () => {
    const base = makeTempDir('sbx-walk-');
    const root = join(base, 'tree');
    writeTree(root, { 'config/.env': '', '.git/config': '[user]\n\tname = x\n' });
    symlinkSync(root, join(base, 'via'));
    const scan = scanMountedTrees([root], rules, { walkVia: () => join(base, 'via') });
    expect(paths(scan.masks)).toEqual([join(root, 'config/.env')]);
    expect(paths(scan.views)).toEqual([join(root, '.git/config')]);
    expect(scan.protect).toEqual([join(root, '.git/hooks')]);
  });

  it('a tree past the entry bound refuses the run: masking part of it would be a silent hole', () => {
    const root = makeTempDir('sbx-walk-');
    writeTree(root, { 'a/.env': '', 'b/.env': '' });
    expect(() => scanMountedTrees([root], rules, { maxEntries: 3 })).toThrow(
      expect.objectContaining({ code: 'SENSITIVE_SCAN_LIMIT' }),
    );
    expect(scanMountedTrees([root], rules, { maxEntries: 4 }).scanned).toBe(4);
  });
});
