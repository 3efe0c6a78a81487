// The layers: what the sandbox's root is made of before anything goes over it. The system read-only,
// private /proc, /dev, /tmp and HOME, the workspace and the profile's binds (or, in danger mode, the
// host's own root), the git views, a worktree's shared git directory, the request's binds and the
// ssh-agent socket's directory. Every bind source passes the checks of bind-checks.ts.
import { posix } from 'node:path';
import { SbxError } from '../../errors.js';
import { parseSize } from '../../limits/units.js';
import type { Profile } from '../../profile/schema.js';
import type { Variables } from '../../profile/variables.js';
import type { Host } from '../host.js';
import type { WritableBind } from '../../host-state/host-state.js';
import { isWithin } from '../../path-within.js';
import { SSH_AGENT_SANDBOX_DIR, SSH_AGENT_SESSION_SUBDIR } from '../../ssh-agent/ssh-agent.js';
import type { Mode, Mount, MountRole, Policy } from '../types.js';
import {
  type BindChecks,
  credentialStoreError,
  FORBIDDEN_ROOTS,
  mountAtTarget,
  normalizeTarget,
  sourceOf,
} from './bind-checks.js';
import type { BindSpec, BindSpecs } from './bind-specs.js';
import { kernelCovers } from './kernel.js';
import { fact } from './probe-plan.js';
import type { RunRequest } from './request.js';

const DEFAULT_TMP_SIZE = '512MiB';
/** /tmp and HOME: large enough for a build's scratch files, small enough to refuse a balloon. */
const TMP_BOUNDS = { min: 1024 * 1024, max: 1024 ** 4, example: '256MiB or 2GiB' };

/** Why a bind entry is mounted: the text `sbx explain` shows, and what backends and exporters act on. */
interface Purpose {
  reason: string;
  role: MountRole;
}

/** The size of the private /tmp and HOME: --tmp-size, else tmp.size. */
export function tmpSizeOf(profile: Profile, request: RunRequest): number {
  return request.tmpSize !== undefined
    ? parseSize(request.tmpSize, '--tmp-size', TMP_BOUNDS)
    : parseSize(profile.tmp?.size ?? DEFAULT_TMP_SIZE, 'tmp.size', TMP_BOUNDS);
}

/** One bind entry as a layer (a symlink for a merged-/usr link); nothing for a missing optional entry. */
function bindLayer(spec: BindSpec, access: 'ro' | 'rw', purpose: Purpose, checks: BindChecks): Mount[] {
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
    return [{ kind: 'symlink', target: spec.path, linkTo: f.link, ...purpose }];
  }
  const target =
    spec.mountAt === undefined ? normalizeTarget(f.real, spec.where) : mountAtTarget(spec.mountAt, spec.where);
  return [{ kind: 'bind', source: f.real, target, access, optional: false, ...purpose }];
}

function bindLayers(specs: readonly BindSpec[], access: 'ro' | 'rw', purpose: Purpose, checks: BindChecks): Mount[] {
  return specs.flatMap((spec) => bindLayer(spec, access, purpose, checks));
}

/** Docker's default --shm-size: POSIX semaphores and shm_open (Python multiprocessing) need /dev/shm. */
export const DEV_SHM_BYTES = 64 * 1024 * 1024;

/**
 * A minimal /dev, and its /dev/shm as a sized tmpfs of its own: bwrap's is a directory of the /dev
 * tmpfs, which has no size (half the host's memory) and which finalRemounts (overlay.ts) makes read-only.
 */
function devLayers(reason: string): Mount[] {
  return [
    { kind: 'dev', target: '/dev', reason, role: 'kernel' },
    {
      kind: 'tmpfs',
      target: '/dev/shm',
      sizeBytes: DEV_SHM_BYTES,
      mode: 0o1777,
      reason: 'POSIX shared memory, sized',
      role: 'kernel',
    },
  ];
}

/** The sandbox's own /proc, with the kernel's host-global state covered (kernel.ts). */
function procLayers(host: Pick<Host, 'paths'>): Mount[] {
  const covers = kernelCovers((path) => fact(host, path));
  return [{ kind: 'proc', target: '/proc', reason: "the sandbox's own processes", role: 'kernel' }, ...covers];
}

/**
 * mode: danger: the host's own root, writable, with a fresh /dev and /proc. Its kernel state stays
 * covered: danger lends the host's files, not the machine's sysctls.
 */
export function dangerLayers(host: Pick<Host, 'paths'>): Mount[] {
  return [
    {
      kind: 'bind',
      source: '/',
      target: '/',
      access: 'rw',
      optional: false,
      reason: 'mode: danger (host filesystem)',
      role: 'host-root',
    },
    ...devLayers('minimal /dev'),
    ...procLayers(host),
  ];
}

