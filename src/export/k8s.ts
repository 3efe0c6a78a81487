// Policy → Kubernetes manifests: a Pod (or a Job), a ConfigMap of the generated files and mask
// stand-ins, and a NetworkPolicy denying all traffic for `network: none`; for an allow-list, the egress
// proxy's objects besides (k8s-egress.ts). Pure.
//
// The image supplies the system; the workspace is a PersistentVolumeClaim (its read-only parts
// mounted again from it by subPath); /tmp and HOME are memory-backed emptyDirs with a sizeLimit;
// the seccomp profile is the one sbx writes (Localhost, copied to each node's kubelet seccomp
// directory), or the runtime's default on request.
import { posix } from 'node:path';
import type { Mount, Policy } from '../policy/types.js';
import type { SeccompArch } from '../seccomp/index.js';
import { isCredentialName } from '../env/env.js';
import type { Gap } from '../backend/shared/gap.js';
import { type ExportFile, exportGaps, type GapList, unenforcedLimit } from './export-gaps.js';
import { egressProxyObjects, SANDBOX_LABEL } from './k8s-egress.js';
import { foldRemounts } from './remounts.js';
import { seccompProfileOf } from './seccomp.js';

export interface K8sOptions {
  /** Object names and the label the NetworkPolicy selects: a DNS-1123 label. */
  name: string;
  image: string;
  /** The PersistentVolumeClaim holding the workspace. */
  workspaceClaim: string;
  /** The Secret whose keys (the variable names) hold the profile's secrets. */
  secretName: string;
  /** `localhost`: sbx's own profile, at `localhostProfile` under the kubelet's seccomp directory. */
  seccomp: 'localhost' | 'runtime-default';
  localhostProfile: string;
  job: boolean;
  /** Absolute directory the seccomp profile is written to (for copying onto the nodes). */
  dir: string;
  arch: SeccompArch;
  /** An allow-list network: the image of the egress proxy's Deployment (it runs `sbx proxy`). */
  proxyImage: string;
  /** The port the proxy serves and the workload's proxy variables name. */
  proxyPort: number;
}

type Json = Record<string, unknown>;

export interface K8sExport {
  manifests: Json[];
  files: ExportFile[];
  gaps: Gap[];
}

const LABEL = SANDBOX_LABEL;
const EMPTY_KEY = 'empty';

interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
}

interface Walk {
  policy: Policy;
  options: K8sOptions;
  gaps: GapList;
  volumes: Json[];
  mounts: VolumeMount[];
  /** ConfigMap data: generated files and the empty stand-in of file masks. */
  data: Record<string, string>;
  /** ConfigMap item modes, by key. */
  modes: Record<string, number>;
  readOnlyTargets: ReadonlySet<string>;
}

/** A volume name for a mount: `v<ordinal>` (volume names are DNS labels; paths are not). */
const volumeName = (ordinal: number) => `v${ordinal}`;

