// Walks a tree that will be mounted into the sandbox and lists what the rules of
// policy/sensitive-files.ts mask or protect there. Runs on every launch before bwrap, so it is
// written for speed: no stat calls (d_type from readdir), no path built for an entry whose basename
// no rule can match, one RegExp test per entry.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { SbxError } from '../errors.js';
import type { SensitiveRuleInput } from '../policy/sensitive-files.js';
import { BUILTIN_EXCEPT_GLOBS, BUILTIN_MASK_GLOBS, BUILTIN_PROTECT_GLOBS, DEFAULT_SKIP_DIRS } from '../policy/sensitive-globs.js';
import { sensitiveRulesFrom, type SensitiveRuleData } from '../policy/sensitive-matcher.js';
import { VERSION } from '../version.js';
import type { SensitiveRules } from '../policy/sensitive-matcher.js';

/** Far above a large monorepo with its node_modules, low enough to keep a launch under a second. */
export const DEFAULT_MAX_SCAN_ENTRIES = 200_000;

export interface SensitiveMask {
  /** Absolute host path (the tree root joined with the entry's relative path). */
  path: string;
  what: 'file' | 'dir';
}

export interface SensitiveScan {
  /** Sorted, so a directory comes before anything below it. */
  masks: SensitiveMask[];
  /** Absolute host paths to bind read-only over themselves; sorted. */
  protect: string[];
  /**
   * Matching symlinks (never followed by the walk). A mount over a symlink lands on its target
   * inside the sandbox, and a dangling one would make bwrap fail: the caller resolves them.
   */
  links: string[];
  /** Directory entries examined. */
  scanned: number;
  /** More than maxEntries entries: the lists are incomplete and must not be used (fail closed). */
  truncated: boolean;
}

