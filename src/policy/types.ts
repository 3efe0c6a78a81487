// The Policy IR: the normalised, fully resolved description of one sandbox. Plain JSON data; every
// backend compiles it, `sbx explain` prints it, the report hashes it. Imports nothing at run time.
import type { Limits } from '../limits/plan.js';
import type { CredentialPolicy } from '../network/credentials.js';
import type { EgressRules } from '../network/egress.js';
import type { SeccompPreset, SeccompRule } from '../seccomp/index.js';

export type Mode = 'read-only' | 'workspace-write' | 'danger';

/**
 * What a mount is for, typed: backends and exporters branch on it (and on `kind`), never on `reason`,
 * which is text for people and may be reworded freely (test/unit/policy/mount-role.test.ts). A
 * `remount-ro` takes the role of what it makes read-only.
 */
export type MountRole =
  /** The host's system directories, read-only, their merged-/usr links, the sandbox root: exporters use the image's. */
  | 'system'
  /** The sandbox's own /proc and /dev (and its sized /dev/shm); the covers of host kernel state under /proc. */
  | 'kernel'
  /** The private /tmp and HOME, empty each session; the user's global git config, a view in that HOME. */
  | 'private'
  /** The workspace, and a worktree's shared git directory. */
  | 'workspace'
  /** mode: danger: the host's own root, writable. */
  | 'host-root'
  /** A read-only bind the profile (read_only) or the caller (--ro-bind) asked for: commands may name it. */
  | 'user-ro'
  /** A bind the profile (writable_roots) or the caller (--bind) asked for: writable; read-only in read-only mode. */
  | 'user-rw'
  /** A toolchain root from PATH, read-only, and the secret-looking files its scan masked: exporters omit both. */
  | 'toolchain'
  /** A socket the command connects to: a network.unix_sockets entry, the ssh-agent filter's directory. */
  | 'socket'
  /** The egress bridge's program, script and sockets: a launcher that reaches the proxy otherwise omits them. */
  | 'bridge'
  /** Transparent capture's judge and resolver files: landlock omits them (its helper captures), as does k8s export. */
  | 'capture'
  /** The run's CA for the hosts `credentials` names, and the system CA bundle with it added (network/credential-trust.ts). */
  | 'trust'
  /** State a writable tree must keep: git hooks, sbx's policy files (bound read-only), the git exclude view. */
  | 'guard'
  /** A directory above guarded state, bound over itself so that it cannot be renamed (derive/overlay.ts). */
  | 'pin'
  /** A repository's git config without its credentials: guarded, and so are the hooks and commondir beside it. */
  | 'git-config'
  /** A credential store kept out of the sandbox, or a root-only host file: hidden. */
  | 'mask'
  /** A secret-looking file the sensitive scan found in a mounted tree: hidden (the report lists it as masked). */
  | 'secret';

/** Mounts, applied in array order. Each carries its role and the reason it exists (shown by `sbx explain`). */
export type Mount = (
  | { kind: 'bind'; source: string; target: string; access: 'ro' | 'rw'; optional: boolean; reason: string }
  | { kind: 'tmpfs'; target: string; sizeBytes: number; mode: number; reason: string }
  | { kind: 'proc'; target: string; reason: string }
  /**
   * Host-global kernel state under that /proc (policy/derive/kernel.ts): `read-only` keeps it readable
   * and unwritable, even to a command that is the host's kuid 0; `masked` hides it (`what`: an empty
   * file or directory over it). Its target is the host's own path of the same kernel object.
   */
  | { kind: 'kernel'; target: string; cover: 'read-only' | 'masked'; what: 'file' | 'dir'; reason: string }
  | { kind: 'dev'; target: string; reason: string }
  | { kind: 'symlink'; target: string; linkTo: string; reason: string }
  /** Hide a file (an empty read-only file over it) or a directory (an empty read-only tmpfs). */
  | { kind: 'mask'; target: string; what: 'file' | 'dir'; reason: string }
  /**
   * A read-only file over `target` with content sbx generated (a .git/config without credentials,
   * an exclude list; mode 0 for a stand-in nobody may read). Never a secret, so it may sit in the
   * Policy; the runtime writes it to the session directory (backend/launch.ts dataFilePath).
   */
  | {
      kind: 'file';
      target: string;
      content: string;
      mode: number;
      reason: string;
      /** A git config view: the credential keys it leaves out (names only); absent when none. */
      withheld?: string[];
    }
  /**
   * This run's session directory (the egress proxy's sockets), or its `subdir` (the ssh-agent filter's
   * socket alone), read-only: connecting needs no write to the mount.
   */
  | { kind: 'session-dir'; target: string; subdir?: string; reason: string }
  /** Make an earlier mount (or the sandbox root `/`) read-only once everything below it is in place. */
  | { kind: 'remount-ro'; target: string; reason: string }
) & { role: MountRole };

