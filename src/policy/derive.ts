// Profile + request + Host → Policy. Pure: everything it knows about the disk is in `host.paths`.
import { posix } from 'node:path';
import { SbxError, type SbxErrorInit } from '../errors.js';
import { parseLimits, type LimitOverrides } from '../limits/parse.js';
import { parseSize } from '../limits/units.js';
import { resolveSeccompRules } from '../seccomp/index.js';
import type { BindEntry, Profile } from '../profile/schema.js';
import { keySource } from '../profile/positions.js';
import { expandPath, expandVariables, type Variables } from '../profile/variables.js';
import { buildEnv } from './env.js';
import type { Host, PathFact } from './host.js';
import { isWithin, sensitivePaths } from './sensitive.js';
import { compileEgressRules } from './egress.js';
import { GIT_HOOKS_REASON, OWN_POLICY_REASON } from './guarded-state.js';
import { requestedArgv } from './command-line.js';
import { xdgDirs } from './user-dirs.js';
import { refuseWritableHostState, type WritableBind } from './host-state.js';
import { SSH_AGENT_SANDBOX_DIR, SSH_AGENT_SANDBOX_SOCKET, SSH_AGENT_SESSION_SUBDIR } from './ssh-agent.js';

import { applyToolchainEnv, TOOLCHAIN_MASK_REASON, type ToolchainFacts, toolchainMounts } from './toolchains.js';
import type { CommandRules, Identity, Mode, Mount, NetworkPolicy, Policy } from './types.js';

/** What the caller asks for on top of the profile (CLI flags or library options). */
export interface RunRequest {
  /** The command and its arguments; may be empty (or absent) when `shell` is given. */
  command?: string[];
  /**
   * A shell string to run instead (`--shell`), with the system shell: under `shell_syntax:
   * restricted` each of its commands is judged by the command rules, not the shell.
   */
  shell?: string;
  workspace?: string;
  /**
   * The directory the command starts in: an absolute host path inside the workspace. Unlike the
   * caller's cwd it resolves nothing of the profile (relative paths and `${cwd}` stay where the cwd
   * puts them), so a caller (`sbx mcp`) can move the command without moving the policy. Default:
   * the cwd's place in the workspace.
   */
  chdir?: string;
  binds?: { source: string; target?: string; access: 'ro' | 'rw' }[];
  /** Extra variables (`--env K=V`). */
  env?: Record<string, string>;
  /** Extra names to inherit (`--keep-env NAME`). */
  keepEnv?: string[];
  network?: 'none' | 'host';
  /** `--allow-domain`: added to the profile's allow list (and turns `none` into a filtered network). */
  allowDomains?: string[];
  /** `--allow-private`: added to the profile's network.allow_private (an allow-list network only). */
  allowPrivate?: string[];
  /** `--danger`: the only way to get mode: danger. */
  danger?: boolean;
  /** `--allow-sensitive-roots`: credential stores may be bound, and are not masked. */
  allowSensitiveRoots?: boolean;
  /**
   * `--expose-workspace-secrets`: a backend that cannot hide a secret inside a granted tree (landlock)
   * runs anyway and lists it. A run option only: a repository's profile must not be able to ask for it.
   */
  exposeWorkspaceSecrets?: boolean;
  /** `--allow-denylisted-commands`: the command rules' deny list no longer refuses. */
  allowDenylistedCommands?: boolean;
  /** `--memory`, `--pids`, ...: override the profile's limits one by one; `none` lifts one. */
  limits?: LimitOverrides;
  /** `--tmp-size`: overrides tmp.size. */
  tmpSize?: string;
}

export const DEFAULT_SYSTEM_PATHS: readonly string[] = [
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/etc',
];
const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin';
const DEFAULT_TMP_SIZE = '512MiB';

/** /tmp and HOME: large enough for a build's scratch files, small enough to refuse a balloon. */
const TMP_BOUNDS = { min: 1024 * 1024, max: 1024 ** 4, example: '256MiB or 2GiB' };
export const DEFAULT_HOSTNAME = 'sbx';
/** Where the egress bridge's files appear inside (the sandbox root is otherwise empty there). */
export const BRIDGE_DIR = '/run/sbx';
/** The uid/gid a root-invoked sandbox runs as inside its namespace: "nobody" on every distribution. */
const NOBODY = 65534;
/** Directories that may never be a workspace or a writable bind: binding them rw would hand over the system. */
export const FORBIDDEN_ROOTS: readonly string[] = [
  '/',
  '/usr',
  '/etc',
  '/bin',
  '/sbin',
  '/lib',
  '/lib64',
  '/boot',
  '/proc',
  '/sys',
  '/dev',
  '/run',
  '/var',
];

/** A refusal's `source` from the `where` its message starts with, when that is a profile key or a flag. */
function sourceOf(where: string): Pick<SbxErrorInit, 'source'> {
  const source = keySource(where);
  return source ? { source } : {};
}

function normalizeTarget(path: string, where: string): string {
  if (!posix.isAbsolute(path) || path.split('/').includes('..')) {
    throw new SbxError('BIND_TARGET_INVALID', `${where}: "${path}" must be an absolute path without ".."`, {
      hint: 'write the path inside the sandbox in full, e.g. /opt/tools',
      ...sourceOf(where),
    });
  }
  return posix.normalize(path).replace(/(.)\/$/, '$1');
}

/** Where a chosen mount point may not go: over the system the sandbox runs on, or into the kernel's interfaces. */
const SYSTEM_TARGETS = [...FORBIDDEN_ROOTS, '/lib32', '/libx32', '/tmp'];
const KERNEL_TARGETS = ['/proc', '/dev', '/sys'];

/**
 * A `mountAt` the user chose. Over a system directory (or one of its parents) the later system binds
 * would land inside this bind, and bwrap would create their mount points in the host directory.
 */
function mountAtTarget(path: string, where: string): string {
  const target = normalizeTarget(path, where);
  const coversSystem = SYSTEM_TARGETS.some((system) => isWithin(system, target));
  if (coversSystem || KERNEL_TARGETS.some((kernel) => isWithin(target, kernel))) {
    throw new SbxError('BIND_TARGET_INVALID', `${where}: ${target} would cover a system directory of the sandbox`, {
      hint: 'mount it at a path of its own, e.g. /work or /opt/NAME',
      ...sourceOf(where),
    });
  }
  return target;
}

