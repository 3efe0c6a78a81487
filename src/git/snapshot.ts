// What the auditor records of the git state in the writable trees, before and after a run: plain
// data the walker (host/walk.ts) fills and the diff (changes.ts) reads. Pure types only.

/** One file as found: by identity and, for a regular file small enough, its bytes. */
export interface FileState {
  kind: 'file' | 'link' | 'dir' | 'other';
  dev: number;
  ino: number;
  mode: number;
  size: number;
  /** sha256 of the content (regular files read whole). */
  hash?: string;
  /** The content, kept when it is small enough to be written back. */
  bytes?: Uint8Array;
  /** A symlink's target. */
  target?: string;
}

/** A directory git takes (or, after the run, took) for a git dir. */
export interface GitDirState {
  path: string;
  dev: number;
  ino: number;
  /** HEAD passes validate_headref() and the objects/refs or commondir signature is there. */
  isGitDir: boolean;
  head?: FileState;
  config?: FileState;
  configWorktree?: FileState;
  commondir?: FileState;
  /** A linked worktree admin dir's `gitdir` (the worktree it belongs to). */
  gitdir?: FileState;
  /** Where commondir points, resolved (the git dir itself when there is none). */
  commonDir: string;
  /** The program entries of config and config.worktree (config-programs.ts), and a marker per unparsed line. */
  programs: string[];
  /** Where git looks for its hooks (hooksDirOf), when it can say. */
  hooksDir?: string;
}

/** A hooks directory: its non-sample entries by name, or absent. */
export interface HooksDirState {
  present: boolean;
  /** The directory is a symlink (git follows it): its target. */
  link?: string;
  dev?: number;
  ino?: number;
  entries: Record<string, FileState>;
}

/** Why part of the tree was not audited: a bound hit or an error, naming the path. */
export interface Unchecked {
  path: string;
  why: string;
}

export interface GitSnapshot {
  gitDirs: GitDirState[];
  /** `.git` files (gitdir: pointers) and `.git` symlinks, by path. */
  gitFiles: Record<string, FileState>;
  /** Config files that a git dir's or the global config includes, inside the writable trees: state, or null when absent. */
  includes: Record<string, { state: FileState | null; programs: string[] }>;
  /** Hooks directories inside the writable trees (each git dir's, the global core.hooksPath). */
  hookDirs: Record<string, HooksDirState>;
  unchecked: Unchecked[];
  /** Directory entries read: what the bound counts. */
  entries: number;
}
