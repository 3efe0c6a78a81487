// Which directory becomes the workspace when nobody named one (workspace/project-root.ts): the nearest
// parent with a .git that is the user's, never HOME or above it, never a system directory, never
// across a filesystem boundary.
import { describe, expect, it } from 'vitest';
import { chooseProjectRoot, type ParentFact, projectRootCandidates } from '../../../src/workspace/project-root.js';

const HOME = '/home/u';
const mine = { uid: 1000, dirUid: 1000 };

describe('projectRootCandidates', () => {
  it('lists the cwd and its parents below HOME, nearest first', () => {
    expect(projectRootCandidates('/home/u/proj/src/lib', HOME)).toEqual([
      '/home/u/proj/src/lib',
      '/home/u/proj/src',
      '/home/u/proj',
    ]);
  });
  it('is empty at HOME and above it', () => {
    expect(projectRootCandidates(HOME, HOME)).toEqual([]);
    expect(projectRootCandidates('/home', HOME)).toEqual([]);
  });
  it('outside HOME, stops before a system directory', () => {
    expect(projectRootCandidates('/srv/app/x', HOME)).toEqual(['/srv/app/x', '/srv/app']);
    expect(projectRootCandidates('/tmp/w/a', HOME)).toEqual(['/tmp/w/a', '/tmp/w']);
    expect(projectRootCandidates('/etc', HOME)).toEqual([]);
    expect(projectRootCandidates('/', HOME)).toEqual([]);
  });
  it('never reaches a directory that holds HOME', () => {
    expect(projectRootCandidates('/data/home/u', '/data/home/u/x')).toEqual([]);
    expect(projectRootCandidates('/data/a', '/data/home/u')).toEqual(['/data/a']);
  });
});

describe('chooseProjectRoot', () => {
  const facts = (...entries: [string, ParentFact['git']?, number?][]): ParentFact[] =>
    entries.map(([dir, git, dev]) => ({ dir, dev: dev ?? 1, ...(git ? { git } : {}) }));

  it('picks the nearest parent with .git', () => {
    const f = facts(['/home/u/p/a/b'], ['/home/u/p/a'], ['/home/u/p', mine]);
    expect(chooseProjectRoot('/home/u/p/a/b', 1000, f)).toEqual({
      path: '/home/u/p',
      reason: 'the git top level above the current directory',
    });
  });
  it('changes nothing when the cwd is the top level, or there is none', () => {
    expect(chooseProjectRoot('/home/u/p', 1000, facts(['/home/u/p', mine]))).toBeUndefined();
    expect(chooseProjectRoot('/home/u/p/a', 1000, facts(['/home/u/p/a'], ['/home/u/p']))).toBeUndefined();
    expect(chooseProjectRoot('/home/u/p', 1000, [])).toBeUndefined();
  });
  it("refuses someone else's .git, or one in someone else's directory, and looks no further", () => {
    const planted = facts(['/tmp/s/p/a'], ['/tmp/s/p', { uid: 1001, dirUid: 1000 }], ['/tmp/s', mine]);
    expect(chooseProjectRoot('/tmp/s/p/a', 1000, planted)).toBeUndefined();
    expect(
      chooseProjectRoot('/tmp/s/a', 1000, facts(['/tmp/s/a'], ['/tmp/s', { uid: 1000, dirUid: 0 }])),
    ).toBeUndefined();
  });
  it('stops at a filesystem boundary', () => {
    expect(
      chooseProjectRoot('/home/u/p/m', 1000, facts(['/home/u/p/m', undefined, 2], ['/home/u/p', mine, 1])),
    ).toBeUndefined();
  });
  it('trusts only facts that start at the cwd', () => {
    expect(chooseProjectRoot('/home/u/p/a', 1000, facts(['/home/u/p', mine]))).toBeUndefined();
  });
});
