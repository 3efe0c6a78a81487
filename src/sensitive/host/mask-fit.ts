// Fits the sensitive-file masks into bubblewrap's argument limit: a repository with
// thousands of secret-looking files (3,500 `.env.*` fixtures) needs more than BWRAP_MAX_ARGS
// arguments, one mask each, and could not run at all. Past the budget below, directories that hold
// nothing but masked entries are masked whole instead (sensitive/mask-collapse.ts decides which; this
// reads which directories qualify). Below it nothing is read and the masks stay as they are.
import { type Dirent, readdirSync } from 'node:fs';
import { BWRAP_MAX_ARGS, compileMask } from '../../backend/bwrap/compile.js';
import { collapseMasks, type MaskEntry, maskArgs } from '../mask-collapse.js';
import { mountedTrees, readPathOf } from './mounted-trees.js';
import { isWithin } from '../../path-within.js';
import { DEFAULT_MAX_SCAN_ENTRIES, type ScanReader } from '../scan-result.js';

/**
 * What the sensitive-file masks may take of BWRAP_MAX_ARGS. The rest of a launch is about 50
 * arguments for a built-in profile (test/golden/*.bwrap.argv), plus 3 per environment variable, per
 * bind and per root-only file, plus the command: 1,000 leaves room for all of it in any ordinary
 * run. The backend still counts the whole launch exactly and refuses one past the limit
 * (LAUNCH_TOO_LARGE, backend/bwrap/compile.ts).
 */
export const MASK_BUDGET_ARGS = BWRAP_MAX_ARGS - 1000;

/** What one mask costs bwrap at most (a directory's with --size, which bwrap 0.7+ takes). */
const argsOf = (dir: boolean) => compileMask(dir ? 'dir' : 'file', '', '', true).length;

function parentOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash <= 0 ? '/' : path.slice(0, slash);
}

/**
 * The masks, with directories holding nothing but masked entries masked whole when the masks would
 * take more than MASK_BUDGET_ARGS. A tracked file's stand-in is not "masked anyway" (it is unreadable
 * so that `git add` fails on it, where an empty directory would stage its deletion), nor is a
 * symlink, an empty directory or a scan root (masking the workspace would hide the workspace).
 */
export function fitMasks(
  masks: readonly MaskEntry[],
  roots: readonly string[],
  opts: { walkVia?: (root: string) => string | undefined; read?: ScanReader; maxEntries?: number } = {},
): MaskEntry[] {
  if (maskArgs(masks, argsOf) <= MASK_BUDGET_ARGS) return [...masks];
  const trees = mountedTrees(roots, opts.walkVia);
  const maxEntries = opts.maxEntries ?? DEFAULT_MAX_SCAN_ENTRIES;
  const masked = new Set(masks.flatMap((m) => (m.tracked ? [] : [m.path])));
  const covered = new Set(masks.map((m) => m.path));
  const isRoot = new Set(roots);
  // The directories that may qualify: those above a mask, below its tree's root.
  const candidates = new Set<string>();
  for (const m of masks) {
    const tree = trees.find((t) => isWithin(m.path, t.root));
    if (!tree) continue;
    for (let dir = parentOf(m.path); dir !== tree.root && !candidates.has(dir); dir = parentOf(dir)) {
      candidates.add(dir);
    }
  }
  const depth = (path: string) => path.split('/').length;
  const full = new Set<string>();
  let entries = 0;
  // Deepest first: a directory qualifies only once its subdirectories have.
  for (const dir of [...candidates].sort((a, b) => depth(b) - depth(a))) {
    if (isRoot.has(dir) || covered.has(dir)) continue;
    const via = readPathOf(trees, dir);
    opts.read?.(via, 'dir');
    let list: Dirent[];
    try {
      list = readdirSync(via, { withFileTypes: true });
    } catch {
      continue; // gone or unreadable: not masked whole by this (the scan masked an unreadable one)
    }
    entries += list.length;
    // Collapsing is only a way to fit: past the scan's bound, the rest stays as it is.
    if (entries > maxEntries) break;
    const inside = (e: Dirent) => `${dir}/${e.name}`;
    if (list.length > 0 && list.every((e) => masked.has(inside(e)) || (e.isDirectory() && full.has(inside(e))))) {
      full.add(dir);
    }
  }
  return collapseMasks(masks, [...full], MASK_BUDGET_ARGS, argsOf);
}
