// Policy + Session + BwrapHost → Launch for bubblewrap. Pure. Per bubblewrap's SECURITY.md the
// protection is entirely in these arguments, so each piece is one small function and the whole argv is
// golden-tested.
import { SbxError } from '../../errors.js';
import type { Mount, Policy } from '../../policy/types.js';
import { assembleSeccompFilter, type SeccompArch } from '../../seccomp/index.js';
import { dataFilePath, type ExtraFd, type Launch, type Session, sessionDirSource } from '../launch.js';
import { capturesConnects, commandOf } from '../shared/bridge.js';

export interface BwrapHost {
  /** Absolute path of the bwrap binary. */
  path: string;
  /** What this bwrap build supports (older releases lack options). bindFd: --bind-fd / --ro-bind-fd (0.8+). */
  features: { tmpfsSize: boolean; disableUserns: boolean; bindFd: boolean };
  stdinIsTty: boolean;
  /** The seccomp filter is compiled for this architecture (and checks it at run time). */
  arch: SeccompArch;
}

function octal(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}

/** bubblewrap's MAX_ARGS (bubblewrap.c): its argv after argv[0] plus every argument read from --args. */
export const BWRAP_MAX_ARGS = 9000;

/**
 * An empty read-only file or directory over `target`. Exported for its length: the sensitive-file
 * masks are fitted into BWRAP_MAX_ARGS before the Policy exists (sensitive/host/mask-fit.ts).
 */
export function compileMask(what: 'file' | 'dir', target: string, emptyFile: string, tmpfsSize: boolean): string[] {
  return what === 'file'
    ? ['--ro-bind', emptyFile, target]
    : ['--perms', '0555', ...(tmpfsSize ? ['--size', '4096'] : []), '--tmpfs', target, '--remount-ro', target];
}

/** Hands out the child descriptor number of a pinned mount source (one per bind: bwrap closes each after use). */
type PinFd = (source: string) => number;

/** `ordinal`: the mount's position among the policy's `file` mounts (where its content was written). */
function compileMount(mount: Mount, session: Session, host: BwrapHost, pinFd: PinFd, ordinal: number): string[] {
  switch (mount.kind) {
    case 'bind':
      // The descriptor, not the path: bwrap would resolve the path again, after sbx checked it, and a
      // symlink swapped in meanwhile (by anything that can write the tree) would choose what is mounted.
      if (!host.features.bindFd) {
        const why = `--bind-fd needs bubblewrap 0.8 or newer; sbx mounts what it checked, ${mount.source}, or nothing`;
        throw new SbxError('BACKEND_UNSUPPORTED', `this bwrap cannot mount a descriptor (${why})`, {
          hint: 'upgrade bubblewrap to 0.8 or newer, or use --backend nsjail',
        });
      }
      return [mount.access === 'rw' ? '--bind-fd' : '--ro-bind-fd', String(pinFd(mount.source)), mount.target];
    case 'tmpfs':
      if (!host.features.tmpfsSize) {
        throw new SbxError(
          'BACKEND_UNSUPPORTED',
          `this bwrap cannot limit the size of ${mount.target} (needs bubblewrap 0.7 or newer)`,
          {
            hint: 'upgrade bubblewrap (your distribution backports, or build 0.8+), or use --backend nsjail',
          },
        );
      }
      return ['--perms', octal(mount.mode), '--size', String(mount.sizeBytes), '--tmpfs', mount.target];
    case 'proc':
      return ['--proc', mount.target];
    case 'kernel':
      // Bound by path from the host's /proc: the same kernel object (a sysctl answers for the reader's
      // namespaces, not the mount's), owned by the kernel, so nothing a sandbox or a user writes can
      // swap what the path names. bwrap's own cover of /proc/sys is skipped whenever the directory is
      // 0555 (kernel.ts says why that matters).
      return mount.cover === 'read-only'
        ? ['--ro-bind', mount.target, mount.target]
        : compileMask(mount.what, mount.target, session.emptyFile, host.features.tmpfsSize);
    case 'dev':
      return ['--dev', mount.target];
    case 'symlink':
      return ['--symlink', mount.linkTo, mount.target];
    case 'mask':
      return compileMask(mount.what, mount.target, session.emptyFile, host.features.tmpfsSize);
    case 'file':
      return ['--ro-bind', dataFilePath(session, ordinal), mount.target];
    case 'session-dir':
      return ['--ro-bind', sessionDirSource(session, mount), mount.target];
    case 'remount-ro':
      return ['--remount-ro', mount.target];
  }
}

