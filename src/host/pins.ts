// Mount sources are pinned: each host path is opened once (O_PATH), every check runs on what that
// descriptor is (its path from /proc/self/fd, its fstat), and the launcher mounts the descriptor
// (bwrap --bind-fd, nsjail /proc/self/fd/N). A path resolved twice — once to check, once to mount —
// lets whoever can write the workspace swap a directory for a symlink to ~/.ssh in between.
import { closeSync, fstatSync, lstatSync, openSync, readlinkSync, type Stats } from 'node:fs';
import { SbxError } from '../errors.js';
import type { PathFact } from '../policy/host.js';

/**
 * open(2) flags: O_PATH resolves the path without opening the file (no FIFO blocking, no device
 * open, works on sockets); O_CLOEXEC (libuv adds it anyway) keeps the descriptor out of every child
 * but the launcher, which gets it on purpose. Node exports neither; the values are those of x86_64
 * and aarch64 (include/uapi/asm-generic/fcntl.h).
 */
const O_PATH = 0o10000000;
const O_CLOEXEC = 0o2000000;
const PIN_FLAGS = O_PATH | O_CLOEXEC;

/** Descriptors this run holds open, by the real path each one is. Closed by `close()`. */
export interface Pins {
  /** Open `path` (following symlinks) and describe what was opened; pins it by its real path. */
  probe(path: string): PathFact;
  /** Pin a path sbx resolved earlier: refused when it no longer resolves to itself (swapped meanwhile). */
  pinExact(real: string, what: string): void;
  /** The descriptor holding `real`, if pinned. */
  fdOf(real: string): number | undefined;
  close(): void;
}

function typeOf(st: Stats): Extract<PathFact, { exists: true }>['type'] {
  return st.isDirectory() ? 'dir' : st.isFile() ? 'file' : st.isSocket() ? 'socket' : 'other';
}

interface Pinned {
  fd: number;
  st: Stats;
}

export function openPins(): Pins {
  const byReal = new Map<string, Pinned>();
  const open = (path: string): { real: string; pinned: Pinned } | undefined => {
    let fd: number;
    try {
      fd = openSync(path, PIN_FLAGS);
    } catch {
      return undefined;
    }
    try {
      // What the descriptor is, not what the path names now: the kernel's own path of the object.
      const real = readlinkSync(`/proc/self/fd/${fd}`);
      const st = fstatSync(fd);
      const known = byReal.get(real);
      // The same real path twice: keep the first descriptor (its facts are what gets checked).
      if (known) {
        closeSync(fd);
        return { real, pinned: known };
      }
      if (!real.startsWith('/') || real.endsWith(' (deleted)')) {
        closeSync(fd);
        return undefined;
      }
      const pinned = { fd, st };
      byReal.set(real, pinned);
      return { real, pinned };
    } catch {
      closeSync(fd);
      return undefined;
    }
  };
  return {
    probe(path) {
      const opened = open(path);
      if (!opened) return { exists: false };
      const { real, pinned } = opened;
      let link: string | undefined;
      try {
        // A path that is its own real path has no symlink in it: no lstat needed to know.
        if (real !== path && lstatSync(path).isSymbolicLink()) link = readlinkSync(path);
      } catch {
        // informational only (merged-/usr links are recreated, never bound)
      }
      const linked = link !== undefined ? { link } : {};
      return { exists: true, real, type: typeOf(pinned.st), ...linked, uid: pinned.st.uid };
    },
    pinExact(real, what) {
      const opened = open(real);
      if (!opened || opened.real !== real) {
        throw new SbxError('BIND_SOURCE_CHANGED', `${what}: ${real} changed while the sandbox was being set up`, {
          hint: 'something (another sandbox writing this tree?) is replacing it; stop that process and run again',
        });
      }
    },
    fdOf: (real) => byReal.get(real)?.fd,
    close() {
      for (const { fd } of byReal.values()) closeSync(fd);
      byReal.clear();
    },
  };
}
