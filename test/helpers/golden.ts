// Golden argv files: one argument per line. Written only when SBX_UPDATE_GOLDEN=1; otherwise a
// missing or different file fails the test (CI never sets the variable).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { expect } from 'vitest';
import { type BwrapOp, MOUNT_FLAGS, mountTarget, parseBwrapArgs } from './bwrap-argv.js';
import { REPO_ROOT } from './paths.js';

export const UPDATE_GOLDEN = process.env.SBX_UPDATE_GOLDEN === '1';

export function toGoldenText(argv: readonly string[]): string {
  for (const arg of argv) {
    // One argument per line only works if no argument spans lines.
    if (/[\n\r]/.test(arg))
      throw new Error(`argument ${JSON.stringify(arg)} contains a line break; golden files cannot hold it`);
  }
  return argv.join('\n') + '\n';
}

export function fromGoldenText(text: string): string[] {
  if (!text.endsWith('\n')) throw new Error('golden file must end with a newline');
  return text.slice(0, -1).split('\n');
}

/** Compare `argv` with the golden file, element by element; (re)write it only in update mode. */
export function expectGolden(file: string, argv: readonly string[]): void {
  const text = toGoldenText(argv);
  if (UPDATE_GOLDEN) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    return;
  }
  if (!existsSync(file)) {
    throw new Error(
      `missing golden file ${relative(REPO_ROOT, file)}: review the argv, then run SBX_UPDATE_GOLDEN=1 npx vitest run test/unit/backend/bwrap/golden.test.ts`,
    );
  }
  expect(
    [...argv],
    `argv differs from ${relative(REPO_ROOT, file)} (a security-relevant change: review, then SBX_UPDATE_GOLDEN=1)`,
  ).toEqual(fromGoldenText(readFileSync(file, 'utf8')));
}

import { BRIDGE_JUDGE } from '../../src/network/bridge-paths.js';

/** Why each non-mount bwrap option is there (mounts carry their reason in the Policy). */
const BWRAP_REASONS: Record<string, string> = {
  '--unshare-user': 'own user namespace: no setuid helper, host uids mapped away',
  '--disable-userns': 'no nested user namespace: no fresh capability set to attack the kernel with',
  '--unshare-pid': 'own pid namespace: host processes invisible and unsignalable',
  '--unshare-ipc': 'own System V IPC and POSIX queues',
  '--unshare-uts': 'own hostname',
  '--unshare-net': 'own network namespace: loopback only',
  '--unshare-cgroup-try': 'own cgroup namespace (hides host cgroup paths; -try: some hosts refuse it)',
  '--uid': 'identity inside',
  '--gid': 'identity inside',
  '--hostname': 'hostname inside',
  '--die-with-parent': 'the sandbox ends when sbx does',
  '--new-session': 'own session: no TIOCSTI into the terminal (CVE-2017-5226)',
  '--cap-drop': 'no capabilities inside',
  '--clearenv': 'environment built from nothing',
  '--setenv': 'policy env',
  '--chdir': 'working directory',
  '--json-status-fd': "sbx reads the command's pid and exit status here",
  '--seccomp': 'system call filter, installed just before exec',
  '--args': 'the options travel on a pipe, never in /proc/PID/cmdline',
};

