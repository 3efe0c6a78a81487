// The diff of two snapshots of git state (before and after a run) → the changes that could make a
// later host git run a program the run wrote or read config it wrote, each with its repair. Pure.
//
// The verdicts model git, not a list of paths: a new git dir is harmless to a later `git status`
// unless its config names a program (config-programs.ts), it has a hook, or its commondir points
// elsewhere than a git dir that was there before; a config edit matters when it adds a program
// entry (`git remote add` does not). What was there before and changed is put back from the bytes
// recorded; what is new is removed (a file) or renamed to a name git ignores (a directory).
import { addedEntries } from './config-programs.js';
import { isInertHookName } from './discovery.js';
import type { FileState, GitDirState, GitSnapshot, HooksDirState } from './snapshot.js';

export type Repair =
  /** Write the recorded file back (bytes, mode; or the link target). */
  | { kind: 'restore'; state: FileState }
  /** A file or link the run added: unlinked (a directory in its place is quarantined). */
  | { kind: 'remove' }
  /** A directory the run added: renamed aside. */
  | { kind: 'quarantine' }
  /** A git dir the run made: renamed aside (not a tree's root) and its HEAD too, so that git takes it for a git dir from nowhere. */
  | { kind: 'disarm' }
  /**
   * A hook the run rewrote: set aside, with the hook as recorded before written beside it under a name
   * git ignores, never put back in its place (the recorded bytes may be a concurrent run's plant).
   */
  | { kind: 'set-aside'; state: FileState }
  /** Nothing to put back: said, not repaired. */
  | { kind: 'report' };

export interface GitChange {
  path: string;
  /** What changed, for people: `added`, `rewritten`, `program entry added: core.fsmonitor=...`. */
  what: string;
  repair: Repair;
}

const sameFile = (a: FileState | undefined, b: FileState | undefined) =>
  a?.kind === b?.kind && a?.hash === b?.hash && a?.target === b?.target && (a?.mode ?? 0) === (b?.mode ?? 0);

const byId = (dirs: readonly GitDirState[]) => new Map(dirs.map((d) => [`${d.dev}:${d.ino}`, d]));

/**
 * One file a git dir reads, compared: put back when changed, removed when added. A pointer
 * (`commondir`, `gitdir`) that is gone is left gone: without it git reads the git dir itself, which
 * runs nothing new, and the bytes recorded may be another concurrent run's plant.
 */
function fileChange(
  path: string,
  before: FileState | undefined,
  after: FileState | undefined,
  restoreRemoved = true,
): GitChange[] {
  if (sameFile(before, after)) return [];
  if (!after)
    return before && restoreRemoved ? [{ path, what: 'removed', repair: { kind: 'restore', state: before } }] : [];
  if (!before) return [{ path, what: 'added', repair: { kind: 'remove' } }];
  return [{ path, what: 'rewritten', repair: { kind: 'restore', state: before } }];
}

/** The config of a git dir that existed before: put back only when the run added a program entry. */
function configChanges(before: GitDirState, after: GitDirState): GitChange[] {
  const added = addedEntries(before.programs, after.programs);
  if (added.length === 0) return [];
  const what = `program entry added: ${added.join(', ')}`;
  const pairs: [string, FileState | undefined, FileState | undefined][] = [
    [`${after.path}/config`, before.config, after.config],
    [`${after.path}/config.worktree`, before.configWorktree, after.configWorktree],
  ];
  return pairs.flatMap(([path, b, a]) => fileChange(path, b, a).map((c) => ({ ...c, what })));
}

/** A git dir that was there before, as found after the run. */
function existingChanges(before: GitDirState, after: GitDirState): GitChange[] {
  const out = [
    ...configChanges(before, after),
    ...fileChange(`${after.path}/commondir`, before.commondir, after.commondir, false),
    ...fileChange(`${after.path}/gitdir`, before.gitdir, after.gitdir, false),
  ];
  if (before.isGitDir && !after.isGitDir) {
    // A renamed or broken HEAD makes git skip this directory and search above it (attack: the
    // workspace root made to look like a git dir). Put back, git takes it again.
    const head = `${after.path}/HEAD`;
    out.push(
      before.head
        ? {
            path: head,
            what: 'no longer a valid HEAD (git would skip this git dir)',
            repair: { kind: 'restore', state: before.head },
          }
        : { path: after.path, what: 'no longer a git dir', repair: { kind: 'report' } },
    );
  }
  return out;
}

