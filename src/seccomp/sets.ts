// The built-in deny sets. A deny-list on top of bwrap's own isolation: everything not named here is
// allowed. Modelled on Flatpak's flatpak-run seccomp setup and Docker's profiles/seccomp/default.json.
import type { SeccompArgTest, SeccompErrno, SeccompPreset, SeccompRule } from './types.js';

// <linux/sched.h>. CLONE_NEWTIME (0x80) sits inside CSIGNAL, the exit-signal byte of clone(2)'s
// flags, so clone() cannot create a time namespace (kernel/fork.c strips CSIGNAL from the flags):
// only unshare() and clone3() can, and the latter is refused outright.
const CLONE_NEW_NAMESPACES =
  0x00020000 /* NEWNS */ |
  0x02000000 /* NEWCGROUP */ |
  0x04000000 /* NEWUTS */ |
  0x08000000 /* NEWIPC */ |
  0x10000000 /* NEWUSER */ |
  0x20000000 /* NEWPID */ |
  0x40000000; /* NEWNET */
const CLONE_NEWTIME = 0x00000080;

// <asm-generic/ioctls.h>, the same on x86_64 and aarch64.
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;
const TIOCSETD = 0x5423;

// <linux/personality.h>: PER_LINUX, PER_LINUX32, UNAME26, UNAME26|PER_LINUX32, and 0xffffffff,
// which only queries. Docker's default profile allows exactly these; ADDR_NO_RANDOMIZE and
// READ_IMPLIES_EXEC stay denied because they weaken ASLR and NX for whatever is exec'd next.
const PERSONALITY_ALLOWED = [0x0, 0x8, 0x20000, 0x20008, 0xffffffff];

// <linux/socket.h>: AF_UNIX, AF_INET, AF_INET6, AF_NETLINK (glibc's getaddrinfo and getifaddrs
// use NETLINK_ROUTE). Flatpak keeps a similar allowlist.
const SOCKET_FAMILIES_ALLOWED = [1, 2, 10, 16];

function deny(names: readonly string[], errno: SeccompErrno = 'EPERM'): SeccompRule[] {
  return names.map((syscall) => ({ syscall, errno }));
}

function denyWhen(syscall: string, when: SeccompArgTest, errno: SeccompErrno = 'EPERM'): SeccompRule {
  return { syscall, errno, when };
}

export const IO_URING_SYSCALLS: readonly string[] = ['io_uring_setup', 'io_uring_enter', 'io_uring_register'];

const DEFAULT_RULES: readonly SeccompRule[] = [
  // Mount table changes. bwrap built the mount namespace; letting the command rearrange it could
  // uncover what bwrap hid (the new mount API and open_tree/open_tree_attr clone existing trees).
  ...deny([
    'mount',
    'umount2',
    'pivot_root',
    'move_mount',
    'open_tree',
    'open_tree_attr',
    'fsopen',
    'fsconfig',
    'fsmount',
    'fspick',
    'mount_setattr',
  ]),
  // Namespaces: a fresh user namespace hands out capabilities over new mount/net namespaces and is
  // the entry point of most unprivileged kernel exploits; setns could re-enter a namespace by fd.
  denyWhen('clone', { arg: 0, op: 'masked-any', value: CLONE_NEW_NAMESPACES }),
  denyWhen('unshare', { arg: 0, op: 'masked-any', value: CLONE_NEW_NAMESPACES | CLONE_NEWTIME }),
  ...deny(['setns']),
  // clone3 passes its flags in a struct that BPF cannot read, so it goes entirely. ENOSYS, not
  // EPERM: glibc (2.34+) and others then fall back to clone(), which the rule above can inspect.
  ...deny(['clone3'], 'ENOSYS'),
  // Reading or writing other processes: escapes the filter on pre-4.8 kernels (ptrace could change
  // the syscall after seccomp ran) and reaches bwrap's own init.
  ...deny(['ptrace', 'process_vm_readv', 'process_vm_writev']),
  // Replacing or extending the running kernel.
  ...deny(['kexec_load', 'kexec_file_load', 'init_module', 'finit_module', 'delete_module']),
  // Large kernel attack surface with a long CVE record, rarely needed by the commands sbx runs:
  // eBPF, perf events (CVE-2013-2094, CVE-2022-1729), userfaultfd (a race-widening primitive in
  // exploits), and the keyring, which Docker blocks because it is not namespaced.
  ...deny(['bpf', 'perf_event_open', 'userfaultfd', 'keyctl', 'add_key', 'request_key']),
  // io_uring performs its operations without passing through seccomp, and has had many CVEs;
  // Docker's default profile and ChromeOS turn it off. The allowIoUring setting removes these three.
  ...deny(IO_URING_SYSCALLS),
  // Only the personalities Docker allows: the others switch off ASLR or NX for the next exec.
  denyWhen('personality', { arg: 0, op: 'ne-list', value: PERSONALITY_ALLOWED }),
  // TIOCSTI pushes input into a terminal shared with the user's shell (CVE-2017-5226); TIOCLINUX
  // does the same on a virtual console through its selection paste (CVE-2023-28100, Flatpak). sbx keeps the TTY's session for
  // job control, so the filter is what stops them.
  denyWhen('ioctl', { arg: 1, op: 'eq-low32', value: [TIOCSTI, TIOCLINUX] }),
  // Host administration: swap, power, process accounting, quotas, the kernel log.
  ...deny(['swapon', 'swapoff', 'reboot', 'acct', 'quotactl', 'quotactl_fd', 'syslog']),
  // File handles open files by inode number, past the mount namespace (the 2014 "shocker" Docker
  // escape); name_to_handle_at is the half that produces them.
  ...deny(['open_by_handle_at', 'name_to_handle_at']),
  // Obsolete or raw hardware access. Most are unimplemented today; denying them costs nothing and
  // keeps the set honest if a kernel still has them (uselib: CVE-2004-1235; iopl/ioperm: port I/O).
  // vm86/vm86old exist only on 32-bit x86, so no supported table names them.
  ...deny([
    'uselib',
    '_sysctl',
    'nfsservctl',
    'lookup_dcookie',
    'iopl',
    'ioperm',
    'create_module',
    'get_kernel_syms',
    'query_module',
    'afs_syscall',
  ]),
];

