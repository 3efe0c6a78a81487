// Path guards (docs/DESIGN.md, "Path guards"): in read-only and workspace-write modes, the arguments a tool
// reads as paths (tool-arguments.ts: `grep PATTERN FILE`'s FILE, not its PATTERN) must stay inside the
// workspace: no `..` that leads out of it (`cd sub && ls ..` stays in), no absolute path elsewhere, and
// no symlink that leads out (realpath containment, and no `..` after a symlink, which the kernel
// resolves from the link's target). Outside the workspace, what the sandbox itself makes private (its
// /tmp and HOME, empty each session) and what the profile binds read-only for the command (the agent's
// tools) may be named too. Pure: the realpaths arrive as facts probed by the runtime.
import { isWithin } from '../path-within.js';
import { posix } from 'node:path';
import type { PathFact } from '../policy/host.js';
import type { CommandRules, Mode, Mount } from '../policy/types.js';
import type { Violation } from '../policy/violation.js';
import type { Field } from './shell-fields.js';

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
  /** Sandbox paths outside the workspace, in mount order (rootsOf); none: only the workspace. */
  roots?: readonly PathRoot[];
}

/** A mount point inside the sandbox, and whether a command may name what lies below it. */
export interface PathRoot {
  path: string;
  named: boolean;
}

/**
 * The mount points of the policy, in order, as the guards see them: a private tmpfs (the sandbox's
 * /tmp and HOME) and a read-only bind the profile or the caller asked for (read_only, --ro-bind:
 * the role `user-ro`) hold nothing of the host a command could not be given
 * anyway, so naming them is fine (writes there fail or vanish). System binds and writable binds
 * other than the workspace stay out of bounds. The innermost mount point decides.
 */
export function rootsOf(mounts: readonly Mount[]): PathRoot[] {
  return mounts.flatMap((m): PathRoot[] => {
    if (m.kind === 'tmpfs') return [{ path: m.target, named: true }];
    if (m.kind === 'bind') return [{ path: m.target, named: m.access === 'ro' && m.role === 'user-ro' }];
    if (m.kind === 'proc' || m.kind === 'dev' || m.kind === 'symlink' || m.kind === 'session-dir')
      return [{ path: m.target, named: false }];
    return [];
  });
}

/** Whether the innermost root holding `path` may be named. */
function isNamedRoot(path: string, roots: readonly PathRoot[]): boolean {
  let best: PathRoot | undefined;
  for (const root of roots) if (isWithin(path, root.path) && root.path.length >= (best?.path.length ?? 0)) best = root;
  return best?.named ?? false;
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
  /**
   * Words of a shell string that sh expands at run time, as written, with the fields they yield
   * (shell-fields.ts fieldsOf), or undefined when a value is unknown (a secret, what `$(...)` prints);
   * `skip`: the characters of an option before its value (`--file=`).
   */
  expanded?: readonly { written: string; fields: readonly Field[] | undefined; target: boolean; skip?: number }[];
}

type Candidate = { path: string; certain: boolean } | { glob: 'traversal' } | { unknown: true };

/**
 * The path an argument may name: the argument, or the value of `--opt=value`. `certain` when it has
 * the shape of one (a `/`, `.` or `..`); a bare word is a path only if it exists (`cat notes`).
 */
function pathOfArg(arg: string): { path: string; certain: boolean } | undefined {
  const value = /^--?[A-Za-z0-9][A-Za-z0-9-]*=/.test(arg) ? arg.slice(arg.indexOf('=') + 1) : arg;
  if (value.startsWith('-') || value === '' || /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(value)) return undefined;
  return { path: value, certain: value === '.' || value === '..' || value.includes('/') };
}

/**
 * A glob's matches lie in the directory before its first pattern segment, unless a pattern segment
 * can match `..` (sh's `.*` does: a leading dot is matched only by a literal one). Which names it
 * matches there is decided at run time; the guards judge the directory.
 */
