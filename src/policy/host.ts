// What the pure core may know about the host, gathered once by host/host-probe.ts. Plain data, so a
// fixture Host makes every compiler test deterministic.
import type { HostStateFact, HostStateLink, PathChain } from '../host-state/host-state.js';
import type { ToolchainFacts } from '../toolchains/toolchains.js';

export type PathFact =
  | { exists: false }
  | {
      exists: true;
      /** realpath: every symlink resolved. */
      real: string;
      /** What the pinned descriptor is (host/pins.ts): never re-resolved after the check. */
      type: 'file' | 'dir' | 'socket' | 'other';
      /** When the path itself (not a parent) is a symlink: its target as written. */
      link?: string;
      uid: number;
    };

export interface Host {
  uid: number;
  gid: number;
  /** The invoking user's HOME. */
  home: string;
  cwd: string;
  /** Whether sbx's stdin is a terminal: interactive runs keep job control (no --new-session). */
  stdinIsTty: boolean;
  /** The invoking environment, to filter (never copied wholesale). */
  env: Record<string, string>;
  /** Facts about every path the profile names, keyed by the absolute path as written. */
  paths: Record<string, PathFact>;
  /** The user's host state no writable bind may overlap (host-state/host-state.ts), each with its chain. */
  hostState: HostStateFact[];
  /** The chain of every writable bind's realpath (host/path-chain.ts), keyed by that realpath. */
  chains: Record<string, PathChain>;
  /** Second names of protected files inside the writable binds (hard links: host-state/host/host-state-links.ts). */
  hostStateLinks?: HostStateLink[];
  /**
   * The Node binary and bridge script the egress bridge runs from inside the sandbox (realpaths);
   * `judge`, the network judge that captures proxy-unaware clients (dist/sbx-landlock, absent when no C
   * compiler built it); `resolvConf`, where the host's /etc/resolv.conf leads when it is a symbolic
   * link (the sandbox's /etc is the host's: the generated file is bound at the link's end).
   */
  bridge: { node: string; script: string; judge?: string; resolvConf?: string };
  /** Entries under read-only system binds that the world may not read (only probed when the child would keep host uid 0). */
  rootOnly: { path: string; dir: boolean }[];
  /**
   * Secret-looking files found in the mounted trees (the probe plan's scanRoots) by sensitive/host/sensitive-scan.ts:
   * `masks` are hidden (`tracked`: git tracks the file with other content, so its stand-in must be
   * unreadable), `protect` (git hooks) bound read-only over themselves, `views` (git config without
   * credentials, exclude lists) shown with generated content. Host realpaths.
   */
  /**
   * The user's global git config files, each already sanitized by the runtime
   * (git/git-global-config.ts): `which` says whether git finds it as ~/.gitconfig or under
   * $XDG_CONFIG_HOME. Absent when the profile turns the view off (git.global_config: false).
   */
  gitGlobal?: { file: string; which: 'home' | 'xdg'; content: string }[];
  /** The workspace is a git worktree: its own and its shared git directory (git/host/git-worktree.ts), realpaths. */
  gitWorktree?: { gitDir: string; commonDir: string };
  /**
   * The user's toolchains: PATH entries inside HOME and their roots, pinned and owner-checked by
   * toolchains/host/toolchain-probe.ts. Absent when the profile turns them off (toolchains: false) or in danger mode.
   */
  toolchains?: ToolchainFacts;
  /** Why the workspace is not the cwd, when sbx chose the project's top level (workspace/project-root.ts). */
  workspaceDetected?: string;
  sensitiveFiles: {
    masks: { path: string; dir: boolean; tracked?: true }[];
    protect: string[];
    /** `role` (policy/types.ts MountRole): `git-config` for a git config, `guard` for an exclude list. */
    views: { path: string; content: string; reason: string; role: 'git-config' | 'guard'; withheld?: string[] }[];
    /** Matched by a rule and shown anyway (the report says by whom); not used by derivePolicy. */
    unmasked?: { path: string; by: 'profile' | 'request' | 'content'; what?: 'certificate' | 'public key' }[];
  };
}
