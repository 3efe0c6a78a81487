// Policy → an OCI runtime bundle (config.json and its root) that runc, crun or runsc run as is. Pure.
//
// No image: the root is an empty directory of the bundle, read-only, and the policy's mounts are the
// host's system directories bound into it, exactly as bwrap builds its root. The user mapping follows
// bwrap's: the command's uid inside is the exporting user on the host (root's sandboxes run as 65534
// inside, root outside), and the runtime's own setup runs as the container's uid 0, mapped to the
// host's nobody. Masks become the spec's maskedPaths, later read-only remounts its readonlyPaths.
import { posix } from 'node:path';
import type { Mount, Policy } from '../policy/types.js';
import type { SeccompArch } from '../seccomp/index.js';
import type { Gap } from '../backend/shared/gap.js';
import { type ExportFile, exportGaps, type GapList, unenforcedLimit } from './export-gaps.js';
import { foldRemounts } from './remounts.js';
import { type SeccompProfile, seccompProfileOf } from './seccomp.js';

export interface OciOptions {
  /** Absolute bundle directory: config.json, rootfs/ and files/ are written there. */
  dir: string;
  /** The exporting user's uid and gid: who the command is on the host. */
  hostUid: number;
  hostGid: number;
  arch: SeccompArch;
}

interface OciMount {
  destination: string;
  type: string;
  source: string;
  options: string[];
}

interface IdMapping {
  containerID: number;
  hostID: number;
  size: number;
}

export interface OciConfig {
  ociVersion: string;
  root: { path: string; readonly: boolean };
  process: {
    terminal: boolean;
    user: { uid: number; gid: number; additionalGids: number[] };
    args: string[];
    env: string[];
    cwd: string;
    noNewPrivileges: boolean;
    capabilities: Record<'bounding' | 'effective' | 'inheritable' | 'permitted' | 'ambient', string[]>;
    rlimits: { type: string; hard: number; soft: number }[];
  };
  hostname?: string;
  mounts: OciMount[];
  linux: {
    namespaces: { type: string }[];
    uidMappings: IdMapping[];
    gidMappings: IdMapping[];
    resources: {
      memory?: { limit: number; swap: number };
      pids?: { limit: number };
      cpu?: { quota: number; period: number };
    };
    seccomp?: SeccompProfile;
    maskedPaths: string[];
    readonlyPaths: string[];
  };
}

export interface OciExport {
  config: OciConfig;
  files: ExportFile[];
  gaps: Gap[];
}

/** The container's uid and gid 0 (the runtime's own setup) on the host: nobody. */
const SETUP_HOST_ID = 65534;
const CPU_PERIOD_US = 100_000;

/**
 * bwrap makes every mount nosuid,nodev but the root. A read-only bind is `ro`, not the recursive
 * `rro` that runc and crun know and runsc refuses (one bundle for all three): a host mount below a
 * bound directory keeps its own flags (the gap `oci.recursive-ro`).
 */
function bind(source: string, target: string, readOnly: boolean): OciMount {
  return {
    destination: target,
    type: 'bind',
    source,
    options: ['rbind', readOnly ? 'ro' : 'rw', 'nosuid', 'nodev'],
  };
}

/**
 * A minimal /dev: the runtime adds null, zero, full, random, urandom, tty, ptmx and the fd links; the
 * policy's own sized /dev/shm tmpfs goes over it, and its remount makes /dev read-only (readonlyPaths).
 */
function devMounts(target: string): OciMount[] {
  return [
    {
      destination: target,
      type: 'tmpfs',
      source: 'tmpfs',
      options: ['nosuid', 'noexec', 'strictatime', 'mode=755', 'size=65536'],
    },
    {
      destination: `${target}/pts`,
      type: 'devpts',
      source: 'devpts',
      options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620'],
    },
  ];
}

interface Walk {
  policy: Policy;
  options: OciOptions;
  gaps: GapList;
  files: ExportFile[];
  masked: string[];
  /** kernel.ts's read-only paths, ahead of the policy's remounts in readonlyPaths. */
  readOnly: string[];
}

