// Policy + Session + NsjailHost → Launch for google/nsjail (this build: d6454b4). Pure. nsjail runs
// once (-Mo) and supervises the command from outside its namespaces: the command is pid 1 inside.
// Every nsjail default that would change the sandbox is overridden in the argv (time_limit 600,
// nice 19, rlimit_fsize 1MiB, rlimit_nofile 32, ...), so the argv says what the sandbox is; only the
// environment travels apart, as a config on fd 4. nsjail logs to fd 3 (status.ts).
// What nsjail cannot express is refused by name (NSJAIL_GAPS), never dropped.
import { posix } from 'node:path';
import { SbxError } from '../../errors.js';
import { isWithin } from '../../path-within.js';
import type { Mount, Policy } from '../../policy/types.js';
import { assembleSeccompFilter, renderKafelPolicy, type SeccompArch, type SeccompRule } from '../../seccomp/index.js';
import { capturesConnects, commandOf } from '../shared/bridge.js';
import { dataFilePath, type Launch, type Session, sessionDirSource } from '../launch.js';
import { NSJAIL_GAPS } from './gaps.js';

export interface NsjailHost {
  /** Absolute path of the nsjail binary. */
  path: string;
  stdinIsTty: boolean;
  /** The Kafel policy is rendered for this architecture (kafel kills foreign ones). */
  arch: SeccompArch;
  /** The uid nsjail runs as: the outside half of the uid mapping. */
  uid: number;
  /**
   * The absolute in-sandbox path of `policy.command[0]` when that is a bare name: nsjail execv()s
   * (subproc.cc), it does not search PATH. The runtime finds it as bwrap's execvp would
   * (commands/host/command.ts); argv[0] stays as the user wrote it.
   */
  execPath?: string;
}

const STATUS_FD = 3;
const CONFIG_FD = 4;
/** Under transparent capture: sbx's seccomp filter for the judge to install, then the judge's status. */
const JUDGE_SECCOMP_FD = 5;
const MIB = 1024 * 1024;
/** /dev holds mount points only. */
const DEV_TMPFS_BYTES = 64 * 1024;
const MASK_TMPFS_BYTES = 4096;
/** The nodes bwrap --dev binds from the host. */
const DEV_NODES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'];
const CLONE_NEWUSER = 0x10000000;

interface Refusal {
  feature: string;
  message: string;
  hint: string;
}

const OTHER_BACKEND = 'or use --backend bwrap';

function octal(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}

function hostBacked(m: Mount): boolean {
  return m.kind === 'bind' || m.kind === 'session-dir';
}

/** Whether the mount point of `m`, inside the host bind `parent`, is known to exist on the host. */
function mountpointExists(m: Mount, parent: Mount): boolean {
  // derivePolicy masks (and covers with generated files, or with the run's CA bundles: role trust)
  // existing paths only.
  if (m.kind === 'mask' || m.kind === 'file' || m.role === 'trust' || m.target === parent.target) return true;
  if (parent.kind !== 'bind') return false;
  return m.kind === 'bind' && posix.join(parent.source, posix.relative(parent.target, m.target)) === m.source;
}

function pathsOf(m: Mount): string[] {
  switch (m.kind) {
    case 'bind':
      return [m.source, m.target];
    case 'symlink':
      return [m.linkTo, m.target];
    default:
      return [m.target];
  }
}

/** Whether the rules close nested user namespaces (what bwrap --disable-userns does without seccomp). */
function blocksNestedUserns(rules: readonly SeccompRule[]): boolean {
  const denies = (syscall: string) =>
    rules.some(
      (r) =>
        r.syscall === syscall &&
        (r.when === undefined ||
          (r.when.arg === 0 && r.when.op === 'masked-any' && (Number(r.when.value) & CLONE_NEWUSER) !== 0)),
    );
  return denies('unshare') && denies('clone') && rules.some((r) => r.syscall === 'clone3' && r.when === undefined);
}

