// The git work trees of a tree the sensitive-file scan walks (git/host/tracked-files.ts decides with
// them): which work tree holds a path the rules matched, what git's index calls that path, and the
// exclude lines that keep the scan's empty stand-ins out of `git add -A`. Pure: paths in, answers out.

/** What the walk matched by name that git may still decide: a file or a directory, relative to the scan root. */
export interface Candidate {
  rel: string;
  dir: boolean;
}

/** A git work tree: where it is (relative to the scan root, or above it) and its git directory. */
export interface WorkTree {
  /** Relative to the scan root; '' for the root itself. Undefined for a work tree above the root. */
  rel: string | undefined;
  /** The scan root's path inside the work tree ('' unless the work tree is above the root). */
  prefix: string;
  gitDir: string | undefined;
}

/** Whether `rel` is a `.git` directory or lies inside one: nothing there is ever tracked, whatever a hostile index claims. */
export const inGitDir = (rel: string) => `/${rel}/`.includes('/.git/');

const holds = (wt: WorkTree, rel: string) => wt.rel === undefined || wt.rel === '' || rel.startsWith(`${wt.rel}/`);
const depth = (wt: WorkTree) => (wt.rel === undefined ? -1 : wt.rel.length);

/** The deepest work tree holding `rel` (a nested repository is its own); undefined when none does. */
function workTreeOf(workTrees: readonly WorkTree[], rel: string): WorkTree | undefined {
  return workTrees.filter((wt) => holds(wt, rel)).sort((a, b) => depth(b) - depth(a))[0];
}

/** `rel` (relative to the scan root) as the work tree's index names it. */
export function pathInWorkTree(wt: WorkTree, rel: string): string {
  return wt.rel ? rel.slice(wt.rel.length + 1) : wt.prefix ? `${wt.prefix}/${rel}` : rel;
}

/** The candidates by the work tree that holds each (undefined: outside every one), in the order first met. */
export function byWorkTree(
  workTrees: readonly WorkTree[],
  candidates: readonly Candidate[],
): Map<WorkTree | undefined, Candidate[]> {
  const groups = new Map<WorkTree | undefined, Candidate[]>();
  for (const c of candidates) {
    const wt = workTreeOf(workTrees, c.rel);
    const group = groups.get(wt);
    if (group) group.push(c);
    else groups.set(wt, [c]);
  }
  return groups;
}

/** A gitignore line matching exactly this path from the work tree's top (none for a newline in it). */
function excludeLine(rel: string, dir: boolean): string | undefined {
  if (rel.includes('\n') || rel.includes('\r')) return undefined;
  const escaped = rel.replace(/[\\*?[]/g, '\\$&').replace(/ $/, '\\ ');
  return `/${escaped}${dir ? '/' : ''}`;
}

/** The work tree's `info/exclude` text with lines for the masked paths (relative to its top) appended under sbx's heading. */
export function withExcludedPaths(original: string, masked: readonly { rel: string; dir: boolean }[]): string {
  const lines = masked.flatMap((m) => excludeLine(m.rel, m.dir) ?? []);
  const separator = original === '' || original.endsWith('\n') ? '' : '\n';
  const heading = '# sbx: masked in this sandbox (empty stand-ins git must not commit)';
  return `${original}${separator}${heading}\n${lines.join('\n')}\n`;
}
