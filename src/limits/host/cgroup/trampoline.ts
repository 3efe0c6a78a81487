// The argv that starts the sandbox launcher inside its cgroup and under its rlimits. No I/O: paths and
// values come in, argv arrays go out, so tests pin them exactly.
//
// Race-free placement: Node cannot spawn a child directly into a cgroup (no CLONE_INTO_CGROUP in
// child_process), so the caller spawns this trampoline instead of bwrap. It moves *itself* into the
// session cgroup (writing "0" to cgroup.procs means "the writer", cgroup-v2.rst and cgroups-v1.txt),
// sets the rlimits, and only then execs bwrap. Everything the sandbox will ever run descends from a
// process that is already inside and already limited; the only code that runs outside is the shell.
// Shell builtins only (echo, ulimit, exec): no fork, one exec of /bin/sh on top of bwrap's.
import type { CgroupSettings, Rlimit, RlimitResource } from '../../plan.js';
import { CPU_PERIOD_US, cpuQuotaUs } from '../../plan.js';

export const SHELL = '/bin/sh';
/** The trampoline's $0: what `ps` shows for the instant before it execs. */
export const TRAMPOLINE_NAME = 'sbx-limits';
/** Exit status when the trampoline cannot place or limit itself: sbx's "sandbox setup failed". */
export const SETUP_FAILED = 125;

/**
 * ulimit flag and the unit the shell counts in. POSIX sh defines only -f (512-byte blocks, also in bash's
 * posix mode, which /bin/sh as bash is); -c -d -n -t -v are common to dash, bash, busybox ash and mksh,
 * -d and -v in KiB everywhere. The flag for RLIMIT_NPROC differs (dash, mksh, busybox: -p; bash: -u, where -p is
 * the read-only pipe size), so nprocCommand tries -u quietly and falls back to -p.
 */
const ULIMIT: Record<Exclude<RlimitResource, 'NPROC'>, { flag: string; unit: number }> = {
  CORE: { flag: 'c', unit: 512 },
  FSIZE: { flag: 'f', unit: 512 },
  AS: { flag: 'v', unit: 1024 },
  DATA: { flag: 'd', unit: 1024 },
  CPU: { flag: 't', unit: 1 },
  NOFILE: { flag: 'n', unit: 1 },
};

/** One rlimit as shell commands. Soft before hard: lowering the hard limit below the current soft one is EINVAL. */
export function rlimitCommand(r: Rlimit): string {
  if (r.resource === 'NPROC') return `{ ulimit -u ${r.hard} 2>/dev/null || ulimit -p ${r.hard}; }`;
  const { flag, unit } = ULIMIT[r.resource];
  const soft = Math.floor(r.soft / unit);
  const hard = Math.floor(r.hard / unit);
  return soft === hard ? `ulimit -${flag} ${hard}` : `ulimit -S -${flag} ${soft} && ulimit -H -${flag} ${hard}`;
}

/**
 * `/bin/sh -c <script> sbx-limits <cgroup.procs>… -- ` — the launcher's file and args follow.
 * `unset` names variables the trampoline needed (systemd-run's XDG_RUNTIME_DIR) but the launcher must
 * not see: bwrap's own environment is visible inside the sandbox as pid 1's.
 */
export function shellTrampoline(
  procsFiles: readonly string[],
  rlimits: readonly Rlimit[],
  unset: readonly string[] = [],
): string[] {
  const script = [
    ...(unset.length > 0 ? [`unset ${unset.join(' ')}`] : []),
    `for f; do shift; [ "$f" = -- ] && break; echo 0 > "$f" || { echo "sbx: cannot move into cgroup $f" >&2; exit ${SETUP_FAILED}; }; done`,
    ...(rlimits.length > 0
      ? [
          `${rlimits.map(rlimitCommand).join(' && ')} || { echo "sbx: cannot set resource limits" >&2; exit ${SETUP_FAILED}; }`,
        ]
      : []),
    'exec "$@"',
  ].join('; ');
  return [SHELL, '-c', script, TRAMPOLINE_NAME, ...procsFiles, '--'];
}

/** systemd.resource-control(5) properties for a transient scope. */
export function scopeProperties(settings: CgroupSettings): string[] {
  const props: string[] = [];
  if (settings.memoryBytes !== undefined) props.push(`MemoryMax=${settings.memoryBytes}`, 'MemorySwapMax=0');
  if (settings.pids !== undefined) props.push(`TasksMax=${settings.pids}`);
  // Whole percents: older systemd (before permyriad parsing) refuses decimals.
  if (settings.cpus !== undefined)
    props.push(`CPUQuota=${Math.max(1, Math.round((cpuQuotaUs(settings.cpus) / CPU_PERIOD_US) * 100))}%`);
  return props;
}

export interface SystemdScopeArgs {
  /** Absolute path of systemd-run. */
  systemdRun: string;
  manager: 'user' | 'system';
  unit: string;
  settings: CgroupSettings;
  /** `XDG_RUNTIME_DIR=…` to give systemd-run (through `env`) when the launcher's environment lacks it. */
  runtimeDir?: { env: string; value: string };
}

/**
 * `systemd-run [--user] --scope …` then the shell trampoline for the rlimits. With --scope, systemd-run
 * asks the manager for a scope around its own pid and then execs the command (systemd-run(1)), so the
 * chain stays one process, placed before anything untrusted runs. --collect unloads the scope even if
 * it failed, so a crashed run leaves no unit behind.
 */
export function systemdScopeArgv(a: SystemdScopeArgs, rlimits: readonly Rlimit[]): string[] {
  const head = a.runtimeDir
    ? [a.runtimeDir.env, `XDG_RUNTIME_DIR=${a.runtimeDir.value}`, a.systemdRun]
    : [a.systemdRun];
  return [
    ...head,
    ...(a.manager === 'user' ? ['--user'] : []),
    '--scope',
    '--quiet',
    '--collect',
    `--unit=${a.unit}`,
    ...scopeProperties(a.settings).flatMap((p) => ['-p', p]),
    '--',
    ...shellTrampoline([], rlimits, a.runtimeDir ? ['XDG_RUNTIME_DIR'] : []),
  ];
}
