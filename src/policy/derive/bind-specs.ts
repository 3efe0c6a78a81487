// The bind entries of the profile (system, read_only, writable_roots) and of the request (--ro-bind,
// --bind), expanded into host paths once: the probe plan lists them for the shell to probe, and the
// layers (layers.ts) mount the very same specs.
import { posix } from 'node:path';
import type { BindEntry, Profile } from '../../profile/schema.js';
import { expandPath, type Variables } from '../../profile/variables.js';
import type { RunRequest } from './request.js';

/** The system directories bound read-only when the profile names none (each optional: not every distribution has lib32). */
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

export interface BindSpec {
  /** The host path as written, expanded and made absolute (not yet resolved: that is the probe's job). */
  path: string;
  mountAt?: string;
  optional: boolean;
  /** The key or flag it comes from, as refusals name it (`read_only[2]`, `--bind`). */
  where: string;
}

/** Every bind of this run, by where it comes from. */
export interface BindSpecs {
  readonly system: readonly BindSpec[];
  readonly readOnly: readonly BindSpec[];
  readonly writableRoots: readonly BindSpec[];
  /** `--ro-bind` */
  readonly requestRo: readonly BindSpec[];
  /** `--bind` */
  readonly requestRw: readonly BindSpec[];
}

function profileSpecs(entries: readonly BindEntry[] | undefined, key: string, vars: Variables): BindSpec[] {
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
  if (profile.system) return profileSpecs(profile.system, 'system', vars);
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

export function bindSpecsOf(profile: Profile, request: RunRequest, vars: Variables): BindSpecs {
  return {
    system: systemSpecs(profile, vars),
    readOnly: profileSpecs(profile.read_only, 'read_only', vars),
    writableRoots: profileSpecs(profile.writable_roots, 'writable_roots', vars),
    requestRo: requestSpecs(request, vars, 'ro'),
    requestRw: requestSpecs(request, vars, 'rw'),
  };
}
