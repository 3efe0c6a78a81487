// Policy + Session + LandlockHost → Launch for sbx-landlock (native/sbx-landlock.c). Pure. The backend for
// hosts where no user namespace can be created (a container's default seccomp profile, a run nested in
// another sandbox): no mount namespace, so each mount of the Policy becomes a Landlock grant on the host
// path itself, and everything not granted is denied. What that cannot express is refused by name
// (LANDLOCK_GAPS); what it expresses differently is an approximation the report lists.
import { posix } from 'node:path';
import { SbxError } from '../../errors.js';
import { DEFAULT_HOSTNAME } from '../../policy/derive/identity.js';
import { BRIDGE_DIR } from '../../policy/derive/network.js';
import {
  GIT_CONFIG_VIEW_REASON,
  GIT_EXCLUDE_VIEW_REASON,
  GIT_HOOKS_REASON,
  OWN_POLICY_REASON,
} from '../../host-state/guarded-state.js';
import type { CommandLimits, RlimitResource } from '../../limits/types.js';
import { isWithin } from '../../path-within.js';
import type { Mount, Policy } from '../../policy/types.js';
import { IO_URING_SYSCALLS, assembleSeccompFilter, type SeccompArch, type SeccompRule } from '../../seccomp/index.js';
import type { Launch, Session } from '../launch.js';
import { LANDLOCK_GAPS } from './gaps.js';
import { proxyEnv } from '../shared/proxy-env.js';

export interface LandlockHost {
  /** Absolute path of sbx-landlock. */
  path: string;
  stdinIsTty: boolean;
  arch: SeccompArch;
  /** The caller's ids: without a user namespace they are the command's. */
  uid: number;
  gid: number;
  /** Why the helper's network judge cannot work on this host (backend/landlock/host/landlock-probe.ts); undefined when it can. */
  judgeUnavailable?: string;
}

/** The nodes bwrap --dev binds from the host. */
const DEV_NODES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'];
/** <linux/socket.h>. Netlink stays: glibc's getaddrinfo asks it for the interfaces (AI_ADDRCONFIG). */
const AF_INET = 2;
const AF_INET6 = 10;
const AF_NETLINK = 16;
/** <linux/net.h>. */
const SOCK_DGRAM = 2;
/** <asm-generic/resource.h>: the same numbers on x86_64 and aarch64. */
const RLIMIT_NUMBER: Record<RlimitResource, number> = {
  CPU: 0,
  FSIZE: 1,
  DATA: 2,
  CORE: 4,
  NPROC: 6,
  NOFILE: 7,
  AS: 9,
};
const RLIMIT_CORE = RLIMIT_NUMBER.CORE;
/** <linux/socket.h>; the same on x86_64 and aarch64. */
const MSG_FASTOPEN = 0x20000000;
const DESCRIBED_SESSION: Session = { id: 'session', dir: '<session>', emptyFile: '<session>/empty' };

interface Refusal {
  feature: string;
  message: string;
  hint: string;
  /** One line per item when the refusal names several (every exposed secret). */
  details?: string[];
}

/** Read-only binds inside a writable tree that can be guarded: snapshotted and put back (native/sbx-guard.c). */
const GUARDED_BINDS: ReadonlySet<string> = new Set([GIT_HOOKS_REASON, OWN_POLICY_REASON]);
/** Generated files over host state that can be guarded instead: the host file is put back after the run. */
const GUARDED_VIEWS: ReadonlySet<string> = new Set([GIT_CONFIG_VIEW_REASON, GIT_EXCLUDE_VIEW_REASON]);

const OTHER_BACKEND = 'or run where user namespaces work and use --backend bwrap';

/** The Policy as Landlock grants. */
interface Grants {
  ro: string[];
  rw: string[];
  dev: string[];
  except: string[];
  /** Bind sources: the helper grants them through the descriptors the runtime pinned (host/pins.ts). */
  pinned: string[];
  /** Per-session directories standing in for /tmp and HOME: target → directory. */
  private: Map<string, string>;
  /** Paths inside a read-write grant that must not change: the helper snapshots and restores them. */
  guards: string[];
  /** Secrets the command can read and write (a mask or credential view inside a grant): refused unless opted in. */
  exposed: { path: string; what: string }[];
  refusals: Refusal[];
  approximations: Set<string>;
  /** What an approximation concerns in this policy (the exposed files, the PATH entries dropped), by feature. */
  listed: Map<string, string[]>;
  /** The command's PATH without the entries it could not search (grantedPath). */
  path?: string;
}