function compileMount(m: Mount, walk: Walk, ordinal: number): void {
  const { gaps, policy } = walk;
  // sbx run's egress bridge (node, its script, the proxy's sockets) and transparent capture's judge and
  // resolver files: the proxy's own pod replaces the bridge, and a pod has no judge.
  if (m.role === 'bridge' || m.role === 'capture') return;
  const readOnly = walk.readOnlyTargets.has(m.target);
  switch (m.kind) {
    case 'bind': {
      if (m.target === '/') {
        gaps.add('mode', 'refused', 'danger binds the host root writable: there is no sandbox to export');
        return;
      }
      if (m.role === 'system') {
        gaps.add(
          'mounts.system',
          'equivalent',
          "the image's own system directories, read-only with the root filesystem",
        );
        return;
      }
      if (m.role === 'toolchain') {
        gaps.add(
          'mounts.toolchain',
          'omitted',
          `${m.source}: a toolchain on the exporting host's PATH (in its HOME, a CI tool cache) is not carried into the pod; the image provides its own`,
        );
        return;
      }
      const ws = policy.workspace;
      if (m.source !== ws.host && !posix.normalize(m.source).startsWith(`${ws.host}/`)) {
        gaps.add(
          'mounts.bind',
          'refused',
          `${m.source}: a host path other than the workspace (a hostPath volume would hand the node's filesystem to the pod)`,
        );
        return;
      }
      const subPath = posix.relative(ws.host, m.source);
      walk.mounts.push({
        name: 'workspace',
        mountPath: m.target,
        ...(subPath === '' ? {} : { subPath }),
        ...(m.access === 'ro' || readOnly ? { readOnly: true } : {}),
      });
      return;
    }
    case 'tmpfs':
      walk.volumes.push({ name: volumeName(ordinal), emptyDir: { medium: 'Memory', sizeLimit: String(m.sizeBytes) } });
      walk.mounts.push({ name: volumeName(ordinal), mountPath: m.target, ...(readOnly ? { readOnly: true } : {}) });
      gaps.add(
        'mounts.tmpfs',
        'weaker',
        "emptyDir: the kubelet evicts the pod past sizeLimit (bwrap's tmpfs fails the write with ENOSPC); mode 0777 whatever the policy's mode",
      );
      return;
    case 'proc':
    case 'dev':
      if (m.target !== `/${m.kind}`) gaps.add(`mounts.${m.kind}`, 'refused', `a ${m.kind} at ${m.target}`);
      else gaps.add(`mounts.${m.kind}`, 'equivalent', `the container runtime's own /${m.kind}`);
      return;
    case 'kernel':
      // procMount Default (never Unmasked): the runtime's masked and read-only paths, kernel.ts's list.
      gaps.add('mounts.kernel', 'equivalent', "the container runtime's default masked and read-only paths under /proc");
      return;
    case 'symlink':
      if (m.role !== 'system') gaps.add('mounts.symlink', 'refused', `a link at ${m.target}`);
      return;
    case 'mask':
      // A toolchain root is not in the pod (above), nor is the credential masked inside it.
      if (m.role === 'toolchain') return;
      if (m.what === 'dir') {
        walk.volumes.push({ name: volumeName(ordinal), emptyDir: { medium: 'Memory', sizeLimit: '4096' } });
        walk.mounts.push({ name: volumeName(ordinal), mountPath: m.target, readOnly: true });
      } else {
        walk.data[EMPTY_KEY] = '';
        walk.modes[EMPTY_KEY] = 0o444;
        walk.mounts.push({ name: 'files', mountPath: m.target, subPath: EMPTY_KEY, readOnly: true });
      }
      return;
    case 'file': {
      const key = `file-${ordinal}`;
      walk.data[key] = m.content;
      walk.modes[key] = m.mode;
      walk.mounts.push({ name: 'files', mountPath: m.target, subPath: key, readOnly: true });
      return;
    }
    case 'session-dir':
      gaps.add('mounts.session-dir', 'refused', "a session directory of sbx run's (ssh_agent's filter socket)");
      return;
    case 'remount-ro':
      if (
        m.target !== '/' &&
        // The engine's own /dev (compileMount's 'dev') is its own: a small tmpfs the command cannot grow.
        !policy.mounts.some((o) => ['tmpfs', 'bind', 'dev'].includes(o.kind) && o.target === m.target)
      )
        gaps.add('mounts.remount-ro', 'refused', `${m.target} is not a volume of its own to mount read-only`);
      return;
  }
}

function compileResources(policy: Policy, gaps: GapList): Json {
  const l = policy.limits;
  const required = new Set(l.required);
  const limits: Record<string, string> = {};
  if (l.memoryBytes !== undefined) limits.memory = String(l.memoryBytes);
  if (l.cpus !== undefined) limits.cpu = `${Math.max(1, Math.round(l.cpus * 1000))}m`;
  const none = (key: string, name: Parameters<typeof required.has>[0], value: number | undefined, why: string) => {
    if (value !== undefined) unenforcedLimit(gaps, key, required.has(name), why);
  };
  none(
    'limits.pids',
    'pids',
    l.pids,
    'Kubernetes has no per-pod pids limit (the kubelet sets one per node: podPidsLimit)',
  );
  none('limits.cpuTimeSec', 'cpu-time', l.cpuTimeSec, 'a pod spec sets no rlimits');
  none('limits.fileSizeBytes', 'file-size', l.fileSizeBytes, 'a pod spec sets no rlimits');
  none('limits.nofile', 'nofile', l.nofile, 'a pod spec sets no rlimits');
  none('limits.addressSpaceBytes', 'address-space', l.addressSpaceBytes, 'a pod spec sets no rlimits');
  // Requests equal to limits: the scheduler reserves what the sandbox may use (Guaranteed QoS).
  return Object.keys(limits).length === 0 ? {} : { limits, requests: limits };
}