function compileNamespaces(policy: Policy, host: BwrapHost): string[] {
  const ns = policy.namespaces;
  const out: string[] = [];
  // The user namespace is not optional: without it bwrap would need setuid and the uid mapping
  // below would not exist. bwrap refuses to start when the kernel forbids it (fail closed).
  if (!ns.user)
    throw new SbxError('BACKEND_UNSUPPORTED', 'bwrap backend requires a user namespace', {
      hint: 'remove the profile setting that shares the user namespace',
    });
  out.push('--unshare-user');
  // A nested user namespace would give the child a fresh full capability set to attack the kernel with.
  if (host.features.disableUserns) out.push('--disable-userns');
  if (ns.pid) out.push('--unshare-pid');
  if (ns.ipc) out.push('--unshare-ipc');
  if (ns.uts) out.push('--unshare-uts');
  if (ns.net) out.push('--unshare-net');
  // Some kernels (or container runtimes) refuse a cgroup namespace; it only hides paths, so -try.
  if (ns.cgroup) out.push('--unshare-cgroup-try');
  return out;
}

function compileEnv(vars: Record<string, string>): string[] {
  const out = ['--clearenv'];
  for (const name of Object.keys(vars).sort()) out.push('--setenv', name, vars[name]!);
  return out;
}

export function compileBwrap(policy: Policy, session: Session, host: BwrapHost): Launch {
  const statusFd = 3;
  const argsFd = 4;
  const seccompFd = 5;
  // bwrap installs the filter last, just before exec: its own setup is not filtered, the command is.
  const seccomp = policy.seccomp.rules.length > 0 ? assembleSeccompFilter(policy.seccomp.rules, host.arch) : undefined;
  // Under transparent capture the network judge is the sandbox's first process and installs the filter
  // itself, in its child only: the judge needs pidfd_getfd, which the filter denies (backend/shared/bridge.ts).
  const captured = capturesConnects(policy);
  const judgeStatusFd = seccomp ? seccompFd + 1 : seccompFd;
  const pins: ExtraFd[] = [];
  const firstPinFd = judgeStatusFd + (captured ? 1 : 0);
  const pinFd: PinFd = (source) => firstPinFd + pins.push({ purpose: 'bind', source }) - 1;
  const fileMounts: readonly Mount[] = policy.mounts.filter((m) => m.kind === 'file');
  const options = [
    ...compileNamespaces(policy, host),
    '--uid',
    String(policy.identity.uid),
    '--gid',
    String(policy.identity.gid),
    ...(policy.namespaces.uts ? ['--hostname', policy.hostname] : []),
    '--die-with-parent',
    // Without a TTY the child gets its own session so it cannot push input into sbx's terminal
    // (CVE-2017-5226); an interactive shell keeps job control and TIOCSTI is left to seccomp.
    ...(host.stdinIsTty ? [] : ['--new-session']),
    '--cap-drop',
    'ALL',
    ...policy.mounts.flatMap((m) => compileMount(m, session, host, pinFd, fileMounts.indexOf(m))),
    ...compileEnv({ ...policy.env.vars, ...session.secretEnv }),
    '--chdir',
    policy.cwd,
  ];
  // Every option travels on a pipe (`--args 4`), never in bwrap's own argv: /proc/PID/cmdline is
  // world-readable, and the options carry the environment's values and the host's paths. It also
  // lifts ARG_MAX off long policies. The command itself stays in argv, as it would without sbx.
  const tail = [
    '--json-status-fd',
    String(statusFd),
    ...(seccomp && !captured ? ['--seccomp', String(seccompFd)] : []),
  ];
  // bwrap closes its status descriptor in the sandbox: its number is free for the bridge's announcement.
  const judge = captured
    ? { seccomp: seccomp ? seccompFd : undefined, status: judgeStatusFd, announce: statusFd }
    : undefined;
  const command = commandOf(policy, judge);
  const args = ['--args', String(argsFd), '--', ...command];
  checkArgCount(policy, host, args.length + options.length + tail.length);
  const data = new TextEncoder().encode([...options, ...tail].map((a) => a + '\0').join(''));
  return {
    file: host.path,
    args,
    env: {},
    fds: [
      { purpose: 'status' },
      { purpose: 'args', data },
      ...(seccomp ? [{ purpose: 'seccomp' as const, data: seccomp }] : []),
      ...(captured ? [{ purpose: 'status' as const }] : []),
      ...pins,
    ],
  };
}