function deny(g: Grants, feature: string, message: string, hint: string): void {
  g.refusals.push({ feature, message, hint });
}

function approximate(g: Grants, feature: string, item?: string): void {
  g.approximations.add(feature);
  if (item !== undefined) g.listed.set(feature, [...(g.listed.get(feature) ?? []), item]);
}

function privateDir(m: Mount, policy: Policy, session: Session): string | undefined {
  if (m.target === '/tmp') return posix.join(session.dir, 'tmp');
  if (m.target === policy.env.vars.HOME) return posix.join(session.dir, 'home');
  return undefined;
}

function mountGrants(policy: Policy, session: Session): Grants {
  const g: Grants = {
    ...{ ro: [], rw: [], dev: [], except: [], pinned: [], guards: [], exposed: [] },
    ...{ private: new Map(), refusals: [], approximations: new Set<string>(), listed: new Map() },
  };
  const readOnly = new Set(policy.mounts.flatMap((m) => (m.kind === 'remount-ro' ? [m.target] : [])));
  for (const m of policy.mounts) {
    if (!isBridgeMount(m, policy)) grantMount(g, m, readOnly, privateDir(m, policy, session));
  }
  dropNestedReadWrite(g);
  guardReadOnlyInsideReadWrite(g, policy.mounts);
  grantAroundMasks(g, policy.mounts);
  refuseExposed(g, policy);
  return g;
}

/**
 * The bwrap bridge's files and sockets (policy/derive/network.ts bridgeLayers): for a namespace this backend does not
 * build. Here the helper's network judge connects the command to the proxy on the host's loopback.
 */
function isBridgeMount(m: Mount, policy: Policy): boolean {
  return policy.network.kind === 'filtered' && policy.network.bridge !== null && isWithin(m.target, BRIDGE_DIR);
}

/**
 * A read-write grant inside another adds nothing (Landlock grants add up). derivePolicy binds the
 * directories above protected git state over themselves so that they cannot be renamed (pinParents):
 * here they are left out, and the guard of what lies below them watches their identity instead.
 */
function dropNestedReadWrite(g: Grants): void {
  const nested = new Set(g.rw.filter((p) => g.rw.some((tree) => tree !== p && isWithin(p, tree))));
  g.rw = g.rw.filter((p) => !nested.has(p));
  g.pinned = g.pinned.filter((p) => !nested.has(p) || g.ro.includes(p));
}

/**
 * One mount as grants, or the refusal of what Landlock cannot express. `readOnly`: the targets a
 * remount-ro makes read-only; `stand-in`: the per-session directory for a tmpfs at /tmp or HOME.
 */