function compileMount(m: Mount, walk: Walk, ordinal: number): OciMount[] {
  const { policy, gaps } = walk;
  switch (m.kind) {
    case 'bind':
      if (m.target === '/') {
        gaps.add('mode', 'refused', 'danger binds the host root writable: there is no sandbox to export');
        return [];
      }
      return [bind(m.source, m.target, m.access === 'ro')];
    case 'tmpfs': {
      const { uid, gid } = policy.identity;
      const options = [
        'nosuid',
        'nodev',
        `size=${m.sizeBytes}`,
        `mode=${m.mode.toString(8)}`,
        `uid=${uid}`,
        `gid=${gid}`,
      ];
      return [{ destination: m.target, type: 'tmpfs', source: 'tmpfs', options }];
    }
    case 'proc':
      return [{ destination: m.target, type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] }];
    case 'kernel':
      // The runtime applies both lists after every mount, as bwrap's binds over the fresh /proc.
      (m.cover === 'read-only' ? walk.readOnly : walk.masked).push(m.target);
      return [];
    case 'dev':
      return devMounts(m.target);
    case 'symlink':
      // The root is the bundle's own directory: a link at its top is written there. Deeper ones would
      // have to go into a mounted tree.
      if (posix.dirname(m.target) !== '/') {
        gaps.add('mounts.symlink', 'refused', `a link at ${m.target}: only links at the top of the root can be made`);
        return [];
      }
      walk.files.push({ kind: 'symlink', path: `${walk.options.dir}/rootfs${m.target}`, linkTo: m.linkTo });
      return [];
    case 'mask':
      // The runtime masks after every mount: /dev/null over a file, an empty read-only tmpfs over a directory.
      walk.masked.push(m.target);
      return [];
    case 'file': {
      const path = `${walk.options.dir}/files/file-${ordinal}`;
      walk.files.push({ kind: 'file', path, content: m.content, mode: m.mode });
      return [{ ...bind(path, m.target, true), options: ['rbind', 'ro', 'nosuid', 'nodev', 'noexec'] }];
    }
    case 'session-dir':
      gaps.add('mounts.session-dir', 'refused', "the egress proxy's session directory (network allow-lists)");
      return [];
    case 'remount-ro':
      return [];
  }
}

function compileNamespaces(policy: Policy, gaps: GapList): { type: string }[] {
  const ns = policy.namespaces;
  if (!ns.user)
    gaps.add('namespaces.user', 'refused', 'a shared user namespace: the identity mapping needs one (as with bwrap)');
  if (policy.network.kind === 'filtered')
    gaps.add(
      'network.allow',
      'refused',
      "an allow-list: a bundle is one container, and sbx's egress proxy must run outside its network namespace with a way in that only it offers (sbx run's bridge), which an OCI runtime does not set up; use sbx run, sbx export k8s, or network: none",
    );
  if (policy.network.kind === 'host')
    gaps.add(
      'network.kind',
      'equivalent',
      "host: the runtime's network namespace is shared, as bwrap shares the caller's",
    );
  const wanted: [boolean, string][] = [
    [true, 'mount'],
    [ns.user, 'user'],
    [ns.pid, 'pid'],
    [ns.ipc, 'ipc'],
    [ns.uts, 'uts'],
    [ns.net, 'network'],
    [ns.cgroup, 'cgroup'],
  ];
  return wanted.filter(([on]) => on).map(([, type]) => ({ type }));
}

/** The command's id inside → the exporting user outside; the runtime's uid 0 → nobody (it needs one mapped). */
function mappings(inside: number, outside: number): IdMapping[] {
  if (inside === 0) return [{ containerID: 0, hostID: outside, size: 1 }];
  return [
    { containerID: 0, hostID: SETUP_HOST_ID, size: 1 },
    { containerID: inside, hostID: outside, size: 1 },
  ];
}

