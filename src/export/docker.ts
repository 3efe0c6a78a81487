// Policy → the `docker run` argv (the same under `podman run`) and the files it names. Pure.
//
// The image supplies the system (the policy's system binds and merged-/usr links); everything else the
// policy mounts is said on the argv: the workspace and the profile's binds from the host, /tmp and
// HOME as bounded tmpfs, masks over what is secret, generated files from the export directory. What
// Docker cannot say is a gap (reported), or refused by name when it would weaken the sandbox.
import type { Mount, Policy } from '../policy/types.js';
import type { SeccompArch } from '../seccomp/index.js';
import type { Gap } from '../backend/shared/gap.js';
import { type ExportFile, exportGaps, type GapList, unenforcedLimit } from './export-gaps.js';
import { foldRemounts } from './remounts.js';
import { seccompProfileOf } from './seccomp.js';

export interface DockerOptions {
  image: string;
  /** Absolute directory the seccomp profile and generated files are written to, and named from the argv. */
  dir: string;
  /** A file of NAME=value lines the user provides for the policy's secrets: named, never written by sbx. */
  envFile?: string;
  arch: SeccompArch;
}

export interface DockerExport {
  argv: string[];
  files: ExportFile[];
  gaps: Gap[];
}

const MASK_DIR_BYTES = 4096;

/** Docker's --mount and --tmpfs values are comma- (and colon-) separated option lists. */
const UNSAFE_PATH = /[,:\n]/;

function octal(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}

function bindMount(source: string, target: string, readOnly: boolean): string[] {
  return ['--mount', `type=bind,source=${source},target=${target}${readOnly ? ',readonly' : ''}`];
}

interface Walk {
  policy: Policy;
  options: DockerOptions;
  gaps: GapList;
  files: ExportFile[];
  readOnlyTargets: ReadonlySet<string>;
}

/** One policy mount → its docker options (none when the image or the engine provides it). */
function compileMount(m: Mount, walk: Walk, ordinal: number): string[] {
  const { gaps, policy } = walk;
  for (const path of m.kind === 'bind' ? [m.source, m.target] : [m.target])
    if (UNSAFE_PATH.test(path))
      gaps.add(
        'mounts.paths',
        'refused',
        `${m.kind} ${m.target}: "${path}" holds ',', ':' or a line break, which docker's mount options split on`,
      );
  switch (m.kind) {
    case 'bind':
      if (m.target === '/') {
        gaps.add('mode', 'refused', 'danger binds the host root writable: a container of it is no sandbox');
        return [];
      }
      if (m.role === 'system') {
        gaps.add(
          'mounts.system',
          'equivalent',
          "the image's own system directories, read-only with the root filesystem, instead of the host's",
        );
        return [];
      }
      if (m.access === 'ro')
        gaps.add(
          'mounts.bind',
          'weaker',
          'readonly binds are read-only with every mount below them from Docker 25 on kernels with mount_setattr (5.12+); older engines leave submounts writable (bwrap makes them read-only)',
        );
      return bindMount(m.source, m.target, m.access === 'ro' || walk.readOnlyTargets.has(m.target));
    case 'tmpfs': {
      const access = walk.readOnlyTargets.has(m.target) ? 'ro' : 'rw';
      const { uid, gid } = policy.identity;
      // Owned by the command's uid (bwrap creates it inside the user namespace, so it is the command's);
      // exec as bwrap's tmpfs is (Docker's --tmpfs defaults to noexec).
      return [
        '--tmpfs',
        `${m.target}:${access},exec,nosuid,nodev,size=${m.sizeBytes},mode=${octal(m.mode)},uid=${uid},gid=${gid}`,
      ];
    }
    case 'proc':
    case 'dev':
      if (m.target !== `/${m.kind}`)
        gaps.add(
          `mounts.${m.kind}`,
          'refused',
          `a ${m.kind} at ${m.target}: the engine mounts its own only at /${m.kind}`,
        );
      else
        gaps.add(
          `mounts.${m.kind}`,
          'equivalent',
          m.kind === 'proc'
            ? "the engine's own procfs for the container's pid namespace, with its masked and read-only paths"
            : "the engine's own /dev: null, zero, full, random, urandom, tty, a new devpts, on a 64 MiB tmpfs",
        );
      return [];
    case 'kernel':
      // Docker's own maskedPaths and readonlyPaths (never lifted: the export asks for no --privileged
      // and no systempaths=unconfined) are the same list as kernel.ts's.
      gaps.add('mounts.kernel', 'equivalent', "the engine's default masked and read-only paths under /proc");
      return [];
    case 'symlink':
      if (m.role !== 'system') gaps.add('mounts.symlink', 'refused', `a link at ${m.target}: docker cannot create one`);
      return [];
    case 'mask':
      // An empty read-only stand-in, as runc's own maskedPaths do: /dev/null over a file, an empty tmpfs over a directory.
      return m.what === 'file'
        ? bindMount('/dev/null', m.target, true)
        : ['--tmpfs', `${m.target}:ro,noexec,nosuid,nodev,size=${MASK_DIR_BYTES},mode=0555`];
    case 'file': {
      const path = `${walk.options.dir}/file-${ordinal}`;
      walk.files.push({ kind: 'file', path, content: m.content, mode: m.mode });
      return bindMount(path, m.target, true);
    }
    case 'session-dir':
      gaps.add('mounts.session-dir', 'refused', "the egress proxy's session directory (network allow-lists)");
      return [];
    case 'remount-ro':
      if (
        m.target !== '/' &&
        // The engine's own /dev (compileMount's 'dev') is its own: a small tmpfs the command cannot grow.
        !policy.mounts.some((o) => ['tmpfs', 'bind', 'dev'].includes(o.kind) && o.target === m.target)
      )
        gaps.add('mounts.remount-ro', 'refused', `${m.target} is not a mount of its own to make read-only`);
      return [];
  }
}

