// The repairs the auditor's diff asked for (git/changes.ts), done on the host after every sandbox
// process has exited. Nothing is written through a name the run left: a file is put back by writing
// it whole under a fresh name (O_CREAT|O_EXCL|O_NOFOLLOW) and renaming it over the old one; rename
// and unlink act on the last component, never follow it; a directory is moved aside, not entered.
// The directories on the way are the ones the walk found as directories (lstat: no link), and no
// sandbox process is left to swap one since. A directory the run made read-only (0555 on `.git`
// or `hooks`) is opened for writing for the one step, then given back the mode it had.
import {
  chmodSync,
  closeSync,
  constants,
  lstatSync,
  openSync,
  realpathSync,
  renameSync,
  symlinkSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { posix } from 'node:path';
import type { GitChange } from '../changes.js';
import type { FileState } from '../snapshot.js';
import { lstatOrNone } from './read.js';

const code = (error: unknown) => (error as NodeJS.ErrnoException).code;

/** `step` on `path`, once more with its parent directory made writable for the owner when it was not (EACCES). */
function inParent<T>(path: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    if (code(error) !== 'EACCES' && code(error) !== 'EPERM') throw error;
    const parent = posix.dirname(path);
    const st = lstatSync(parent);
    if (!st.isDirectory() || (st.mode & 0o300) === 0o300) throw error;
    chmodSync(parent, (st.mode & 0o7777) | 0o300);
    try {
      return step();
    } finally {
      chmodSync(parent, st.mode & 0o7777);
    }
  }
}

/** A name beside `path` that git ignores and nothing holds yet. */
function asideName(path: string, session: string): string {
  for (let i = 0; ; i++) {
    const name = `${path}.sbx-quarantine-${session}${i === 0 ? '' : `-${i}`}`;
    if (!lstatOrNone(name)) return name;
  }
}

function quarantine(path: string, session: string): string {
  const aside = asideName(path, session);
  inParent(path, () => renameSync(path, aside));
  return `quarantined as ${posix.basename(aside)}`;
}

function remove(path: string, session: string): string {
  const st = lstatOrNone(path);
  if (!st) return 'already gone';
  if (st.isDirectory()) return quarantine(path, session);
  inParent(path, () => unlinkSync(path));
  return 'removed';
}

function writeFresh(tmp: string, state: FileState): void {
  if (state.kind === 'link') {
    symlinkSync(state.target!, tmp);
    return;
  }
  if (state.kind !== 'file' || !state.bytes) throw new Error(`its recorded ${state.kind} cannot be written back`);
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const fd = openSync(tmp, flags, state.mode & 0o777);
  try {
    for (let at = 0; at < state.bytes.length; ) at += writeSync(fd, state.bytes, at);
  } finally {
    closeSync(fd);
  }
  chmodSync(tmp, state.mode & 0o7777);
}

function restore(path: string, state: FileState, session: string): string {
  const current = lstatOrNone(path);
  // rename() cannot replace a directory with a file: what the run left there is moved aside first.
  const aside = current?.isDirectory() ? `; the directory there ${quarantine(path, session)}` : '';
  const tmp = asideName(`${posix.dirname(path)}/.${posix.basename(path)}.sbx-restore`, session);
  inParent(path, () => {
    writeFresh(tmp, state);
    try {
      renameSync(tmp, path);
    } catch (error) {
      unlinkSync(tmp);
      throw error;
    }
  });
  return `restored${aside}`;
}

/**
 * The directories above `path` are the ones they name: no link among them. The walk never follows
 * one, but a path can come from a pointer the run wrote (a `.git` file, core.hooksPath, include.path)
 * or from the snapshot before the run, whose directories the run could have swapped for links since.
 * A repair through one would act on whatever the link names, outside the trees.
 */
function assertNoLinkAbove(path: string): void {
  const parent = posix.dirname(path);
  if (realpathSync.native(parent) !== parent) throw new Error(`a directory above it is a link: not followed`);
}

/** Does one repair; returns what was done, for the violation's detail. Throws when it could not. */
export function repairChange(change: GitChange, session: string): string {
  const { path, repair } = change;
  if (repair.kind !== 'report') assertNoLinkAbove(path);
  switch (repair.kind) {
    case 'restore':
      return restore(path, repair.state, session);
    case 'remove':
      return remove(path, session);
    case 'quarantine':
      return lstatOrNone(path) ? quarantine(path, session) : 'already gone';
    case 'disarm': {
      if (!lstatOrNone(path)) return 'already gone';
      const aside = asideName(path, session);
      inParent(path, () => renameSync(path, aside));
      const head = lstatOrNone(`${aside}/HEAD`) ? `; its HEAD ${quarantine(`${aside}/HEAD`, session)}` : '';
      return `quarantined as ${posix.basename(aside)}${head}`;
    }
    case 'set-aside': {
      const done = lstatOrNone(path) ? quarantine(path, session) : 'already gone';
      const before = asideName(`${path}.sbx-before`, session);
      inParent(path, () => writeFresh(before, repair.state));
      return `${done}; the one before kept as ${posix.basename(before)}`;
    }
    case 'report':
      return 'left as found';
  }
}