/** The workspace path as requested, before realpath (the runtime probes it). */
export function requestedWorkspace(profile: Profile, request: RunRequest, vars: Omit<Variables, 'workspace'>): string {
  const raw = request.workspace ?? profile.workspace?.path ?? '${cwd}';
  if (raw.includes('${workspace}')) {
    throw new SbxError('PROFILE_VARIABLE', 'workspace.path: ${workspace} cannot refer to itself', {
      hint: 'use ${cwd} or ${home}',
    });
  }
  return posix.resolve(vars.cwd, expandPath(raw, { ...vars, workspace: '' }, 'workspace.path'));
}

interface BindSpec {
  path: string;
  mountAt?: string;
  optional: boolean;
  where: string;
}

function bindSpecs(entries: readonly BindEntry[] | undefined, key: string, vars: Variables): BindSpec[] {
  return (entries ?? []).map((entry, i) => {
    const where = `${key}[${i}]`;
    const e = typeof entry === 'string' ? { path: entry } : entry;
    return {
      path: posix.resolve(vars.cwd, expandPath(e.path, vars, where)),
      ...(e.mountAt ? { mountAt: expandPath(e.mountAt, vars, where) } : {}),
      optional: e.optional ?? false,
      where,
    };
  });
}

function systemSpecs(profile: Profile, vars: Variables): BindSpec[] {
  if (profile.system) return bindSpecs(profile.system, 'system', vars);
  return DEFAULT_SYSTEM_PATHS.map((path) => ({ path, optional: true, where: 'system (default)' }));
}

function requestSpecs(request: RunRequest, vars: Variables, access: 'ro' | 'rw'): BindSpec[] {
  return (request.binds ?? [])
    .filter((b) => b.access === access)
    .map((b) => ({
      path: posix.resolve(vars.cwd, b.source),
      ...(b.target ? { mountAt: b.target } : {}),
      optional: false,
      where: access === 'rw' ? '--bind' : '--ro-bind',
    }));
}

/** Every host path whose facts derivePolicy needs. The runtime probes exactly these. */
export function pathsToProbe(
  profile: Profile,
  request: RunRequest,
  vars: Variables,
  env: Record<string, string>,
): string[] {
  const specs = [
    ...systemSpecs(profile, vars),
    ...bindSpecs(profile.read_only, 'read_only', vars),
    ...bindSpecs(profile.writable_roots, 'writable_roots', vars),
    ...requestSpecs(request, vars, 'ro'),
    ...requestSpecs(request, vars, 'rw'),
  ];
  const sockets =
    typeof profile.network === 'object'
      ? (profile.network.unix_sockets ?? []).map((p) => posix.resolve(vars.cwd, p))
      : [];
  return [
    ...new Set([
      vars.workspace,
      ...specs.map((s) => s.path),
      // Where a bind lands, for checkMountPoints: inside the writable workspace (at its own path) an
      // existing directory is a mount point that needs nothing created on the host.
      ...specs.flatMap((s) => (s.mountAt && posix.isAbsolute(s.mountAt) ? [posix.normalize(s.mountAt)] : [])),
      ...sockets,
      ...sensitiveRoots(profile, request, vars, env),
      ...readOnlyOwnRoots(profile, request, vars, env),
      vars.home,
    ]),
  ];
}

/**
 * sbx's own directories for this user. A sandbox that could write them would choose a later run's
 * policy (profiles), what runs unasked (approvals) or what the audit trail says (ledger).
 */
export function sbxOwnDirs(vars: Variables, env: Record<string, string>): Record<'config' | 'state' | 'cache', string> {
  const dirs = xdgDirs(env, vars.home);
  return {
    config: posix.join(dirs.configHome, 'sbx'),
    state: posix.join(dirs.stateHome, 'sbx'),
    cache: posix.join(dirs.cacheHome, 'sbx'),
  };
}

/**
 * sbx's own secret store, state (approvals decide what runs unasked, the ledger is the audit trail)
 * and cache (compiled rules and profiles a later run trusts): hidden from every sandbox, whatever the
 * flags. The rest of the config dir (profiles, tools) is bound read-only over itself instead
 * (readOnlyOwnRoots): the agent profile reads tools from it.
 */
function ownRoots(vars: Variables, env: Record<string, string>): string[] {
  const own = sbxOwnDirs(vars, env);
  return [posix.join(own.config, 'secrets.yaml'), own.state, own.cache];
}

/**
 * Policy a sandbox must not be able to write wherever a writable bind contains it: the user's sbx
 * config dir and the project's `.sbx` at the root of the workspace and of every writable root.
 */
function readOnlyOwnRoots(profile: Profile, request: RunRequest, vars: Variables, env: Record<string, string>) {
  const writable = [...bindSpecs(profile.writable_roots, 'writable_roots', vars), ...requestSpecs(request, vars, 'rw')];
  const roots = [vars.workspace, ...writable.map((s) => s.path)];
  return [sbxOwnDirs(vars, env).config, ...roots.map((root) => posix.join(root, '.sbx'))];
}

/**
 * The host paths a writable bind may bring in, as requested: the workspace, writable_roots and --bind.
 * The runtime resolves each one's chain of directory identities (policy/host-state.ts).
 */
export function writableBindPaths(profile: Profile, request: RunRequest, vars: Variables): string[] {
  const specs = [...bindSpecs(profile.writable_roots, 'writable_roots', vars), ...requestSpecs(request, vars, 'rw')];
  return [vars.workspace, ...specs.map((s) => s.path)];
}

/** The binds this run mounts writable, each with the key or flag it comes from. */
function writableBinds(input: DeriveInput, mode: Mode, workspace: Policy['workspace']): WritableBind[] {
  const { profile, request, vars, host } = input;
  const specs = [
    ...(mode === 'read-only' ? [] : bindSpecs(profile.writable_roots, 'writable_roots', vars)),
    ...requestSpecs(request, vars, 'rw'),
  ];
  const binds: WritableBind[] =
    workspace.access === 'rw' ? [{ where: 'workspace', path: vars.workspace, real: workspace.host }] : [];
  const common = host.gitWorktree?.commonDir;
  if (common !== undefined && workspace.access === 'rw' && !isWithin(common, workspace.host))
    binds.push({ where: "the git worktree's shared git directory", path: common, real: common });
  for (const spec of specs) {
    const f = fact(host, spec.path);
    if (f.exists) binds.push({ where: spec.where, path: spec.path, real: f.real });
  }
  return binds;
}