/** What this policy needs that nsjail cannot do. Depends on the policy only (also used by `explain`). */
function policyRefusals(policy: Policy): Refusal[] {
  const out: Refusal[] = [];
  if (!policy.namespaces.user)
    out.push({
      feature: 'namespaces.user',
      message: 'the nsjail backend requires a user namespace',
      hint: 'remove the profile setting that shares the user namespace',
    });
  if (!blocksNestedUserns(policy.seccomp.rules)) {
    out.push({
      feature: 'nsjail.nested-userns',
      message: `nsjail can only forbid nested user namespaces through seccomp, and seccomp (preset ${policy.seccomp.preset}) does not deny CLONE_NEWUSER for unshare, clone and clone3`,
      hint: `use seccomp preset default or strict and keep unshare, clone, clone3 out of seccomp.remove, ${OTHER_BACKEND}`,
    });
  }
  const placed: Mount[] = [];
  let proc: Mount | undefined;
  policy.mounts.forEach((m, i) => {
    for (const path of pathsOf(m)) {
      if (path.includes(':'))
        out.push({
          feature: 'mounts.paths',
          message: `${m.kind} ${m.target}: "${path}" contains ':', which nsjail's mount options use as separator`,
          hint: `move it to a path without ':', ${OTHER_BACKEND}`,
        });
    }
    // Nothing to mount (compileMount says why), so nothing to place after procfs.
    if (m.kind === 'kernel') return;
    if (m.kind === 'remount-ro') {
      const under = placed.findLast((p) => p.target === m.target);
      if (m.target !== '/' && (!under || under.kind === 'symlink')) {
        out.push({
          feature: 'mounts.remount-ro',
          message: `remount-ro ${m.target}: not a mount point`,
          hint: OTHER_BACKEND,
        });
      }
      return;
    }
    if (m.kind === 'bind' && m.target === '/') {
      out.push({
        feature: 'mounts.root-bind',
        message: `${m.source} is bound at / (as mode: danger does), which nsjail cannot layer mounts over: its new mount API attaches every later mount (masks, /dev, /proc) to the root tmpfs underneath`,
        hint: 'use --backend bwrap for --danger runs',
      });
    }
    if (proc && isWithin(m.target, proc.target))
      out.push({
        feature: 'mounts.proc',
        message: `${m.kind} ${m.target}: nsjail mounts procfs last, so nothing can be mounted at or below ${proc.target}`,
        hint: OTHER_BACKEND,
      });
    if (m.kind === 'proc') proc = m;
    const parent = placed.findLast((p) => p.kind !== 'symlink' && isWithin(m.target, p.target));
    if (parent && hostBacked(parent) && !mountpointExists(m, parent)) {
      out.push({
        feature: 'mounts.host-mountpoint',
        message: `${m.kind} ${m.target} (mount ${i + 1}) lies inside the host bind of ${parent.kind === 'bind' ? parent.source : 'the session directory'}: nsjail would create its mount point on the host`,
        hint: `mount it outside host binds (e.g. under /opt or /run), ${OTHER_BACKEND}`,
      });
    }
    placed.push(m);
  });
  const fsize = policy.limits.fileSizeBytes;
  if (fsize !== undefined && fsize % MIB !== 0) {
    out.push({
      feature: 'limits.fileSizeBytes',
      message: `limits.file_size (${fsize} bytes) is not a whole number of MiB, the unit of nsjail --rlimit_fsize`,
      hint: `round it to MiB (e.g. ${Math.max(1, Math.round(fsize / MIB))}MiB), ${OTHER_BACKEND}`,
    });
  }
  for (const [name, value] of Object.entries(policy.env.vars)) {
    if (name === '' || /[=\0]/.test(name) || value.includes('\0'))
      out.push({
        feature: 'env.vars',
        message: `environment variable ${JSON.stringify(name)}: a name with '=' or NUL, or a value with NUL`,
        hint: 'fix env.set in the profile',
      });
  }
  return out;
}

/** Refusals that depend on this run's session and host. */
function launchRefusals(policy: Policy, session: Session, host: NsjailHost, command: string[]): Refusal[] {
  const out: Refusal[] = [];
  if (session.dir.includes(':') || session.emptyFile.includes(':')) {
    out.push({
      feature: 'mounts.paths',
      message: `the session directory ${session.dir} contains ':'`,
      hint: "set XDG_RUNTIME_DIR to a path without ':'",
    });
  }
  if (policy.identity.hostRoot !== (host.uid === 0)) {
    out.push({
      feature: 'identity',
      message: `the policy was derived for a ${policy.identity.hostRoot ? 'root' : 'non-root'} caller, nsjail runs as uid ${host.uid}`,
      hint: 'derive the policy on this host',
    });
  }
  const name = command[0] ?? '';
  if (!name.includes('/') && !(host.execPath && posix.isAbsolute(host.execPath))) {
    out.push({
      feature: 'command',
      message: `nsjail needs the absolute path of "${name}" (it does not search PATH)`,
      hint: 'the runtime passes NsjailHost.execPath (commands/host/command.ts finds it)',
    });
  }
  return out;
}

