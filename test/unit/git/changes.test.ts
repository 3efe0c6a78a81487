// The auditor's verdicts (git/changes.ts): which differences between two snapshots a later host git
// would act on, and the repair each gets. Snapshots are written by hand: the walker is tested apart.
import { describe, expect, it } from 'vitest';
import { gitStateChanges } from '../../../src/git/changes.js';
import type { FileState, GitDirState, GitSnapshot } from '../../../src/git/snapshot.js';

let ino = 100;
const file = (text: string, mode = 0o644): FileState => ({
  kind: 'file',
  dev: 1,
  ino: ino++,
  mode,
  size: text.length,
  hash: `h:${text}`,
  bytes: new TextEncoder().encode(text),
});

function gitDir(path: string, over: Partial<GitDirState> = {}): GitDirState {
  return {
    path,
    dev: 1,
    ino: path.length,
    isGitDir: true,
    head: file('ref: refs/heads/main\n'),
    commonDir: path,
    programs: [],
    hooksDir: `${path}/hooks`,
    ...over,
  };
}

function snap(over: Partial<GitSnapshot> = {}): GitSnapshot {
  return { gitDirs: [], gitFiles: {}, includes: {}, hookDirs: {}, unchecked: [], entries: 0, ...over };
}

const W = '/w';
const base = gitDir(`${W}/.git`, { config: file('[core]\n') });
const hooks = { [`${W}/.git/hooks`]: { present: true, entries: {} } };

