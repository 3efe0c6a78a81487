// The baseline of a run that starts while others write the same trees (git/baseline.ts): each path
// from the oldest live run that covers it, so that what an earlier sandbox planted before this run's
// walk is not taken for "was there before". Snapshots are written by hand.
import { describe, expect, it } from 'vitest';
import { inheritedBaseline } from '../../../src/git/baseline.js';
import { gitStateChanges } from '../../../src/git/changes.js';
import type { GitDirState, GitSnapshot } from '../../../src/git/snapshot.js';

const gitDir = (path: string, programs: string[] = []): GitDirState => ({
  path,
  dev: 1,
  ino: path.length,
  isGitDir: true,
  commonDir: path,
  programs,
});

const snap = (over: Partial<GitSnapshot> = {}): GitSnapshot => ({
  gitDirs: [],
  gitFiles: {},
  includes: {},
  hookDirs: {},
  unchecked: [],
  entries: 0,
  ...over,
});

const W = '/w';
const clean = snap({ gitDirs: [gitDir(`${W}/.git`)] });
const plant = gitDir(`${W}/sub/.git`, ['core.fsmonitor=touch /tmp/m']);
const planted = snap({ gitDirs: [gitDir(`${W}/.git`), plant], entries: 7 });

describe('inheritedBaseline', () => {
  it('with no earlier run, the own walk', () => {
    expect(inheritedBaseline(planted, [])).toBe(planted);
  });

  it("an earlier run's plant in this run's walk is left out: the audit judges it as new", () => {
    const baseline = inheritedBaseline(planted, [{ roots: [W], baseline: clean }]);
    expect(baseline.gitDirs.map((d) => d.path)).toEqual([`${W}/.git`]);
    expect(baseline.entries).toBe(7);
    // The plant re-made by this run after the earlier run's audit removed it: found, disarmed.
    expect(gitStateChanges(baseline, planted, [W]).map((c) => [c.path, c.repair.kind])).toEqual([
      [plant.path, 'disarm'],
    ]);
    // Against its own walk, the same state is no change at all: the hole this closes.
    expect(gitStateChanges(planted, planted, [W])).toEqual([]);
  });

  it("what the earlier run's baseline had and this run's walk lacks is put back in the baseline", () => {
    const pointer = { kind: 'file' as const, dev: 1, ino: 9, mode: 0o644, size: 12, hash: 'h' };
    const earlier = snap({ gitFiles: { [`${W}/lib/.git`]: pointer } });
    expect(inheritedBaseline(snap(), [{ roots: [W], baseline: earlier }]).gitFiles).toEqual({
      [`${W}/lib/.git`]: pointer,
    });
  });

  it('paths outside every earlier run are the own walk; inside, the oldest covering run decides', () => {
    const other = gitDir('/other/.git', ['core.pager=less']);
    const own = snap({ gitDirs: [gitDir(`${W}/.git`, ['alias.x=!x']), other] });
    const oldest = { roots: [`${W}`], baseline: clean };
    const newer = { roots: [`${W}`], baseline: snap({ gitDirs: [gitDir(`${W}/.git`, ['core.editor=vi'])] }) };
    const baseline = inheritedBaseline(own, [oldest, newer]);
    expect(baseline.gitDirs).toEqual([gitDir(`${W}/.git`), other]);
  });

  it('an earlier run on a nested tree covers only that tree', () => {
    const own = snap({ gitDirs: [gitDir(`${W}/.git`, ['core.pager=x']), plant] });
    const baseline = inheritedBaseline(own, [{ roots: [`${W}/sub`], baseline: snap() }]);
    expect(baseline.gitDirs.map((d) => [d.path, d.programs])).toEqual([[`${W}/.git`, ['core.pager=x']]]);
  });
});