function compileNetwork(policy: Policy, gaps: GapList): string[] {
  switch (policy.network.kind) {
    case 'none':
      return ['--network', 'none'];
    case 'host':
      gaps.add(
        'network.kind',
        'equivalent',
        "host: the Docker host's network namespace (--network host), as bwrap shares the caller's",
      );
      return ['--network', 'host'];
    case 'filtered':
      gaps.add(
        'network.allow',
        'refused',
        "an allow-list: sbx's egress proxy would need a container of its own and an --internal network joining the two, which one docker run cannot say (and the engine's DNS would still answer the workload); use sbx run, sbx export k8s (the proxy in its own pod), or network: none",
      );
      return [];
  }
}

function compileNamespaces(policy: Policy, gaps: GapList): string[] {
  const ns = policy.namespaces;
  gaps.add(
    'namespaces.user',
    'weaker',
    "no user namespace of its own unless the daemon remaps users (dockerd --userns-remap, rootless Docker or Podman): the command's uid is that uid on the host, without capabilities",
  );
  // Docker gives each container its own pid namespace unless told --pid host (`private` is no value of --pid).
  return [
    ...(ns.pid ? [] : ['--pid', 'host']),
    '--ipc',
    ns.ipc ? 'private' : 'host',
    ...(ns.uts ? ['--hostname', policy.hostname] : ['--uts', 'host']),
    '--cgroupns',
    ns.cgroup ? 'private' : 'host',
  ];
}

function compileLimits(policy: Policy, gaps: GapList): string[] {
  const l = policy.limits;
  const required = new Set(l.required);
  const out: string[] = [];
  // No swap beyond the memory limit: --memory-swap is memory plus swap.
  if (l.memoryBytes !== undefined) out.push('--memory', String(l.memoryBytes), '--memory-swap', String(l.memoryBytes));
  if (l.pids !== undefined) out.push('--pids-limit', String(l.pids));
  if (l.cpus !== undefined) out.push('--cpus', String(l.cpus));
  const ulimit = (name: string, value: number | undefined) =>
    value === undefined ? [] : ['--ulimit', `${name}=${value}:${value}`];
  out.push(
    ...ulimit('cpu', l.cpuTimeSec),
    ...ulimit('fsize', l.fileSizeBytes),
    ...ulimit('nofile', l.nofile),
    // No core files: they would land in the working directory, the workspace.
    ...ulimit('core', 0),
  );
  if (l.timeoutMs !== undefined)
    unenforcedLimit(
      gaps,
      'limits.timeoutMs',
      required.has('timeout'),
      'docker run has no time limit (wrap it in timeout(1), or use the k8s export: activeDeadlineSeconds)',
    );
  if (l.addressSpaceBytes !== undefined)
    unenforcedLimit(
      gaps,
      'limits.addressSpaceBytes',
      required.has('address-space'),
      'docker run has no --ulimit for RLIMIT_AS',
    );
  return out;
}

/** docker's --env-file reader splits lines and drops a trailing carriage return: a value holding either cannot be said. */
const UNSAFE_ENV_VALUE = /[\r\n]/;

/**
 * The policy's variables go into a file in the export directory (0600, read by the client), never on
 * the argv: a docker argv is readable by every local user in /proc/PID/cmdline while it runs, and a
 * kept variable may hold a credential (as bwrap's backend keeps values off its argv).
 */
