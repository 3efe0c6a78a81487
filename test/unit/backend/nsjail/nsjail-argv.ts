// A reader for the nsjail argv sbx produces, so tests assert on options (flag + value) instead of on
// substrings. Every option compileNsjail may emit is listed with its arity: an unknown one makes the
// reader throw, so a new flag (--keep_caps, --proc_rw, ...) cannot slip in without a test noticing.

const ARITY: Record<string, number> = {
  '--disable_clone_newnet': 0,
  '--disable_clone_newpid': 0,
  '--disable_clone_newipc': 0,
  '--disable_clone_newuts': 0,
  '--disable_clone_newcgroup': 0,
  '--skip_setsid': 0,
  '--rw': 0,
  '--disable_proc': 0,
  '--log_fd': 1,
  '--config': 1,
  '--mode': 1,
  '--experimental_mnt': 1,
  '--hostname': 1,
  '--user': 1,
  '--group': 1,
  '--cwd': 1,
  '--nice_level': 1,
  '--time_limit': 1,
  '--rlimit_as': 1,
  '--rlimit_core': 1,
  '--rlimit_cpu': 1,
  '--rlimit_fsize': 1,
  '--rlimit_nofile': 1,
  '--rlimit_nproc': 1,
  '--rlimit_stack': 1,
  '--rlimit_memlock': 1,
  '--rlimit_rtprio': 1,
  '--rlimit_msgqueue': 1,
  '--bindmount': 1,
  '--bindmount_ro': 1,
  '--mount': 1,
  '--symlink': 1,
  '--proc_path': 1,
  '--seccomp_string': 1,
  '--pass_fd': 1,
  '--exec_file': 1,
};

export const RLIMIT_FLAGS = Object.keys(ARITY).filter((f) => f.startsWith('--rlimit_'));
/** Options that place something in the mount tree, in the order nsjail applies them (procfs goes last). */
export const MOUNT_FLAGS = new Set(['--bindmount', '--bindmount_ro', '--mount', '--symlink', '--proc_path']);

export interface NsjailOp {
  flag: string;
  value: string | undefined;
  index: number;
}

export interface ParsedNsjail {
  ops: NsjailOp[];
  command: string[];
}

export function parseNsjailArgs(args: readonly string[]): ParsedNsjail {
  const ops: NsjailOp[] = [];
  for (let i = 0; i < args.length; ) {
    const flag = args[i]!;
    if (flag === '--') return { ops, command: args.slice(i + 1) };
    const arity = ARITY[flag];
    if (arity === undefined) throw new Error(`unexpected nsjail argument ${JSON.stringify(flag)} at index ${i}`);
    if (arity === 1 && i + 1 >= args.length) throw new Error(`${flag} at index ${i} lacks its value`);
    ops.push({ flag, value: arity === 1 ? args[i + 1] : undefined, index: i });
    i += 1 + arity;
  }
  throw new Error('nsjail argv has no "--" before the command');
}

export function valuesOf(parsed: ParsedNsjail, flag: string): string[] {
  return parsed.ops.filter((op) => op.flag === flag).map((op) => op.value!);
}

export function hasFlag(parsed: ParsedNsjail, flag: string): boolean {
  return parsed.ops.some((op) => op.flag === flag);
}

export interface MountOp {
  flag: string;
  source: string | undefined;
  target: string;
  fstype?: string;
  options?: string;
}

/** `--bindmount SRC:DST`, `--mount SRC:DST:FSTYPE:OPTIONS`, `--symlink LINK:DST`, `--proc_path DST`. */
export function mountOps(parsed: ParsedNsjail): MountOp[] {
  return parsed.ops
    .filter((op) => MOUNT_FLAGS.has(op.flag))
    .map((op) => {
      if (op.flag === '--proc_path') return { flag: op.flag, source: undefined, target: op.value! };
      const [source, target, fstype, ...options] = op.value!.split(':');
      if (target === undefined) throw new Error(`${op.flag} ${op.value} has no target`);
      return {
        flag: op.flag,
        source,
        target,
        ...(op.flag === '--mount' ? { fstype: fstype!, options: options.join(':') } : {}),
      };
    });
}

export function isWithinPath(path: string, root: string): boolean {
  return path === root || root === '/' || path.startsWith(root + '/');
}

/** Mounts a later one hides (a mount over a parent of an earlier target). procfs is mounted last by nsjail. */
export function hiddenMounts(mounts: readonly MountOp[]): string[] {
  const ordered = [
    ...mounts.filter((m) => m.flag !== '--proc_path'),
    ...mounts.filter((m) => m.flag === '--proc_path'),
  ];
  const out: string[] = [];
  ordered.forEach((later, j) => {
    for (const earlier of ordered.slice(0, j)) {
      if (earlier.target !== later.target && isWithinPath(earlier.target, later.target))
        out.push(`${earlier.flag} ${earlier.target} is hidden by the later ${later.flag} ${later.target}`);
    }
  });
  return out;
}