export type MountKind = Mount['kind'];

export interface DroppedEnv {
  name: string;
  reason: 'not-allowed' | 'credential' | 'reserved';
}

export interface Namespaces {
  user: boolean;
  pid: boolean;
  ipc: boolean;
  uts: boolean;
  net: boolean;
  cgroup: boolean;
}

export type NetworkPolicy =
  | { kind: 'none' }
  | { kind: 'host' }
  /**
   * Own network namespace; TCP only through sbx's proxy (outside the sandbox), which decides per
   * destination by `rules`: the profile's allow, deny and allow_private lists compiled once (plain
   * data, each entry keeping its text as written), handed to the proxy as they are. `bridge` holds
   * the host files the in-sandbox bridge runs from (null when nothing needs it: no allow list, no
   * ports). `hostPorts`: the host's 127.0.0.1 ports the sandbox reaches at the same port inside;
   * `publish`: ports inside the host reaches at its 127.0.0.1 (both relayed by the bridge and sbx).
   */
  | {
      kind: 'filtered';
      rules: EgressRules;
      unixSockets: string[];
      hostPorts: number[];
      publish: number[];
      bridge: { node: string; script: string } | null;
      /**
       * Transparent capture of clients that ignore the proxy variables (docs/DESIGN.md): present with
       * an allow list. `on`: names are answered inside and every TCP connect is captured into the
       * proxy (`judge`: the helper's host path, bound into a sandbox with its own namespace;
       * `resolvConf`: where the generated /etc/resolv.conf goes). `off`: why not; only proxy-aware
       * clients connect.
       */
      capture?: { kind: 'on'; judge: string; resolvConf: string } | { kind: 'off'; why: string };
    };

/** Who the command is: inside its user namespace, and on the host (the kernel's view). */
export interface Identity {
  uid: number;
  gid: number;
  /** Whether the host-side (kernel) uid is 0: then root-only host files are masked. */
  hostRoot: boolean;
}

/** Command rules (profile `commands`, defaults applied), judged by preflight before launch. */
export interface CommandRules {
  default: 'allow' | 'deny' | 'ask';
  allow: Record<string, { allow?: string[]; block?: string[] }>;
  deny: string[];
  paths: 'workspace' | 'any';
  shellSyntax: 'full' | 'restricted';
}

/** The hostname inside when the profile names none (policy/derive/identity.ts). */
export const DEFAULT_HOSTNAME = 'sbx';

export interface Policy {
  profile: { name: string; hash: string };
  mode: Mode;
  /** `detected`: why the workspace is not the cwd (sbx chose the project's top level: workspace/project-root.ts). */
  workspace: { host: string; sandbox: string; access: 'ro' | 'rw'; detected?: string };
  mounts: Mount[];
  /**
   * vars: the command's environment. secrets: names of variables whose values only the runtime
   * holds (Session.secretEnv): never in the Policy, which explain prints and the ledger hashes.
   */
  env: { vars: Record<string, string>; dropped: DroppedEnv[]; secrets: string[] };
  cwd: string;
  hostname: string;
  identity: Identity;
  namespaces: Namespaces;
  network: NetworkPolicy;
  /** Resource limits in base units; how each is enforced is decided at run time (LimitPlan). */
  limits: Limits;
  /** Syscalls denied inside the sandbox (empty with preset off). */
  seccomp: { preset: SeccompPreset; rules: SeccompRule[] };
  /** The command as given (argv[0] may be a bare name: it is looked up on the sandbox PATH). */
  command: string[];
  /** Set when sbx built `command` from a shell string (command-line.ts): the string, judged command by command. */
  shell?: string;
  commands: CommandRules;
  /** The run's `--expose-workspace-secrets` (never a profile's): landlock runs with secrets in a grant readable. */
  exposeWorkspaceSecrets?: true;
  /**
   * The profile's `ssh_agent`: the caller's agent keys (fingerprints or comments, as written) the
   * sandbox's agent socket offers. The runtime resolves them against the agent at start
   * (ssh-agent/host/); absent, the sandbox gets no agent.
   */
  sshAgent?: { keys: string[] };
  /**
   * The profile's (and the caller's) `credentials`: each variable holds a placeholder the runtime makes,
   * and the egress proxy puts the value (read at run time from `from`, never in the Policy) in place of
   * it in requests to its hosts, whose TLS it terminates. Absent: none, and no host is intercepted.
   */
  credentials?: CredentialPolicy;

  /**
   * PATH entries not bound as toolchains, and why (toolchains/toolchains.ts); `shown` when the sandbox
   * sees them anyway (the workspace, a system directory); absent when none.
   */
  toolchainsSkipped?: { entry: string; why: string; shown?: true }[];
}
