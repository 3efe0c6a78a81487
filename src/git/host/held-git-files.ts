// What the repositories in a tree the sensitive-file scan walks (sensitive/host/sensitive-scan.ts)
// need held for the run, so that nothing the sandbox writes there runs on the host later: each git
// config shown as a view without its credentials, and the places git takes code from (a hooks
// directory, core.hooksPath's directory, config.worktree) made before the run where they are absent,
// so that there is something to hold read-only (the walk's protect rules hold only what exists).
// Where sbx cannot create one (a tree it may not write), neither can the sandbox, which runs as the
// same user. The decisions are git/repository-layout.ts's; this half reads and creates.
import { lstatSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { gitConfigView } from '../../host-state/guarded-state.js';
import type { ScanReader, SensitiveMask, SensitiveView } from '../../sensitive/scan-result.js';
import { sanitizeGitConfig } from '../git-config.js';
import {
  hooksDirOfConfig,
  hooksPathBelow,
  isConfigFile,
  isWorkTreeConfig,
  mayReadWorktreeConfig,
} from '../repository-layout.js';
import { readRegularFile } from './git-index.js';

/** A git config file larger than this is masked, not parsed. */
const MAX_CONFIG_BYTES = 1024 * 1024;

/** A git config file's text, read once (bounded, regular files only) for the passes below; undefined when unreadable. */
type ConfigText = (rel: string) => string | undefined;

function configReader(absOf: (rel: string) => string, read: ScanReader): ConfigText {
  const texts = new Map<string, string | undefined>();
  return (rel) => {
    if (!texts.has(rel)) {
      read(absOf(rel), 'file');
      texts.set(rel, readRegularFile(absOf(rel), MAX_CONFIG_BYTES)?.toString('utf8'));
    }
    return texts.get(rel);
  };
}

export interface HeldGitFiles {
  /** Config files that cannot be read: masked. */
  masks: SensitiveMask[];
  /** Each readable config file, without its credentials. */
  views: SensitiveView[];
  /** Directories made or found that git runs hooks from, beyond those the walk protects already. */
  protect: string[];
}

/**
 * The configs the walk found (`gitConfigs`, relative to the root) shown as views, the config.worktree
 * files they need made first, and the hooks directories to hold beyond `protect` (absolute).
 */
export function holdGitFiles(
  absOf: (rel: string) => string,
  base: string,
  gitConfigs: readonly string[],
  protect: readonly string[],
  read: ScanReader,
): HeldGitFiles {
  const configText = configReader(absOf, read);
  const configs = [...gitConfigs, ...madeWorktreeConfigs(absOf, gitConfigs, configText, read)];
  const shown = gitConfigViews(absOf, configs, configText);
  const hooks = madeHooksDirs(absOf, configs, protect);
  return { ...shown, protect: [...hooks, ...hooksPathDirs(absOf, base, configs, configText)] };
}

/**
 * A repository without a hooks directory (a clone made without templates, one whose hooks were
 * deleted): the protect rule holds only what exists, so a sandbox could create `.git/hooks` and the
 * host's next commit would run what it put there. sbx creates the empty directory git init would have
 * made, before anything of the sandbox runs, so that it is held read-only like any other.
 */
function madeHooksDirs(
  absOf: (rel: string) => string,
  gitConfigs: readonly string[],
  protect: readonly string[],
): string[] {
  const made: string[] = [];
  for (const rel of gitConfigs) {
    const hooksRel = hooksDirOfConfig(rel);
    if (hooksRel === undefined) continue;
    const hooks = absOf(hooksRel);
    if (protect.includes(hooks)) continue;
    try {
      mkdirSync(hooks, { mode: 0o755 });
      made.push(hooks);
    } catch {
      // EEXIST (a file or a link there: the walk judged it by its name) or not writable: nothing to add.
    }
  }
  return made;
}

/**
 * A repository's `core.hooksPath` inside the scanned tree (husky's `.husky/_`, a `githooks/` folder):
 * git runs the hooks from there, so the directory is protected like `.git/hooks`, and made empty
 * first where it does not exist yet (as madeHooksDirs does). The protect list resolves a link to
 * where it points (scanMountedTrees).
 */
function hooksPathDirs(
  absOf: (rel: string) => string,
  base: string,
  gitConfigs: readonly string[],
  configText: ConfigText,
): string[] {
  const out: string[] = [];
  for (const rel of gitConfigs) {
    if (!isWorkTreeConfig(rel)) continue;
    const text = configText(rel);
    const dir = text === undefined ? undefined : hooksPathBelow(absOf(rel), text, base);
    if (dir === undefined) continue;
    makeDirsBelow(base, dir);
    out.push(dir);
  }
  return out;
}

/**
 * `dir` and each missing directory between `base` and it, one at a time: a link on the way (a
 * repository can ship `.husky` -> elsewhere) is never followed, and the walk stops there, as it does
 * at anything that is not a directory or cannot be made. What exists is protected as it is.
 */
function makeDirsBelow(base: string, dir: string): void {
  let at = base;
  for (const part of dir.slice(base.length + 1).split('/')) {
    at = `${at}/${part}`;
    try {
      if (!lstatSync(at).isDirectory()) return;
    } catch {
      try {
        mkdirSync(at, { mode: 0o755 });
      } catch {
        return;
      }
    }
  }
}

/**
 * A repository whose config turns on extensions.worktreeConfig reads `config.worktree` in its gitdir
 * and in each linked worktree's `worktrees/<name>`. The config globs hold only files that exist, so
 * an absent one would be a planting spot (core.hooksPath, core.fsmonitor: code the host's next git
 * command runs). As with madeHooksDirs, sbx creates it empty before the run, so that it is a view
 * like any other config; only where the extension may be on (mayReadWorktreeConfig).
 * Returns the files made, relative to the root.
 */
function madeWorktreeConfigs(
  absOf: (rel: string) => string,
  gitConfigs: readonly string[],
  configText: ConfigText,
  read: ScanReader,
): string[] {
  const made: string[] = [];
  const known = new Set(gitConfigs);
  for (const rel of gitConfigs) {
    if (!isConfigFile(rel)) continue;
    const text = configText(rel);
    if (!text || !mayReadWorktreeConfig(text)) continue;
    const gitDir = dirname(rel);
    const linked = linkedWorktrees(absOf(`${gitDir}/worktrees`), read).map((name) => `${gitDir}/worktrees/${name}`);
    for (const dir of [gitDir, ...linked]) {
      const file = `${dir}/config.worktree`;
      if (known.has(file)) continue;
      try {
        // wx: O_EXCL, so an entry already there (a link included) is never written through.
        writeFileSync(absOf(file), '', { flag: 'wx', mode: 0o644 });
        made.push(file);
      } catch {
        // EEXIST (the walk judged that entry by its name) or not writable (nor then by the sandbox).
      }
    }
  }
  return made;
}

/**
 * The linked worktrees' directories in `<gitdir>/worktrees`: none when it is absent, unreadable or not
 * a directory of its own. A repository can ship `worktrees` as a link to anywhere, and sbx would then
 * create `config.worktree` files there, outside the tree.
 */
function linkedWorktrees(dir: string, read: ScanReader): string[] {
  read(dir, 'dir');
  try {
    if (!lstatSync(dir).isDirectory()) return [];
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? [e.name] : []));
  } catch {
    return [];
  }
}

/** Each git config file shown without its credentials; one that cannot be read is masked. */
function gitConfigViews(
  absOf: (rel: string) => string,
  gitConfigs: readonly string[],
  configText: ConfigText,
): { masks: SensitiveMask[]; views: SensitiveView[] } {
  const out: { masks: SensitiveMask[]; views: SensitiveView[] } = { masks: [], views: [] };
  for (const rel of gitConfigs) {
    const text = configText(rel);
    if (text === undefined) {
      out.masks.push({ path: absOf(rel), what: 'file' });
      continue;
    }
    const { text: content, removed } = sanitizeGitConfig(text);
    out.views.push(gitConfigView(absOf(rel), content, removed));
  }
  return out;
}
