// The nsjail backend's reviewed gaps: where it differs from bwrap, feature by feature. Pure data.
// `refused` entries are what nsjail/compile.ts refuses by name (BACKEND_UNSUPPORTED); `weaker` ones are
// listed by `sbx explain --backend nsjail` where the policy uses them; `equivalent` ones say why nothing is
// lost. test/unit/backend/nsjail/coverage.test.ts holds every Policy field to an entry.
import type { Gap } from '../shared/gap.js';

/** Where nsjail differs from bwrap. `refused` entries throw BACKEND_UNSUPPORTED when a policy needs them. */
export const NSJAIL_GAPS: readonly Gap[] = [
  {
    key: 'nsjail.die-with-parent',
    effect: 'weaker',
    detail:
      'nsjail has no --die-with-parent: if sbx itself is SIGKILLed, nsjail and the sandbox run on until the command exits (the command has PR_SET_PDEATHSIG=SIGKILL towards nsjail only)',
  },
  {
    key: 'nsjail.init',
    effect: 'weaker',
    detail:
      'the command is pid 1 of its namespace (no init): signals it has no handler for are not delivered from outside, so SIGINT/SIGTERM to nsjail end the sandbox with SIGKILL (exit 128+the signal nsjail got), and orphans are reaped only if the command reaps them',
  },
  {
    key: 'nsjail.bind-flags',
    effect: 'weaker',
    detail:
      'binds are not nosuid,nodev as bwrap makes them: set-uid bits are inert under no_new_privs, device nodes under a bound host path stay usable as their permissions allow',
  },
  {
    key: 'nsjail.argv',
    effect: 'weaker',
    detail:
      "host paths and the Kafel policy are on nsjail's argv, which /proc/PID/cmdline shows every local user (bwrap gets all its options on a descriptor); the environment is not: it is in the config nsjail reads from fd 4",
  },
  {
    key: 'nsjail.rlimits',
    effect: 'equivalent',
    detail:
      'nsjail sets soft = hard for every rlimit: unset ones become the current hard limit (a soft NOFILE of 1024 rises to the hard one), STACK keeps the soft one; the command cannot raise a limit later',
  },
  {
    key: 'nsjail.x32',
    effect: 'weaker',
    detail:
      'Kafel cannot refuse the x32 ABI as a range; each denied syscall is also denied under its x32 number (seccomp/kafel.ts)',
  },
  {
    key: 'nsjail.mount-api',
    effect: 'equivalent',
    detail:
      '--experimental_mnt new (kernel 5.12+): read-only binds are read-only with every mount below them; the legacy API leaves host submounts under a read-only bind writable, so it is never used; submounts under writable binds become read-only (stricter than bwrap)',
  },
  {
    key: 'nsjail.nested-userns',
    effect: 'refused',
    detail:
      'nsjail cannot set user.max_user_namespaces=0 inside (bwrap --disable-userns); nested user namespaces are closed only by seccomp rules denying CLONE_NEWUSER for unshare and clone, and clone3: a policy without them is refused',
  },
  {
    key: 'namespaces.user',
    effect: 'refused',
    detail: 'a shared user namespace: the identity mapping needs one (as with bwrap)',
  },
  {
    key: 'mounts.bind',
    effect: 'weaker',
    detail:
      'bind sources go to nsjail as paths, which it resolves again after sbx checked them: nsjail mounts in its own ' +
      'mount namespace, where a descriptor sbx opened cannot be bound (open_tree: EINVAL), and it has no check after ' +
      "mounting as bwrap's --bind-fd has. Whoever can write a directory above a source (another sandbox sharing the " +
      'workspace) could swap it for a symlink in between; use bwrap for workspaces other processes write',
  },
  {
    key: 'mounts.paths',
    effect: 'refused',
    detail: "a mount source, target or link containing ':' (nsjail splits --bindmount/--mount/--symlink on it)",
  },
  {
    key: 'mounts.root-bind',
    effect: 'refused',
    detail:
      "a bind at / (mode: danger): nsjail's new mount API attaches later mounts (masks, /dev, /proc) to the root tmpfs underneath it, so they would not apply (nsjail then fails), and the legacy API cannot make mask tmpfs read-only",
  },
  {
    key: 'mounts.host-mountpoint',
    effect: 'refused',
    detail:
      'a mount inside a host bind whose mount point may not exist: nsjail creates mount points before it makes anything read-only, so it would create them on the host',
  },
  {
    key: 'mounts.proc',
    effect: 'equivalent',
    detail:
      'read-only procfs (nsjail --proc_path; bwrap mounts it writable and covers /proc/sys and friends): stricter. nsjail mounts it after every other mount, so a mount below it or a second procfs is refused',
  },
  {
    key: 'mounts.kernel',
    effect: 'weaker',
    detail:
      "the kernel's host-global state: read-only as all of nsjail's procfs is (sysctls, /proc/sysrq-trigger, /proc/irq), but not masked, as nsjail mounts procfs last: /proc/keys, /proc/timer_list, /proc/interrupts and the like stay readable (/proc/kcore needs CAP_SYS_RAWIO, which the command lacks)",
  },
  {
    key: 'mounts.dev',
    effect: 'equivalent',
    detail:
      "a read-only tmpfs with null, zero, full, random, urandom, tty bound from the host, a new devpts, ptmx, fd/stdin/stdout/stderr links (bwrap: the same nodes, its /dev made read-only once everything is mounted); the policy's sized /dev/shm tmpfs over it",
  },
  {
    key: 'mounts.remount-ro',
    effect: 'equivalent',
    detail:
      "nsjail has no remount step: the mount at the target is made read-only itself, which nsjail applies once every mount is in place; a target that is not a mount point is refused; `/` is nsjail's read-only root (no --rw)",
  },
  {
    key: 'mounts.bind.optional',
    effect: 'equivalent',
    detail: 'binds are mandatory, as with bwrap (derivePolicy drops optional binds whose source is missing)',
  },
  { key: 'mounts.reason', effect: 'equivalent', detail: 'for `sbx explain` only' },
  { key: 'mounts.role', effect: 'equivalent', detail: 'every kind is mounted alike whatever its role, as with bwrap' },
  {
    key: 'mounts.file',
    effect: 'equivalent',
    detail: 'the content is written to the session directory by the runtime and bound read-only, as with bwrap',
  },
  {
    key: 'limits.memoryBytes',
    effect: 'equivalent',
    detail:
      "enforced by sbx's LimitPlan around nsjail, as for bwrap (the limits trampoline execs nsjail inside the session cgroup). nsjail's own --cgroup_* flags are not used: on v2 they create the cgroup at the hierarchy root (escaping the cgroup that bounds sbx) and need root, on v1 a pre-made parent, and they set no memory.oom.group nor report peaks",
  },
  {
    key: 'limits.pids',
    effect: 'equivalent',
    detail:
      "enforced by sbx's LimitPlan (cgroup, or the RLIMIT_NPROC fallback, which --rlimit_nproc hard hands down from the trampoline)",
  },
  {
    key: 'limits.cpus',
    effect: 'equivalent',
    detail: "enforced by sbx's LimitPlan (cpu.max / cfs quota); nsjail's --max_cpus is CPU affinity, not a quota",
  },
  {
    key: 'limits.cpuTimeSec',
    effect: 'weaker',
    detail:
      'nsjail sets RLIMIT_CPU soft = hard, so the kernel sends SIGKILL at the limit instead of SIGXCPU: enforced exactly, but reported as a kill by SIGKILL, not as a cpu-time violation',
  },
  {
    key: 'limits.fileSizeBytes',
    effect: 'refused',
    detail: 'a file-size limit that is not a whole number of MiB (nsjail --rlimit_fsize counts MiB)',
  },
  {
    key: 'limits.addressSpaceBytes',
    effect: 'equivalent',
    detail: "RLIMIT_AS set by sbx's limits trampoline on nsjail, handed down to the command by --rlimit_as hard",
  },
  { key: 'limits.required', effect: 'equivalent', detail: 'checked by planLimits before launch, as for bwrap' },
  { key: 'profile', effect: 'equivalent', detail: 'metadata (the command sees it as SBX_PROFILE in env.vars)' },
  { key: 'mode', effect: 'equivalent', detail: 'already expressed by the mounts derivePolicy built for it' },
  { key: 'workspace', effect: 'equivalent', detail: 'expressed by its bind in mounts and by cwd' },
  { key: 'env.dropped', effect: 'equivalent', detail: 'report only: dropped names never reach nsjail' },
  {
    key: 'commands',
    effect: 'equivalent',
    detail: 'judged by preflight before any launcher starts, the same for every backend',
  },
  {
    key: 'toolchainsSkipped',
    effect: 'equivalent',
    detail: 'explain only: the PATH entries in HOME left out, and why; the toolchains shown are binds in mounts',
  },
  {
    key: 'exposeWorkspaceSecrets',
    effect: 'equivalent',
    detail: "the landlock backend's opt-in to run with workspace secrets readable; nsjail masks them as bwrap does",
  },
  {
    key: 'shell',
    effect: 'equivalent',
    detail: 'judged by preflight like commands; the launcher runs `command`, which derivePolicy built from it',
  },
  {
    key: 'env.secrets',
    effect: 'equivalent',
    detail:
      "names only: the values come with the session (Session.secretEnv) and travel in the fd 4 config like every variable, never on nsjail's argv",
  },
  {
    key: 'network.kind',
    effect: 'equivalent',
    detail:
      'enforced through namespaces.net and, when filtered, the egress bridge (commandOf) and the session-dir mount',
  },
  {
    key: 'network.capture',
    effect: 'equivalent',
    detail:
      "transparent capture as under bwrap: the network judge (sbx-landlock --judge) is the jail's first process " +
      "and installs sbx's seccomp filter for the command (passed to it on a descriptor instead of nsjail's " +
      '--seccomp_string); the resolver files are mounts like any generated file',
  },
  { key: 'network.rules', effect: 'equivalent', detail: "enforced by sbx's egress proxy outside the sandbox" },
  { key: 'network.unixSockets', effect: 'equivalent', detail: 'expressed by their binds in mounts' },
  {
    key: 'sshAgent',
    effect: 'equivalent',
    detail:
      "enforced by sbx's agent filter outside the sandbox; its socket is a session-dir mount, SSH_AUTH_SOCK is in env.vars",
  },
  {
    key: 'credentials',
    effect: 'equivalent',
    detail:
      "enforced by sbx's egress proxy outside the sandbox (the values never enter it); the placeholders come " +
      'with the session like secrets, the CA and bundle are session-dir mounts, the trust variables are in env.vars',
  },
  {
    key: 'network.hostPorts',
    effect: 'equivalent',
    detail: "relayed by the bridge (commandOf) over the session-dir mount to sbx's port bridges outside",
  },
  {
    key: 'network.publish',
    effect: 'equivalent',
    detail: "relayed by sbx's host listeners over the session-dir mount to the bridge (commandOf)",
  },
  { key: 'seccomp.preset', effect: 'equivalent', detail: 'the rules it resolved to are what is enforced' },
];