function globCandidate(text: string): Candidate {
  const segments = text.split('/');
  const first = segments.findIndex((s) => /[*?[]/.test(s));
  const patterns = segments.slice(first);
  // A bracket expression stands for one character (`.` among them: whether `[.]` may match a leading
  // dot is unspecified by POSIX, so it counts); a lone `[` is literal.
  const toRegExp = (s: string) => {
    const body = s.replace(/\[[^\]]*\]|[*?]|[^*?]/g, (m) =>
      m === '*' ? '.*' : m === '?' || m.length > 1 ? '.' : m.replace(/[.+^${}()|[\]\\]/, '\\$&'),
    );
    return new RegExp(`^${body}$`);
  };
  if (patterns.some((s) => /^[.[]/.test(s) && toRegExp(s).test('..'))) return { glob: 'traversal' };
  const dir = segments.slice(0, first).join('/');
  return { path: dir === '' ? (text.startsWith('/') ? '/' : '.') : dir, certain: true };
}

/** Each operand as written, with the path it may name. */
function pathsOf(operands: PathOperands): { arg: string; path: Candidate | undefined }[] {
  const expanded = (operands.expanded ?? []).flatMap(({ written, fields, target, skip = 0 }) => {
    if (fields === undefined) return [{ arg: written, path: { unknown: true } as Candidate }];
    return fields.map(({ text: whole, glob }) => {
      const text = whole.slice(skip);
      return {
        arg: written,
        path: glob ? globCandidate(text) : target || skip > 0 ? { path: text, certain: true } : pathOfArg(text),
      };
    });
  });
  return [
    ...operands.args.map((arg) => ({ arg, path: pathOfArg(arg) })),
    ...operands.targets.map((arg) => ({ arg, path: { path: arg, certain: true } })),
    ...expanded,
  ];
}

type Located =
  | {
      kind: 'host';
      path: string;
      /** Host directories a `..` goes up from: each must be no symlink, or the kernel goes up from its target. */
      upFrom: readonly string[];
    }
  | { kind: 'allowed' }
  | { kind: 'absolute' }
  | { kind: 'traversal' };

/** An absolute sandbox path on the host, when it lies in the workspace. */
function onHost(path: string, workspace: Workspace): string | undefined {
  if (isWithin(path, workspace.host)) return path;
  if (isWithin(path, workspace.sandbox)) return posix.join(workspace.host, posix.relative(workspace.sandbox, path));
  return undefined;
}

/**
 * Where a path argument points on the host, before symlinks, or why it is out of bounds lexically. A
 * `..` is followed as the kernel follows it from a directory that is no symlink (checkPathArgs checks
 * that with the facts); going up out of the workspace is traversal, even to come back in.
 */
function locate(path: string, workspace: Workspace, base: string): Located {
  const segments = path.split('/');
  const absolute = path.startsWith('/');
  if (!segments.includes('..')) {
    if (!absolute) return { kind: 'host', path: posix.resolve(base, path), upFrom: [] };
    const normal = posix.normalize(path);
    if (ALWAYS_ALLOWED.includes(normal)) return { kind: 'allowed' };
    const host = onHost(normal, workspace);
    if (host !== undefined) return { kind: 'host', path: host, upFrom: [] };
    return isNamedRoot(normal, workspace.roots ?? []) ? { kind: 'allowed' } : { kind: 'absolute' };
  }
  const first = segments.indexOf('..');
  // An absolute path goes up from where it is before its first `..`, which must be in the workspace.
  let current = absolute ? onHost(posix.normalize(segments.slice(0, first).join('/') || '/'), workspace) : base;
  if (current === undefined) return { kind: 'traversal' };
  const upFrom: string[] = [];
  for (const segment of absolute ? segments.slice(first) : segments) {
    if (segment === '' || segment === '.') continue;
    if (segment !== '..') {
      current = posix.join(current, segment);
      continue;
    }
    upFrom.push(current);
    current = posix.dirname(current);
    if (!isWithin(current, workspace.host)) return { kind: 'traversal' };
  }
  return { kind: 'host', path: current, upFrom };
}

/** Host paths whose facts checkPathArgs needs: each path-like argument and its ancestors, and what a `..` goes up from. */
export function pathFactsNeeded(operands: PathOperands, workspace: Workspace, base: string): string[] {
  const out = new Set<string>();
  for (const { path } of pathsOf(operands)) {
    const where = path === undefined || !('path' in path) ? undefined : locate(path.path, workspace, base);
    if (where?.kind !== 'host') continue;
    for (const up of where.upFrom) out.add(up);
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
    if (path !== undefined && 'unknown' in path) {
      refuse(
        'paths.unknown',
        `${shown(arg)} expands a value sbx cannot know before it runs (a secret, what $(...) prints or read reads): the path it names is unknown`,
      );
      continue;
    }
    if (path !== undefined && 'glob' in path) {
      refuse('paths.traversal', `${shown(arg)} is a glob that matches ..: paths must stay inside the workspace`);
      continue;
    }
    const where = path === undefined ? undefined : locate(path.path, workspace, base);
    if (where === undefined || where.kind === 'allowed') continue;
    if (!path!.certain && !(where.kind === 'host' && facts[where.path]?.exists)) continue;
    if (where.kind === 'traversal') {
      refuse('paths.traversal', `${shown(arg)} goes up (..) out of the workspace`);
      continue;
    }
    if (where.kind === 'absolute') {
      refuse('paths.absolute', `${shown(arg)} is an absolute path outside the workspace`);
      continue;
    }
    const link = where.upFrom.find((up) => facts[up]?.exists && facts[up]!.real !== up);
    if (link !== undefined) {
      const real = (facts[link] as { real: string }).real;
      refuse('paths.escape', `${shown(arg)} goes up (..) from a symlink (to ${shown(real)}), which leads elsewhere`);
      continue;
    }
    const hostPath = where.path;
    const real = resolvedThroughLinks(hostPath, facts);
    if (!isWithin(real, workspace.host))
      refuse('paths.escape', `${shown(arg)} leads outside the workspace (to ${shown(real)}) through a symlink`);
  }
  return violations;
}

/** Whether the guards apply: the profile asks for them (`paths: workspace`), and the mode is not danger. */
export function guardsApply(rules: CommandRules, mode: Mode): boolean {
  return rules.paths === 'workspace' && mode !== 'danger';
}