function grantMount(g: Grants, m: Mount, readOnly: ReadonlySet<string>, standIn: string | undefined): void {
  const access = (asked: 'ro' | 'rw') => (readOnly.has(m.target) ? 'ro' : asked);
  switch (m.kind) {
    case 'bind':
      if (m.source !== m.target) {
        deny(
          g,
          'mounts.bind',
          `${m.source} is bound at ${m.target}: without a mount namespace a path cannot appear elsewhere`,
          `bind it at its own path, ${OTHER_BACKEND}`,
        );
      } else if (m.target === '/') {
        deny(g, 'mode', 'mode: danger binds the host root writable', 'use --backend bwrap for --danger runs');
      } else {
        g[access(m.access)].push(m.source);
        g.pinned.push(m.source);
      }
      break;
    case 'tmpfs':
      // No /dev/shm is granted at all (mounts.dev-nodes): the host's is shared by every process.
      if (m.target === '/dev/shm') break;
      if (standIn === undefined) {
        deny(g, 'mounts.tmpfs', `a tmpfs at ${m.target}: only /tmp and HOME have per-session stand-ins`, OTHER_BACKEND);
      } else {
        g.private.set(m.target, standIn);
        g[access('rw')].push(standIn);
        g.approximations.add(m.target === '/tmp' ? 'mounts.tmp' : 'mounts.home');
      }
      break;
    case 'proc':
      if (m.target !== '/proc') deny(g, 'mounts.proc', `procfs at ${m.target}`, OTHER_BACKEND);
      g.ro.push('/proc');
      g.approximations.add('mounts.proc-host');
      break;
    case 'kernel':
      break; // inside the read-only grant of /proc (mounts.kernel)
    case 'dev':
      if (m.target !== '/dev') deny(g, 'mounts.dev', `/dev at ${m.target}`, OTHER_BACKEND);
      g.dev.push(...DEV_NODES.map((n) => `/dev/${n}`));
      g.approximations.add('mounts.dev-nodes');
      break;
    case 'mask':
    case 'file':
      break; // checked against the grants (grantAroundMasks)
    case 'session-dir':
      deny(g, 'mounts.session-dir', `the session directory at ${m.target}`, OTHER_BACKEND);
      break;
    case 'symlink':
      // The host's own link is what the command resolves (derivePolicy copies the host's merged-/usr
      // links); Landlock checks the path it resolves to, which a bind grants.
      break;
    case 'remount-ro':
      break; // folded into the grant of the mount it names (readOnly); `/` is never granted anyway
  }
}

/**
 * Landlock only adds access going down a tree: a read-only grant inside a read-write one means
 * nothing. Git hooks and sbx's policy files are guarded instead (the command's changes are undone
 * after it, and reported); any other read-only path there is refused.
 */
function guardReadOnlyInsideReadWrite(g: Grants, mounts: readonly Mount[]): void {
  const guardable = new Set(
    mounts.flatMap((m) => (m.kind === 'bind' && GUARDED_BINDS.has(m.reason) ? [m.source] : [])),
  );
  const inside = new Set(g.ro.filter((ro) => g.rw.some((tree) => tree !== ro && isWithin(ro, tree))));
  for (const ro of inside) {
    const rw = g.rw.find((tree) => tree !== ro && isWithin(ro, tree));
    if (guardable.has(ro)) {
      g.guards.push(ro);
      approximate(g, 'mounts.guarded', ro);
    } else {
      deny(
        g,
        'mounts.read-only-inside',
        `${ro} must stay read-only inside the read-write tree ${rw}: ` +
          'Landlock cannot narrow access below a granted directory',
        `use a workspace without it, ${OTHER_BACKEND}`,
      );
    }
  }
  g.ro = g.ro.filter((p) => !inside.has(p));
  g.pinned = g.pinned.filter((p) => !inside.has(p));
}

/**
 * A mask under a read-write grant cannot be expressed: the secret is exposed (refuseExposed). Under
 * a read-only grant the helper grants its siblings instead (native/sbx-landlock.c grant()). A git
 * view cannot be placed either: the host file is what the command sees, guarded when it is writable;
 * a config whose view withholds credentials exposes them. Other generated files are refused.
 */
function grantAroundMasks(g: Grants, mounts: readonly Mount[]): void {
  for (const m of mounts) {
    if (m.kind !== 'mask' && m.kind !== 'file') continue;
    const rw = g.rw.find((tree) => isWithin(m.target, tree));
    const granted = rw !== undefined || g.ro.some((tree) => isWithin(m.target, tree));
    if (m.kind === 'file' && GUARDED_VIEWS.has(m.reason)) {
      if (rw) {
        g.guards.push(m.target);
        approximate(g, 'mounts.guarded', m.target);
      }
      // A repository without a hooks directory: the scan protects only what exists, and the helper
      // guards an absent path too (anything created there is removed after the run). `commondir`
      // is absent in a main gitdir; created, it points git's config and hooks at any directory.
      for (const name of ['hooks', 'commondir']) {
        const state = posix.join(posix.dirname(m.target), name);
        if (rw && m.reason === GIT_CONFIG_VIEW_REASON && !inside(g, state)) {
          g.guards.push(state);
          approximate(g, 'mounts.guarded', state);
        }
      }
      // The exclude view only adds the masked files' stand-ins, which this backend never places.
      if (granted && m.withheld) g.exposed.push({ path: m.target, what: `credentials: ${m.withheld.join(', ')}` });
    } else if (m.kind === 'file' && granted && m.mode !== 0) {
      deny(
        g,
        'mounts.file',
        `${m.target} (${m.reason}) would be replaced by a generated file: Landlock cannot put one over a host path`,
        OTHER_BACKEND,
      );
    } else if (rw) {
      g.exposed.push({ path: m.target, what: m.reason });
    } else if (granted) {
      // Masks outside every grant need nothing: what is not granted is denied.
      g.except.push(m.target);
      if (!g.ro.includes(m.target)) g.approximations.add('mounts.masked-parents');
    }
  }
}

