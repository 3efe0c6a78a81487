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
      `missing golden file ${relative(REPO_ROOT, file)}: review the argv, then run SBX_UPDATE_GOLDEN=1 npx vitest run test/unit/core/golden.test.ts`,
    );
  }
  expect(
    [...argv],
    `argv differs from ${relative(REPO_ROOT, file)} (a security-relevant change: review, then SBX_UPDATE_GOLDEN=1)`,
  ).toEqual(fromGoldenText(readFileSync(file, 'utf8')));
}

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
  return [argv[0]!, ...lines, ['--', ...parsed.command].map(goldenToken).join(' ')].join('\n') + '\n';
}

/** Compare a rendered golden text with its file; (re)write it only in update mode. */
export function expectGoldenText(file: string, text: string): void {
  if (UPDATE_GOLDEN) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    return;
  }
  if (!existsSync(file)) {
    throw new Error(
      `missing golden file ${relative(REPO_ROOT, file)}: review it, then run SBX_UPDATE_GOLDEN=1 npx vitest run test/unit/core/golden.test.ts`,
    );
  }
  expect(
    text,
    `differs from ${relative(REPO_ROOT, file)} (a security-relevant change: review, then SBX_UPDATE_GOLDEN=1)`,
  ).toBe(readFileSync(file, 'utf8'));
}