function compileEnv(policy: Policy, options: K8sOptions, gaps: GapList): Json[] {
  const vars = policy.env.vars;
  // A credential-shaped name (the rule sbx run drops them by) is kept only by name: its value would sit
  // in the manifest, readable by whoever reads pods; the pod takes it from the Secret instead.
  const names = Object.keys(vars).sort();
  const fromSecret = names.filter(isCredentialName);
  const env: Json[] = names.map((name) =>
    fromSecret.includes(name)
      ? { name, valueFrom: { secretKeyRef: { name: options.secretName, key: name } } }
      : { name, value: vars[name]! },
  );
  gaps.add('env.vars', 'weaker', 'variables the image sets (its ENV) and the policy does not name are not cleared');
  if (fromSecret.length > 0)
    gaps.add(
      'env.vars',
      'equivalent',
      `credential-shaped kept variables from Secret ${options.secretName}, one key per variable (create it; sbx writes no value): ${fromSecret.join(', ')}`,
    );
  for (const name of policy.env.secrets)
    env.push({ name, valueFrom: { secretKeyRef: { name: options.secretName, key: name } } });
  if (policy.env.secrets.length > 0)
    gaps.add(
      'env.secrets',
      'equivalent',
      `from Secret ${options.secretName}, one key per variable: ${policy.env.secrets.join(', ')}`,
    );
  return env;
}

/** The network's objects, and the proxy variables the workload needs (allow-lists only). */
function networkObjects(
  policy: Policy,
  options: K8sOptions,
  gaps: GapList,
): { manifests: Json[]; env: { name: string; value: string }[] } {
  const net = policy.network;
  if (net.kind === 'filtered')
    return egressProxyObjects(net, { name: options.name, image: options.proxyImage, port: options.proxyPort }, gaps);
  return { manifests: denyAllPolicy(policy, options, gaps), env: [] };
}

function denyAllPolicy(policy: Policy, options: K8sOptions, gaps: GapList): Json[] {
  switch (policy.network.kind) {
    case 'none':
      gaps.add(
        'network.none',
        'weaker',
        "the pod has an interface on the cluster network; the NetworkPolicy denies all its traffic where the cluster's network plugin enforces NetworkPolicy",
      );
      return [
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: options.name },
          spec: {
            podSelector: { matchLabels: { [LABEL]: options.name } },
            policyTypes: ['Ingress', 'Egress'],
            ingress: [],
            egress: [],
          },
        },
      ];
    case 'host':
      gaps.add(
        'network.kind',
        'weaker',
        "host: the pod network (not the node's), with whatever NetworkPolicy the namespace has",
      );
      return [];
    case 'filtered':
      return [];
  }
}