/** Every other mode: the system read-only, private /tmp and HOME, the workspace and the profile's binds. */
export function isolatedLayers(
  binds: BindSpecs,
  vars: Variables,
  mode: Mode,
  workspace: Policy['workspace'],
  tmpSize: number,
  checks: BindChecks,
): Mount[] {
  const readOnlyMode = mode === 'read-only';
  return [
    ...bindLayers(binds.system, 'ro', { reason: 'system, read-only', role: 'system' }, checks),
    ...procLayers(checks.host),
    ...devLayers('minimal /dev (null, zero, random, tty, pts)'),
    { kind: 'tmpfs', target: '/tmp', sizeBytes: tmpSize, mode: 0o1777, reason: 'private /tmp', role: 'private' },
    {
      kind: 'tmpfs',
      target: normalizeTarget(vars.home, 'HOME'),
      sizeBytes: tmpSize,
      mode: 0o755,
      reason: 'private HOME, empty each session',
      role: 'private',
    },
    {
      kind: 'bind',
      source: workspace.host,
      target: workspace.sandbox,
      access: workspace.access,
      optional: false,
      reason: `workspace (${workspace.access})`,
      role: 'workspace',
    },
    ...bindLayers(binds.readOnly, 'ro', { reason: 'read_only', role: 'user-ro' }, checks),
    ...bindLayers(
      binds.writableRoots,
      readOnlyMode ? 'ro' : 'rw',
      { reason: readOnlyMode ? 'writable_roots (read-only mode)' : 'writable_roots', role: 'user-rw' },
      checks,
    ),
  ];
}

/**
 * The user's global git config files as generated read-only files where git inside looks for them:
 * ~/.gitconfig, and $XDG_CONFIG_HOME/git/config (the sandbox's XDG_CONFIG_HOME, else ~/.config).
 * Only inside the private HOME: a view elsewhere would need a mount point in some other tree.
 */
export function gitGlobalLayers(host: Host, vars: Variables, env: Record<string, string>): Mount[] {
  const home = normalizeTarget(vars.home, 'HOME');
  return (host.gitGlobal ?? []).flatMap((view): Mount[] => {
    const target =
      view.which === 'home'
        ? posix.join(home, '.gitconfig')
        : posix.join(env.XDG_CONFIG_HOME ?? posix.join(home, '.config'), 'git', 'config');
    if (!posix.isAbsolute(target) || target === home || !isWithin(target, home)) return [];
    const reason = `git global config ${view.file}: identity, aliases, safe settings (no helpers or programs)`;
    return [{ kind: 'file', target, content: view.content, mode: 0o444, reason, role: 'private' }];
  });
}

/**
 * A worktree's shared git directory (git/host/git-worktree.ts checked its links), bound at its own
 * path (the worktree's .git file names it there) with the workspace's access, through every check a
 * bind gets: no credential store, no system directory, never around the workspace. The host-state
 * check sees it among the writable binds (writableBinds); its hooks and config are protected like
 * the workspace's own .git (host.sensitiveFiles).
 */
export function worktreeLayers(host: Host, workspace: Policy['workspace'], checks: BindChecks): Mount[] {
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
  const target = normalizeTarget(common, where);
  return [{ kind: 'bind', source: common, target, access, optional: false, reason, role: 'workspace' }];
}

/** --ro-bind and --bind, in every mode. */
export function requestBindLayers(binds: BindSpecs, checks: BindChecks): Mount[] {
  return [
    ...bindLayers(binds.requestRo, 'ro', { reason: '--ro-bind', role: 'user-ro' }, checks),
    ...bindLayers(binds.requestRw, 'rw', { reason: '--bind', role: 'user-rw' }, checks),
  ];
}

/** `ssh_agent`: the session's agent directory, holding the filter's socket and nothing else (ssh-agent/host/). */
export function sshAgentLayers(profile: Profile, mode: Mode): Mount[] {
  if (!profile.ssh_agent) return [];
  // Over the host's own root, writable, bwrap would create the socket's mount point in the host's /run.
  if (mode === 'danger') {
    const why = `its mount point ${SSH_AGENT_SANDBOX_DIR} would be created on the host`;
    throw new SbxError('BIND_TARGET_INVALID', `ssh_agent: mode: danger shows the host's own root, and ${why}`, {
      hint: 'remove ssh_agent from the profile, or use mode: workspace-write (with network: host to reach a server)',
    });
  }
  const reason = 'ssh_agent: the agent socket that offers only the listed keys';
  const subdir = SSH_AGENT_SESSION_SUBDIR;
  return [{ kind: 'session-dir', target: SSH_AGENT_SANDBOX_DIR, subdir, reason, role: 'socket' }];
}

/** The binds this run mounts writable, each with the key or flag it comes from (host-state/host-state.ts checks them). */
export function writableBinds(
  binds: BindSpecs,
  host: Host,
  mode: Mode,
  workspace: Policy['workspace'],
  vars: Variables,
): WritableBind[] {
  const specs = [...(mode === 'read-only' ? [] : binds.writableRoots), ...binds.requestRw];
  const found: WritableBind[] =
    workspace.access === 'rw' ? [{ where: 'workspace', path: vars.workspace, real: workspace.host }] : [];
  const common = host.gitWorktree?.commonDir;
  if (common !== undefined && workspace.access === 'rw' && !isWithin(common, workspace.host))
    found.push({ where: "the git worktree's shared git directory", path: common, real: common });
  for (const spec of specs) {
    const f = fact(host, spec.path);
    if (f.exists) found.push({ where: spec.where, path: spec.path, real: f.real });
  }
  return found;
}