/** The built-in credential stores, the agent sockets and the profile's additions: --allow-sensitive-roots lifts these. */
function credentialRoots(profile: Profile, vars: Variables, env: Record<string, string>): string[] {
  const extra = (profile.sensitive?.roots ?? []).map((p, i) =>
    posix.resolve(vars.cwd, expandPath(p, vars, `sensitive.roots[${i}]`)),
  );
  return sensitivePaths(vars.home, env, extra);
}

/** Every sensitive root this run keeps out. */
function sensitiveRoots(profile: Profile, request: RunRequest, vars: Variables, env: Record<string, string>): string[] {
  return [...ownRoots(vars, env), ...(request.allowSensitiveRoots ? [] : credentialRoots(profile, vars, env))];
}

/**
 * The mounted trees whose secret-looking files are masked: the workspace and every extra bind (not
 * the system binds, which hold no project files). Host paths as written; danger mode mounts the
 * whole host and is not scanned (its sensitive roots are still masked).
 */
export function sensitiveScanRoots(profile: Profile, request: RunRequest, vars: Variables): string[] {
  if ((profile.mode ?? 'workspace-write') === 'danger') return [];
  const specs = [
    ...bindSpecs(profile.read_only, 'read_only', vars),
    ...bindSpecs(profile.writable_roots, 'writable_roots', vars),
    ...requestSpecs(request, vars, 'ro'),
    ...requestSpecs(request, vars, 'rw'),
  ];
  return [...new Set([vars.workspace, ...specs.map((s) => s.path)])];
}

/**
 * What the policy stage found at a path it probed (pipeline/policy.ts probes `pathsToProbe` and the
 * rest this module names). A path it never probed is a bug, not an absence: for a sensitive root,
 * "absent" would mean "nothing to keep out", so guessing would fail open.
 */
export function fact(host: Pick<Host, 'paths'>, path: string): PathFact {
  const found = host.paths[path];
  if (found) return found;
  throw new SbxError('INTERNAL', `internal error: the policy needs ${path}, which the host probe never looked at`, {
    hint: 'this is a bug in sbx, and nothing ran: please report it with the command line and profile',
  });
}

export interface DeriveInput {
  profileName: string;
  profileHash: string;
  profile: Profile;
  request: RunRequest;
  host: Host;
  vars: Variables;
}

export function derivePolicy(input: DeriveInput): Policy {
  const { profile, request, host, vars } = input;
  const mode = modeOf(input);
  const workspaceReal = workspaceRealPath(host, vars, mode);
  const keepOut = keptOutRealPaths(input);
  const workspace = placeWorkspace(input, mode, workspaceReal, keepOut);
  const tmpSize = tmpSizeOf(profile, request);
  const limits = parseLimits(profile.limits ?? {}, request.limits);
  const seccomp = seccompOf(profile);
  const checks: BindChecks = { host, keepOut };
  const tools = toolchainFactsOf(input, mode);
  const env = envOf(input, workspace.sandbox, tools);
  const toolchains = toolchainMounts(tools, keepOut, workspace.host);
  const layers = [
    ...(mode === 'danger'
      ? dangerLayers()
      : [
          ...isolatedLayers(input, mode, workspace, tmpSize, checks),
          ...toolchains.mounts,
          ...gitGlobalLayers(host, vars, env.vars),
          ...worktreeLayers(host, workspace, checks),
        ]),
    ...requestBindLayers(request, vars, checks),
  ];
  // Danger mode writes the whole host by design (docs/SECURITY.md says what that leaves open).
  if (mode !== 'danger') refuseWritableHostState(writableBinds(input, mode, workspace), host.hostState, host.chains);
  const network = deriveNetwork(profile, request, host);
  layers.push(...unixSocketLayers(network, mode, checks), ...bridgeLayers(network), ...sshAgentLayers(profile, mode));
  const identity = identityOf(profile, host);
  return {
    profile: { name: input.profileName, hash: input.profileHash },
    mode,
    workspace,
    mounts: mountsOf(layers, input, mode, identity),
    env,
    cwd: request.chdir === undefined ? cwdOf(mode, host.cwd, workspace) : chdirOf(request.chdir, workspace),
    hostname: profile.hostname ?? DEFAULT_HOSTNAME,
    identity,
    namespaces: { user: true, pid: true, ipc: true, uts: true, net: network.kind !== 'host', cgroup: true },
    network,
    limits,
    seccomp,
    command: requestedArgv(request),
    ...(request.shell !== undefined ? { shell: request.shell } : {}),
    ...(request.exposeWorkspaceSecrets ? { exposeWorkspaceSecrets: true as const } : {}),
    commands: commandRulesOf(profile),
    ...(profile.ssh_agent ? { sshAgent: { keys: [...new Set(profile.ssh_agent.keys)] } } : {}),

    ...(toolchains.skipped.length > 0 ? { toolchainsSkipped: toolchains.skipped } : {}),
  };
}

/** The profile's mode; danger only with the request's consent (--danger). */
function modeOf(input: DeriveInput): Mode {
  const mode: Mode = input.profile.mode ?? 'workspace-write';
  if (mode === 'danger' && !input.request.danger) {
    throw new SbxError(
      'DANGER_NOT_ALLOWED',
      `profile "${input.profileName}" asks for mode: danger (the host filesystem, writable)`,
      {
        hint: 'add --danger to allow it for this run, or pick a safer profile (default, read-only)',
        source: { key: 'mode' },
      },
    );
  }
  return mode;
}

/**
 * The workspace's realpath: a directory, and (outside danger mode) neither a system directory nor
 * anywhere in the kernel's trees (`-w /proc/self`, `/sys/...`, `/dev/shm`): no project lives there,
 * and a walk of /proc fails part-way. The policy stage asks it on the probed workspace before it scans
 * the tree for secrets (pipeline/policy.ts), and derivePolicy again on the whole host.
 */
