// The landlock backend's reviewed gaps: where it differs from bwrap, feature by feature. Pure data.
// `refused` entries are what landlock/compile.ts refuses by name (BACKEND_UNSUPPORTED); `weaker` ones
// (the approximations) are named in the report of every run that gets them; `equivalent` ones say why
// nothing is lost.
import type { Gap } from '../shared/gap.js';

/** Where landlock differs from bwrap. `refused` entries throw BACKEND_UNSUPPORTED when a policy needs them. */
export const LANDLOCK_GAPS: readonly Gap[] = [
  {
    key: 'mode',
    effect: 'refused',
    detail:
      'mode: danger binds the host root writable: there is nothing left for Landlock to confine, and ' +
      'bwrap is the backend for it',
  },
  {
    key: 'mounts.bind',
    effect: 'refused',
    detail:
      'a bind whose target differs from its source (mountAt, --bind SRC:DEST): without a mount ' +
      'namespace a path cannot appear elsewhere',
  },
  {
    key: 'mounts.mask',
    effect: 'refused',
    detail:
      'a mask inside a read-write grant (a sensitive file in the workspace), or a git config whose view ' +
      'withholds credentials: Landlock grants whole trees and cannot deny one file beneath a granted ' +
      'directory. Refused naming every such file unless the run passes --expose-workspace-secrets ' +
      '(see mounts.mask.exposed). Masks inside read-only trees (root-only files in /etc) are expressed by ' +
      'granting their siblings one by one',
  },
  {
    key: 'mounts.mask.exposed',
    effect: 'weaker',
    detail:
      'with --expose-workspace-secrets: these files are readable (and in a writable tree writable) by the command, ' +
      'as on the host',
  },
  {
    key: 'mounts.read-only-inside',
    effect: 'refused',
    detail:
      'a read-only path inside a read-write grant other than git hooks and sbx policy files (a --ro-bind ' +
      'inside the workspace): Landlock grants add up, a tree cannot be narrowed below a granted one. Git ' +
      'hooks, git config views and .sbx are guarded instead (mounts.guarded)',
  },
  {
    key: 'mounts.guarded',
    effect: 'weaker',
    detail:
      'read-only under bwrap, writable here: snapshotted before the command starts and put back after it ' +
      'and every process it left have exited (a renamed directory is moved back, what replaced it is ' +
      'quarantined at the workspace root), each change reported as a git-state violation. A host git ' +
      'command run during the sandboxed run sees what the command planted',
  },
  {
    key: 'mounts.file',
    effect: 'refused',
    detail:
      'a generated file over a granted path other than a git config or exclude view: there is nothing to ' +
      'put it over. The git views are the host files here, guarded where writable: a config without ' +
      'credentials loses nothing, one with credentials exposes them (mounts.mask)',
  },
  { key: 'mounts.tmpfs', effect: 'refused', detail: 'a tmpfs other than the private /tmp and HOME' },
  {
    key: 'mounts.session-dir',
    effect: 'refused',
    detail:
      'the session directory mount of ssh_agent: without a ' +
      'mount namespace the socket cannot appear inside, and unix sockets cannot be created (see landlock.unix-sockets)',
  },
  {
    key: 'credentials',
    effect: 'refused',
    detail:
      "credentials: the run's CA cannot be shown over the system's CA bundle without a mount namespace, and a " +
      "client reading that bundle would refuse the proxy's certificate; the command shares sbx's uid on the " +
      'host, where nothing but the kernel stands between it and the process holding the values',
  },
  { key: 'mounts.proc', effect: 'refused', detail: 'a procfs elsewhere than /proc' },
  { key: 'mounts.dev', effect: 'refused', detail: 'a /dev elsewhere than /dev' },
  {
    key: 'identity',
    effect: 'refused',
    detail:
      "an identity other than the caller's (`user: root` as a normal user): the uid mapping needs a " +
      'user namespace',
  },
  {
    key: 'identity.root',
    effect: 'weaker',
    detail:
      'sbx runs as root: the command runs as uid 0 without any capability instead of as 65534 in a user ' +
      "namespace. The kernel's view is the same (bwrap's 65534 is host root too): it owns root's files, " +
      'so root-only system files stay masked',
  },
  {
    key: 'network.kind',
    effect: 'refused',
    detail:
      "an allow-list network where the helper's network judge cannot work (network.filtered): seccomp user " +
      'notification, pidfd_getfd or process_vm_readv forbidden by an outer seccomp profile or a ptrace ' +
      'policy, or another listener already on the process (`sbx doctor` names the step)',
  },
  {
    key: 'network.filtered',
    effect: 'weaker',
    detail:
      "an allow-list network without a network namespace: the command shares the host's network, Landlock " +
      "denies it every TCP connect and bind, and the helper's monitor judges its connect() calls (seccomp " +
      "user notification): it connects the socket itself, on a duplicate taken with pidfd_getfd, to sbx's " +
      'proxy on 127.0.0.1 (or a network.host_ports port) and nowhere else, so the proxy decides every ' +
      'destination as under bwrap: a connect to any other address or port, IPv4 or IPv6, is captured into ' +
      'the proxy (transparent capture), which decides it by the name behind the address. Refused and ' +
      'reported: UDP, raw, SCTP and MPTCP sockets, listen() (no server inside can take connections, even on loopback), ' +
      "sends with MSG_FASTOPEN (see network.tcp-fastopen). The host's interfaces stay visible (netlink)",
  },
  {
    key: 'network.publish',
    effect: 'refused',
    detail:
      'network.publish: the command cannot listen, since without a network namespace a listening socket ' +
      "would take connections from the host's network",
  },
  {
    key: 'network.unix_sockets',
    effect: 'refused',
    detail: 'network.unix_sockets: no unix socket can be created (landlock.unix-sockets)',
  },
  {
    key: 'hostname',
    effect: 'weaker',
    detail:
      "the profile's hostname is not set (it needs a UTS namespace): the command sees the host's " +
      'hostname, not the one named',
  },
  {
    key: 'env.path',
    effect: 'weaker',
    detail:
      "PATH entries outside every grant are dropped from the command's PATH (the shell would stop at " +
      'them with EACCES instead of looking further; under bwrap they are absent)',
  },
  {
    key: 'env.vars',
    effect: 'refused',
    detail: "a variable name with '=' or NUL, or a value with NUL (the helper's configuration is " + 'NUL-separated)',
  },
  {
    key: 'mounts.tmp',
    effect: 'weaker',
    detail:
      'the private /tmp is a directory in the session directory, granted read-write, with TMPDIR (and ' +
      'XDG_RUNTIME_DIR, unless the policy passes one: a nested sbx keeps its sessions there) naming it; /tmp itself is not writable (programs that ignore TMPDIR fail there). Removed with the ' +
      'session, unbounded in size',
  },
  {
    key: 'mounts.home',
    effect: 'weaker',
    detail:
      'the private HOME is a directory in the session directory, granted read-write, with HOME naming ' +
      'it; the host HOME path is not readable',
  },
  {
    key: 'mounts.proc-host',
    effect: 'weaker',
    detail:
      "/proc is the host's, read-only: host processes are visible, and other processes' command lines " +
      'are readable (secrets passed as arguments included); their memory, environment and fds are closed ' +
      "to it (Landlock's ptrace restriction). Granting less of /proc is not workable: programs need " +
      '/proc/self, a different /proc/PID for each process the command starts, and the rules are fixed before it starts',
  },
  {
    key: 'mounts.kernel',
    effect: 'equivalent',
    detail:
      "the kernel's host-global state: /proc is granted read-only, so no sysctl, /proc/sysrq-trigger or " +
      '/proc/irq file opens for writing, whoever runs sbx (mounts.proc-host says what it can read)',
  },
  {
    key: 'mounts.dev-nodes',
    effect: 'weaker',
    detail:
      '/dev: only null, zero, full, random, urandom and tty are granted (read, write, ioctl), and the ' +
      "terminal or file the command's stdin, stdout and stderr are (so /dev/stdout reopens); no " +
      '/dev/pts, /dev/ptmx, /dev/shm (no new pseudo-terminals, no POSIX shared memory)',
  },
  {
    key: 'mounts.masked-parents',
    effect: 'weaker',
    detail:
      'a read-only directory above a masked directory (/etc when root-only directories are masked) cannot ' +
      'be listed; one above masked files only can (their names show, as under bwrap, their content does ' +
      'not). Names created in either later are not readable',
  },
  {
    key: 'namespaces.pid',
    effect: 'weaker',
    detail:
      "no pid namespace: the command sees the host's processes (Landlock's signal scoping, ABI 6, stops " +
      'it signalling any outside its sandbox). What it leaves running is reparented to the helper and ' +
      'killed when it exits, as in a pid namespace; only if the helper itself is SIGKILLed do they ' +
      'outlive it (the command gets SIGKILL, its descendants do not), and guarded paths are then not ' +
      'restored (mounts.guarded; the report says so)',
  },
  {
    key: 'namespaces.ipc',
    effect: 'weaker',
    detail:
      'no IPC namespace: SysV IPC (shmget, msgget, semget and every call on their objects) and POSIX ' +
      'message queues (mq_open...) fail with ENOSYS (seccomp), as on a kernel built without them: an ' +
      "object created inside would outlive the run on the host, and the host's own would be in reach. " +
      'POSIX shared memory and semaphores (/dev/shm) fail with EACCES (not granted, mounts.dev-nodes); ' +
      'abstract unix sockets are scoped (ABI 6)',
  },
  {
    key: 'namespaces.uts',
    effect: 'weaker',
    detail: "no UTS namespace: the command sees the host's hostname",
  },
  {
    key: 'network.none',
    effect: 'weaker',
    detail:
      "no network namespace (the host's interfaces are visible through netlink): TCP bind and connect " +
      'are denied by Landlock (ABI 4) and socket() refuses every family but netlink (seccomp), so UDP, ' +
      "raw and MPTCP sockets fail too (Landlock's TCP rules do not cover MPTCP: only the socket() rule " +
      'keeps it out)',
  },
  {
    key: 'network.tcp-fastopen',
    effect: 'weaker',
    detail:
      'sendto, sendmsg and sendmmsg with MSG_FASTOPEN fail with EOPNOTSUPP (seccomp), as on a kernel ' +
      "with client Fast Open off: the kernel's fastopen path connects without the check Landlock's " +
      'connect rule hangs on. TCP_FASTOPEN_CONNECT needs connect(), which Landlock checks',
  },
  {
    key: 'seccomp.io_uring',
    effect: 'weaker',
    detail:
      'io_uring_setup, io_uring_enter and io_uring_register fail with EPERM although the profile allows ' +
      "them (seccomp: off or io_uring: true): io_uring's IORING_OP_SOCKET creates sockets past the " +
      'socket() rule that keeps unix sockets, and under network none UDP and raw ones, out',
  },
  {
    key: 'landlock.unix-sockets',
    effect: 'weaker',
    detail:
      'socket(AF_UNIX) is refused (EAFNOSUPPORT) whatever the network: Landlock does not govern ' +
      'connect() to pathname sockets, so the command could otherwise reach every socket the caller may ' +
      'write (the Docker socket, dbus, ssh-agent). No unix socket can be created, even in the ' +
      'workspace. socketpair() works for stream and seqpacket pairs; a datagram pair is refused ' +
      '(EOPNOTSUPP), since its sendto() reaches any pathname datagram socket the caller may write (/dev/log)',
  },
  {
    key: 'mounts.bind.pinned',
    effect: 'equivalent',
    detail:
      'bind sources are granted through the descriptors sbx opened and checked (host/pins.ts), as ' +
      'bwrap --bind-fd: a path swapped for a symlink afterwards is not followed',
  },
  {
    key: 'landlock.nested-userns',
    effect: 'equivalent',
    detail:
      'nested namespaces stay confined: a Landlock domain is inherited and cannot be left, and it ' +
      'forbids mount changes',
  },
  {
    key: 'landlock.capabilities',
    effect: 'equivalent',
    detail:
      'every capability is dropped (bounding, ambient, effective, permitted, inheritable): root in a ' +
      'container keeps its uid but loses CAP_DAC_OVERRIDE',
  },
  {
    key: 'limits',
    effect: 'equivalent',
    detail:
      "sbx's LimitPlan, as for bwrap, but on the command alone: the helper's child sets the rlimits just " +
      'before exec and moves itself into the session cgroup, so its monitor (the network judge, the restore ' +
      "of guarded paths) keeps sbx's own limits and pool; RLIMIT_CORE 0 always (no core files in granted " +
      'trees). A systemd scope holds the helper whole',
  },
  {
    key: 'seccomp',
    effect: 'equivalent',
    detail:
      "the policy's rules, as bwrap gets them, installed last by the helper, plus the backend's own " +
      '(landlock.unix-sockets, network.none, network.tcp-fastopen, seccomp.io_uring, namespaces.ipc), even with preset ' +
      "off; those only deny more. Under an allow list a second filter sends the network judge's calls " +
      'to the helper (network.filtered)',
  },
  {
    key: 'mounts.symlink',
    effect: 'equivalent',
    detail: "the host's own link is what the command resolves (derivePolicy copies the host's merged-/usr links)",
  },
  {
    key: 'mounts.remount-ro',
    effect: 'equivalent',
    detail: 'the tree it names is granted read-only; `/` is never granted, so it stays unwritable',
  },
];