/** Whether a guarded path already covers `path`. */
function inside(g: Grants, path: string): boolean {
  return g.guards.some((guard) => isWithin(path, guard));
}

/**
 * A secret inside a grant is readable (and, in a read-write tree, writable) by the command: Landlock
 * cannot deny one path beneath a granted directory, and without a mount namespace nothing can be put
 * over it (docs/SECURITY.md "Git state and workspace secrets under Landlock"). Refused, naming every one, unless the
 * caller opted in (`--expose-workspace-secrets`, a run option a profile cannot set); then each is listed.
 */
function refuseExposed(g: Grants, policy: Policy): void {
  if (g.exposed.length === 0) return;
  const items = g.exposed.map((e) => `${e.path} (${e.what})`);
  if (policy.exposeWorkspaceSecrets) {
    for (const item of items) approximate(g, 'mounts.mask.exposed', item);
    return;
  }
  const count = items.length === 1 ? `${items[0]} would be` : `${items.length} secrets would be`;
  g.refusals.push({
    feature: 'mounts.mask',
    message:
      `${count} readable by the command: Landlock cannot hide a path beneath a granted directory` +
      (items.length === 1 ? '' : ` (${items.join(', ')})`),
    hint:
      'move them out of the workspace; or run with them readable, listed in the report: ' +
      `--expose-workspace-secrets (library: exposeWorkspaceSecrets: true); ${OTHER_BACKEND}`,
    details: items.map((item) => `exposed: ${item}`),
  });
}

/**
 * PATH entries outside every grant: the shell's lookup stops there with EACCES instead of looking
 * further, where bwrap shows nothing and the lookup falls through. They are dropped from the
 * command's PATH and listed. A merged-/usr link the Policy copies (/bin → usr/bin) is followed first.
 */
function grantedPath(g: Grants, policy: Policy): string | undefined {
  const path = policy.env.vars.PATH;
  if (path === undefined) return undefined;
  const links = policy.mounts.flatMap((m) => (m.kind === 'symlink' ? [m] : []));
  const trees = [...g.ro, ...g.rw, ...g.private.values()];
  const reachable = (entry: string) => {
    const link = links.find((l) => isWithin(entry, l.target));
    const real = link
      ? posix.join(posix.resolve(posix.dirname(link.target), link.linkTo), posix.relative(link.target, entry))
      : entry;
    return trees.some((t) => isWithin(real, t)) && !g.except.some((e) => isWithin(real, e));
  };
  const kept = path.split(':').filter((entry) => {
    if (!entry.startsWith('/') || reachable(posix.normalize(entry))) return true;
    approximate(g, 'env.path', entry);
    return false;
  });
  return kept.join(':');
}

/** What this policy needs that landlock cannot do, and which approximations it gets. Depends on the policy only. */
function assess(policy: Policy, session: Session): Grants {
  const g = mountGrants(policy, session);
  if (policy.mode === 'danger' && !g.refusals.some((r) => r.feature === 'mode')) {
    deny(g, 'mode', 'mode: danger', 'use --backend bwrap for --danger runs');
  }
  if (policy.network.kind === 'filtered') assessFiltered(g, policy.network);
  if (policy.network.kind === 'none') g.approximations.add('network.none');
  if (landlockGovernsTcp(policy)) g.approximations.add('network.tcp-fastopen');
  g.approximations.add('landlock.unix-sockets');
  if (!policyDeniesIoUring(policy)) g.approximations.add('seccomp.io_uring');
  if (policy.hostname !== DEFAULT_HOSTNAME) approximate(g, 'hostname', policy.hostname);
  if (policy.identity.hostRoot && policy.identity.uid !== 0) g.approximations.add('identity.root');
  if (policy.namespaces.pid) g.approximations.add('namespaces.pid');
  if (policy.namespaces.ipc) g.approximations.add('namespaces.ipc');
  if (policy.namespaces.uts) g.approximations.add('namespaces.uts');
  for (const [name, value] of Object.entries(policy.env.vars)) {
    if (name === '' || /[=\0]/.test(name) || value.includes('\0')) {
      deny(
        g,
        'env.vars',
        `environment variable ${JSON.stringify(name)}: a name with '=' or NUL, or a value with NUL`,
        'fix env.set in the profile',
      );
    }
  }
  const path = grantedPath(g, policy);
  if (path !== undefined) g.path = path;
  return g;
}