function errorCode(cause: unknown): string | undefined {
  return (cause as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Never follows symlinks: readdir's d_type says "symlink" and that entry is classified by its own
 * name, not descended. `root` is the (realpath of the) mount source; a root that cannot be read
 * throws, since nothing below it can be vouched for.
 */
export function scanSensitiveFiles(root: string, rules: SensitiveRules, opts: { maxEntries?: number } = {}): SensitiveScan {
  const maxEntries = opts.maxEntries ?? DEFAULT_MAX_SCAN_ENTRIES;
  const base = root.length > 1 && root.endsWith('/') ? root.slice(0, -1) : root;
  const absOf = (rel: string) => (rel === '' ? base : base === '/' ? `/${rel}` : `${base}/${rel}`);
  const masks: SensitiveMask[] = [];
  const protect: string[] = [];
  const links: string[] = [];
  const pending: string[] = [''];
  let scanned = 0;
  let truncated = false;

  while (pending.length > 0) {
    const rel = pending.pop()!;
    let entries: Dirent[];
    try {
      entries = readdirSync(absOf(rel), { withFileTypes: true });
    } catch (cause) {
      const code = errorCode(cause);
      if (rel === '') throw cause;
      // Removed since its parent was listed: nothing left to mask.
      if (code === 'ENOENT' || code === 'ENOTDIR') continue;
      // Unreadable to us is not unreadable to the sandbox: the same uid can chmod its own directory
      // on a writable mount. What it holds is unknown, so it is masked whole (fail closed).
      if (code === 'EACCES' || code === 'EPERM') {
        masks.push({ path: absOf(rel), what: 'dir' });
        continue;
      }
      throw cause;
    }
    if (scanned + entries.length > maxEntries) {
      truncated = true;
      break;
    }
    scanned += entries.length;
    const prefix = rel === '' ? '' : `${rel}/`;
    for (const entry of entries) {
      const isDirectory = entry.isDirectory();
      const candidate = rules.mayMatchName(entry.name);
      if (!candidate && !isDirectory) continue;
      const childRel = prefix + entry.name;
      const verdict = candidate ? rules.classify(childRel, isDirectory || entry.isSymbolicLink()) : undefined;
      if (verdict === 'mask' && entry.isSymbolicLink()) {
        links.push(absOf(childRel));
        continue;
      }
      if (verdict === 'mask') {
        masks.push({ path: absOf(childRel), what: isDirectory ? 'dir' : 'file' });
        continue;
      }
      if (verdict === 'protect') protect.push(absOf(childRel));
      if (isDirectory && !rules.canPrune(childRel)) pending.push(childRel);
    }
  }

  masks.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  protect.sort();
  links.sort();
  return { masks, protect, links, scanned, truncated };
}

/** What derivePolicy needs (Host.sensitiveFiles), for every tree that will be mounted. */
export interface MountedTreesScan {
  masks: { path: string; dir: boolean }[];
  protect: string[];
  scanned: number;
}

function isInside(path: string, root: string): boolean {
  return path === root || root === '/' || path.startsWith(`${root}/`);
}

/**
 * Scans each root (realpaths of directories) and resolves the symlinks the walk did not follow: a
 * link whose target lies in a mounted tree masks (or protects) that target; a dangling link, or one
 * leading out of every tree, shows nothing the sandbox can read. A tree too large to scan refuses
 * the run: masking only part of it would be a silent hole.
 */
export function scanMountedTrees(roots: readonly string[], rules: SensitiveRules, opts: { maxEntries?: number } = {}): MountedTreesScan {
  const masks = new Map<string, boolean>();
  const protect = new Set<string>();
  let scanned = 0;
  const resolveInTrees = (path: string): { real: string; dir: boolean } | undefined => {
    try {
      const real = realpathSync(path);
      return roots.some((root) => isInside(real, root)) ? { real, dir: statSync(real).isDirectory() } : undefined;
    } catch {
      return undefined;
    }
  };
  // A bind inside another mounted tree is scanned with it.
  const outer = roots.filter((root) => !roots.some((other) => other !== root && isInside(root, other)));
  for (const root of [...new Set(outer)]) {
    const scan = scanSensitiveFiles(root, rules, { maxEntries: Math.max(0, (opts.maxEntries ?? DEFAULT_MAX_SCAN_ENTRIES) - scanned) });
    if (scan.truncated) {
      throw new SbxError('SENSITIVE_SCAN_LIMIT', `the sensitive-file scan of ${root} passed ${opts.maxEntries ?? DEFAULT_MAX_SCAN_ENTRIES} entries: secret files in it could not all be masked`, {
        hint: 'skip large generated directories with sensitive.skip (e.g. [node_modules, target]) in the profile, or use a smaller workspace',
      });
    }
    scanned += scan.scanned;
    for (const m of scan.masks) masks.set(m.path, m.what === 'dir');
    for (const link of scan.links) {
      const target = resolveInTrees(link);
      if (target) masks.set(target.real, target.dir);
    }
    for (const path of scan.protect) {
      const target = resolveInTrees(path);
      if (target?.dir) protect.add(target.real);
    }
  }
  return { masks: [...masks].map(([path, dir]) => ({ path, dir })), protect: [...protect], scanned };
}

/**
 * The compiled rules for this input, from `cacheDir` when a run compiled them before: compiling the
 * globs (and loading minimatch to do it) costs a launch more than the scan of a small tree. The key
 * covers the built-in lists, the profile's additions and the sbx version. The cache lives in a
 * sensitive root (never visible in a sandbox); a file that does not revive is recompiled.
 */
export async function loadSensitiveRules(input: SensitiveRuleInput, cacheDir: string | undefined): Promise<SensitiveRules> {
  const key = createHash('sha256')
    .update(JSON.stringify([VERSION, BUILTIN_MASK_GLOBS, BUILTIN_EXCEPT_GLOBS, BUILTIN_PROTECT_GLOBS, DEFAULT_SKIP_DIRS, input.files ?? [], input.except ?? [], input.skip ?? []]))
    .digest('hex')
    .slice(0, 32);
  const file = cacheDir ? join(cacheDir, `sensitive-rules-${key}.json`) : undefined;
  if (file) {
    try {
      return sensitiveRulesFrom(JSON.parse(readFileSync(file, 'utf8')) as SensitiveRuleData);
    } catch {
      // not cached yet, or unreadable: compile
    }
  }
  const { compileSensitiveRuleData } = await import('../policy/sensitive-files.js');
  let data: SensitiveRuleData;
  try {
    data = compileSensitiveRuleData(input);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw new SbxError('PROFILE_INVALID', `sensitive: ${error.message}`, { hint: 'write minimatch globs relative to the mounted tree, e.g. "*.sqlite" or "secrets/"' });
  }
  if (file) {
    try {
      mkdirSync(cacheDir!, { recursive: true, mode: 0o700 });
      writeFileSync(`${file}.${process.pid}`, JSON.stringify(data), { mode: 0o600 });
      renameSync(`${file}.${process.pid}`, file);
    } catch {
      // the cache is optional
    }
  }
  return sensitiveRulesFrom(data);
}