// strict: everything in default, plus calls a build or an agent has no business making.
const STRICT_RULES: readonly SeccompRule[] = [
  // Root-only operations (chroot needs CAP_SYS_CHROOT, the clock calls CAP_SYS_TIME, vhangup
  // CAP_SYS_TTY_CONFIG); denying them is defence in depth against a capability left behind.
  // adjtimex and clock_adjtime also have a read-only mode; nothing sbx runs needs it.
  // (stime exists only on 32-bit x86.)
  ...deny(['chroot', 'settimeofday', 'clock_settime', 'adjtimex', 'clock_adjtime', 'vhangup']),
  // modify_ldt: 16-bit segments for Wine and DOSEMU, and the way into several x86 entry-code and
  // LDT bugs (CVE-2015-3290, CVE-2017-17053). x86 only; skipped on aarch64.
  ...deny(['modify_ldt']),
  // Memory protection keys: rarely used, and callers must already cope with their absence on
  // hardware without PKU, where the kernel answers ENOSYS/EINVAL; ENOSYS keeps that path.
  ...deny(['pkey_mprotect', 'pkey_alloc', 'pkey_free'], 'ENOSYS'),
  // Acting on another process by pid or pidfd: steal a descriptor (pidfd_getfd), compare kernel
  // objects (kcmp), or advise/reap its memory (process_madvise, process_mrelease). All need
  // ptrace-level access, like the ptrace family that default already denies.
  ...deny(['pidfd_getfd', 'kcmp', 'process_madvise', 'process_mrelease']),
  // NUMA placement of memory (Flatpak denies these): they can move or inspect other processes'
  // pages and are of no use to the workloads sbx targets.
  ...deny(['mbind', 'migrate_pages', 'move_pages', 'get_mempolicy', 'set_mempolicy', 'set_mempolicy_home_node']),
  // Line disciplines are loadable tty drivers with a poor record (CVE-2017-2636, n_hdlc); strict
  // refuses TIOCSETD on top of the default terminal-injection ioctls.
  denyWhen('ioctl', { arg: 1, op: 'eq-low32', value: [TIOCSTI, TIOCLINUX, TIOCSETD] }),
  // Socket families other than Unix, IPv4, IPv6 and netlink: packet sockets, AF_ALG, vsock, RDS,
  // TIPC… each a protocol stack reachable by any process and a steady source of CVEs
  // (CVE-2016-8655, CVE-2017-7308 AF_PACKET; CVE-2010-3904 RDS; CVE-2021-26708 vsock). Networking
  // keeps working. EAFNOSUPPORT is what a kernel without the family returns, so callers fall back.
  denyWhen('socket', { arg: 0, op: 'ne-list', value: SOCKET_FAMILIES_ALLOWED }, 'EAFNOSUPPORT'),
];

/** The rules of a preset, before settings are applied. A strict rule replaces default's for the same syscall. */
export function presetRules(preset: SeccompPreset): SeccompRule[] {
  switch (preset) {
    case 'off':
      return [];
    case 'default':
      return [...DEFAULT_RULES];
    case 'strict': {
      const overridden = new Set(STRICT_RULES.map((rule) => rule.syscall));
      return [...DEFAULT_RULES.filter((rule) => !overridden.has(rule.syscall)), ...STRICT_RULES];
    }
  }
}
