// Reads a file that decides policy (a profile, the trust store, the profile cache) as hostile input:
// a regular file only, of bounded size, never below /proc, /sys or /dev, read from the descriptor
// that was checked. With `checkOwner`, the file and every directory above it must be owned by the
// invoking user or root and not writable by group or others (OpenSSH's StrictModes rule): otherwise
// another local user, or a world-writable parent, could choose the policy.
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readlinkSync,
  readSync,
  realpathSync,
  type Stats,
} from 'node:fs';
import { dirname, resolve } from 'node:path';
import { SbxError } from '../errors.js';
import { isPseudoFsPath } from '../policy/user-dirs.js';

export interface ReadGuard {
  /** What the file is, for messages ("profile", "trust store"). */
  what: string;
  maxBytes: number;
  /** Owner and mode checks on the file and all its parents (built-in profiles skip them: the package is trusted). */
  checkOwner: boolean;
  uid: number;
}

export interface GuardedText {
  /** The file's real path (symlinks resolved): what was opened. */
  real: string;
  text: string;
}

const MODE_NAMES: [(st: Stats) => boolean, string][] = [
  [(st) => st.isDirectory(), 'a directory'],
  [(st) => st.isFIFO(), 'a FIFO'],
  [(st) => st.isSocket(), 'a socket'],
  [(st) => st.isCharacterDevice(), 'a character device'],
  [(st) => st.isBlockDevice(), 'a block device'],
  [(st) => st.isSymbolicLink(), 'a symlink'],
];

function kindOf(st: Stats): string {
  return MODE_NAMES.find(([is]) => is(st))?.[1] ?? 'not a regular file';
}

const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0');

/** Why `st` (of `path`) lets someone other than `uid` or root change what is read; undefined if it does not. */
function unsafeReason(path: string, st: Stats, uid: number): { why: string; fix: string } | undefined {
  if (st.uid !== uid && st.uid !== 0) {
    return {
      why: `${path} is owned by uid ${st.uid}, not by you (uid ${uid}) or root`,
      fix: `remove it, or if it is yours: chown ${uid} ${path}`,
    };
  }
  // A sticky directory (/tmp) lets others add entries but not replace ours; every entry below it is
  // checked in turn, so one owned by another user is still refused.
  if (st.isSymbolicLink() || (st.mode & 0o022) === 0 || (st.isDirectory() && (st.mode & 0o1000) !== 0))
    return undefined;
  const who =
    (st.mode & 0o020) !== 0 && (st.mode & 0o002) !== 0
      ? 'group and others'
      : (st.mode & 0o020) !== 0
        ? 'group'
        : 'others';
  return { why: `${path} is writable by ${who} (mode ${octal(st.mode)})`, fix: `chmod go-w ${path}` };
}

function unsafe(guard: ReadGuard, file: string, reason: { why: string; fix: string }): SbxError {
  return new SbxError('PROFILE_UNSAFE', `refusing ${guard.what} ${file}: ${reason.why}`, { hint: reason.fix });
}

/** Every path from `/` down to `path` itself. */
function prefixes(path: string): string[] {
  const out: string[] = [];
  for (let p = path; ; p = dirname(p)) {
    out.unshift(p);
    if (dirname(p) === p) return out;
  }
}

/** The owner rule over the path as written (symlinks included: who placed them chose the target) and the real one. */
function checkOwnerChain(guard: ReadGuard, file: string, written: string, real: string): void {
  const paths = new Set([...prefixes(dirname(written)), ...prefixes(dirname(real))]);
  if (written !== real) paths.add(written);
  for (const path of paths) {
    let st: Stats;
    try {
      st = lstatSync(path);
    } catch {
      continue; // resolved already by realpath; a component that vanished fails the open below
    }
    const reason = unsafeReason(path, st, guard.uid);
    if (reason) throw unsafe(guard, file, reason);
  }
}