function compileEnv(policy: Policy, options: DockerOptions, walk: { gaps: GapList; files: ExportFile[] }): string[] {
  const { gaps, files } = walk;
  const vars = policy.env.vars;
  const names = Object.keys(vars).sort();
  for (const name of names)
    if (UNSAFE_ENV_VALUE.test(vars[name]!))
      gaps.add('env.vars', 'refused', `${name}: a line break in its value, which docker's --env-file cannot hold`);
  gaps.add(
    'env.vars',
    'weaker',
    'variables the image sets (its ENV) and the policy does not name are not cleared: docker has no --clearenv',
  );
  const path = `${options.dir}/env`;
  files.push({ kind: 'file', path, content: names.map((n) => `${n}=${vars[n]!}\n`).join(''), mode: 0o600 });
  const out = ['--env-file', path];
  if (policy.env.secrets.length === 0) return out;
  if (options.envFile === undefined) {
    gaps.add(
      'env.secrets',
      'refused',
      `the profile's secrets (${policy.env.secrets.join(', ')}) need a file of NAME=value lines you provide: --env-file`,
    );
    return out;
  }
  gaps.add(
    'env.secrets',
    'equivalent',
    `read by docker from ${options.envFile} (yours; sbx never writes a value): ${policy.env.secrets.join(', ')}`,
  );
  return [...out, '--env-file', options.envFile];
}

/** The `docker run` argv for `policy` and the files it names (written to `options.dir` by the caller). */
export function exportDocker(policy: Policy, options: DockerOptions): DockerExport {
  const gaps = exportGaps(policy);
  const files: ExportFile[] = [];
  const remounts = foldRemounts(policy.mounts);
  const walk: Walk = { policy, options, gaps, files, readOnlyTargets: new Set(remounts.targets) };
  const fileMounts: readonly Mount[] = policy.mounts.filter((m) => m.kind === 'file');
  const mounts = policy.mounts.flatMap((m) => compileMount(m, walk, fileMounts.indexOf(m)));
  if (!remounts.rootReadOnly) gaps.add('mounts.remount-ro', 'refused', 'a writable root filesystem');
  if (policy.identity.hostRoot && policy.identity.uid !== 0)
    gaps.add(
      'identity.hostRoot',
      'weaker',
      `sbx run as root maps uid ${policy.identity.uid} onto root, which owns the workspace; docker runs it as the host's uid ${policy.identity.uid}, which may write only what it owns (chown the workspace to it)`,
    );
  if (policy.identity.uid === 0)
    gaps.add('identity', 'refused', 'uid 0 inside: without a user namespace that is root on the Docker host');
  const seccomp: string[] = [];
  if (policy.seccomp.rules.length > 0) {
    const path = `${options.dir}/seccomp.json`;
    const profile = seccompProfileOf(policy.seccomp.rules, options.arch);
    files.push({ kind: 'file', path, content: `${JSON.stringify(profile, null, 2)}\n`, mode: 0o644 });
    seccomp.push('--security-opt', `seccomp=${path}`);
  } else
    gaps.add('seccomp', 'equivalent', "preset off: the engine's default seccomp profile applies (stricter than none)");
  gaps.add(
    'commands',
    'weaker',
    "the profile's command rules are judged by sbx run before launch; the container runs whatever command it is given",
  );
  const argv = [
    'docker',
    'run',
    '--rm',
    // Pid 1 is the engine's init (docker-init, catatonit): it reaps orphans and passes signals on, as bwrap's pid 1 does.
    '--init',
    '--read-only',
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
    ...seccomp,
    '--user',
    `${policy.identity.uid}:${policy.identity.gid}`,
    ...compileNamespaces(policy, gaps),
    ...compileNetwork(policy, gaps),
    ...compileLimits(policy, gaps),
    ...mounts,
    // sbx mounts no /sys; Docker mounts the host's sysfs read-only unless a mount of the user's replaces it.
    '--tmpfs',
    `/sys:ro,noexec,nosuid,nodev,size=${MASK_DIR_BYTES},mode=0555`,
    ...compileEnv(policy, options, walk),
    '--workdir',
    policy.cwd,
    // The command is the whole argv: no ENTRYPOINT of the image runs in front of it.
    '--entrypoint',
    '',
    options.image,
    ...policy.command,
  ];
  gaps.refuseIfAny('docker', 'see `sbx export docker --json` for every gap, or export a profile without the key named');
  return { argv, files, gaps: gaps.items };
}