describe('gitStateChanges', () => {
  it('nothing changed: nothing to say', () => {
    const s = snap({ gitDirs: [base], hookDirs: hooks });
    expect(gitStateChanges(s, s, [W])).toEqual([]);
  });

  it('a new git dir naming a program is disarmed; a plain one (git clone) is left', () => {
    const before = snap({ gitDirs: [base] });
    const evil = gitDir(`${W}/node_modules/x/.git`, { programs: ['core.fsmonitor=touch /tmp/m'] });
    const clone = gitDir(`${W}/vendor/y/.git`);
    const after = snap({ gitDirs: [base, evil, clone] });
    expect(gitStateChanges(before, after, [W])).toEqual([
      {
        path: evil.path,
        what: 'new git dir that names programs: core.fsmonitor=touch /tmp/m',
        repair: { kind: 'disarm' },
      },
    ]);
  });

  it('a new git dir with a hook, or a commondir pointing at no git dir that was there, is disarmed', () => {
    const before = snap({ gitDirs: [base] });
    const hooked = gitDir(`${W}/.git/modules/m`);
    const redirected = gitDir(`${W}/.git/worktrees/b`, { commonDir: '/elsewhere' });
    const linked = gitDir(`${W}/.git/worktrees/a`, { commonDir: `${W}/.git` });
    const after = snap({
      gitDirs: [base, hooked, redirected, linked],
      hookDirs: { [`${W}/.git/modules/m/hooks`]: { present: true, entries: { 'post-checkout': file('#!/bin/sh') } } },
    });
    expect(gitStateChanges(before, after, [W]).map((c) => [c.path, c.repair.kind])).toEqual([
      [redirected.path, 'disarm'],
      [hooked.path, 'disarm'],
    ]);
  });

  it('the workspace root made a git dir: its HEAD is quarantined, and the real HEAD put back', () => {
    const before = snap({ gitDirs: [base] });
    const root = gitDir(W, { programs: ['core.worktree=/w', 'core.fsmonitor=x'] });
    const broken = { ...base, isGitDir: false, head: undefined };
    const changes = gitStateChanges(before, snap({ gitDirs: [broken, root] }), [W]);
    expect(changes).toEqual([
      {
        path: `${W}/.git/HEAD`,
        what: expect.stringMatching(/no longer a valid HEAD/),
        repair: { kind: 'restore', state: base.head },
      },
      {
        path: `${W}/HEAD`,
        what: expect.stringMatching(/^new git dir that names programs/),
        repair: { kind: 'quarantine' },
      },
    ]);
  });

  it('a directory made a git dir by a valid HEAD, its config there before: judged as a new git dir', () => {
    const dormant = gitDir(`${W}/old`, { isGitDir: false, programs: ['core.fsmonitor=x'] });
    const woken = { ...dormant, isGitDir: true };
    expect(gitStateChanges(snap({ gitDirs: [base, dormant] }), snap({ gitDirs: [base, woken] }), [W])).toEqual([
      { path: `${W}/old`, what: 'new git dir that names programs: core.fsmonitor=x', repair: { kind: 'disarm' } },
    ]);
  });

  it('a config edit that adds a program entry is reverted; one that adds none (git remote add) is not', () => {
    const before = snap({ gitDirs: [base] });
    const remote = { ...base, config: file('[core]\n[remote "o"]\n\turl = x\n') };
    expect(gitStateChanges(before, snap({ gitDirs: [remote] }), [W])).toEqual([]);
    const evil = { ...base, config: file('[core]\n\tpager = x\n'), programs: ['core.pager=x'] };
    expect(gitStateChanges(before, snap({ gitDirs: [evil] }), [W])).toEqual([
      {
        path: `${W}/.git/config`,
        what: 'program entry added: core.pager=x',
        repair: { kind: 'restore', state: base.config },
      },
    ]);
  });

  it('a created commondir is removed, a rewritten one put back', () => {
    const before = snap({ gitDirs: [base] });
    const added = { ...base, commondir: file('/x\n') };
    expect(gitStateChanges(before, snap({ gitDirs: [added] }), [W])).toEqual([
      { path: `${W}/.git/commondir`, what: 'added', repair: { kind: 'remove' } },
    ]);
    const wt = gitDir(`${W}/.git/worktrees/a`, { commondir: file('../..\n'), commonDir: `${W}/.git` });
    const moved = { ...wt, commondir: file('/evil\n'), commonDir: '/evil' };
    expect(gitStateChanges(snap({ gitDirs: [base, wt] }), snap({ gitDirs: [base, moved] }), [W])).toEqual([
      { path: `${W}/.git/worktrees/a/commondir`, what: 'rewritten', repair: { kind: 'restore', state: wt.commondir } },
    ]);
  });

  it('hooks: an added one removed, a rewritten one put back, samples ignored, a new hooks dir quarantined', () => {
    const pre = file('#!/bin/sh\nexit 0\n', 0o755);
    const before = snap({
      gitDirs: [base],
      hookDirs: { [`${W}/.git/hooks`]: { present: true, entries: { 'pre-commit': pre } } },
    });
    const after = snap({
      gitDirs: [base],
      hookDirs: {
        [`${W}/.git/hooks`]: {
          present: true,
          entries: {
            'pre-commit': file('#!/bin/sh\nevil\n', 0o755),
            'post-checkout': file('x'),
            'x.sample': file('y'),
          },
        },
      },
    });
    expect(gitStateChanges(before, after, [W])).toEqual([
      { path: `${W}/.git/hooks/post-checkout`, what: 'hook added', repair: { kind: 'remove' } },
      // Set aside, never put back from a snapshot a concurrent run may have written (changes.ts).
      { path: `${W}/.git/hooks/pre-commit`, what: 'hook rewritten', repair: { kind: 'set-aside', state: pre } },
    ]);
    const absent = snap({ hookDirs: { '/w/.husky/_': { present: false, entries: {} } } });
    const made = snap({ hookDirs: { '/w/.husky/_': { present: true, entries: { 'pre-commit': file('x') } } } });
    expect(gitStateChanges(absent, made, [W])).toEqual([
      { path: '/w/.husky/_', what: 'hooks directory added', repair: { kind: 'quarantine' } },
    ]);
  });

  it('a hooks directory replaced by a link: the link goes aside; a new git dir whose hooks are a link is disarmed', () => {
    const dir = `${W}/.git/hooks`;
    const before = snap({ gitDirs: [base], hookDirs: { [dir]: { present: true, entries: {} } } });
    const after = snap({ gitDirs: [base], hookDirs: { [dir]: { present: true, link: '/w/evil', entries: {} } } });
    expect(gitStateChanges(before, after, [W])).toEqual([
      { path: dir, what: 'hooks directory replaced by a link to /w/evil', repair: { kind: 'quarantine' } },
    ]);
    const fresh = gitDir(`${W}/n/.git`);
    const linked = snap({
      gitDirs: [base, fresh],
      hookDirs: { [`${W}/n/.git/hooks`]: { present: true, link: '/x', entries: {} } },
    });
    expect(gitStateChanges(snap({ gitDirs: [base] }), linked, [W])[0]?.what).toBe(
      'new git dir that has a hooks directory that is a link to /x',
    );
  });

  it('an included config file gaining a program entry is put back; created, removed', () => {
    const inc = `${W}/shared.inc`;
    const was = file('[user]\n');
    const before = snap({ includes: { [inc]: { state: was, programs: [] } } });
    const after = snap({ includes: { [inc]: { state: file('[core]\n\teditor = x\n'), programs: ['core.editor=x'] } } });
    expect(gitStateChanges(before, after, [W])).toEqual([
      {
        path: inc,
        what: 'included config: program entry added: core.editor=x',
        repair: { kind: 'restore', state: was },
      },
    ]);
    const none = snap({ includes: { [inc]: { state: null, programs: [] } } });
    expect(gitStateChanges(none, after, [W])[0]?.repair).toEqual({ kind: 'remove' });
  });

  it('a rewritten .git file is put back; a git dir moved (same identity) is not new', () => {
    const ptr = file('gitdir: ../.git/modules/s\n');
    const before = snap({ gitDirs: [base], gitFiles: { [`${W}/s/.git`]: ptr } });
    const moved = { ...gitDir(`${W}/elsewhere/.git`), ino: base.ino, programs: [] };
    const after = snap({ gitDirs: [moved], gitFiles: { [`${W}/s/.git`]: file('gitdir: /evil\n') } });
    expect(gitStateChanges(before, after, [W])).toEqual([
      { path: `${W}/s/.git`, what: 'gitdir pointer rewritten', repair: { kind: 'restore', state: ptr } },
    ]);
  });
});