export function workspaceRealPath(host: Pick<Host, 'paths'>, vars: Pick<Variables, 'workspace'>, mode: Mode): string {
  const ws = fact(host, vars.workspace);
  if (!ws.exists || ws.type !== 'dir') {
    throw new SbxError('WORKSPACE_INVALID', `workspace ${vars.workspace} is not a directory`, {
      hint: 'pass --workspace DIR, or run sbx from the project directory',
    });
  }
  if (mode === 'danger') return ws.real;
  const hint = 'run sbx from a project directory or pass --workspace DIR';
  if (FORBIDDEN_ROOTS.includes(ws.real)) {
    throw new SbxError('WORKSPACE_INVALID', `workspace ${vars.workspace} resolves to ${ws.real}, a system directory`, {
      hint,
    });
  }
  const kernelTree = KERNEL_TARGETS.find((root) => isWithin(ws.real, root));
  if (kernelTree) {
    const message = `workspace ${vars.workspace} resolves to ${ws.real}, inside ${kernelTree} (a kernel interface)`;
    throw new SbxError('WORKSPACE_INVALID', message, { hint });
  }
  return ws.real;
}

/**
 * The realpaths of the sensitive roots that exist: no bind may hold one. --allow-sensitive-roots is
 * the only way in to credential stores: no profile can lift the block by itself.
 */
function keptOutRealPaths(input: DeriveInput): string[] {
  return sensitiveRoots(input.profile, input.request, input.vars, input.host.env)
    .map((p) => fact(input.host, p))
    .flatMap((f) => (f.exists ? [f.real] : []));
}

function credentialStoreError(where: string, path: string): SbxError {
  return new SbxError('DANGER_NOT_ALLOWED', `${where}: ${path} is (or is inside) a credential store`, {
    ...sourceOf(where),
    hint: "sensitive roots such as ~/.ssh and ~/.aws never enter the sandbox; bind a copy of what you need, or pass --allow-sensitive-roots (credential stores only: sbx's own state never enters)",
  });
}

/** Where the workspace appears inside, and how writable it is. */
function placeWorkspace(input: DeriveInput, mode: Mode, real: string, keepOut: readonly string[]): Policy['workspace'] {
  const { profile, vars } = input;
  // The workspace is a bind like any other: a cwd of ~/.aws/sso must not carry the tokens in.
  if (mode !== 'danger' && keepOut.some((root) => isWithin(real, root)))
    throw credentialStoreError('workspace', vars.workspace);
  const sandbox =
    mode === 'danger' || !profile.workspace?.mountAt
      ? real
      : mountAtTarget(expandPath(profile.workspace.mountAt, vars, 'workspace.mountAt'), 'workspace.mountAt');
  const detected = input.host.workspaceDetected;
  return { host: real, sandbox, access: mode === 'read-only' ? 'ro' : 'rw', ...(detected ? { detected } : {}) };
}

function tmpSizeOf(profile: Profile, request: RunRequest): number {
  return request.tmpSize !== undefined
    ? parseSize(request.tmpSize, '--tmp-size', TMP_BOUNDS)
    : parseSize(profile.tmp?.size ?? DEFAULT_TMP_SIZE, 'tmp.size', TMP_BOUNDS);
}

function seccompOf(profile: Profile): Policy['seccomp'] {
  const preset = profile.seccomp?.preset ?? 'default';
  const rules = resolveSeccompRules({
    preset,
    add: profile.seccomp?.add ?? [],
    remove: profile.seccomp?.remove ?? [],
    allowIoUring: profile.seccomp?.io_uring ?? false,
  });
  return { preset, rules };
}

/** What every bind source is checked against: the host's facts and the sensitive roots kept out. */
interface BindChecks {
  host: Host;
  keepOut: readonly string[];
}

/** One bind entry as a layer (a symlink for a merged-/usr link); nothing for a missing optional entry. */
function bindLayer(spec: BindSpec, access: 'ro' | 'rw', reason: string, checks: BindChecks): Mount[] {
  const f = fact(checks.host, spec.path);
  if (!f.exists) {
    if (spec.optional) return [];
    throw new SbxError('BIND_SOURCE_MISSING', `${spec.where}: ${spec.path} does not exist`, {
      ...sourceOf(spec.where),
      hint: 'create it, fix the path, or mark the entry `optional: true`',
    });
  }
  // Bind the resolved path: a symlink (in the workspace or anywhere) cannot redirect a bind.
  if (checks.keepOut.some((root) => isWithin(f.real, root))) throw credentialStoreError(spec.where, spec.path);
  if (access === 'rw' && FORBIDDEN_ROOTS.includes(f.real)) {
    throw new SbxError(
      'BIND_TARGET_INVALID',
      `${spec.where}: ${spec.path} resolves to ${f.real}, which may not be bound writable`,
      {
        hint: 'bind a subdirectory, or read-only',
      },
    );
  }
  if (f.link !== undefined && spec.mountAt === undefined && access === 'ro' && spec.where.startsWith('system')) {
    // Merged-/usr systems: /bin -> usr/bin. Recreate the link instead of a second bind.
    return [{ kind: 'symlink', target: spec.path, linkTo: f.link, reason }];
  }
  const target =
    spec.mountAt === undefined ? normalizeTarget(f.real, spec.where) : mountAtTarget(spec.mountAt, spec.where);
  return [{ kind: 'bind', source: f.real, target, access, optional: false, reason }];
}

function bindLayers(specs: readonly BindSpec[], access: 'ro' | 'rw', reason: string, checks: BindChecks): Mount[] {
  return specs.flatMap((spec) => bindLayer(spec, access, reason, checks));
}

/** mode: danger: the host's own root, writable, with a fresh /dev and /proc. */
function dangerLayers(): Mount[] {
  return [
    { kind: 'bind', source: '/', target: '/', access: 'rw', optional: false, reason: 'mode: danger (host filesystem)' },
    { kind: 'dev', target: '/dev', reason: 'minimal /dev' },
    { kind: 'proc', target: '/proc', reason: "the sandbox's own processes" },
  ];
}

