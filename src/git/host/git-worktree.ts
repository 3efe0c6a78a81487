// A `git worktree` checkout keeps only a `.git` file ("gitdir: <common>/worktrees/<name>"); its
// objects, refs and config live in the main repository's git directory (the "common dir"), outside
// the workspace. Without it git inside says "not a git repository". This module finds that
// directory, refuses it unless git itself would vouch for the link, and lists what inside it gets
// the protections a workspace's own .git gets (sensitive/host/sensitive-scan.ts): hooks read-only, config
// files as sanitized views, secret-looking files masked.
//
// The `.git` file is the repository's, so hostile: "gitdir: /home/u/.ssh" or "gitdir: /etc" must
// never become a writable bind. It is honoured only when every link checks out, as git's own
// `git worktree repair` checks it: the named directory lies directly in `<common>/worktrees/`, its
// `gitdir` file names this very `.git` file back, and `<common>` is a git directory (HEAD, objects,
// refs) owned by whoever owns the `.git` file. Planting all that needs write access inside the
// common dir already. derivePolicy then applies every bind check on top (credential stores, system
// directories, the host-state overlap: host-state/host-state.ts).
import { type Dirent, lstatSync, readdirSync, realpathSync, statSync, type Stats } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { SbxError } from '../../errors.js';
import { sanitizeGitConfig } from '../git-config.js';
import { gitConfigView } from '../../host-state/guarded-state.js';
import type { Pins } from '../../host/pins.js';
import { isWithin } from '../../path-within.js';
import type { Host, PathFact } from '../../policy/host.js';
import type { Profile } from '../../profile/schema.js';
import type { SensitiveRules } from '../../sensitive/sensitive-matcher.js';
import { readRegularFile } from './git-index.js';

/** A `.git` file, `commondir` and `gitdir` are one short line. */
const MAX_LINK_BYTES = 4096;
const MAX_CONFIG_BYTES = 1024 * 1024;
/** The walk of the common dir (objects, refs and logs are pruned): far above a repository's own files. */
const MAX_COMMON_ENTRIES = 20_000;

export interface GitWorktree {
  /** This worktree's own git directory (`<common>/worktrees/<name>`), realpath. */
  gitDir: string;
  /** The repository's git directory it shares, realpath. */
  commonDir: string;
}

function invalid(workspace: string, why: string): SbxError {
  return new SbxError('GIT_WORKTREE_INVALID', `${join(workspace, '.git')} names a git worktree, but ${why}`, {
    hint: 'repair it with `git worktree repair` in the main checkout, or remove the .git file; pass --workspace to run elsewhere',
  });
}

function lineOf(path: string): string | undefined {
  const text = readRegularFile(path, MAX_LINK_BYTES)?.toString('utf8');
  return text === undefined ? undefined : text.replace(/\r?\n$/, '');
}

function statOrUndefined(path: string, follow: boolean): Stats | undefined {
  try {
    return follow ? statSync(path) : lstatSync(path);
  } catch {
    return undefined;
  }
}