function goldenToken(token: string): string {
  return token === '' || /[\s#"'\\]/.test(token) ? JSON.stringify(token) : token;
}

/**
 * A bwrap argv as a reviewer reads it: the binary, then one operation a line (its modifiers first)
 * with the reason beside it: a mount's from the Policy (matched by target, in order), any other
 * option's from BWRAP_REASONS. `--` and the command close it.
 */
export function bwrapGoldenText(
  argv: readonly string[],
  mounts: readonly { target: string; reason: string }[],
): string {
  const parsed = parseBwrapArgs(argv.slice(1));
  let cursor = 0;
  const reasonOf = (op: BwrapOp): string => {
    if (!MOUNT_FLAGS.has(op.flag)) return BWRAP_REASONS[op.flag] ?? '';
    const target = mountTarget(op);
    const found = mounts.findIndex((m, i) => i >= cursor && m.target === target);
    if (found < 0) return 'NO POLICY MOUNT';
    cursor = found;
    return mounts[found]!.reason;
  };
  const lines = parsed.ops.map((op) => {
    const modifiers = Object.entries(op.modifiers).flat();
    const text = [...modifiers, op.flag, ...op.operands].map(goldenToken).join(' ');
    return `${text.padEnd(60)} # ${reasonOf(op)}`;
  });
  // Under transparent capture the network judge starts the bridge (backend/shared/bridge.ts): its own line.
  const judged = parsed.command[0] === BRIDGE_JUDGE ? parsed.command.indexOf('--') + 1 : 0;
  const judge = parsed.command.slice(0, judged).map(goldenToken).join(' ');
  const command = [...(judged > 0 ? [] : ['--']), ...parsed.command.slice(judged)].map(goldenToken).join(' ');
  const judgeLine = `${`-- ${judge}`.padEnd(60)} # ${JUDGE_REASON}`;
  return [argv[0]!, ...lines, ...(judged > 0 ? [judgeLine] : []), command].join('\n') + '\n';
}

/** Why the judge's line is there (its descriptors: the filter it installs, its reports, the bridge's port). */
const JUDGE_REASON =
  'network judge: installs the seccomp filter (fd 5) for the command, captures its TCP connects, reports on fd 6; the bridge announces its port on fd 3';

/** Compare a rendered golden text with its file; (re)write it only in update mode. */
export function expectGoldenText(file: string, text: string): void {
  if (UPDATE_GOLDEN) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    return;
  }
  if (!existsSync(file)) {
    throw new Error(
      `missing golden file ${relative(REPO_ROOT, file)}: review it, then run SBX_UPDATE_GOLDEN=1 npx vitest run test/unit/backend/bwrap/golden.test.ts`,
    );
  }
  expect(
    text,
    `differs from ${relative(REPO_ROOT, file)} (a security-relevant change: review, then SBX_UPDATE_GOLDEN=1)`,
  ).toBe(readFileSync(file, 'utf8'));
}

/** Why each nsjail option is there (mounts carry their reason in the Policy). */
const NSJAIL_REASONS: Record<string, string> = {
  '--log_fd': 'sbx reads what became of the command from the log',
  '--config': 'the environment travels in a config on a descriptor, never in argv',
  '--mode': 'once: one command, then nsjail exits with its status',
  '--experimental_mnt': "the new mount API (mounts built from descriptors, as sbx's checks saw them)",
  '--hostname': 'hostname inside',
  '--user': 'identity inside',
  '--group': 'identity inside',
  '--cwd': 'working directory',
  '--nice_level': 'no priority change',
  '--time_limit': "no nsjail timeout: sbx's own timeout applies",
  '--rlimit_as': "resource limit: the policy's value, else as sbx found it (hard, soft)",
  '--rlimit_core': 'no core dumps',
  '--rlimit_cpu': "resource limit: the policy's value, else as sbx found it (hard, soft)",
  '--rlimit_fsize': "resource limit: the policy's value, else as sbx found it (hard, soft)",
  '--rlimit_nofile': "resource limit: the policy's value, else as sbx found it (hard, soft)",
  '--rlimit_nproc': "resource limit: the policy's value, else as sbx found it (hard, soft)",
  '--rlimit_stack': "resource limit: the policy's value, else as sbx found it (hard, soft)",
  '--rlimit_memlock': "resource limit: the policy's value, else as sbx found it (hard, soft)",
  '--rlimit_rtprio': "resource limit: the policy's value, else as sbx found it (hard, soft)",
  '--rlimit_msgqueue': "resource limit: the policy's value, else as sbx found it (hard, soft)",
  '--disable_clone_newnet': "the host's network (the policy shares it)",
  '--seccomp_string': 'system call filter (Kafel)',
  '--pass_fd': "the network judge's descriptors: sbx's filter (BPF) it installs for the command, its reports",
  '--exec_file': 'the command, by its path inside (nsjail does not search PATH)',
};

const NSJAIL_MOUNTS = new Set(['--bindmount', '--bindmount_ro', '--mount', '--symlink', '--proc_path', '--tmpfsmount']);

/** The path inside of an nsjail mount option's value (`src:dst`, `src:dst:type:options`, or a path). */
function nsjailTarget(flag: string, value: string): string {
  if (flag === '--proc_path') return value;
  return value.split(':')[1] ?? value;
}

/**
 * An expanded nsjail launch as a reviewer reads it: the binary, one option a line with its value and
 * the reason beside it (a mount's from the Policy, in order), `--` and the command, then the
 * descriptors' contents (`# fd N:`) as they are.
 */