/**
 * remount-ro entries folded into the mount they name: nsjail applies read-only flags only after all
 * mounts are in place (mnt_newapi.cc), which equals bwrap's in-order non-recursive remount of that
 * mount. Returns the mounts that are made read-only, and whether the root stays read-only.
 */
function foldRemounts(mounts: readonly Mount[]): { readOnly: Set<Mount>; rootReadOnly: boolean } {
  const readOnly = new Set<Mount>();
  let rootReadOnly = false;
  mounts.forEach((m, i) => {
    if (m.kind !== 'remount-ro') return;
    const under = mounts.slice(0, i).findLast((p) => p.kind !== 'remount-ro' && p.target === m.target);
    if (under) readOnly.add(under);
    else if (m.target === '/') rootReadOnly = true;
  });
  return { readOnly, rootReadOnly };
}

function tmpfs(target: string, sizeBytes: number, mode: number, readOnly: boolean): string[] {
  return ['--mount', `none:${target}:tmpfs:size=${sizeBytes},mode=${octal(mode)}${readOnly ? ',ro' : ''}`];
}

/** bwrap --dev's contents, built from nsjail mounts (nsjail makes no /dev of its own). */
function compileDev(target: string): string[] {
  const at = (name: string) => posix.join(target, name);
  return [
    ...tmpfs(target, DEV_TMPFS_BYTES, 0o755, true),
    ...DEV_NODES.flatMap((n) => ['--bindmount', `/dev/${n}:${at(n)}`]),
    // A private devpts instance: the sandbox cannot see or reach the host's terminals.
    '--mount',
    `none:${at('pts')}:devpts:newinstance,ptmxmode=0666,mode=620`,
    '--symlink',
    `pts/ptmx:${at('ptmx')}`,
    '--symlink',
    `/proc/self/fd:${at('fd')}`,
    ...['stdin', 'stdout', 'stderr'].flatMap((n, fd) => ['--symlink', `/proc/self/fd/${fd}:${at(n)}`]),
  ];
}

/** `ordinal`: the mount's position among the policy's `file` mounts (where its content was written). */
function compileMount(m: Mount, readOnly: boolean, session: Session, ordinal: number): string[] {
  switch (m.kind) {
    case 'bind':
      return [m.access === 'rw' && !readOnly ? '--bindmount' : '--bindmount_ro', `${m.source}:${m.target}`];
    case 'tmpfs':
      return tmpfs(m.target, m.sizeBytes, m.mode, readOnly);
    case 'proc':
      // Read-only unless --proc_rw: /proc/sysrq-trigger and friends stay shut even to a child that is
      // host uid 0. nsjail mounts it after all other mounts (cmdline.cc setupMounts).
      return ['--proc_path', m.target];
    case 'kernel':
      // Its procfs is read-only as a whole (above), which covers every `read-only` entry; a mask cannot
      // be placed in it, as nsjail mounts it last: the gap `mounts.kernel` (gaps.ts) says what stays readable.
      return [];
    case 'dev':
      return compileDev(m.target);
    case 'symlink':
      return ['--symlink', `${m.linkTo}:${m.target}`];
    case 'mask':
      return m.what === 'file'
        ? ['--bindmount_ro', `${session.emptyFile}:${m.target}`]
        : tmpfs(m.target, MASK_TMPFS_BYTES, 0o555, true);
    case 'file':
      return ['--bindmount_ro', `${dataFilePath(session, ordinal)}:${m.target}`];
    case 'session-dir':
      return ['--bindmount_ro', `${sessionDirSource(session, m)}:${m.target}`];
    case 'remount-ro':
      return []; // folded into the mount it names (foldRemounts)
  }
}

function compileNamespaces(policy: Policy): string[] {
  const ns = policy.namespaces;
  return [
    ...(ns.net ? [] : ['--disable_clone_newnet']),
    ...(ns.pid ? [] : ['--disable_clone_newpid']),
    ...(ns.ipc ? [] : ['--disable_clone_newipc']),
    ...(ns.uts ? ['--hostname', policy.hostname] : ['--disable_clone_newuts']),
    ...(ns.cgroup ? [] : ['--disable_clone_newcgroup']),
  ];
}

