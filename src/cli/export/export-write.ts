// Writing an export's files where no other local user can redirect them. An export directory under
// a directory another user can write (/tmp/shared) lets that user plant a symlink named like the
// export's file (seccomp.json) and have sbx overwrite and chmod whatever it points at, as the caller.
import {
  closeSync,
  constants,
  fchmodSync,
  lstatSync,
  mkdirSync,
  openSync,
  readlinkSync,
  renameSync,
  type Stats,
  symlinkSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, resolve } from 'node:path';
import { SbxError } from '../../errors.js';
import type { ExportFile } from '../../export/export-gaps.js';

const { O_CREAT, O_EXCL, O_NOFOLLOW, O_WRONLY, O_RDONLY, O_DIRECTORY } = constants;

function myUid(): number {
  return process.getuid?.() ?? 0;
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** Who may change what lies at `path` besides the caller and root, if anyone: the reason, else undefined. */
function foreignControl(st: Stats): string | undefined {
  if (st.uid !== myUid() && st.uid !== 0) return `owned by uid ${st.uid}`;
  // A symlink's own mode bits mean nothing; a directory's group/other write bits let others rename in
  // it, unless it is root's and sticky (/tmp), where only an entry's owner may.
  if (st.isDirectory() && (st.mode & 0o022) !== 0 && !(st.uid === 0 && (st.mode & 0o1000) !== 0))
    return `writable by ${(st.mode & 0o002) !== 0 ? 'others' : 'its group'} (mode ${(st.mode & 0o7777).toString(8)})`;
  return undefined;
}

/**
 * Refuses `dir` when it, any of its parents, or any link on the way (and the directories a link leads
 * to) could be changed by a user other than the caller or root: that user could redirect the files.
 */
export function refuseForeignDir(dir: string, flag: string): void {
  const seen = new Set<string>();
  const check = (path: string, depth: number): void => {
    if (depth > 40) throw new SbxError('USAGE', `${flag} ${dir}: too many levels of symbolic links`);
    const parts = resolve(path).split('/').filter(Boolean);
    let at = '/';
    for (const [i, part] of ['', ...parts].entries()) {
      at = i === 0 ? '/' : resolve(at, part);
      if (seen.has(at)) continue;
      seen.add(at);
      const st = lstatOrNull(at);
      if (st === null) return; // The rest is created by sbx, owned by the caller, 0700.
      const why = foreignControl(st);
      if (why !== undefined)
        throw new SbxError(
          'USAGE',
          `${flag} ${dir}: ${at} is ${why}, so another user could redirect the export's files`,
          {
            hint: `name a ${flag} in a directory only you (or root) can change, e.g. under your HOME (default: sbx's state directory)`,
          },
        );
      if (st.isSymbolicLink()) {
        // The link is ours; what it names must be too (a relative target resolves from its directory).
        check(resolve(dirname(at), readlinkSync(at), ...parts.slice(i)), depth + 1);
        return;
      }
    }
  };
  check(dir, 0);
}

/** A directory made (or found) at `path`: verified a real directory of the caller's, never a link. */
function ensureDir(path: string, mode: number): void {
  try {
    mkdirSync(path, { mode });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  const st = lstatSync(path);
  if (!st.isDirectory() || st.uid !== myUid())
    throw new SbxError(
      'USAGE',
      `${path} is ${st.isSymbolicLink() ? 'a symbolic link' : `not a directory of yours (uid ${st.uid})`}`,
      {
        hint: 'remove it, or name another output directory',
      },
    );
}

function ensureParents(path: string): void {
  const missing: string[] = [];
  for (let at = path; lstatOrNull(at) === null; at = dirname(at)) missing.unshift(at);
  for (const at of missing) ensureDir(at, 0o700);
}

/** `content` at `path` with `mode`: through a fresh name no link can stand at, then renamed over whatever was there. */
function writeFileAtomically(path: string, content: string, mode: number): void {
  const tmp = resolve(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}`);
  const fd = openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, content);
    fchmodSync(fd, mode);
  } catch (e) {
    closeSync(fd);
    unlinkSync(tmp);
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, path);
}

/** The export's files, written under a directory `refuseForeignDir` accepted. */
export function writeExportFiles(files: readonly ExportFile[]): void {
  for (const f of files) {
    ensureParents(dirname(f.path));
    switch (f.kind) {
      case 'dir': {
        ensureDir(f.path, f.mode);
        const fd = openSync(f.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        try {
          fchmodSync(fd, f.mode);
        } finally {
          closeSync(fd);
        }
        break;
      }
      case 'symlink':
        if (lstatOrNull(f.path) === null) symlinkSync(f.linkTo, f.path);
        break;
      case 'file':
        writeFileAtomically(f.path, f.content, f.mode);
        break;
    }
  }
}
