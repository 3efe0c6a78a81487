// What every bind is checked against, whichever subsystem adds it: the directories that may never be
// written or covered, the sandbox paths a chosen mount point may not take, and the credential stores
// kept out.
import { posix } from 'node:path';
import { SbxError, type SbxErrorInit } from '../../errors.js';
import { keySource } from '../../profile/positions.js';
import type { Host } from '../host.js';
import { isWithin } from '../../path-within.js';
import { fact } from './probe-plan.js';

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

/** Where a chosen mount point may not go: over the system the sandbox runs on, or into the kernel's interfaces. */
const SYSTEM_TARGETS = [...FORBIDDEN_ROOTS, '/lib32', '/libx32', '/tmp'];
export const KERNEL_TARGETS: readonly string[] = ['/proc', '/dev', '/sys'];

/** What every bind source is checked against: the host's facts and the sensitive roots kept out (realpaths). */
export interface BindChecks {
  host: Host;
  keepOut: readonly string[];
}

/**
 * The realpaths of the planned sensitive roots that exist: no bind may hold one. --allow-sensitive-roots
 * is the only way in to credential stores: no profile can lift the block by itself.
 */
export function bindChecksOf(host: Host, keepOut: readonly string[]): BindChecks {
  return { host, keepOut: keepOut.map((p) => fact(host, p)).flatMap((f) => (f.exists ? [f.real] : [])) };
}

/** A refusal's `source` from the `where` its message starts with, when that is a profile key or a flag. */
export function sourceOf(where: string): Pick<SbxErrorInit, 'source'> {
  const source = keySource(where);
  return source ? { source } : {};
}

export function normalizeTarget(path: string, where: string): string {
  if (!posix.isAbsolute(path) || path.split('/').includes('..')) {
    throw new SbxError('BIND_TARGET_INVALID', `${where}: "${path}" must be an absolute path without ".."`, {
      hint: 'write the path inside the sandbox in full, e.g. /opt/tools',
      ...sourceOf(where),
    });
  }
  return posix.normalize(path).replace(/(.)\/$/, '$1');
}

/**
 * A `mountAt` the user chose. Over a system directory (or one of its parents) the later system binds
 * would land inside this bind, and bwrap would create their mount points in the host directory.
 */
export function mountAtTarget(path: string, where: string): string {
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

export function credentialStoreError(where: string, path: string): SbxError {
  return new SbxError('DANGER_NOT_ALLOWED', `${where}: ${path} is (or is inside) a credential store`, {
    ...sourceOf(where),
    hint: "sensitive roots such as ~/.ssh and ~/.aws never enter the sandbox; bind a copy of what you need, or pass --allow-sensitive-roots (credential stores only: sbx's own state never enters)",
  });
}
