// Reading one path for the git-state auditor without trusting it: lstat first (a link is recorded as
// a link, never followed), a regular file opened O_NOFOLLOW|O_NONBLOCK (a FIFO planted under a
// name git reads cannot hang sbx) and checked to be the inode lstat saw, read bounded.
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, readSync, type Stats } from 'node:fs';
import type { FileState } from '../snapshot.js';

/** Far above any real config, HEAD, commondir or hook; a larger file is recorded by size, not read. */
export const MAX_READ_BYTES = 1024 * 1024;

const isMissing = (error: unknown) =>
  (error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR';

/** lstat, or undefined when nothing is there. */
export function lstatOrNone(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

function readRegular(path: string, st: Stats): Buffer {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const now = fstatSync(fd);
    if (!now.isFile() || now.dev !== st.dev || now.ino !== st.ino) throw new Error('changed while read');
    const buf = Buffer.alloc(Math.min(now.size, MAX_READ_BYTES));
    let at = 0;
    while (at < buf.length) {
      const n = readSync(fd, buf, at, buf.length - at, at);
      if (n === 0) break;
      at += n;
    }
    return buf.subarray(0, at);
  } finally {
    closeSync(fd);
  }
}

/** The state of one path, undefined when absent. Throws on anything else (the caller names the path as unchecked). */
export function readState(path: string): FileState | undefined {
  const st = lstatOrNone(path);
  if (!st) return undefined;
  const base = { dev: st.dev, ino: st.ino, mode: st.mode & 0o7777, size: st.size };
  if (st.isSymbolicLink()) return { kind: 'link', ...base, target: readlinkSync(path) };
  if (st.isDirectory()) return { kind: 'dir', ...base };
  if (!st.isFile()) return { kind: 'other', ...base };
  if (st.size > MAX_READ_BYTES) return { kind: 'file', ...base, hash: `unread:${st.size}:${st.ctimeMs}` };
  const bytes = readRegular(path, st);
  return { kind: 'file', ...base, hash: createHash('sha256').update(bytes).digest('hex'), bytes };
}

/** A regular file's text as recorded, or undefined (absent, a link, too large, not a file). */
export const textOf = (state: FileState | undefined) =>
  state?.kind === 'file' && state.bytes ? Buffer.from(state.bytes).toString('utf8') : undefined;