/**
 * nsjail sets every rlimit itself, soft = hard, with small defaults (AS 4GiB, CPU 600s, FSIZE 1MiB,
 * NOFILE 32), so each is given. The policy's CPU, FSIZE and NOFILE are exact values. AS (the
 * profile's address_space) and NPROC (the LimitPlan's fallback for pids) are set by its trampoline on
 * nsjail, and `hard` hands nsjail's hard limit down. Otherwise `hard`: no more than the command could raise
 * itself to; STACK stays `soft`, as an unlimited stack switches the kernel to the legacy mmap layout.
 */
function compileRlimits(limits: Policy['limits']): string[] {
  const values: [string, string][] = [
    ['as', 'hard'],
    ['core', '0'],
    ['cpu', limits.cpuTimeSec !== undefined ? String(limits.cpuTimeSec) : 'hard'],
    ['fsize', limits.fileSizeBytes !== undefined ? String(limits.fileSizeBytes / MIB) : 'hard'],
    ['nofile', limits.nofile !== undefined ? String(limits.nofile) : 'hard'],
    ['nproc', 'hard'],
    ['stack', 'soft'],
    ['memlock', 'hard'],
    ['rtprio', 'hard'],
    ['msgqueue', 'hard'],
  ];
  return values.flatMap(([name, value]) => [`--rlimit_${name}`, value]);
}

/** A Protocol Buffers text-format string literal: ASCII only, every other byte as an octal escape. */
function protoString(value: string): string {
  let out = '"';
  for (const byte of new TextEncoder().encode(value)) {
    if (byte === 0x22 || byte === 0x5c) out += `\\${String.fromCharCode(byte)}`;
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte);
    else out += `\\${byte.toString(8).padStart(3, '0')}`;
  }
  return out + '"';
}

/**
 * The command's environment as an nsjail config (config.proto `envar`, text format). nsjail clears
 * its own before exec (no --keep_env). It travels on a descriptor, not on the argv (/proc/PID/cmdline
 * is world-readable) nor in nsjail's own environment (the launch chain — the limits trampoline's
 * shell, the dynamic loader, nsjail — would act on SHELLOPTS, LD_PRELOAD and the like, on the host).
 */
function renderConfig(vars: Record<string, string>): string {
  const lines = Object.keys(vars)
    .sort()
    .map((name) => `envar: ${protoString(`${name}=${vars[name]!}`)}`);
  return ["# sbx: the command's environment", ...lines, ''].join('\n');
}

function refuse(refusals: Refusal[]): never {
  const [first, ...rest] = refusals;
  throw new SbxError('BACKEND_UNSUPPORTED', `nsjail backend: ${first!.message}`, {
    hint: first!.hint,
    details: rest.map((r) => r.message),
  });
}