/**
 * The reason of the system binds (and their merged-/usr links): what an exporter to a container image
 * takes from the image instead of the host (src/export/).
 */
export const SYSTEM_BIND_REASON = 'system, read-only';

/** Every other mode: the system read-only, private /tmp and HOME, the workspace and the profile's binds. */
function isolatedLayers(
  input: DeriveInput,
  mode: Mode,
  workspace: Policy['workspace'],
  tmpSize: number,
  checks: BindChecks,
): Mount[] {
  const { profile, vars } = input;
  const readOnlyMode = mode === 'read-only';
  return [
    ...bindLayers(systemSpecs(profile, vars), 'ro', SYSTEM_BIND_REASON, checks),
    { kind: 'proc', target: '/proc', reason: "the sandbox's own processes" },
    { kind: 'dev', target: '/dev', reason: 'minimal /dev (null, zero, random, tty, pts)' },
    { kind: 'tmpfs', target: '/tmp', sizeBytes: tmpSize, mode: 0o1777, reason: 'private /tmp' },
    {
      kind: 'tmpfs',
      target: normalizeTarget(vars.home, 'HOME'),
      sizeBytes: tmpSize,
      mode: 0o755,
      reason: 'private HOME, empty each session',
    },
    {
      kind: 'bind',
      source: workspace.host,
      target: workspace.sandbox,
      access: workspace.access,
      optional: false,
      reason: `workspace (${workspace.access})`,
    },
    ...bindLayers(bindSpecs(profile.read_only, 'read_only', vars), 'ro', 'read_only', checks),
    ...bindLayers(
      bindSpecs(profile.writable_roots, 'writable_roots', vars),
      readOnlyMode ? 'ro' : 'rw',
      readOnlyMode ? 'writable_roots (read-only mode)' : 'writable_roots',
      checks,
    ),
  ];
}

/**
 * The user's global git config files as generated read-only files where git inside looks for them:
 * ~/.gitconfig, and $XDG_CONFIG_HOME/git/config (the sandbox's XDG_CONFIG_HOME, else ~/.config).
 * Only inside the private HOME: a view elsewhere would need a mount point in some other tree.
 */
function gitGlobalLayers(host: Host, vars: Variables, env: Record<string, string>): Mount[] {
  const home = normalizeTarget(vars.home, 'HOME');
  return (host.gitGlobal ?? []).flatMap((view): Mount[] => {
    const target =
      view.which === 'home'
        ? posix.join(home, '.gitconfig')
        : posix.join(env.XDG_CONFIG_HOME ?? posix.join(home, '.config'), 'git', 'config');
    if (!posix.isAbsolute(target) || target === home || !isWithin(target, home)) return [];
    const reason = `git global config ${view.file}: identity, aliases, safe settings (no helpers or programs)`;
    return [{ kind: 'file', target, content: view.content, mode: 0o444, reason }];
  });
}

/**
 * A worktree's shared git directory (runtime/git-worktree.ts checked its links), bound at its own
 * path (the worktree's .git file names it there) with the workspace's access, through every check a
 * bind gets: no credential store, no system directory, never around the workspace. The host-state
 * check sees it among the writable binds (writableBinds); its hooks and config are protected like
 * the workspace's own .git (host.sensitiveFiles).
 */
function worktreeLayers(host: Host, workspace: Policy['workspace'], checks: BindChecks): Mount[] {
  const common = host.gitWorktree?.commonDir;
  if (common === undefined || isWithin(common, workspace.host)) return [];
  const where = "the git worktree's shared git directory";
  if (checks.keepOut.some((root) => isWithin(common, root))) throw credentialStoreError(where, common);
  if (FORBIDDEN_ROOTS.includes(common) || isWithin(workspace.host, common)) {
    throw new SbxError('GIT_WORKTREE_INVALID', `${where} ${common} is a system directory or holds the workspace`, {
      hint: 'repair the worktree with `git worktree repair`, or pass --workspace the main checkout',
    });
  }
  const access = workspace.access;
  const reason = `git worktree: the repository's shared git directory (${access})`;
  return [{ kind: 'bind', source: common, target: normalizeTarget(common, where), access, optional: false, reason }];
}

/** --ro-bind and --bind, in every mode. */
function requestBindLayers(request: RunRequest, vars: Variables, checks: BindChecks): Mount[] {
  return [
    ...bindLayers(requestSpecs(request, vars, 'ro'), 'ro', '--ro-bind', checks),
    ...bindLayers(requestSpecs(request, vars, 'rw'), 'rw', '--bind', checks),
  ];
}

/** network.unix_sockets: each a socket file, bound writable at its own path. */
function unixSocketLayers(network: NetworkPolicy, mode: Mode, checks: BindChecks): Mount[] {
  const where = 'network.unix_sockets';
  return (network.kind === 'filtered' ? network.unixSockets : []).map((path): Mount => {
    const f = fact(checks.host, path);
    if (!f.exists) {
      const hint = 'start the service first, or fix the path';
      throw new SbxError('BIND_SOURCE_MISSING', `${where}: ${path} does not exist`, { hint });
    }
    // Bound writable (connecting needs write permission on the socket inode), so only a socket: never
    // a directory or file (which would hand over e.g. /etc), never a credential store's agent socket.
    if (f.type !== 'socket') {
      const what = f.type === 'dir' ? 'a directory' : f.type === 'file' ? 'a regular file' : 'not a socket';
      const resolved = f.real !== path ? ` (${f.real})` : '';
      throw new SbxError('UNIX_SOCKET_INVALID', `${where}: ${path}${resolved} is ${what}`, {
        hint:
          'list the socket files of running services only (e.g. /run/user/1000/docker.sock); ' +
          'bind directories with read_only or writable_roots',
      });
    }
    if (checks.keepOut.some((root) => isWithin(f.real, root))) throw credentialStoreError(where, path);
    if (mode === 'read-only') {
      const why = 'needs write access to it, and mode: read-only promises no writes';
      throw new SbxError('UNIX_SOCKET_INVALID', `${where}: connecting to ${path} ${why}`, {
        hint: 'remove network.unix_sockets from the profile, or use mode: workspace-write',
      });
    }
    const target = normalizeTarget(path, where);
    return { kind: 'bind', source: f.real, target, access: 'rw', optional: false, reason: where };
  });
}

