// A small reader for the bwrap argv sbx produces, so tests assert on operations (flag + operands)
// instead of on substrings. Every option sbx may emit is listed with its arity: an unknown option
// makes the reader throw, so a new flag cannot slip into the argv without a test noticing.

const ARITY: Record<string, number> = {
  '--unshare-user': 0,
  '--unshare-pid': 0,
  '--unshare-ipc': 0,
  '--unshare-uts': 0,
  '--unshare-net': 0,
  '--unshare-cgroup-try': 0,
  '--disable-userns': 0,
  '--die-with-parent': 0,
  '--new-session': 0,
  '--clearenv': 0,
  '--uid': 1,
  '--gid': 1,
  '--hostname': 1,
  '--cap-drop': 1,
  '--perms': 1,
  '--size': 1,
  '--tmpfs': 1,
  '--proc': 1,
  '--dev': 1,
  '--remount-ro': 1,
  '--chdir': 1,
  '--json-status-fd': 1,
  '--seccomp': 1,
  '--args': 1,
  '--bind': 2,
  '--ro-bind': 2,
  '--bind-try': 2,
  '--ro-bind-try': 2,
  '--bind-fd': 2,
  '--ro-bind-fd': 2,
  '--dev-bind': 2,
  '--symlink': 2,
  '--setenv': 2,
};

/** bwrap options that change the mount table (in the order bwrap applies them). */
export const MOUNT_FLAGS = new Set([
  ...['--bind', '--ro-bind', '--bind-try', '--ro-bind-try', '--bind-fd', '--ro-bind-fd', '--dev-bind'],
  ...['--symlink', '--tmpfs', '--proc', '--dev', '--remount-ro'],
]);
/** Options that modify the next mount option only. */
const MODIFIERS = new Set(['--perms', '--size']);

export interface BwrapOp {
  flag: string;
  operands: string[];
  /** `--perms` / `--size` given just before this option. */
  modifiers: Record<string, string>;
  /** Index of the flag in the argv (without the bwrap path). */
  index: number;
}

export interface ParsedBwrap {
  ops: BwrapOp[];
  /** What follows `--`. */
  command: string[];
}

export function parseBwrapArgs(args: readonly string[]): ParsedBwrap {
  const ops: BwrapOp[] = [];
  let pending: Record<string, string> = {};
  for (let i = 0; i < args.length; ) {
    const flag = args[i]!;
    if (flag === '--') {
      if (Object.keys(pending).length > 0)
        throw new Error(`modifier ${Object.keys(pending).join(',')} not followed by a mount`);
      return { ops, command: args.slice(i + 1) };
    }
    const arity = ARITY[flag];
    if (arity === undefined) throw new Error(`unexpected bwrap argument ${JSON.stringify(flag)} at index ${i}`);
    const operands = args.slice(i + 1, i + 1 + arity);
    if (operands.length !== arity) throw new Error(`${flag} at index ${i} lacks operands`);
    if (MODIFIERS.has(flag)) {
      if (pending[flag] !== undefined) throw new Error(`${flag} given twice for one mount at index ${i}`);
      pending[flag] = operands[0]!;
    } else {
      if (Object.keys(pending).length > 0 && !MOUNT_FLAGS.has(flag))
        throw new Error(`modifier before non-mount ${flag} at index ${i}`);
      if (pending['--size'] !== undefined && flag !== '--tmpfs')
        throw new Error(`--size must be followed by --tmpfs (index ${i})`);
      ops.push({ flag, operands, modifiers: pending, index: i });
      pending = {};
    }
    i += 1 + arity;
  }
  throw new Error('bwrap argv has no "--" before the command');
}

/** The target (path inside the sandbox) of a mount op. */
export function mountTarget(op: BwrapOp): string {
  return op.flag === '--tmpfs' || op.flag === '--proc' || op.flag === '--dev' || op.flag === '--remount-ro'
    ? op.operands[0]!
    : op.operands[1]!;
}

export function mountOps(parsed: ParsedBwrap): BwrapOp[] {
  return parsed.ops.filter((op) => MOUNT_FLAGS.has(op.flag));
}

export function hasFlag(parsed: ParsedBwrap, flag: string): boolean {
  return parsed.ops.some((op) => op.flag === flag);
}

export function operandsOf(parsed: ParsedBwrap, flag: string): string[][] {
  return parsed.ops.filter((op) => op.flag === flag).map((op) => op.operands);
}

/** The environment the child gets: every `--setenv` after `--clearenv`. */
export function setenvMap(parsed: ParsedBwrap): Record<string, string> {
  const clear = parsed.ops.findIndex((op) => op.flag === '--clearenv');
  if (clear < 0) throw new Error('no --clearenv');
  const env: Record<string, string> = {};
  for (const op of parsed.ops.slice(clear)) if (op.flag === '--setenv') env[op.operands[0]!] = op.operands[1]!;
  return env;
}

export function isWithinPath(path: string, root: string): boolean {
  return path === root || root === '/' || path.startsWith(root + '/');
}

/**
 * Mounts that a later mount hides: bwrap applies operations in order, so a mount placed over a parent
 * of an earlier mount's target makes the earlier one invisible. (A remount changes flags only; the
 * same target mounted twice is a deliberate override.)
 */
export function hiddenMounts(mounts: readonly BwrapOp[]): string[] {
  const out: string[] = [];
  mounts.forEach((later, j) => {
    if (later.flag === '--remount-ro') return;
    for (const earlier of mounts.slice(0, j)) {
      const a = mountTarget(earlier);
      const b = mountTarget(later);
      if (a !== b && isWithinPath(a, b))
        out.push(
          `${earlier.flag} ${a} (argv ${earlier.index}) is hidden by the later ${later.flag} ${b} (argv ${later.index})`,
        );
    }
  });
  return out;
}