/**
 * An allow-list network: the helper's judge connects the command only to sbx's proxy and the host
 * ports (native/sbx-landlock-net.c). What needs inbound connections or a socket file is refused.
 */
function assessFiltered(g: Grants, n: Extract<Policy['network'], { kind: 'filtered' }>): void {
  if (n.publish.length > 0) {
    deny(
      g,
      'network.publish',
      `network.publish (${n.publish.join(', ')}): the command cannot listen without a network namespace, ` +
        "where a listening socket would take connections from the host's network",
      `remove publish from the profile, ${OTHER_BACKEND}`,
    );
  }
  if (n.unixSockets.length > 0) {
    deny(
      g,
      'network.unix_sockets',
      `network.unix_sockets (${n.unixSockets.join(', ')}): the backend refuses socket(AF_UNIX) (landlock.unix-sockets)`,
      `remove unix_sockets from the profile, ${OTHER_BACKEND}`,
    );
  }
  g.approximations.add('network.filtered');
}

/**
 * What `network: none` means under this backend, for `sbx explain`: there is no namespace, only the
 * rules below and Landlock's TCP rules (native/sbx-landlock.c landlock()).
 */
export const LANDLOCK_NETWORK_NONE =
  "none: no network namespace, the host's interfaces stay visible; TCP connect and bind denied by " +
  'Landlock; refused by seccomp: socket() of any family but netlink, io_uring, sends with MSG_FASTOPEN';

/** Where an allow-list network's command is under this backend, for `sbx explain` (native/sbx-landlock-net.c). */
export const LANDLOCK_NETWORK_FILTERED =
  "no network namespace (the host's network); Landlock denies TCP, the helper connects each connect() " +
  "to sbx's proxy on 127.0.0.1 or refuses it";

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

/** Landlock's TCP rules are in force unless the policy shares the host's network (ABI 4). */
function landlockGovernsTcp(policy: Policy): boolean {
  return policy.network.kind !== 'host';
}

/** Whether the policy's own rules already deny io_uring outright (the default and strict presets). */
function policyDeniesIoUring(policy: Policy): boolean {
  return IO_URING_SYSCALLS.every((name) => policy.seccomp.rules.some((r) => r.syscall === name && !r.when));
}

function refuse(refusals: Refusal[]): never {
  const [first, ...rest] = refusals;
  const details = [...(first!.details ?? []), ...rest.map((r) => r.message)];
  throw new SbxError('BACKEND_UNSUPPORTED', `landlock backend: ${first!.message}`, { hint: first!.hint, details });
}

/**
 * What to do when the network judge cannot work (`sbx-landlock --probe-judge` named the step). Docker's
 * default seccomp profile allows pidfd_getfd (and process_vm_readv, for which the helper falls back to
 * /proc/TID/mem) only to a container that has CAP_SYS_PTRACE; the command itself never keeps a
 * capability (native/sbx-landlock.c drop_capabilities), so adding it widens nothing inside.
 */
export function judgeFix(unavailable: string): string {
  const ptraceGated = /^pidfd_getfd: Operation not permitted/.test(unavailable);
  return ptraceGated
    ? "start the container with --cap-add SYS_PTRACE (Docker's default seccomp profile allows pidfd_getfd " +
        'only with it; the sandboxed command keeps no capability), or use --network none or host'
    : 'use --network none or host';
}