/** The manifests for `policy`, and the seccomp profile file to copy to the nodes. */
export function exportK8s(policy: Policy, options: K8sOptions): K8sExport {
  const gaps = exportGaps(policy);
  const files: ExportFile[] = [];
  const remounts = foldRemounts(policy.mounts);
  const walk: Walk = {
    policy,
    options,
    gaps,
    volumes: [],
    mounts: [],
    data: {},
    modes: {},
    readOnlyTargets: new Set(remounts.targets),
  };
  policy.mounts.forEach((m, i) => {
    compileMount(m, walk, i);
  });
  if (!remounts.rootReadOnly) gaps.add('mounts.remount-ro', 'refused', 'a writable root filesystem');
  const { uid, gid } = policy.identity;
  if (uid === 0) gaps.add('identity', 'refused', 'uid 0 inside: runAsNonRoot refuses it');
  gaps.add(
    'mounts.sys',
    'weaker',
    "the runtime mounts the node's sysfs read-only at /sys (sbx mounts none): a pod spec cannot remove it, and a volume over it is not portable across container runtimes",
  );
  let seccompProfile: Json = { type: 'RuntimeDefault' };
  if (policy.seccomp.rules.length > 0 && options.seccomp === 'localhost') {
    files.push({
      kind: 'file',
      path: `${options.dir}/${posix.basename(options.localhostProfile)}`,
      content: `${JSON.stringify(seccompProfileOf(policy.seccomp.rules, options.arch), null, 2)}\n`,
      mode: 0o644,
    });
    seccompProfile = { type: 'Localhost', localhostProfile: options.localhostProfile };
  } else if (policy.seccomp.rules.length > 0)
    gaps.add(
      'seccomp',
      'weaker',
      "RuntimeDefault: the container runtime's default profile, not sbx's rules (it does not deny the same set)",
    );
  gaps.add(
    'namespaces.user',
    'weaker',
    'hostUsers: false gives the pod a user namespace where the cluster supports it (Kubernetes 1.30+); elsewhere the API server drops it',
  );
  gaps.add(
    'commands',
    'weaker',
    "the profile's command rules are judged by sbx run before launch; the pod runs its command as it is",
  );
  const labels = { [LABEL]: options.name, 'app.kubernetes.io/managed-by': 'sbx' };
  const hasFiles = Object.keys(walk.data).length > 0;
  const volumes = [
    ...(policy.mounts.some((m) => m.kind === 'bind' && m.source === policy.workspace.host)
      ? [{ name: 'workspace', persistentVolumeClaim: { claimName: options.workspaceClaim } }]
      : []),
    ...(hasFiles
      ? [
          {
            name: 'files',
            configMap: {
              name: `${options.name}-files`,
              items: Object.keys(walk.data).map((key) => ({ key, path: key, mode: walk.modes[key]! })),
            },
          },
        ]
      : []),
    ...walk.volumes,
  ];
  const network = networkObjects(policy, options, gaps);
  const proxyVars = new Set(network.env.map((e) => e.name));
  // The proxy's variables win over a kept one of the same name, as bridge.cjs overrides them in a sandbox.
  const env = [...compileEnv(policy, options, gaps).filter((e) => !proxyVars.has(e.name as string)), ...network.env];
  const deadline =
    policy.limits.timeoutMs === undefined ? {} : { activeDeadlineSeconds: Math.ceil(policy.limits.timeoutMs / 1000) };
  const podSpec: Json = {
    restartPolicy: 'Never',
    // No Kubernetes API credential inside, no service variables outside the allow-list.
    automountServiceAccountToken: false,
    // Off, but for an allow-list: the workload finds the proxy's Service by its variables (k8s-egress.ts).
    enableServiceLinks: policy.network.kind === 'filtered',
    hostUsers: !policy.namespaces.user,
    hostPID: !policy.namespaces.pid,
    hostIPC: !policy.namespaces.ipc,
    ...(policy.namespaces.uts ? { hostname: policy.hostname } : {}),
    ...(options.job ? {} : deadline),
    securityContext: { runAsNonRoot: true, runAsUser: uid, runAsGroup: gid, fsGroup: gid, seccompProfile },
    containers: [
      {
        name: 'sandbox',
        image: options.image,
        command: policy.command,
        workingDir: policy.cwd,
        env,
        securityContext: {
          runAsNonRoot: true,
          runAsUser: uid,
          runAsGroup: gid,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          privileged: false,
          capabilities: { drop: ['ALL'] },
          seccompProfile,
        },
        resources: compileResources(policy, gaps),
        volumeMounts: walk.mounts,
      },
    ],
    volumes,
  };
  const workload: Json = options.job
    ? {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: options.name, labels },
        spec: { backoffLimit: 0, ...deadline, template: { metadata: { labels }, spec: podSpec } },
      }
    : { apiVersion: 'v1', kind: 'Pod', metadata: { name: options.name, labels }, spec: podSpec };
  const configMap: Json[] = hasFiles
    ? [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${options.name}-files`, labels }, data: walk.data }]
    : [];
  const manifests = [...configMap, ...network.manifests, workload];
  gaps.refuseIfAny('k8s', 'see `sbx export k8s --json` for every gap, or export a profile without the key named');
  return { manifests, files, gaps: gaps.items };
}
