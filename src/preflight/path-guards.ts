// Path guards (docs/DESIGN.md, "Path guards"): in read-only and workspace-write modes, path-like arguments
// must stay inside the workspace: no `..` segment, no absolute path elsewhere, and no symlink that
// leads out (realpath containment). Pure: the realpaths arrive as facts probed by the runtime.
import { posix } from 'node:path';
import type { PathFact } from '../policy/host.js';
import type { Violation } from '../policy/violation.js';

/** Absolute paths every command may name: they hold nothing of the host. */
const ALWAYS_ALLOWED = [
  '/dev/null',
  '/dev/zero',
  '/dev/stdin',
  '/dev/stdout',
  '/dev/stderr',
  '/dev/urandom',
  '/dev/random',
  '/dev/tty',
];
const MAX_SHOWN = 200;

export interface Workspace {
  /** Realpath on the host. */
  host: string;
  /** Where it appears inside the sandbox. */
  sandbox: string;
}

function isWithin(path: string, root: string): boolean {
  return path === root || root === '/' || path.startsWith(`${root}/`);
}

/**
 * The argument as a reader can safely see it: JSON-quoted (a newline cannot forge a line), bounded,
 * and with bidi and invisible format characters escaped (they can make a name read as another).
 */
export function shown(arg: string): string {
  const quoted = JSON.stringify(arg.length > MAX_SHOWN ? `${arg.slice(0, MAX_SHOWN)}…` : arg);
  return quoted.replace(
    /[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** What the guards look at: a command's arguments, and the targets of its redirections. */
export interface PathOperands {
  args: readonly string[];
  /** Always paths (`> out` writes the file out, whatever its name looks like). */
  targets: readonly string[];
}

/**
 * The path an argument may name: the argument, or the value of `--opt=value`. `certain` when it has
 * the shape of one (a `/`, `.` or `..`); a bare word is a path only if it exists (`cat notes`).
 */
function pathOfArg(arg: string): { path: string; certain: boolean } | undefined {
  const value = /^--?[A-Za-z0-9][A-Za-z0-9-]*=/.test(arg) ? arg.slice(arg.indexOf('=') + 1) : arg;
  if (value.startsWith('-') || value === '' || /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(value)) return undefined;
  return { path: value, certain: value === '.' || value === '..' || value.includes('/') };
}

/** Each operand as written, with the path it may name. */
function pathsOf(operands: PathOperands): { arg: string; path: { path: string; certain: boolean } | undefined }[] {
  return [
    ...operands.args.map((arg) => ({ arg, path: pathOfArg(arg) })),
    ...operands.targets.map((arg) => ({ arg, path: { path: arg, certain: true } })),
  ];
}

type Located = { kind: 'host'; path: string } | { kind: 'allowed' } | { kind: 'absolute' } | { kind: 'traversal' };

/** Where a path argument points on the host, before symlinks, or why it is out of bounds lexically. */
function locate(path: string, workspace: Workspace, base: string): Located {
  if (path.split('/').includes('..')) return { kind: 'traversal' };
  if (!path.startsWith('/')) return { kind: 'host', path: posix.resolve(base, path) };
  const normal = posix.normalize(path);
  if (ALWAYS_ALLOWED.includes(normal)) return { kind: 'allowed' };
  if (isWithin(normal, workspace.host)) return { kind: 'host', path: normal };
  if (isWithin(normal, workspace.sandbox))
    return { kind: 'host', path: posix.join(workspace.host, posix.relative(workspace.sandbox, normal)) };
  return { kind: 'absolute' };
}

/** Host paths whose facts checkPathArgs needs: each path-like argument and its ancestors. */
export function pathFactsNeeded(operands: PathOperands, workspace: Workspace, base: string): string[] {
  const out = new Set<string>();
  for (const { path } of pathsOf(operands)) {
    const where = path === undefined ? undefined : locate(path.path, workspace, base);
    if (where?.kind !== 'host') continue;
    for (let p = where.path; ; p = posix.dirname(p)) {
      out.add(p);
      if (p === '/') break;
    }
  }
  return [...out];
}

/** The nearest existing path at or above `path`, resolved, with what lies below it re-attached. */
function resolvedThroughLinks(path: string, facts: Record<string, PathFact>): string {
  let tail = '';
  for (let p = path; ; p = posix.dirname(p)) {
    const fact = facts[p];
    if (fact?.exists) return tail ? posix.join(fact.real, tail) : fact.real;
    if (p === '/') return path;
    tail = tail ? posix.join(posix.basename(p), tail) : posix.basename(p);
  }
}

/**
 * Violations for the path-like arguments. `base` is the host directory relative paths resolve
 * against (the command's cwd, mapped to the host).
 */
export function checkPathArgs(
  operands: PathOperands,
  workspace: Workspace,
  base: string,
  facts: Record<string, PathFact>,
): Violation[] {
  const violations: Violation[] = [];
  const refuse = (rule: string, detail: string) => violations.push({ phase: 'preflight', kind: 'path', rule, detail });
  for (const { arg, path } of pathsOf(operands)) {
    const where = path === undefined ? undefined : locate(path.path, workspace, base);
    if (where === undefined || where.kind === 'allowed') continue;
    if (!path!.certain && !(where.kind === 'host' && facts[where.path]?.exists)) continue;
    if (where.kind === 'traversal') {
      refuse('paths.traversal', `${shown(arg)} has a .. segment: paths must stay inside the workspace`);
      continue;
    }
    if (where.kind === 'absolute') {
      refuse('paths.absolute', `${shown(arg)} is an absolute path outside the workspace`);
      continue;
    }
    const hostPath = where.path;
    const real = resolvedThroughLinks(hostPath, facts);
    if (!isWithin(real, workspace.host))
      refuse('paths.escape', `${shown(arg)} leads outside the workspace (to ${shown(real)}) through a symlink`);
  }
  return violations;
}