export function compileNsjail(policy: Policy, session: Session, host: NsjailHost): Launch {
  // Under transparent capture the network judge is the jail's first process and installs sbx's filter
  // for the command itself (backend/shared/bridge.ts): nsjail's own filter would hold the judge too,
  // which needs what it denies. nsjail closes every descriptor but the passed ones in the jail, so its
  // log's number is free there for the bridge's announcement.
  const captured = capturesConnects(policy);
  const bpf =
    captured && policy.seccomp.rules.length > 0 ? assembleSeccompFilter(policy.seccomp.rules, host.arch) : undefined;
  const judgeStatusFd = bpf ? JUDGE_SECCOMP_FD + 1 : JUDGE_SECCOMP_FD;
  const judge = captured
    ? { seccomp: bpf ? JUDGE_SECCOMP_FD : undefined, status: judgeStatusFd, announce: STATUS_FD }
    : undefined;
  const command = commandOf(policy, judge);
  if (command.length === 0 || command[0] === '')
    throw new SbxError('USAGE', 'no command given', { hint: 'sbx run [options] -- COMMAND [ARGS...]' });
  const refusals = [...policyRefusals(policy), ...launchRefusals(policy, session, host, command)];
  if (refusals.length > 0) refuse(refusals);
  const { readOnly, rootReadOnly } = foldRemounts(policy.mounts);
  const timeoutMs = policy.limits.timeoutMs;
  const hasProc = policy.mounts.some((m) => m.kind === 'proc');
  const fileMounts: readonly Mount[] = policy.mounts.filter((m) => m.kind === 'file');
  // nsjail joins repeated --seccomp_string values with newlines: one per line keeps each argument
  // line-free (and the golden files readable). It installs the filter last, right before execve.
  const seccomp =
    policy.seccomp.rules.length > 0 && !captured
      ? renderKafelPolicy(policy.seccomp.rules, host.arch).replace(/\n$/, '').split('\n')
      : [];
  const args = [
    // Its log goes to a pipe sbx reads (status.ts), not to the terminal; first, so that errors
    // in the options that follow are logged there too.
    '--log_fd',
    String(STATUS_FD),
    // A config replaces every setting given before it (config.cc parseInternal: CopyFrom), so it
    // comes before the flags. nsjail open()s the path, so the runtime passes this descriptor as a
    // regular (unlinked) file: /proc/self/fd/N of a socketpair, Node's stdio "pipe", is ENXIO.
    '--config',
    `/proc/self/fd/${CONFIG_FD}`,
    '--mode',
    'o',
    '--experimental_mnt',
    'new',
    ...compileNamespaces(policy),
    // Inside uid/gid : outside. The gid's outside half is nsjail's own gid (user.cc parseGid("")).
    '--user',
    `${policy.identity.uid}:${host.uid}:1`,
    '--group',
    String(policy.identity.gid),
    '--cwd',
    policy.cwd,
    // nsjail calls setsid() unless told not to: an interactive shell keeps job control, and TIOCSTI is
    // left to seccomp, as with bwrap (CVE-2017-5226).
    ...(host.stdinIsTty ? ['--skip_setsid'] : []),
    '--nice_level',
    '0',
    // sbx keeps the wall clock (exact, 124). nsjail's default limit is 600s; as a backstop it gets one
    // second more than rounded up, as it counts whole seconds from time() and could fire early.
    '--time_limit',
    timeoutMs === undefined ? '0' : String(Math.ceil(timeoutMs / 1000) + 1),
    ...compileRlimits(policy.limits),
    ...(rootReadOnly ? [] : ['--rw']),
    ...policy.mounts.flatMap((m) => compileMount(m, readOnly.has(m), session, fileMounts.indexOf(m))),
    ...(hasProc ? [] : ['--disable_proc']),
    ...seccomp.flatMap((line) => ['--seccomp_string', line]),
    // The judge's descriptors, the only ones nsjail leaves open in the jail beside stdio.
    ...(judge ? [...(bpf ? ['--pass_fd', String(JUDGE_SECCOMP_FD)] : []), '--pass_fd', String(judgeStatusFd)] : []),
    ...(command[0]!.includes('/') ? [] : ['--exec_file', host.execPath!]),
    '--',
    ...command,
  ];
  return {
    file: host.path,
    args,
    env: {},
    fds: [
      { purpose: 'status' },
      { purpose: 'args', data: new TextEncoder().encode(renderConfig({ ...policy.env.vars, ...session.secretEnv })) },
      ...(bpf ? [{ purpose: 'seccomp' as const, data: bpf }] : []),
      ...(judge ? [{ purpose: 'status' as const }] : []),
    ],
  };
}

/** The launch as a reviewer reads it: nsjail's argv, then the config it reads from fd 4 (explain, golden files). */
export function expandNsjailLaunch(launch: Launch): string[] {
  const out = [launch.file, ...launch.args];
  launch.fds.forEach((fd, i) => {
    // Under capture: the filter the network judge installs for the command, in BPF (explain lists its rules).
    if (fd.purpose === 'seccomp')
      out.push(`# fd ${i + 3}: sbx's seccomp filter (BPF, ${fd.data.length / 8} instructions), for the network judge`);
    if (fd.purpose !== 'args') return;
    out.push(`# fd ${i + 3}:`, ...new TextDecoder().decode(fd.data).replace(/\n$/, '').split('\n'));
  });
  return out;
}

/** Policy features the nsjail backend uses (gap keys). */
function featuresUsed(policy: Policy): Set<string> {
  const used = new Set(NSJAIL_GAPS.filter((g) => g.key.startsWith('nsjail.')).map((g) => g.key));
  for (const m of policy.mounts) used.add(`mounts.${m.kind}`);
  for (const [key, value] of Object.entries(policy.limits))
    if (value !== undefined && key !== 'required') used.add(`limits.${key}`);
  return used;
}

/** For `sbx explain --backend nsjail`: what would be refused, and what nsjail enforces more weakly than bwrap. */
export function describeNsjailGaps(policy: Policy): string[] {
  const refused = policyRefusals(policy);
  const used = featuresUsed(policy);
  return [
    ...refused.map((r) => `refused ${r.feature}: ${r.message}`),
    ...NSJAIL_GAPS.filter((g) => g.effect === 'weaker' && used.has(g.key)).map((g) => `weaker ${g.key}: ${g.detail}`),
  ];
}
