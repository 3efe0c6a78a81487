// The limit types shared by the pure planner (plan.ts), the profile reader (parse.ts) and the runtime
// that applies a plan (limits/host/cgroup/). Plain data only.

export type LimitName = 'memory' | 'pids' | 'cpus' | 'timeout' | 'cpu-time' | 'file-size' | 'nofile' | 'address-space';

export interface Limits {
  memoryBytes?: number;
  pids?: number;
  cpus?: number;
  timeoutMs?: number;
  cpuTimeSec?: number;
  fileSizeBytes?: number;
  nofile?: number;
  /** RLIMIT_AS per process, only when asked for: not a memory limit (V8 and WebAssembly reserve far more). */
  addressSpaceBytes?: number;
  /** Limits that must be enforced exactly: approximation or nothing → LIMIT_UNENFORCEABLE. */
  required: LimitName[];
}

export type CgroupController = 'memory' | 'pids' | 'cpu';

/** What limits/host/cgroup/probe.ts found. Paths are absolute host paths. */
export interface HostLimitFacts {
  uid: number;
  cgroup:
    | {
        kind: 'v2';
        /** Where the cgroup2 hierarchy is mounted. */
        mount: string;
        /** This process's cgroup, relative to the mount (`/user.slice/…/foo.scope`). */
        ownPath: string;
        /** A session cgroup can be created beside ours (see v2SessionParent) and we can move into it. */
        writable: boolean;
        /** Controllers a session cgroup there gets: enabled in the parent, or enableable by us. */
        controllers: string[];
      }
    | {
        kind: 'v1';
        /** Per controller, the directory of this process's cgroup in that hierarchy; null if not mounted. */
        controllers: Record<CgroupController, string | null>;
        /** Every mounted one of them accepts a child cgroup from us. */
        writable: boolean;
      }
    | { kind: 'none' };
  /** systemd-run is on PATH and the manager it would use (the user's, or the system's for root) is reachable. */
  systemdRun: boolean;
}

/** `watchdog`: memory without a cgroup, approximated by RLIMIT_DATA per process and sbx's tree watchdog. */
export type Mechanism = 'cgroup-v2' | 'systemd-scope' | 'cgroup-v1' | 'rlimit' | 'watchdog' | 'wall-clock' | 'none';

export type RlimitResource = 'AS' | 'DATA' | 'NPROC' | 'CPU' | 'FSIZE' | 'NOFILE' | 'CORE';

/** One setrlimit(2), values in the kernel's units (bytes, seconds, counts). */
export interface Rlimit {
  resource: RlimitResource;
  soft: number;
  hard: number;
  /** NPROC only: the uid whose running tasks the runtime adds at launch (RLIMIT_NPROC counts all of them). */
  uid?: number;
}

/**
 * What a launcher applies to the command alone, so that its own supervising process (sbx-landlock's
 * monitor, nsjail's parent) keeps sbx's limits and never shares one with the command it watches:
 * the resources whose rlimits it sets in the command's process just before exec, and
 * whether it moves the command (not itself) into the session cgroup. The limits wrapper leaves those out.
 */
export interface LauncherLimits {
  rlimits: readonly RlimitResource[];
  cgroup: boolean;
}

/** What the wrapper left to the launcher (LauncherLimits), in the values of this run. */
export interface CommandLimits {
  /** The rlimits to set in the command's process, clamped as the trampoline's are. */
  rlimits: readonly Rlimit[];
  /** The session cgroups' cgroup.procs files the command moves itself into. */
  cgroupProcs: readonly string[];
}

export interface PlannedLimit {
  name: LimitName;
  /** In the base unit: bytes, count, CPUs, milliseconds (timeout), seconds (cpu-time). */
  value: number;
  /** As a human reads it: `512MiB`, `64`, `0.5`, `10m`. */
  display: string;
  mechanism: Mechanism;
  /** false when the mechanism only approximates the limit, or is `none`. */
  exact: boolean;
  /** false when nothing enforces it (`mechanism: 'none'`): the run goes on without it, and says so. */
  enforced: boolean;
  required: boolean;
  /** One line: what enforces it, what it misses, or why nothing can. */
  note: string;
  /** When not exact: why no cgroup enforces it here (`cgroup v1 is not writable by uid 1000`). */
  gap?: string;
}

export interface CgroupSettings {
  memoryBytes?: number;
  pids?: number;
  cpus?: number;
}

export type CgroupPlan =
  | { kind: 'none' }
  /** Create `<parent>/sbx-<session>`; enable `controllers` in the parent's subtree_control first. */
  | { kind: 'cgroup-v2'; parent: string; controllers: CgroupController[]; settings: CgroupSettings }
  /** Create `<parent>/sbx-<session>` in each listed controller's hierarchy. */
  | { kind: 'cgroup-v1'; parents: Partial<Record<CgroupController, string>>; settings: CgroupSettings }
  | { kind: 'systemd-scope'; manager: 'user' | 'system'; settings: CgroupSettings };

export interface LimitPlan {
  /** Every configured limit, in LIMIT_NAMES order. */
  limits: PlannedLimit[];
  cgroup: CgroupPlan;
  /** Applied by the launch trampoline. RLIMIT_CORE=0 is always first: a crashing sandboxed process must not drop a core of its memory on the host. */
  rlimits: Rlimit[];
  /** The runtime's wall clock. */
  timeoutMs?: number;
  /**
   * Memory no cgroup enforces: sbx polls the memory of the session's process tree (resident, and the
   * shared memory it holds in files and its tmpfs mounts) every `intervalMs`, every `fastIntervalMs`
   * while it is above half the limit or grew by an eighth of it since the last poll, and ends the
   * tree past `memoryBytes` (limits/host/memory-watchdog.ts). `tasks`: the pids limit RLIMIT_NPROC
   * approximates, which refuses forks silently (EAGAIN): the same polls count the tree's tasks, and a
   * tree seen holding that many is reported.
   */
  watchdog?: { memoryBytes: number; intervalMs: number; fastIntervalMs: number; tasks?: number };
}