/** Whether a git dir the run made would run something, or read config from elsewhere. */
function newGitDirRisk(dir: GitDirState, after: GitSnapshot, knownDirs: ReadonlySet<string>): string | undefined {
  if (dir.programs.length > 0) return `names programs: ${dir.programs.join(', ')}`;
  const hooks = dir.hooksDir ? after.hookDirs[dir.hooksDir] : undefined;
  if (hooks?.link !== undefined) return `has a hooks directory that is a link to ${hooks.link}`;
  const active = Object.keys(hooks?.entries ?? {});
  if (active.length > 0) return `has hooks: ${active.join(', ')}`;
  if (dir.commonDir !== dir.path && !knownDirs.has(dir.commonDir)) return `its commondir names ${dir.commonDir}`;
  return undefined;
}

/** Entries a hooks directory that existed before gained or changed; a hooks directory the run created is quarantined. */
function hooksChanges(dir: string, before: HooksDirState, after: HooksDirState): GitChange[] {
  if (!after.present) return [];
  if (!before.present) return [{ path: dir, what: 'hooks directory added', repair: { kind: 'quarantine' } }];
  // git follows a link there to whatever hooks it names: the link goes aside (rename never follows it).
  if (after.link !== undefined && after.link !== before.link)
    return [{ path: dir, what: `hooks directory replaced by a link to ${after.link}`, repair: { kind: 'quarantine' } }];
  return Object.entries(after.entries).flatMap(([name, state]): GitChange[] => {
    if (isInertHookName(name)) return [];
    const path = `${dir}/${name}`;
    const was = before.entries[name];
    if (!was) return [{ path, what: 'hook added', repair: { kind: state.kind === 'dir' ? 'quarantine' : 'remove' } }];
    // Set aside, not put back: the bytes recorded before may be a concurrent run's plant (that run's
    // own audit restores the hook while this run is still inside, so this run would write the plant
    // back). Neither runs; the hook as it was is kept beside it for its owner to rename back.
    return sameFile(was, state) ? [] : [{ path, what: 'hook rewritten', repair: { kind: 'set-aside', state: was } }];
  });
}

/** Included config files: put back when the run added a program entry to one (or created one). */
function includeChanges(before: GitSnapshot, after: GitSnapshot): GitChange[] {
  return Object.entries(after.includes).flatMap(([path, now]): GitChange[] => {
    const was = before.includes[path];
    if (!now.state || sameFile(was?.state ?? undefined, now.state)) return [];
    const added = addedEntries(was?.programs ?? [], now.programs);
    if (added.length === 0) return [];
    const what = `included config: program entry added: ${added.join(', ')}`;
    return [{ path, what, repair: was?.state ? { kind: 'restore', state: was.state } : { kind: 'remove' } }];
  });
}

/** `.git` files and links that were there before and now point elsewhere. */
function gitFileChanges(before: GitSnapshot, after: GitSnapshot): GitChange[] {
  return Object.entries(after.gitFiles).flatMap(([path, now]): GitChange[] => {
    const was = before.gitFiles[path];
    if (!was || sameFile(was, now)) return [];
    return [{ path, what: 'gitdir pointer rewritten', repair: { kind: 'restore', state: was } }];
  });
}

/** Every change, deepest path first, so that quarantining a directory never moves another change's path. */
export function gitStateChanges(before: GitSnapshot, after: GitSnapshot, roots: readonly string[]): GitChange[] {
  const beforeById = byId(before.gitDirs.filter((d) => d.isGitDir));
  const beforeByPath = new Map(before.gitDirs.map((d) => [d.path, d]));
  const known = new Set(before.gitDirs.filter((d) => d.isGitDir).map((d) => d.path));
  const out: GitChange[] = [];
  for (const dir of after.gitDirs) {
    const id = `${dir.dev}:${dir.ino}`;
    const atPath = beforeByPath.get(dir.path);
    const was = atPath && `${atPath.dev}:${atPath.ino}` === id ? atPath : beforeById.get(id);
    if (was) out.push(...existingChanges(was, dir));
    // A directory that was no git dir and now is (its HEAD made valid) is judged as a new one: git
    // would now read its config and hooks, whoever wrote them.
    if (was?.isGitDir || !dir.isGitDir) continue;
    const risk = newGitDirRisk(dir, after, known);
    if (!risk) continue;
    // A writable tree's root cannot be renamed away (it is the workspace): its HEAD is, which is enough
    // for git not to take it for a git dir (isValidHead). Elsewhere the directory is renamed too: a
    // renamed `.git` or `modules/<name>` is not found by name, a renamed HEAD by no discovery at all.
    const path = roots.includes(dir.path) ? `${dir.path}/HEAD` : dir.path;
    out.push({ path, what: `new git dir that ${risk}`, repair: { kind: path === dir.path ? 'disarm' : 'quarantine' } });
  }
  for (const [dir, now] of Object.entries(after.hookDirs)) {
    const was = before.hookDirs[dir];
    if (was) out.push(...hooksChanges(dir, was, now));
  }
  out.push(...includeChanges(before, after), ...gitFileChanges(before, after));
  return out.sort((a, b) => b.path.length - a.path.length || a.path.localeCompare(b.path));
}
