// Git's discovery rules as the auditor models them (git/discovery.ts), each case checked against git
// itself where git can say: a directory with that HEAD is, or is not, a git dir to `git rev-parse`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  commonDirTarget,
  gitFileTarget,
  hasGitDirNames,
  type HeadSeen,
  hooksDirOf,
  includeTarget,
  isValidHead,
} from '../../../src/git/discovery.js';
import { makeTempDir } from '../../helpers/tmp.js';

/** Whether git, run inside `dir`, takes `dir` itself for its git dir. */
function gitTakes(dir: string): boolean {
  const r = spawnSync('git', ['rev-parse', '--absolute-git-dir'], {
    cwd: dir,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_CEILING_DIRECTORIES: join(dir, '..'), HOME: dir },
  });
  return r.status === 0 && r.stdout.trim() === dir;
}

describe('isValidHead (validate_headref), against git', () => {
  const sha1 = 'a'.repeat(40);
  it.each<[string, HeadSeen, boolean]>([
    ['a symbolic ref', { kind: 'file', text: 'ref: refs/heads/main\n' }, true],
    ['a symbolic ref with spaces', { kind: 'file', text: 'ref:   refs/heads/x\n' }, true],
    ['a detached id', { kind: 'file', text: `${sha1}\n` }, true],
    ['a ref outside refs/', { kind: 'file', text: 'ref: heads/main\n' }, false],
    ['garbage', { kind: 'file', text: 'hello\n' }, false],
    ['a short id', { kind: 'file', text: 'abc\n' }, false],
    ['a link into refs/', { kind: 'link', target: 'refs/heads/main' }, true],
    ['a link elsewhere', { kind: 'link', target: '/etc/passwd' }, false],
  ])('%s', (_, head, valid) => {
    expect(isValidHead(head)).toBe(valid);
    const dir = makeTempDir('sbx-head-');
    mkdirSync(join(dir, 'objects'));
    mkdirSync(join(dir, 'refs'));
    if (head.kind === 'file') writeFileSync(join(dir, 'HEAD'), head.text);
    if (head.kind === 'link') symlinkSync(head.target, join(dir, 'HEAD'));
    expect(gitTakes(dir)).toBe(valid);
  });

  it('absent or not a file: not a git dir', () => {
    expect(isValidHead({ kind: 'absent' })).toBe(false);
    expect(isValidHead({ kind: 'other' })).toBe(false);
  });
});

describe('hasGitDirNames (is_git_directory)', () => {
  it.each([
    [['HEAD', 'objects', 'refs'], true],
    [['HEAD', 'commondir'], true],
    [['HEAD', 'objects'], false],
    [['objects', 'refs', 'config'], false],
  ])('%j → %s', (names, expected) => {
    expect(hasGitDirNames(new Set(names))).toBe(expected);
  });
});

describe('pointers', () => {
  it('a gitdir: file, relative to its directory', () => {
    expect(gitFileTarget('gitdir: ../.git/modules/x\n', '/w/sub/.git')).toBe('/w/.git/modules/x');
    expect(gitFileTarget('gitdir: /abs/x', '/w/.git')).toBe('/abs/x');
    expect(gitFileTarget('nothing', '/w/.git')).toBeUndefined();
  });

  it('commondir, relative to the git dir', () => {
    expect(commonDirTarget('../..\n', '/w/.git/worktrees/a')).toBe('/w/.git');
    expect(commonDirTarget('/elsewhere\n', '/w/.git')).toBe('/elsewhere');
    expect(commonDirTarget('', '/w/.git')).toBeUndefined();
  });

  it('include.path, relative to the including file, ~ expanded', () => {
    expect(includeTarget('../x.inc', '/w/.git/config', '/home/u')).toBe('/w/x.inc');
    expect(includeTarget('~/y.inc', '/w/.git/config', '/home/u')).toBe('/home/u/y.inc');
    expect(includeTarget('~other/y', '/w/.git/config', '/home/u')).toBeUndefined();
  });

  it('hooks: core.hooksPath from the working tree top, else the common dir', () => {
    expect(hooksDirOf('/w/.git', '/w/.git', undefined, '/h')).toBe('/w/.git/hooks');
    expect(hooksDirOf('/w/.git/worktrees/a', '/w/.git', undefined, '/h')).toBe('/w/.git/hooks');
    expect(hooksDirOf('/w/.git', '/w/.git', '.husky/_', '/h')).toBe('/w/.husky/_');
    expect(hooksDirOf('/bare', '/bare', 'hk', '/h')).toBe('/bare/hk');
    expect(hooksDirOf('/w/.git', '/w/.git', '~/hooks', '/h')).toBe('/h/hooks');
  });
});