function compileLimits(
  policy: Policy,
  gaps: GapList,
): Pick<OciConfig['process'], 'rlimits'> & { resources: OciConfig['linux']['resources'] } {
  const l = policy.limits;
  const rlimit = (type: string, value: number | undefined) =>
    value === undefined ? [] : [{ type, hard: value, soft: value }];
  const resources: OciConfig['linux']['resources'] = {};
  // No swap beyond the memory limit: memory.swap is memory plus swap.
  if (l.memoryBytes !== undefined) resources.memory = { limit: l.memoryBytes, swap: l.memoryBytes };
  if (l.pids !== undefined) resources.pids = { limit: l.pids };
  if (l.cpus !== undefined)
    resources.cpu = { quota: Math.max(1000, Math.round(l.cpus * CPU_PERIOD_US)), period: CPU_PERIOD_US };
  if (l.timeoutMs !== undefined)
    unenforcedLimit(
      gaps,
      'limits.timeoutMs',
      l.required.includes('timeout'),
      'an OCI runtime has no time limit (wrap runc run in timeout(1))',
    );
  return {
    rlimits: [
      ...rlimit('RLIMIT_CPU', l.cpuTimeSec),
      ...rlimit('RLIMIT_FSIZE', l.fileSizeBytes),
      ...rlimit('RLIMIT_NOFILE', l.nofile),
      ...rlimit('RLIMIT_AS', l.addressSpaceBytes),
      // No core files: they would land in the working directory, the workspace.
      ...rlimit('RLIMIT_CORE', 0),
    ],
    resources,
  };
}

/** The bundle for `policy`: config.json's content and the files (root directory, links, generated files) beside it. */
export function exportOci(policy: Policy, options: OciOptions): OciExport {
  const gaps = exportGaps(policy);
  const files: ExportFile[] = [{ kind: 'dir', path: `${options.dir}/rootfs`, mode: 0o755 }];
  const walk: Walk = { policy, options, gaps, files, masked: [], readOnly: [] };
  const fileMounts: readonly Mount[] = policy.mounts.filter((m) => m.kind === 'file');
  const mounts = policy.mounts.flatMap((m) => compileMount(m, walk, fileMounts.indexOf(m)));
  const remounts = foldRemounts(policy.mounts);
  if (policy.env.secrets.length > 0)
    gaps.add(
      'env.secrets',
      'refused',
      `config.json would hold the values of ${policy.env.secrets.join(', ')}; export a profile without secrets`,
    );
  gaps.add(
    'commands',
    'weaker',
    "the profile's command rules are judged by sbx run before launch; the bundle runs its command as it is",
  );
  if (mounts.some((m) => m.type === 'bind' && m.options.includes('ro')))
    gaps.add(
      'oci.recursive-ro',
      'weaker',
      "read-only binds are `ro`, read-only at their own mount: a host mount below a bound directory keeps its own flags (bwrap's are recursive; runc's and crun's `rro` would be too, and runsc refuses it)",
    );
  if (policy.seccomp.rules.length > 0)
    gaps.add(
      'oci.runsc.seccomp',
      'weaker',
      "runsc (gVisor) applies the bundle's seccomp filter only when started with `runsc --oci-seccomp`; without it, gVisor's own kernel stands between the command and the host's, but the profile's denied syscalls reach gVisor's (runc and crun apply it)",
    );
  const { uid, gid } = policy.identity;
  const { rlimits, resources } = compileLimits(policy, gaps);
  const namespaces = compileNamespaces(policy, gaps);
  const vars = policy.env.vars;
  const config: OciConfig = {
    ociVersion: '1.0.2',
    root: { path: 'rootfs', readonly: remounts.rootReadOnly },
    process: {
      terminal: false,
      user: { uid, gid, additionalGids: [] },
      args: policy.command,
      env: Object.keys(vars)
        .sort()
        .map((name) => `${name}=${vars[name]!}`),
      cwd: policy.cwd,
      noNewPrivileges: true,
      capabilities: { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] },
      rlimits,
    },
    ...(policy.namespaces.uts ? { hostname: policy.hostname } : {}),
    mounts,
    linux: {
      namespaces,
      uidMappings: mappings(uid, options.hostUid),
      gidMappings: mappings(gid, options.hostGid),
      resources,
      ...(policy.seccomp.rules.length > 0 ? { seccomp: seccompProfileOf(policy.seccomp.rules, options.arch) } : {}),
      maskedPaths: walk.masked,
      readonlyPaths: [...walk.readOnly, ...remounts.targets],
    },
  };
  if (!remounts.rootReadOnly) gaps.add('mounts.remount-ro', 'refused', 'a writable root (the bundle directory itself)');
  files.push({
    kind: 'file',
    path: `${options.dir}/config.json`,
    content: `${JSON.stringify(config, null, 2)}\n`,
    // Its process.env holds the kept variables' values: the owner's alone.
    mode: 0o600,
  });
  gaps.refuseIfAny('oci', 'see `sbx export oci DIR --json` for every gap, or export a profile without the key named');
  return { config, files, gaps: gaps.items };
}