function pseudoFs(guard: ReadGuard, file: string, real: string): SbxError {
  return new SbxError(
    'PROFILE_UNSAFE',
    `refusing ${guard.what} ${file}${real !== file ? ` (-> ${real})` : ''}: /proc, /sys and /dev hold no profiles`,
    {
      hint: 'name a regular file (a copy of the content, not a device or a descriptor)',
    },
  );
}

function tooLarge(guard: ReadGuard, file: string, size: string): SbxError {
  return new SbxError(
    'PROFILE_TOO_LARGE',
    `refusing ${guard.what} ${file}: ${size} is over the ${guard.maxBytes / 1024} KiB limit`,
    {
      hint: 'a profile is a short YAML file: split it with extends, or point at the right file',
    },
  );
}

/**
 * Read `file` under `guard`. Throws PROFILE_NOT_FOUND when it does not exist, PROFILE_UNSAFE for a
 * non-regular file, a pseudo-filesystem path or a failed owner check, PROFILE_TOO_LARGE over the cap.
 */
export function readGuarded(file: string, guard: ReadGuard): GuardedText {
  const written = resolve(file);
  if (isPseudoFsPath(written)) throw pseudoFs(guard, file, written);
  let real: string;
  try {
    real = realpathSync(written);
  } catch (cause) {
    throw new SbxError(
      'PROFILE_NOT_FOUND',
      `cannot read ${guard.what} ${file}: ${(cause as NodeJS.ErrnoException).code ?? String(cause)}`,
      {
        cause,
        hint: 'check the path and its permissions',
      },
    );
  }
  if (isPseudoFsPath(real)) throw pseudoFs(guard, file, real);
  if (guard.checkOwner) checkOwnerChain(guard, file, written, real);
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting for a writer.
    // O_NOFOLLOW: the last component cannot have become a symlink since realpath.
    fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | constants.O_NOFOLLOW);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    // ENXIO: a socket; ELOOP: swapped for a symlink after the check.
    if (code === 'ENXIO' || code === 'ELOOP')
      throw unsafe(guard, file, {
        why: `${real} is ${code === 'ENXIO' ? 'a socket' : 'a symlink'}`,
        fix: 'name a regular file',
      });
    throw new SbxError('PROFILE_NOT_FOUND', `cannot read ${guard.what} ${file}: ${code ?? String(cause)}`, {
      cause,
      hint: 'check the file permissions',
    });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile())
      throw unsafe(guard, file, { why: `${real} is ${kindOf(st)}, not a regular file`, fix: 'name a regular file' });
    if (guard.checkOwner) {
      const reason = unsafeReason(real, st, guard.uid);
      if (reason) throw unsafe(guard, file, reason);
      // The descriptor must be the file whose parents were checked (no directory swapped in between).
      const opened = openedPath(fd);
      if (opened !== undefined && opened !== real)
        throw unsafe(guard, file, {
          why: `${real} was replaced while it was read (now ${opened})`,
          fix: 'retry; find out who changes it',
        });
    }
    if (st.size > guard.maxBytes) throw tooLarge(guard, file, `its size, ${st.size} bytes,`);
    return { real, text: readBounded(fd, guard, file) };
  } finally {
    closeSync(fd);
  }
}

/** The path the kernel has for `fd`; undefined without /proc (the open already refused symlinks). */
function openedPath(fd: number): string | undefined {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return undefined;
  }
}

/** At most maxBytes from the checked descriptor: a file that grows after fstat is still refused, never read whole. */
function readBounded(fd: number, guard: ReadGuard, file: string): string {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.alloc(64 * 1024);
    const n = readSync(fd, chunk, 0, chunk.length, null);
    if (n === 0) break;
    total += n;
    if (total > guard.maxBytes) throw tooLarge(guard, file, 'what it holds');
    chunks.push(chunk.subarray(0, n));
  }
  return Buffer.concat(chunks).toString('utf8');
}