export function compileLandlock(policy: Policy, session: Session, host: LandlockHost): Launch {
  const command = policy.command;
  if (command.length === 0 || command[0] === '') {
    throw new SbxError('USAGE', 'no command given', { hint: 'sbx run [options] -- COMMAND [ARGS...]' });
  }
  const g = assess(policy, session);
  const asRoot = host.uid === 0 && policy.identity.hostRoot;
  if (!asRoot && (policy.identity.uid !== host.uid || policy.identity.gid !== host.gid)) {
    deny(
      g,
      'identity',
      `the policy runs the command as ${policy.identity.uid}:${policy.identity.gid}, ` +
        `the caller is ${host.uid}:${host.gid}: mapping ids needs a user namespace`,
      `remove user: root from the profile, ${OTHER_BACKEND}`,
    );
  }
  if (policy.network.kind === 'filtered' && host.judgeUnavailable !== undefined) {
    deny(
      g,
      'network.kind',
      `an allow-list network needs the helper's network judge, which cannot work here: ${host.judgeUnavailable}`,
      `${judgeFix(host.judgeUnavailable)}, ${OTHER_BACKEND}`,
    );
  }
  if (g.refusals.length > 0) refuse(g.refusals);
  const egress = egressOf(policy, session);
  const vars: Record<string, string> = { ...policy.env.vars, ...session.secretEnv, ...egress.env };
  if (g.path !== undefined) vars.PATH = g.path;
  const tmp = g.private.get('/tmp');
  const home = policy.env.vars.HOME === undefined ? undefined : g.private.get(policy.env.vars.HOME);
  // XDG_RUNTIME_DIR too, unless the policy passes one: an sbx nested inside keeps its session
  // directories there (host/session.ts sessionBase), where bwrap's nested sbx uses its private /tmp.
  if (tmp) {
    vars.TMPDIR = tmp;
    vars.XDG_RUNTIME_DIR ??= tmp;
  }
  if (home) vars.HOME = home;
  const cwd = g.private.get(policy.cwd) ?? policy.cwd;
  // Never empty: the backend's own rules are in it whatever the preset.
  const seccomp = assembleSeccompFilter([...policy.seccomp.rules, ...landlockSeccompRules(policy)], host.arch);
  const firstPinFd = 6;
  const pins = [...new Set(g.pinned)];
  const records = [
    ...pins.map((source, i) => `pin=${firstPinFd + i}:${source}`),
    ...[...g.private.values()].map((dir) => `mkdir=${dir}`),
    ...g.ro.map((p) => `ro=${p}`),
    ...g.rw.map((p) => `rw=${p}`),
    ...g.dev.map((p) => `dev=${p}`),
    ...g.except.map((p) => `except=${p}`),
    ...g.guards.map((p) => `guard=${p}`),
    // TCP is denied unless the policy shares the host's network (Landlock's network rules, ABI 4).
    ...(landlockGovernsTcp(policy) ? [] : ['net=host']),
    ...(policy.network.kind === 'filtered' ? ['net=filtered', ...egress.ports.map((p) => `connect=${p}`)] : []),
    `rlimit=${RLIMIT_CORE}:0:0`,
    // Without a TTY the command gets its own session: it cannot push input into sbx's terminal (CVE-2017-5226).
    ...(host.stdinIsTty ? [] : ['setsid=1']),
    'seccomp=1',
    ...Object.keys(vars)
      .sort()
      .map((name) => `env=${name}=${vars[name]!}`),
    `cwd=${cwd}`,
    ...command.map((a) => `arg=${a}`),
  ];
  const data = new TextEncoder().encode(records.map((r) => r + '\0').join(''));
  return {
    file: host.path,
    args: [],
    env: {},
    // fd 3 the configuration, fd 4 the filter, fd 5 its status, then the pinned bind sources.
    fds: [
      { purpose: 'args', data },
      { purpose: 'seccomp', data: seccomp },
      { purpose: 'status' },
      ...pins.map((source) => ({ purpose: 'bind' as const, source })),
    ],
  };
}

/**
 * The launch with this run's limits in the helper's configuration (backend.ts commandLimits):
 * the rlimits before `rlimit=4:0:0` (a plan's own CORE cannot undo it), the cgroups first of all. The
 * helper's child applies them, so its monitor keeps sbx's own limits and stays in sbx's cgroup.
 */