/** The egress bridge's program and script, and the session directory holding the proxy's sockets. */
function bridgeLayers(network: NetworkPolicy): Mount[] {
  if (network.kind !== 'filtered' || !network.bridge) return [];
  return [
    {
      kind: 'bind',
      source: network.bridge.node,
      target: `${BRIDGE_DIR}/node`,
      access: 'ro',
      optional: false,
      reason: 'egress bridge: node',
    },
    {
      kind: 'bind',
      source: network.bridge.script,
      target: `${BRIDGE_DIR}/bridge.cjs`,
      access: 'ro',
      optional: false,
      reason: 'egress bridge: script',
    },
    { kind: 'session-dir', target: `${BRIDGE_DIR}/session`, reason: "egress bridge: the proxy's sockets" },
  ];
}

/** `ssh_agent`: the session's agent directory, holding the filter's socket and nothing else (runtime/ssh-agent/). */
function sshAgentLayers(profile: Profile, mode: Mode): Mount[] {
  if (!profile.ssh_agent) return [];
  // Over the host's own root, writable, bwrap would create the socket's mount point in the host's /run.
  if (mode === 'danger') {
    const why = `its mount point ${SSH_AGENT_SANDBOX_DIR} would be created on the host`;
    throw new SbxError('BIND_TARGET_INVALID', `ssh_agent: mode: danger shows the host's own root, and ${why}`, {
      hint: 'remove ssh_agent from the profile, or use mode: workspace-write (with network: host to reach a server)',
    });
  }
  const reason = 'ssh_agent: the agent socket that offers only the listed keys';
  return [{ kind: 'session-dir', target: SSH_AGENT_SANDBOX_DIR, subdir: SSH_AGENT_SESSION_SUBDIR, reason }];
}

/** Parents before children: a mount placed after a deeper one would hide it. Stable otherwise. */
function parentsFirst(layers: readonly Mount[]): Mount[] {
  const depth = (m: Mount) => (m.target === '/' ? 0 : m.target.split('/').length);
  return layers
    .map((m, i) => ({ m, i }))
    .sort((a, b) => depth(a.m) - depth(b.m) || a.i - b.i)
    .map(({ m }) => m);
}

type BindMount = Extract<Mount, { kind: 'bind' }>;

/** The mount list past the sorted layers, as the binds and masks over them are added in order. */
interface Overlay {
  mounts: Mount[];
  /** The binds of the sorted layers: where a host path shows up inside. */
  binds: BindMount[];
  /** The host path each mask or view hides: its mount point exists there (checkMountPoints). */
  hidden: Map<Mount, string>;
}

/** The layers, then what goes over them: read-only policy files, masks, and the final read-only remounts. */
function mountsOf(layers: readonly Mount[], input: DeriveInput, mode: Mode, identity: Identity): Mount[] {
  const mounts = parentsFirst(layers);
  const overlay: Overlay = {
    mounts,
    binds: mounts.filter((m): m is BindMount => m.kind === 'bind'),
    hidden: new Map(),
  };
  bindReadOnly(overlay, input);
  maskSensitive(overlay, input);
  if (identity.hostRoot && input.profile.user !== 'root' && mode !== 'danger') {
    // sbx runs as root, so the child's files are still root's on the host (the workspace must stay
    // writable). Owner permissions would let it read /etc/shadow through the read-only bind: mask
    // everything under the system binds that the world may not read.
    for (const { path, dir } of input.host.rootOnly) mask(overlay, path, dir, 'root-only host file');
  }
  if (mode !== 'danger') checkMountPoints(overlay.mounts, input.host, overlay.hidden);
  return [...overlay.mounts, ...finalRemounts(mode, input.vars)];
}

/**
 * Every place a host path shows up inside: one per bind that contains it (the same tree may be
 * bound twice, e.g. HOME and one of its parents).
 */
function sandboxPathsOf(binds: readonly BindMount[], real: string): string[] {
  return [
    ...new Set(
      binds.filter((b) => isWithin(real, b.source)).map((b) => posix.join(b.target, posix.relative(b.source, real))),
    ),
  ];
}

/** Puts `mount` over every place `real` shows up inside. */
function cover(overlay: Overlay, real: string, mount: (target: string) => Mount): void {
  for (const target of sandboxPathsOf(overlay.binds, real)) {
    // Already hidden (e.g. ~/.ssh/id_rsa under a masked ~/.ssh): a mount point inside the read-only
    // mask could not even be created.
    if (overlay.mounts.some((m) => m.kind === 'mask' && isWithin(target, m.target))) continue;
    const m = mount(target);
    overlay.hidden.set(m, real);
    overlay.mounts.push(m);
  }
}

function mask(overlay: Overlay, real: string, dir: boolean, reason: string): void {
  cover(overlay, real, (target) => ({ kind: 'mask', target, what: dir ? 'dir' : 'file', reason }));
}

/** Binds each host path read-only over itself wherever a bind shows it. */
function bindOverItself(overlay: Overlay, reals: Iterable<string>, reason: string): void {
  for (const real of reals) {
    for (const target of sandboxPathsOf(overlay.binds, real)) {
      overlay.mounts.push({ kind: 'bind', source: real, target, access: 'ro', optional: false, reason });
    }
  }
}

/**
 * A mount point cannot be renamed or removed (EBUSY), but the directory that holds one can: `mv .git
 * .gitold` in a writable workspace would carry the read-only hooks and the config view away and leave
 * room for a new `.git/hooks` that the host's next git command runs. Every directory between a
 * writable bind and such a path is bound over itself, writable as before, so none of them can move.
 */
function pinParents(overlay: Overlay, reals: readonly string[]): void {
  const placed = new Set(overlay.mounts.map((m) => m.target));
  for (const real of reals) {
    for (const bind of overlay.binds) {
      if (bind.access !== 'rw' || real === bind.source || !isWithin(real, bind.source)) continue;
      const parents: string[] = [];
      for (let dir = posix.dirname(real); dir !== bind.source; dir = posix.dirname(dir)) parents.unshift(dir);
      for (const dir of parents) {
        const target = posix.join(bind.target, posix.relative(bind.source, dir));
        if (placed.has(target)) continue;
        placed.add(target);
        const reason = 'pinned: holds protected git state, so it cannot be renamed';
        overlay.mounts.push({ kind: 'bind', source: dir, target, access: 'rw', optional: false, reason });
      }
    }
  }
}

