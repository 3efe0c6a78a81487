// The seccomp rules the landlock backend adds to the policy's whatever its preset, for what Landlock
// does not govern: unix and (under network none) non-TCP sockets, io_uring, host IPC objects, TCP Fast
// Open, and prlimit64 on other processes. compile.ts assembles them with the policy's into the filter on
// fd 4. Pure.
import type { Policy } from '../../policy/types.js';
import { IO_URING_SYSCALLS, type SeccompRule } from '../../seccomp/index.js';
import { landlockGovernsTcp } from './network-judge.js';

/** <linux/socket.h>. Netlink stays: glibc's getaddrinfo asks it for the interfaces (AI_ADDRCONFIG). */
const AF_INET = 2;
const AF_INET6 = 10;
const AF_NETLINK = 16;

/** <linux/net.h>. */
const SOCK_DGRAM = 2;

/** <linux/socket.h>; the same on x86_64 and aarch64. */
const MSG_FASTOPEN = 0x20000000;

/**
 * What `network: none` means under this backend, for `sbx explain`: there is no namespace, only the
 * rules below and Landlock's TCP rules (native/sbx-landlock.c landlock()).
 */
export const LANDLOCK_NETWORK_NONE =
  "none: no network namespace, the host's interfaces stay visible; TCP connect and bind denied by " +
  'Landlock; refused by seccomp: socket() of any family but netlink, io_uring, sends with MSG_FASTOPEN';

/**
 * The rules the landlock backend adds to the policy's (`sbx explain` lists them), whatever its preset:
 * with preset off they are the whole filter. The backend's own confinement depends on them. Each only
 * denies more, so they are added beside the policy's rules, never in place of them: an unconditional
 * denial of the same call (`seccomp.add: [socket]`) still wins (seccomp/rules.ts planForArch).
 * - socket() never for unix sockets (pathname connects are outside Landlock's reach), and under
 *   network none only for netlink (Landlock restricts TCP only, not UDP or raw sockets).
 * - io_uring always, whatever the preset and `io_uring: true` (setup; enter and register too, for a
 *   ring inherited as a descriptor): IORING_OP_SOCKET creates sockets without the socket() call the
 *   rule above inspects, so a unix socket (and under network none a UDP or raw one) would be one
 *   submission away. Denied rather than refused with BACKEND_UNSUPPORTED: the filter is already the
 *   backend's and not the profile's to switch off (the socket rule above holds with preset off too),
 *   the denial only takes away, programs fall back as they do under the default preset, and
 *   explain and the report name it (seccomp.io_uring). A refusal would turn away every `seccomp: off`
 *   profile, used or not with io_uring, and protect nothing more.
 * - SysV IPC and POSIX message queues, where the policy asks for an IPC namespace (namespaces.ipc): there
 *   is none, so an object created inside outlives the run on the host (a 1 GiB segment did) and
 *   the host's own are in reach (ids are listed in /proc/sysvipc; mq_open is not a path Landlock can
 *   grant). ENOSYS, as a kernel built without them answers, so programs take their fallback. Refused
 *   rather than removed after the run: telling the run's objects from a stranger's by creator pid races
 *   with pid reuse, and a removal comes after the host could already use them.
 * - MSG_FASTOPEN on sendto, sendmsg and sendmmsg while Landlock governs TCP: the kernel's fastopen
 *   path connects from inside the send, past the connect hook Landlock's rule hangs on
 *   (test/integration/landlock/bypass.test.ts shows the data arriving without this rule).
 *   EOPNOTSUPP is what a kernel with client Fast Open switched off answers, so callers fall back to
 *   connect(), which Landlock checks, as it does after TCP_FASTOPEN_CONNECT.
 */
export function landlockSeccompRules(policy: Policy): SeccompRule[] {
  // Under an allow list the helper's judge narrows inet sockets to TCP (native/sbx-landlock-net.c).
  const families = policy.network.kind === 'none' ? [AF_NETLINK] : [AF_INET, AF_INET6, AF_NETLINK];
  const fastOpen = (syscall: string, arg: number): SeccompRule => ({
    syscall,
    errno: 'EOPNOTSUPP',
    when: { arg, op: 'masked-any', value: MSG_FASTOPEN },
  });
  return [
    { syscall: 'socket', errno: 'EAFNOSUPPORT', when: { arg: 0, op: 'ne-list', value: families } },
    // A datagram pair is a unix socket too: sendto() with a pathname reaches any datagram socket the
    // caller may write (journald's /dev/log, daemons' control sockets), past Landlock. SOCK_DGRAM (2)
    // and SOCK_RAW (3, which unix sockets treat as datagram) share bit 1; stream (1) and seqpacket
    // (5), whose sends ignore an address, do not; SOCK_NONBLOCK and SOCK_CLOEXEC lie above it.
    { syscall: 'socketpair', errno: 'EOPNOTSUPP', when: { arg: 1, op: 'masked-any', value: SOCK_DGRAM } },
    // Without a pid namespace every process of the caller's uid is in reach of prlimit64(pid, ...),
    // which Landlock does not scope: a command could shrink the limits of sbx-landlock's monitor (no
    // descriptors, no file size) and stop the restore of guarded git state. glibc's setrlimit and
    // getrlimit pass pid 0, the caller itself.
    { syscall: 'prlimit64', errno: 'EPERM', when: { arg: 0, op: 'ne-list', value: [0] } },
    ...IO_URING_SYSCALLS.map((syscall): SeccompRule => ({ syscall, errno: 'EPERM' })),
    ...(policy.namespaces.ipc ? HOST_IPC_SYSCALLS.map((syscall): SeccompRule => ({ syscall, errno: 'ENOSYS' })) : []),
    ...(landlockGovernsTcp(policy) ? [fastOpen('sendto', 3), fastOpen('sendmsg', 2), fastOpen('sendmmsg', 3)] : []),
  ];
}

/**
 * The calls on host-global IPC objects (ipc/ in the kernel): SysV shared memory, message queues and
 * semaphores, and POSIX message queues. POSIX shared memory and semaphores are files in /dev/shm, which
 * the helper does not grant.
 */
export const HOST_IPC_SYSCALLS: readonly string[] = [
  ...['shmget', 'shmat', 'shmdt', 'shmctl'],
  ...['msgget', 'msgsnd', 'msgrcv', 'msgctl'],
  ...['semget', 'semop', 'semtimedop', 'semctl'],
  ...['mq_open', 'mq_unlink', 'mq_timedsend', 'mq_timedreceive', 'mq_notify', 'mq_getsetattr'],
];

/** Whether the policy's own rules already deny io_uring outright (the default and strict presets). */
export function policyDeniesIoUring(policy: Policy): boolean {
  return IO_URING_SYSCALLS.every((name) => policy.seccomp.rules.some((r) => r.syscall === name && !r.when));
}
