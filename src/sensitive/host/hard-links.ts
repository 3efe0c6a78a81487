// Other names of masked files. A mask covers one path, and a hard link is the same file
// under another: a sandbox can create `.env` and `ln .env notes.txt` in the workspace, and once the
// user writes a secret into `.env`, every later run would show it through `notes.txt`. So each masked
// file (and each file in a masked directory, and each file replaced by a generated view) that has
// more than one link gets its other names in the mounted trees masked too, wherever they lie: in a
// directory the scan prunes (node_modules), in another mounted tree, below a sensitive.skip.
//
// The scan itself never calls stat (sensitive/host/sensitive-scan.ts); this costs one lstat per masked
// file, a walk of the masked directories, and only when one of those files has other links, a walk
// of every mounted tree with an lstat of each regular file, ending once every name is found. A link
// created inside a sandbox cannot reach a masked file: the mask is a mount of its own, and link(2)
// across mounts fails with EXDEV. Names outside the mounted trees are not shown and need no mask.
import { type Dirent, lstatSync, readdirSync, type Stats } from 'node:fs';
import { SbxError } from '../../errors.js';
import { type MountedTree, readPathOf } from './mounted-trees.js';
import { isWithin } from '../../path-within.js';
import type { ScanReader } from '../scan-result.js';

/** A file with more than one link, by device and inode. */
interface Linked {
  nlink: number;
  /** Host paths known to name it. */
  names: Set<string>;
  /** One masked name, for messages. */
  masked: string;
}

interface Search {
  trees: readonly MountedTree[];
  read: ScanReader;
  linked: Map<string, Linked>;
  /** Entries listed so far, against `maxEntries`. */
  entries: number;
  maxEntries: number;
}

const keyOf = (st: Stats) => `${st.dev}:${st.ino}`;

/**
 * The other names (host paths) of the masked files, to be masked as well. `masks` are host paths in
 * `trees`; `views` are files shown with generated content (their own content hidden). Throws
 * SENSITIVE_SCAN_LIMIT past `maxEntries` entries listed: a name left unfound would be a hole.
 */
export function otherNamesOf(
  trees: readonly MountedTree[],
  masks: readonly { path: string; dir: boolean }[],
  views: readonly string[],
  opts: { read: ScanReader; maxEntries: number },
): { path: string; dir: boolean }[] {
  const search: Search = { trees, read: opts.read, linked: new Map(), entries: 0, maxEntries: opts.maxEntries };
  const maskedFiles = new Set(masks.filter((m) => !m.dir).map((m) => m.path));
  const hiddenDirs = masks.filter((m) => m.dir).map((m) => m.path);
  const found: { path: string; dir: boolean }[] = [];
  // Watched themselves: a link made from a directory the warm cache does not watch changes the
  // file's link count, which inotify reports on the file alone (host/warm-cache.ts).
  const noteLinked = (path: string, isView = false) => {
    const st = statOf(search, path, true);
    if (!st?.isFile() || st.nlink < 2) return;
    const known = search.linked.get(keyOf(st));
    // A view is made from the file's content: when that is a masked file's, it is masked too.
    if (known && isView) found.push({ path, dir: false });
    if (known) known.names.add(path);
    else search.linked.set(keyOf(st), { nlink: st.nlink, names: new Set([path]), masked: path });
  };
  for (const path of maskedFiles) noteLinked(path);
  // A masked directory sbx cannot list (or one in it) stays unchecked: hidden, but not searched.
  const noteInDir = (path: string) => {
    noteLinked(path);
    return false;
  };
  for (const dir of hiddenDirs) walkFiles(search, dir, { visit: noteInDir });
  for (const path of views) noteLinked(path, true);
  if (search.linked.size === 0) return [];
  const isHidden = (path: string) => hiddenDirs.some((dir) => isWithin(path, dir));
  const allFound = () => [...search.linked.values()].every((l) => l.names.size >= l.nlink);
  for (const { root } of trees) {
    const visit = (path: string) => {
      const st = maskedFiles.has(path) ? undefined : statOf(search, path, false);
      const linked = st && search.linked.get(keyOf(st));
      if (!linked || linked.names.has(path)) return false;
      linked.names.add(path);
      found.push({ path, dir: false });
      return allFound();
    };
    // A directory sbx cannot list may hold another name, and the sandbox (the same uid) can chmod
    // it back: masked whole, as the scan masks one (sensitive/host/sensitive-scan.ts).
    const unreadable = (path: string, cause: unknown) => {
      if (path === root) throw cause;
      found.push({ path, dir: true });
    };
    walkFiles(search, root, { skip: isHidden, visit, unreadable });
    if (allFound()) break;
  }
  return found;
}

/** lstat of a host path, read through its tree's pinned descriptor; undefined once it is gone. */
function statOf(search: Search, path: string, watch: boolean): Stats | undefined {
  const via = readPathOf(search.trees, path);
  if (watch) search.read(via, 'inode');
  try {
    return lstatSync(via);
  } catch {
    return undefined;
  }
}

interface FileWalk {
  /** A directory not to enter. */
  skip?: (path: string) => boolean;
  /** Each regular file; true stops the walk. */
  visit: (path: string) => boolean;
  /** A directory sbx may not list (EACCES, EPERM); by default left unchecked. */
  unreadable?: (path: string, cause: unknown) => void;
}

/** Every regular file below `dir` (host path), by its d_type, symlinks not followed. */
function walkFiles(search: Search, dir: string, { skip, visit, unreadable }: FileWalk): void {
  const pending = [dir];
  while (pending.length > 0) {
    const current = pending.pop()!;
    const via = readPathOf(search.trees, current);
    search.read(via, 'dir');
    let entries: Dirent[];
    try {
      entries = readdirSync(via, { withFileTypes: true });
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EPERM') unreadable?.(current, cause);
      // Anything but a directory removed since the scan listed it leaves the search unfinished.
      else if (code !== 'ENOENT' && code !== 'ENOTDIR') throw cause;
      continue;
    }
    search.entries += entries.length;
    if (search.entries > search.maxEntries) throw tooMany(search, dir);
    for (const entry of entries) {
      const path = current === '/' ? `/${entry.name}` : `${current}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!skip?.(path)) pending.push(path);
      } else if (entry.isFile() && visit(path)) return;
    }
  }
}

function tooMany(search: Search, dir: string): SbxError {
  const linked = [...search.linked.values()][0];
  const why = linked
    ? `${linked.masked} is masked and has ${linked.nlink} links: its other names could not all be found`
    : `the masked directory ${dir} could not be checked for files with other links`;
  return new SbxError(
    'SENSITIVE_SCAN_LIMIT',
    `the search for other names of masked files passed ${search.maxEntries} entries: ${why}`,
    {
      hint: linked
        ? `remove its other links (find ${search.trees.map((t) => t.root).join(' ')} -samefile ${linked.masked}), or mount smaller trees`
        : 'let the directory in with sensitive.except, or make it smaller',
    },
  );
}
