// PATH entries a run can write (docs/SECURITY.md, "sbx's own launcher"). A sandboxed command that can write a directory on the
// caller's PATH (an activated .venv/bin, node_modules/.bin, direnv's PATH_add, a CI GITHUB_PATH entry
// in the workspace) plants a program there under a common name (`node`, `git`, `python`), and the
// caller's next command of that name runs it on the host, outside any sandbox. sbx's own launcher no
// longer looks `node` up on PATH (bin/sbx.js, node-path), but nothing else the user runs is sbx's to
// fix: the run warns, naming the entries, once, before the command starts.
import { realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { isWithin } from '../../path-within.js';
import type { Policy } from '../../policy/types.js';

/**
 * Where a PATH entry really is: its real path, or for one that does not exist yet (a sandbox can
 * create it), its deepest existing ancestor's real path with the rest. Relative and empty entries
 * are looked up from the cwd, as the shell does.
 */
function realEntry(entry: string, cwd: string): string {
  const absolute = resolve(cwd, entry === '' ? '.' : entry);
  const rest: string[] = [];
  for (let p = absolute; ; p = dirname(p)) {
    try {
      return join(realpathSync(p), ...rest.reverse());
    } catch {
      if (dirname(p) === p) return absolute;
      rest.push(basename(p));
    }
  }
}

/** The PATH entries (as written) that lie in a tree this run binds writable; none in danger mode. */
export function writablePathEntries(pathVar: string | undefined, cwd: string, policy: Policy): string[] {
  if (policy.mode === 'danger' || !pathVar) return [];
  const trees = policy.mounts.flatMap((m) => (m.kind === 'bind' && m.access === 'rw' ? [m.source] : []));
  if (trees.length === 0) return [];
  const entries = [...new Set(pathVar.split(':'))];
  return entries.filter((entry) => {
    const real = realEntry(entry, cwd);
    return trees.some((tree) => isWithin(real, tree));
  });
}

/** The warning, or nothing: one line naming every such entry. */
export function pathWarning(entries: readonly string[]): string[] {
  if (entries.length === 0) return [];
  const shown = entries.map((e) => (e === '' ? '(empty: the cwd)' : e)).join(', ');
  return [
    `PATH holds ${shown}, which this run can write: a program the command plants there runs outside the sandbox when you next call it by name`,
  ];
}