/** bwrap dies with a bare "Exceeded maximum number of arguments" past its limit: say what grew and how to shrink it. */
function checkArgCount(policy: Policy, host: BwrapHost, count: number): void {
  if (count <= BWRAP_MAX_ARGS) return;
  const masks = policy.mounts.flatMap((m) => (m.kind === 'mask' ? [m] : []));
  const maskArgs = masks.reduce((n, m) => n + compileMask(m.what, m.target, '', host.features.tmpfsSize).length, 0);
  const command = commandOf(policy).length;
  const what = `${masks.length} masked paths, ${maskArgs} arguments; a command of ${command} arguments`;
  const limit = `more than bubblewrap's limit of ${BWRAP_MAX_ARGS}`;
  throw new SbxError('LAUNCH_TOO_LARGE', `the sandbox needs ${count} bwrap arguments, ${limit} (${what})`, {
    // Directories holding nothing but masked files are already masked whole (sensitive/host/mask-fit.ts):
    // what is left are secret-looking files beside ones the sandbox may read.
    hint:
      maskArgs >= command
        ? 'let secret-looking fixtures in with `sensitive.except` or skip them with `sensitive.skip` (profile keys), ' +
          'or split the tree: move them into directories of their own, which sbx then masks whole'
        : 'pass a long argument list through a file or stdin instead (e.g. xargs inside the sandbox)',
  });
}

/** The argv as bwrap sees it once `--args FD` is read: for display (`explain`) and golden tests. */
export function expandArgsFd(launch: Launch): string[] {
  const out: string[] = [];
  for (let i = 0; i < launch.args.length; i++) {
    const arg = launch.args[i]!;
    const fd = arg === '--args' ? launch.fds[Number(launch.args[i + 1]) - 3] : undefined;
    if (fd && fd.purpose === 'args') {
      const text = new TextDecoder().decode(fd.data);
      out.push(...text.split('\0').slice(0, -1));
      i++;
    } else out.push(arg);
  }
  return out;
}

/**
 * An expanded argv with each pinned descriptor (`--ro-bind-fd N`) shown as the path it holds
 * (`--ro-bind PATH`): for display (`explain`'s runnable form) and tests, never for a launch.
 */
export function expandPinnedFds(argv: readonly string[], launch: Launch): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const fd = arg === '--bind-fd' || arg === '--ro-bind-fd' ? launch.fds[Number(argv[i + 1]) - 3] : undefined;
    if (fd?.purpose === 'bind') {
      out.push(arg === '--bind-fd' ? '--bind' : '--ro-bind', fd.source);
      i++;
    } else out.push(arg);
  }
  return out;
}
