// The workspace: the mode it is mounted in, the path asked for, the directory it resolves to (never a
// system or kernel tree), where it appears inside, and where the command starts in it.
import { posix } from 'node:path';
import { SbxError } from '../../errors.js';
import type { Profile } from '../../profile/schema.js';
import { expandPath, type Variables } from '../../profile/variables.js';
import type { Host, PathFact } from '../host.js';
import { isWithin } from '../../path-within.js';
import type { Mode, Policy } from '../types.js';
import { credentialStoreError, FORBIDDEN_ROOTS, KERNEL_TARGETS, mountAtTarget } from './bind-checks.js';
import { fact } from './probe-plan.js';
import type { RunRequest } from './request.js';

/**
 * The workspace path as requested, before realpath: the shell probes it (and, when neither the request
 * nor the profile names one, looks for the project's top level above it) before it plans the rest.
 */
export function requestedWorkspace(profile: Profile, request: RunRequest, vars: Omit<Variables, 'workspace'>): string {
  const raw = request.workspace ?? profile.workspace?.path ?? '${cwd}';
  if (raw.includes('${workspace}')) {
    throw new SbxError('PROFILE_VARIABLE', 'workspace.path: ${workspace} cannot refer to itself', {
      hint: 'use ${cwd} or ${home}',
    });
  }
  return posix.resolve(vars.cwd, expandPath(raw, { ...vars, workspace: '' }, 'workspace.path'));
}

/**
 * The run's variables once the workspace is chosen: `${workspace}` is the realpath of the workspace when
 * it exists (what gets bound), else the path as requested (derive refuses it, naming that path).
 */
export function runVariables(base: Omit<Variables, 'workspace'>, workspace: string, probed: PathFact): Variables {
  return { ...base, workspace: probed.exists ? probed.real : workspace };
}

/** The profile's mode; danger only with the request's consent (--danger). */
export function modeOf(profile: Profile, request: RunRequest, profileName: string): Mode {
  const mode: Mode = profile.mode ?? 'workspace-write';
  if (mode === 'danger' && !request.danger) {
    throw new SbxError(
      'DANGER_NOT_ALLOWED',
      `profile "${profileName}" asks for mode: danger (the host filesystem, writable)`,
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
 * the tree for secrets (pipeline/policy-stage.ts), and derivePolicy again on the whole host.
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

/** Where the workspace appears inside, and how writable it is. */
export function placeWorkspace(
  profile: Profile,
  vars: Variables,
  host: Pick<Host, 'workspaceDetected'>,
  mode: Mode,
  real: string,
  keepOut: readonly string[],
): Policy['workspace'] {
  // The workspace is a bind like any other: a cwd of ~/.aws/sso must not carry the tokens in.
  if (mode !== 'danger' && keepOut.some((root) => isWithin(real, root)))
    throw credentialStoreError('workspace', vars.workspace);
  const sandbox =
    mode === 'danger' || !profile.workspace?.mountAt
      ? real
      : mountAtTarget(expandPath(profile.workspace.mountAt, vars, 'workspace.mountAt'), 'workspace.mountAt');
  const detected = host.workspaceDetected;
  return { host: real, sandbox, access: mode === 'read-only' ? 'ro' : 'rw', ...(detected ? { detected } : {}) };
}

/**
 * Where the command starts inside: the asked-for directory (refused unless inside the workspace),
 * else the caller's directory at the same place in the workspace, else the workspace itself.
 */
export function startDirOf(mode: Mode, request: RunRequest, cwd: string, workspace: Policy['workspace']): string {
  if (request.chdir !== undefined) return chdirOf(request.chdir, workspace);
  if (mode === 'danger') return cwd;
  if (!isWithin(cwd, workspace.host)) return workspace.sandbox;
  return posix.join(workspace.sandbox, posix.relative(workspace.host, cwd));
}

/** An asked-for start directory as seen inside: never the fallback the caller's cwd takes. */
function chdirOf(chdir: string, workspace: Policy['workspace']): string {
  if (!posix.isAbsolute(chdir) || !isWithin(posix.normalize(chdir), workspace.host))
    throw new SbxError('USAGE', `chdir ${chdir} is not inside the workspace ${workspace.host}`, {
      hint: 'the start directory must be an absolute path inside the workspace',
    });
  return posix.join(workspace.sandbox, posix.relative(workspace.host, posix.normalize(chdir)));
}