/** Bound before the masks, which must come last (a bind placed after a mask would uncover it). */
function bindReadOnly(overlay: Overlay, input: DeriveInput): void {
  const { profile, request, vars, host } = input;
  // Git hooks run on the host at the next commit: a sandboxed build must not be able to plant one.
  const gitState = [...host.sensitiveFiles.protect, ...host.sensitiveFiles.views.map((v) => v.path)];
  // In danger mode the host root is writable: there is nothing left to pin.
  if (profile.mode !== 'danger') pinParents(overlay, gitState);
  bindOverItself(overlay, host.sensitiveFiles.protect, GIT_HOOKS_REASON);
  // Nothing a sandbox writes may become a later run's policy: the user's sbx config and the
  // project's .sbx are read-only wherever a bind shows them.
  const own = readOnlyOwnRoots(profile, request, vars, host.env).map((p) => fact(host, p));
  const ownDirs = new Set(own.flatMap((f) => (f.exists && f.type === 'dir' ? [f.real] : [])));
  bindOverItself(overlay, ownDirs, OWN_POLICY_REASON);
}

function maskSensitive(overlay: Overlay, input: DeriveInput): void {
  const { profile, request, vars, host } = input;
  // Credential stores (and the agent sockets they come with) reachable through any bind are masked.
  for (const root of sensitiveRoots(profile, request, vars, host.env)) {
    const f = fact(host, root);
    if (f.exists) mask(overlay, f.real, f.type === 'dir', 'sensitive root');
  }
  // Secret-looking files in the mounted trees (.env, *.pem, ...): hidden wherever they appear. A
  // file git tracks with other content gets a stand-in nobody can read: `git add` inside then fails
  // on it instead of committing an empty file in its place.
  for (const { path, dir, tracked } of host.sensitiveFiles.masks) {
    if (tracked)
      cover(overlay, path, (target) => ({ kind: 'file', target, content: '', mode: 0, reason: 'sensitive file' }));
    else mask(overlay, path, dir, 'sensitive file');
  }
  // What the toolchain roots' scan found (runtime/toolchains.ts), wherever a toolchain bind shows it.
  for (const { path, dir } of toolchainFactsOf(input, input.profile.mode ?? 'workspace-write')?.masks ?? [])
    mask(overlay, path, dir, TOOLCHAIN_MASK_REASON);
  // .git/config without credentials, exclude lists naming the masked files: generated content.
  for (const view of host.sensitiveFiles.views) {
    cover(overlay, view.path, (target) => ({
      kind: 'file',
      target,
      content: view.content,
      mode: 0o444,
      reason: view.reason,
      ...(view.withheld?.length ? { withheld: view.withheld } : {}),
    }));
  }
}

/** Once everything is in place: HOME read-only in read-only mode, and the sandbox root itself. */
function finalRemounts(mode: Mode, vars: Variables): Mount[] {
  if (mode === 'danger') return [];
  const root: Mount = { kind: 'remount-ro', target: '/', reason: 'the sandbox root itself is not writable' };
  if (mode !== 'read-only') return [root];
  const home = normalizeTarget(vars.home, 'HOME');
  return [{ kind: 'remount-ro', target: home, reason: 'read-only mode: HOME is not writable' }, root];
}

/** Root inside stays root on the host only for a root caller; a root caller's others run as nobody. */
function identityOf(profile: Profile, host: Host): Identity {
  if (profile.user === 'root') return { uid: 0, gid: 0, hostRoot: host.uid === 0 };
  if (host.uid === 0) return { uid: NOBODY, gid: NOBODY, hostRoot: true };
  return { uid: host.uid, gid: host.gid, hostRoot: false };
}

/** The caller's directory as seen inside: the same place in the workspace, else the workspace itself. */
function cwdOf(mode: Mode, cwd: string, workspace: Policy['workspace']): string {
  if (mode === 'danger') return cwd;
  if (!isWithin(cwd, workspace.host)) return workspace.sandbox;
  return posix.join(workspace.sandbox, posix.relative(workspace.host, cwd));
}

/** An asked-for start directory as seen inside: refused unless inside the workspace (never the fallback cwdOf takes). */
function chdirOf(chdir: string, workspace: Policy['workspace']): string {
  if (!posix.isAbsolute(chdir) || !isWithin(posix.normalize(chdir), workspace.host))
    throw new SbxError('USAGE', `chdir ${chdir} is not inside the workspace ${workspace.host}`, {
      hint: 'the start directory must be an absolute path inside the workspace',
    });
  return posix.join(workspace.sandbox, posix.relative(workspace.host, posix.normalize(chdir)));
}

/**
 * The PATH's toolchains in HOME when the profile asks for them (toolchains: true); never in danger
 * mode, which shows the host's HOME already.
 */
function toolchainFactsOf(input: DeriveInput, mode: Mode): ToolchainFacts | undefined {
  return mode !== 'danger' && input.profile.toolchains === true ? input.host.toolchains : undefined;
}

function envOf(input: DeriveInput, workspaceSandbox: string, tools: ToolchainFacts | undefined): Policy['env'] {
  const { profile, request, vars, host } = input;
  const profileSet = Object.entries(profile.env?.set ?? {}).map(
    ([k, v]) => [k, expandVariables(v, vars, `env.set.${k}`)] as [string, string],
  );
  const env = buildEnv({
    host: host.env,
    keep: [...(profile.env?.keep ?? []), ...(request.keepEnv ?? [])],
    set: [...profileSet, ...Object.entries(request.env ?? {})],
    setBy: {
      ...Object.fromEntries(profileSet.map(([k]) => [k, `env.set.${k}`])),
      ...Object.fromEntries(Object.keys(request.env ?? {}).map((k) => [k, '--env'])),
    },
    injected: {
      HOME: vars.home,
      SBX_SESSION_ID: vars.session,
      SBX_PROFILE: input.profileName,
      SBX_WORKSPACE: workspaceSandbox,
      // Injected, so the caller's own agent path never reaches the sandbox, whatever env.keep says.
      ...(profile.ssh_agent ? { SSH_AUTH_SOCK: SSH_AGENT_SANDBOX_SOCKET } : {}),
    },
  });
  env.vars.PATH ??= DEFAULT_PATH;
  applyToolchainEnv(env.vars, tools);
  // Secrets are set by the runtime (their values never enter the Policy): a kept or set variable of
  // the same name gives way.
  const secrets = [...new Set((profile.secrets ?? []).map((s) => s.as ?? s.name))];
  for (const name of secrets) delete env.vars[name];
  return { ...env, secrets };
}