function realOrUndefined(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The worktree the workspace is, or undefined when it is none (no `.git` file, or one naming a git
 * directory without `commondir`: a submodule, `git init --separate-git-dir`). Throws
 * GIT_WORKTREE_INVALID when the file claims a worktree that does not check out.
 */
export function findGitWorktree(workspace: string): GitWorktree | undefined {
  const dotGit = join(workspace, '.git');
  const st = statOrUndefined(dotGit, false);
  if (!st?.isFile()) return undefined;
  const m = /^gitdir: (.+)$/.exec(lineOf(dotGit) ?? '');
  if (!m) return undefined;
  const named = resolve(workspace, m[1]!);
  if (statOrUndefined(join(named, 'commondir'), false) === undefined) return undefined;
  const gitDir = realOrUndefined(named);
  if (gitDir === undefined || !statOrUndefined(gitDir, true)?.isDirectory())
    throw invalid(workspace, `${named} is not a directory`);
  const common = lineOf(join(gitDir, 'commondir'));
  if (common === undefined || common === '') throw invalid(workspace, `${gitDir}/commondir cannot be read`);
  const commonDir = realOrUndefined(resolve(gitDir, common));
  if (commonDir === undefined) throw invalid(workspace, `its common directory ${common} does not exist`);
  // A worktree's git directory is an entry of <common>/worktrees, never a directory elsewhere that
  // merely names a common dir.
  if (dirname(gitDir) !== join(commonDir, 'worktrees'))
    throw invalid(workspace, `${gitDir} is not a worktree entry of ${commonDir}`);
  const isGitDir =
    statOrUndefined(join(commonDir, 'HEAD'), false)?.isFile() &&
    statOrUndefined(join(commonDir, 'objects'), false)?.isDirectory() &&
    statOrUndefined(join(commonDir, 'refs'), false)?.isDirectory();
  if (!isGitDir) throw invalid(workspace, `${commonDir} is not a git directory (HEAD, objects, refs)`);
  // git's back-link: <gitdir>/gitdir names the worktree's .git file (relative to it since git 2.48).
  const back = lineOf(join(gitDir, 'gitdir'));
  const backReal = back === undefined ? undefined : realOrUndefined(resolve(gitDir, back));
  if (backReal === undefined || backReal !== realOrUndefined(dotGit))
    throw invalid(workspace, `${gitDir}/gitdir does not name this worktree back`);
  const owner = statOrUndefined(commonDir, true)?.uid;
  if (owner !== st.uid)
    throw invalid(workspace, `${commonDir} belongs to uid ${owner}, the .git file to uid ${st.uid}`);
  return { gitDir, commonDir };
}

/**
 * The protections of a `.git` inside the workspace, for the common dir: the sensitive rules judge
 * each entry as `.git/<path>` (so `.git/hooks` is protected, `.git/config` and
 * `.git/worktrees/*\/config.worktree` get views, `.git/objects` is pruned). `via`: where to walk it
 * from (the pinned descriptor's /proc path); paths come back under `commonDir`.
 */
export function protectCommonDir(commonDir: string, via: string, rules: SensitiveRules): Host['sensitiveFiles'] {
  const out: Host['sensitiveFiles'] = { masks: [], protect: [], views: [] };
  const pending = [''];
  let scanned = 0;
  while (pending.length > 0) {
    const rel = pending.pop()!;
    let entries: Dirent[];
    try {
      entries = readdirSync(rel === '' ? via : join(via, rel), { withFileTypes: true });
    } catch {
      // Unreadable to sbx, writable by the same uid inside: masked whole, like the workspace scan does.
      if (rel === '') throw invalid(commonDir, 'it cannot be listed');
      out.masks.push({ path: join(commonDir, rel), dir: true });
      continue;
    }
    scanned += entries.length;
    if (scanned > MAX_COMMON_ENTRIES)
      throw new SbxError(
        'SENSITIVE_SCAN_LIMIT',
        `the scan of the worktree's git directory ${commonDir} passed ${MAX_COMMON_ENTRIES} entries`,
        {
          hint: 'run `git gc` in the main checkout, or pass --workspace the main checkout instead',
        },
      );
    for (const entry of entries) {
      const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
      const asDotGit = `.git/${childRel}`;
      const isDir = entry.isDirectory();
      const verdict = rules.classify(asDotGit, isDir || entry.isSymbolicLink());
      const path = join(commonDir, childRel);
      if (verdict === 'protect') {
        if (isDir) out.protect.push(path);
        else out.masks.push({ path, dir: false });
      } else if (verdict === 'git-config' || (!isDir && entry.name === 'config.worktree')) {
        const text = entry.isFile() ? readRegularFile(join(via, childRel), MAX_CONFIG_BYTES) : undefined;
        if (text === undefined) out.masks.push({ path, dir: isDir });
        else {
          const { text: content, removed } = sanitizeGitConfig(text.toString('utf8'));
          out.views.push(gitConfigView(path, content, removed));
        }
      } else if (verdict === 'mask') {
        // Nothing under a git directory is tracked: masked as found.
        out.masks.push({ path, dir: isDir });
      } else if (isDir && !entry.isSymbolicLink() && !rules.canPrune(asDotGit)) {
        pending.push(childRel);
      }
    }
  }
  return out;
}

/**
 * A worktree's shared git directory (git/host/git-worktree.ts), pinned like every bind source, with
 * what inside it is protected. Outside danger mode only (danger binds the host root anyway), and only
 * when it lies outside the workspace (inside, the workspace's own scan covers it).
 */
export function probeWorktree(
  workspace: PathFact,
  profile: Profile,
  pins: Pins,
  paths: Host['paths'],
): Host['gitWorktree'] {
  if (!workspace.exists || workspace.type !== 'dir' || profile.mode === 'danger') return undefined;
  const worktree = findGitWorktree(workspace.real);
  if (!worktree || isWithin(worktree.commonDir, workspace.real)) return undefined;
  const fact = pins.probe(worktree.commonDir);
  if (!fact.exists || fact.real !== worktree.commonDir || fact.type !== 'dir')
    throw new SbxError('BIND_SOURCE_CHANGED', `${worktree.commonDir} was replaced while sbx checked it`, {
      hint: 'run again; if it repeats, something is rewriting that directory',
    });
  paths[worktree.commonDir] = fact;
  return worktree;
}

/** The workspace scan's findings plus the worktree's shared git directory's, walked through its pinned descriptor. */
export function withCommonDir(
  scanned: Host['sensitiveFiles'],
  commonDir: string,
  rules: SensitiveRules,
  pins: Pins,
): Host['sensitiveFiles'] {
  const fd = pins.fdOf(commonDir);
  const common = protectCommonDir(commonDir, fd === undefined ? commonDir : `/proc/self/fd/${fd}`, rules);
  return {
    masks: [...scanned.masks, ...common.masks],
    protect: [...scanned.protect, ...common.protect],
    views: [...scanned.views, ...common.views],
    ...(scanned.unmasked ? { unmasked: scanned.unmasked } : {}),
  };
}
