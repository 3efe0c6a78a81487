// Which sensitive-file masks become whole-directory masks when there are too many to launch: each
// mask is several bwrap arguments and bubblewrap refuses more than BWRAP_MAX_ARGS in all
// (backend/bwrap/compile.ts), so a tree with thousands of `.env.*` fixtures could not run at all. Pure: the
// directories that hold nothing but masked entries are read from the disk by sensitive/host/mask-fit.ts.

export interface MaskEntry {
  /** Absolute host path. */
  path: string;
  dir: boolean;
  tracked?: true;
}

function parentOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash <= 0 ? '/' : path.slice(0, slash);
}

function depthOf(path: string): number {
  let depth = 0;
  for (let i = 0; i < path.length; i++) if (path.charCodeAt(i) === 47) depth++;
  return depth;
}

export function maskArgs(masks: readonly MaskEntry[], argsOf: (dir: boolean) => number): number {
  return masks.reduce((n, m) => n + argsOf(m.dir), 0);
}

/**
 * `full`: directories, none of them masked, each of whose entries is a mask in `masks` or a directory
 * in `full` (so masking the directory hides nothing the masks do not already hide); never a scan
 * root, whose mask would hide the tree itself. Only past `budgetArgs` is anything collapsed, and
 * then every full directory replaces the masks below it whenever its one mask costs fewer arguments
 * than they do, deepest first so that a parent sums what its children became. Not "until it just
 * fits": each mount costs bwrap (and the kernel) time, and a launch with the 2,600 file masks that
 * fit the budget took 8 s where the 50 directories holding them take milliseconds; what a full
 * directory hides is only masked entries already (it also becomes read-only and empty, where the
 * files it replaces sat in a writable one). Past every full directory the total may still exceed the
 * budget; the backend then refuses the launch by its exact count.
 */
export function collapseMasks(
  masks: readonly MaskEntry[],
  full: readonly string[],
  budgetArgs: number,
  argsOf: (dir: boolean) => number,
): MaskEntry[] {
  let args = maskArgs(masks, argsOf);
  if (args <= budgetArgs || full.length === 0) return [...masks];
  const fullSet = new Set(full);
  // The arguments below each full directory, gathered bottom-up: its own masked entries now, its
  // full subdirectories as each is decided.
  const below = new Map<string, number>(full.map((dir) => [dir, 0]));
  for (const m of masks) {
    const parent = parentOf(m.path);
    if (fullSet.has(parent)) below.set(parent, below.get(parent)! + argsOf(m.dir));
  }
  const dirArgs = argsOf(true);
  const collapsed = new Set<string>();
  const order = [...fullSet].sort((a, b) => depthOf(b) - depthOf(a) || (a < b ? -1 : 1));
  for (const dir of order) {
    let cost = below.get(dir)!;
    if (dirArgs < cost) {
      collapsed.add(dir);
      args -= cost - dirArgs;
      cost = dirArgs;
    }
    const parent = parentOf(dir);
    if (fullSet.has(parent)) below.set(parent, below.get(parent)! + cost);
  }
  const hidden = (path: string) => {
    for (let p = parentOf(path); p !== '/'; p = parentOf(p)) if (collapsed.has(p)) return true;
    return false;
  };
  const kept = masks.filter((m) => !hidden(m.path));
  const dirs = [...collapsed].filter((dir) => !hidden(dir)).map((path) => ({ path, dir: true }));
  return [...kept, ...dirs].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