export function withLandlockCommandLimits(launch: Launch, limits: CommandLimits): Launch {
  const [config, ...rest] = launch.fds;
  if (config?.purpose !== 'args') return launch;
  const records = new TextDecoder().decode(config.data).split('\0').slice(0, -1);
  const core = records.indexOf(`rlimit=${RLIMIT_CORE}:0:0`);
  const rlimits = limits.rlimits
    .map((r) => `rlimit=${RLIMIT_NUMBER[r.resource]}:${r.soft}:${r.hard}`)
    .filter((r) => !records.includes(r));
  const cgroups = limits.cgroupProcs.map((p) => `cgroup=${p}`);
  const at = core < 0 ? records.length : core;
  const out = [...cgroups, ...records.slice(0, at), ...rlimits, ...records.slice(at)];
  const data = new TextEncoder().encode(out.map((r) => r + '\0').join(''));
  return { ...launch, fds: [{ purpose: 'args', data }, ...rest] };
}

/**
 * The loopback ports the judge connects the command to (the proxy's, then network.host_ports) and the
 * proxy variables, as the bwrap bridge sets them. A planned session (explain) has no proxy yet: its
 * ports are shown as placeholders, which the helper would refuse as a run's configuration.
 */
function egressOf(policy: Policy, session: Session): { ports: (number | string)[]; env: Record<string, string> } {
  const n = policy.network;
  if (n.kind !== 'filtered') return { ports: [], env: {} };
  if (n.rules.allow.length === 0) return { ports: n.hostPorts, env: {} };
  const http = session.egressPorts?.http ?? '<proxy-http-port>';
  const socks = session.egressPorts?.socks ?? '<proxy-socks-port>';
  return { ports: [http, socks, ...n.hostPorts], env: proxyEnv('127.0.0.1', http, socks) };
}

/** The system calls the helper's network judge receives (explain lists them beside the filter's rules). */
export function landlockJudgedCalls(policy: Policy): string[] {
  return policy.network.kind === 'filtered' ? ['connect', 'listen', 'socket'] : [];
}

/** The launch as a reviewer reads it: the helper, then its configuration, one record a line (explain, golden files). */
export function expandLandlockLaunch(launch: Launch): string[] {
  const first = launch.fds[0];
  const records = first?.purpose === 'args' ? new TextDecoder().decode(first.data).split('\0').slice(0, -1) : [];
  const seccomp = launch.fds[1];
  const bytes = seccomp?.purpose === 'seccomp' ? seccomp.data.length : 0;
  const shown = records.map((r) => (/[\x00-\x1f\x7f]/.test(r) ? JSON.stringify(r) : r));
  return [launch.file, '# fd 3:', ...shown, `# fd 4: seccomp BPF, ${bytes / 8} instructions`];
}

/** The approximations a run of this policy gets (the report lists them). They do not depend on the session. */
export function landlockApproximations(policy: Policy): string[] {
  const g = assess(policy, DESCRIBED_SESSION);
  return LANDLOCK_GAPS.filter((gap) => gap.effect === 'weaker' && g.approximations.has(gap.key)).map(
    (gap) => `${gap.key}: ${gap.detail}${listedOf(g, gap.key)}`,
  );
}

/** The masked paths a run of this policy leaves readable (only with --expose-workspace-secrets: else it is refused). */
export function landlockExposed(policy: Policy): string[] {
  return policy.exposeWorkspaceSecrets ? assess(policy, DESCRIBED_SESSION).exposed.map((e) => e.path) : [];
}

function listedOf(g: Grants, feature: string): string {
  const items = g.listed.get(feature);
  return items ? `: ${items.join(', ')}` : '';
}

/** For `sbx explain --backend landlock`: what would be refused, and what it enforces more weakly (approximates). */
export function describeLandlockGaps(policy: Policy): string[] {
  const refused = assess(policy, DESCRIBED_SESSION).refusals.map((r) => `refused ${r.feature}: ${r.message}`);
  return [...refused, ...landlockApproximations(policy).map((a) => `weaker ${a}`)];
}