export function nsjailGoldenText(
  expanded: readonly string[],
  mounts: readonly { target: string; reason: string }[],
): string {
  const fdAt = expanded.findIndex((a) => a.startsWith('# fd '));
  const args = expanded.slice(1, fdAt < 0 ? undefined : fdAt);
  const end = args.indexOf('--');
  let cursor = 0;
  const reasonOf = (flag: string, value: string | undefined): string => {
    if (!NSJAIL_MOUNTS.has(flag) || value === undefined) return NSJAIL_REASONS[flag] ?? 'NO REASON';
    const target = nsjailTarget(flag, value);
    // nsjail has no --dev: the policy's one `dev` mount becomes a tmpfs and the nodes bound into it.
    const wanted = target.startsWith('/dev/') ? [target, '/dev'] : [target];
    const found = mounts.findIndex((m, i) => i >= cursor && wanted.includes(m.target));
    if (found < 0) return 'NO POLICY MOUNT';
    cursor = found;
    return mounts[found]!.reason;
  };
  const lines: string[] = [expanded[0]!];
  const options = args.slice(0, end < 0 ? undefined : end);
  for (let i = 0; i < options.length; i++) {
    const flag = options[i]!;
    const value = options[i + 1]?.startsWith('--') === false ? options[++i] : undefined;
    const text = [flag, ...(value === undefined ? [] : [value])].map(goldenToken).join(' ');
    lines.push(`${text.padEnd(60)} # ${reasonOf(flag, value)}`);
  }
  if (end >= 0) lines.push(args.slice(end).map(goldenToken).join(' '));
  if (fdAt >= 0) lines.push(...expanded.slice(fdAt));
  return lines.join('\n') + '\n';
}

/** What each record of sbx-landlock's configuration does (native/sbx-landlock.c reads them in order). */
const LANDLOCK_REASONS: Record<string, string> = {
  pin: 'a descriptor sbx opened and checked; the grant for that path is made on it',
  mkdir: "a private stand-in in the session directory (the sandbox's /tmp or HOME)",
  ro: 'Landlock: read and execute beneath',
  rw: 'Landlock: read, write and create beneath',
  dev: 'Landlock: this device node only',
  rlimit: "resource limit (resource:soft:hard), the command's alone: set just before exec",
  cgroup: "the command's process moves into this session cgroup; the helper's monitor stays out",
  setsid: 'own session: no TIOCSTI into the terminal (CVE-2017-5226)',
  seccomp: 'the filter on fd 4, installed just before exec',
  cwd: 'working directory',
  env: 'policy env',
  arg: 'the command',
  except: 'Landlock: left out of the grant above it (a masked path)',
  guard: 'inside a read-write grant, must not change: snapshotted, put back after the run (native/sbx-guard.c)',
  net: "TCP allowed: the policy shares the host's network (else Landlock denies every TCP connect and bind)",
};

/**
 * A landlock launch (`expandLandlockLaunch`) as a reviewer reads it: the helper, then each record of
 * its configuration with the reason beside it, then the descriptors it gets.
 */
export function landlockGoldenText(expanded: readonly string[]): string {
  const lines = expanded.map((line, i) => {
    if (i === 0 || line.startsWith('# ')) return line;
    const key = line.slice(0, line.indexOf('='));
    const reason = LANDLOCK_REASONS[key] ?? 'NO REASON';
    return `${line.padEnd(60)} # ${reason}`;
  });
  return lines.join('\n') + '\n';
}

/**
 * The writable host binds of a launch, as [source, target] pairs, are the workspace and nothing but
 * directories inside it bound over themselves (the parents of protected git state, pinned so they
 * cannot be renamed: policy/derive/overlay.ts pinParents); none in read-only mode.
 */
export function expectOnlyWorkspaceWritable(
  pairs: readonly (readonly (string | undefined)[])[],
  workspace: { host: string; sandbox: string },
  readOnly: boolean,
): void {
  const [first, ...inside] = pairs;
  if (readOnly) expect(pairs).toEqual([]);
  else expect(first).toEqual([workspace.host, workspace.sandbox]);
  for (const [source, target] of inside) {
    expect(source?.startsWith(`${workspace.host}/`), source).toBe(true);
    expect(target).toBe(`${workspace.sandbox}${source!.slice(workspace.host.length)}`);
  }
}
