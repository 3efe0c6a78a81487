// What a sensitive-file scan returns (sensitive/host/sensitive-scan.ts walks the trees a run mounts),
// and the reader it tells of everything it read. Pure: the shapes, and what a scan's result means
// when it is incomplete or was walked under another path.
import type { PublicKind } from './public-keys.js';
import type { UnmaskedBy } from './sensitive-matcher.js';

/** Far above a large monorepo with its node_modules, low enough to keep a launch under a second. */
export const DEFAULT_MAX_SCAN_ENTRIES = 200_000;

export interface SensitiveMask {
  /** Absolute host path (the tree root joined with the entry's relative path). */
  path: string;
  what: 'file' | 'dir';
  /**
   * Tracked by git, but the working file differs from the index: masked, with a stand-in git cannot
   * read, so no commit made inside can record the stand-in in its place.
   */
  tracked?: true;
}

/**
 * A path a rule would have masked that the sandbox sees as it is, and who let it in: the profile's
 * `sensitive.except`, the run's `unmask`, or its content (only a certificate or public key: `what`).
 */
export interface UnmaskedPath {
  path: string;
  by: UnmaskedBy | 'content';
  what?: PublicKind;
}

/** A file shown with content sbx generated (never a secret): a git config view, an exclude list. */
export interface SensitiveView {
  path: string;
  content: string;
  reason: string;
  role: 'git-config' | 'guard';
  /** A git config view: the credential keys the view leaves out (names, never values); absent when none. */
  withheld?: string[];
}

export interface SensitiveScan {
  /** Sorted, so a directory comes before anything below it. */
  masks: SensitiveMask[];
  /** Absolute host paths to bind read-only over themselves; sorted. */
  protect: string[];
  /** Files replaced by generated content. */
  views: SensitiveView[];
  /** Shown although a rule matched them (the report says who let them in); sorted. */
  unmasked: UnmaskedPath[];
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

/** What derivePolicy needs (Host.sensitiveFiles), for every tree that will be mounted. */
export interface MountedTreesScan {
  masks: { path: string; dir: boolean; tracked?: true }[];
  protect: string[];
  views: SensitiveView[];
  /** Matched by a rule, shown anyway: by the profile's or the run's exceptions, or public content. */
  unmasked: UnmaskedPath[];
  scanned: number;
}

/**
 * Told of everything a scan's result depends on: a directory it listed, a file it read or looked for,
 * a symlink it resolved (whose target may lie anywhere), a file whose link count it read (`inode`:
 * changed by a link made in any directory, so only a watch on the file itself sees it). The
 * library's warm cache watches these (host/warm-cache.ts), the toolchain scans' disk cache
 * fingerprints them (sensitive/host/scan-cache.ts), and a plain run passes nothing. Every file whose content
 * a decision reads must be told, even inside a listed directory: an edit in place changes no
 * directory's timestamps.
 */
export type ScanReader = (path: string, what: 'dir' | 'file' | 'link' | 'inode') => void;

/** Past maxEntries: no lists at all, so nothing partial is ever used (fail closed). */
export function incompleteScan(scanned: number): SensitiveScan {
  return { masks: [], protect: [], views: [], unmasked: [], links: [], scanned, truncated: true };
}

/** A scan's paths, found under `from` (the pinned descriptor's /proc path), as paths under `to`. */
export function rebaseScan(scan: SensitiveScan, from: string, to: string): SensitiveScan {
  const move = (path: string) =>
    path === from ? to : path.startsWith(`${from}/`) ? to + path.slice(from.length) : path;
  return {
    ...scan,
    masks: scan.masks.map((m) => ({ ...m, path: move(m.path) })),
    protect: scan.protect.map(move),
    views: scan.views.map((v) => ({ ...v, path: move(v.path) })),
    unmasked: scan.unmasked.map((u) => ({ ...u, path: move(u.path) })),
    links: scan.links.map(move),
  };
}