/**
 * bwrap creates each mount's mount point inside whatever is already mounted there; inside a writable
 * host bind that is a directory or an empty file created on the host (workspace.mountAt: / left bin,
 * usr, ... in the workspace). So a mount inside a writable host bind must land on a path that exists
 * there: the very path it binds or masks, or a probed directory (HOME inside a workspace). Danger
 * mode is not checked: it writes to the host by design.
 */
function checkMountPoints(mounts: readonly Mount[], host: Host, maskedPaths: ReadonlyMap<Mount, string>): void {
  const placed: Mount[] = [];
  for (const m of mounts) {
    if (m.kind === 'remount-ro') continue;
    const parent = placed.findLast((p) => p.kind !== 'symlink' && isWithin(m.target, p.target));
    placed.push(m);
    if (parent?.kind !== 'bind' || parent.access !== 'rw' || parent.target === m.target) continue;
    const mountPoint = posix.join(parent.source, posix.relative(parent.target, m.target));
    // Any path inside the bind may come up here, most never probed: only one known to exist passes,
    // so not knowing refuses (fails closed) instead of calling fact(), which treats it as a bug.
    const existing = host.paths[mountPoint];
    const lands = m.kind === 'bind' ? m.source : maskedPaths.get(m);
    if (lands === mountPoint || (existing?.exists && existing.real === mountPoint)) continue;
    const where = `${m.target} (${m.reason}) lies inside the writable bind of ${parent.source}`;
    throw new SbxError('BIND_TARGET_INVALID', `${where}: its mount point ${mountPoint} would be created on the host`, {
      hint: 'mount it outside writable binds (e.g. under /work or /opt), or pick another workspace.mountAt / mountAt',
    });
  }
}

function commandRulesOf(profile: Profile): CommandRules {
  const c = profile.commands;
  return {
    default: c?.default ?? 'allow',
    allow: c?.allow ?? {},
    deny: c?.deny ?? [],
    paths: c?.paths ?? 'any',
    shellSyntax: c?.shell_syntax ?? 'full',
  };
}

/** none, host, or filtered: the profile's choice, then --network, then --allow-domain on top. */
function deriveNetwork(profile: Profile, request: RunRequest, host: Host): NetworkPolicy {
  const fromProfile = profile.network ?? 'none';
  const base = request.network ?? fromProfile;
  const domains = request.allowDomains ?? [];
  if (base === 'host' && typeof fromProfile === 'object') refusePortsOnHostNetwork(fromProfile);
  if (base === 'host') return { kind: 'host' };
  if (base === 'none' && domains.length === 0) return { kind: 'none' };
  const spec =
    typeof base === 'object'
      ? base
      : typeof fromProfile === 'object' && request.network === undefined
        ? fromProfile
        : {};
  const allow = [...(spec.allow ?? []), ...domains];
  const deny = spec.deny ?? [];
  const allowPrivate = [...(spec.allow_private ?? []), ...(request.allowPrivate ?? [])];
  const hostPorts = spec.host_ports ?? [];
  const publish = spec.publish ?? [];
  refuseSharedPort(hostPorts, publish);
  return {
    kind: 'filtered',
    // Compiled now, so a typo is a profile error rather than a refusal at run time, and what the
    // proxy enforces is exactly what `sbx explain --json` shows and the report's policyHash covers.
    rules: compileEgressRules({ allow, deny, allowPrivate, flagsFrom: allow.length - domains.length }),
    unixSockets: (spec.unix_sockets ?? []).map((p) => posix.resolve(host.cwd, p)),
    hostPorts,
    publish,
    bridge: allow.length + hostPorts.length + publish.length > 0 ? host.bridge : null,
  };
}

/**
 * `--network host` over a profile with host_ports or publish: the host network reaches every host
 * port, and a server inside would listen on the host's interfaces rather than its 127.0.0.1 only. Both
 * would widen what the profile says without saying so, so the run is refused.
 */
function refusePortsOnHostNetwork(spec: { host_ports?: number[] | undefined; publish?: number[] | undefined }): void {
  const keys = [spec.host_ports?.length ? 'network.host_ports' : '', spec.publish?.length ? 'network.publish' : '']
    .filter(Boolean)
    .join(' and ');
  if (!keys) return;
  throw new SbxError('PROFILE_INVALID', `--network host cannot be combined with the profile's ${keys}`, {
    hint: `drop --network host (the profile already reaches the ports it lists), or use a profile without ${keys}`,
  });
}

/** The schema refuses a port in both lists within one file; `extends` can still bring them together. */
function refuseSharedPort(hostPorts: readonly number[], publish: readonly number[]): void {
  const shared = publish.find((p) => hostPorts.includes(p));
  if (shared === undefined) return;
  throw new SbxError('PROFILE_INVALID', `network: port ${shared} is in both host_ports and publish (after extends)`, {
    hint: `remove ${shared} from one of the two lists: inside the sandbox a port is either the host's or the sandbox's own`,
  });
}

/**
 * System binds to scan for root-only entries when the child keeps host uid 0. The binary trees
 * (/usr, /bin, /lib...) hold no secrets by convention and are too large to walk on every run.
 */
export function rootOnlyScanRoots(profile: Profile, vars: Variables): string[] {
  const binaryTrees = /^\/(usr|bin|sbin|lib|lib32|lib64|libx32)(\/|$)/;
  return systemSpecs(profile, vars)
    .map((s) => s.path)
    .filter((p) => !binaryTrees.test(p));
}
