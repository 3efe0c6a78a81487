// The baseline a run's audit compares against when other sbx runs were already writing the same
// trees. A run's own walk before it starts can hold what a concurrent sandbox has planted so far;
// audited against that, the plant would count as "was there before" (kept, or written back after the
// other run's audit removed it). So each path takes its state from the oldest live run that covers
// it: that run's baseline was taken before any sandbox still running could write there (it inherited
// its own the same way). A path no live run covers takes the run's own walk. Pure.
import { isWithin } from '../path-within.js';
import type { GitSnapshot } from './snapshot.js';

/** A run that was already under way, as it registered itself: its trees and its baseline. */
export interface EarlierRun {
  roots: readonly string[];
  baseline: GitSnapshot;
}

type Keyed<T> = Record<string, T>;

/** Whether `run` can speak for `path`: the path lies in its trees, or its baseline names it. */
function covers(run: EarlierRun, path: string, names: (s: GitSnapshot) => ReadonlySet<string>): boolean {
  return run.roots.some((root) => isWithin(path, root)) || names(run.baseline).has(path);
}

/** One keyed part of the snapshot: each path from the oldest run covering it (absent there means absent), else the own walk's. */
function merged<T>(own: GitSnapshot, earlier: readonly EarlierRun[], part: (s: GitSnapshot) => Keyed<T>): Keyed<T> {
  const names = (s: GitSnapshot) => new Set(Object.keys(part(s)));
  const out: Keyed<T> = {};
  const paths = new Set([...Object.keys(part(own)), ...earlier.flatMap((r) => Object.keys(part(r.baseline)))]);
  for (const path of paths) {
    const from = earlier.find((run) => covers(run, path, names));
    const state = from ? part(from.baseline)[path] : part(own)[path];
    if (state !== undefined) out[path] = state;
  }
  return out;
}

/**
 * The baseline for a run whose own walk is `own`, with `earlier` the live runs that started before it,
 * oldest first. Without earlier runs it is `own` itself. What the walk could not read (`unchecked`)
 * and its entry count stay the run's own.
 */
export function inheritedBaseline(own: GitSnapshot, earlier: readonly EarlierRun[]): GitSnapshot {
  if (earlier.length === 0) return own;
  const byPath = (s: GitSnapshot) => Object.fromEntries(s.gitDirs.map((d) => [d.path, d]));
  return {
    gitDirs: Object.values(merged(own, earlier, byPath)),
    gitFiles: merged(own, earlier, (s) => s.gitFiles),
    includes: merged(own, earlier, (s) => s.includes),
    hookDirs: merged(own, earlier, (s) => s.hookDirs),
    unchecked: own.unchecked,
    entries: own.entries,
  };
}
