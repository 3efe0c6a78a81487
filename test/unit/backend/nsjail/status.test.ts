// parseNsjailStatus over logs captured from real nsjail runs (fixtures/root: as root, fixtures/user:
// as an unprivileged user; captured with the argv compileNsjail produces, --log_fd to a pipe), each
// with the exit nsjail had. The runtime reports exactly as for bwrap: the command's code, 128+signal,
// 124 on a timeout, and SbxError for a sandbox nsjail could not build.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  nsjailSetupError,
  parseNsjailStatus,
  type NsjailExit,
  type NsjailStatus,
} from '../../../../src/backend/nsjail/status.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');

function log(who: 'root' | 'user', name: string): string {
  return readFileSync(join(FIXTURES, who, `${name}.log`), 'utf8');
}

const ran = (code: number, extra: Partial<NsjailStatus> = {}): NsjailStatus => ({
  started: true,
  code,
  timedOut: false,
  violations: [],
  ...extra,
});

const CASES: { name: string; exit: NsjailExit; expected: NsjailStatus }[] = [
  { name: 'exit-0', exit: { code: 0, signal: null }, expected: ran(0) },
  { name: 'exit-42', exit: { code: 42, signal: null }, expected: ran(42) },
  // 255 from the command is the command's: it was reaped, no "Couldn't launch".
  { name: 'exit-255', exit: { code: 255, signal: null }, expected: ran(255) },
  { name: 'killed-9', exit: { code: 137, signal: null }, expected: ran(137, { signal: 'SIGKILL' }) },
  {
    name: 'timeout',
    exit: { code: 137, signal: null },
    expected: ran(124, {
      timedOut: true,
      signal: 'SIGKILL',
      violations: [
        { phase: 'runtime', kind: 'timeout', rule: 'limits.timeout', detail: "nsjail's time limit ended the command" },
      ],
    }),
  },
  {
    name: 'sigsys',
    exit: { code: 159, signal: null },
    expected: ran(159, {
      signal: 'SIGSYS',
      violations: [{ phase: 'runtime', kind: 'seccomp', rule: 'seccomp', detail: 'the command was killed by SIGSYS' }],
    }),
  },
  // nsjail got SIGTERM: it killed the sandbox (SIGKILL) and reports the signal it got.
  { name: 'sigterm', exit: { code: 143, signal: null }, expected: ran(143, { signal: 'SIGTERM' }) },
  // nsjail itself SIGKILLed after starting the command (sbx's grace ran out): the command died with it.
  { name: 'nsjail-killed', exit: { code: null, signal: 'SIGKILL' }, expected: ran(137, { signal: 'SIGKILL' }) },
  {
    name: 'missing-bind',
    exit: { code: 255, signal: null },
    expected: {
      started: false,
      code: 255,
      timedOut: false,
      violations: [],
      failure:
        "Failed to mount mandatory point: '/opt/missing' (open_tree('/nonexistent/src'): No such file or directory)",
    },
  },
  {
    name: 'execve-enoent',
    exit: { code: 255, signal: null },
    expected: {
      started: false,
      code: 255,
      timedOut: false,
      violations: [],
      failure: "execve('/nonexistent/cmd') failed: No such file or directory",
    },
  },
  {
    name: 'execve-eacces',
    exit: { code: 255, signal: null },
    expected: {
      started: false,
      code: 255,
      timedOut: false,
      violations: [],
      failure: "execve('./hello.txt') failed: Permission denied",
    },
  },
];

describe.each(['root', 'user'] as const)('nsjail logs captured as %s', (who) => {
  it.each(CASES)('$name', ({ name, exit, expected }) => {
    expect(parseNsjailStatus(exit, log(who, name))).toEqual(expected);
  });
});

describe('failures before the command runs (root-only captures)', () => {
  it('a Kafel policy nsjail cannot compile', () => {
    expect(parseNsjailStatus({ code: 255, signal: null }, log('root', 'kafel-error'))).toEqual({
      started: false,
      code: 255,
      timedOut: false,
      violations: [],
      failure: "Could not compile policy: 1:19: Undefined identifier `nosuchsyscall'",
    });
  });

  it('a working directory that does not exist inside', () => {
    expect(parseNsjailStatus({ code: 255, signal: null }, log('root', 'cwd-missing')).failure).toBe(
      "chdir('/nonexistent'): No such file or directory",
    );
  });

  it('no log at all (nsjail not started, or killed at once)', () => {
    expect(parseNsjailStatus({ code: 255, signal: null }, '')).toEqual({
      started: false,
      code: 255,
      timedOut: false,
      violations: [],
      failure: 'nsjail exited with status 255 and no log',
    });
    expect(parseNsjailStatus({ code: null, signal: 'SIGKILL' }, '').failure).toBe('nsjail was killed by SIGKILL');
  });

  it('the command itself exiting 255 after a launch failure line is still a launch failure (the log decides, not the code)', () => {
    const broken = log('root', 'exit-255').replace(
      /(\[I\]\[[^\]]*\] pid=)/,
      "[E][2026-01-01T00:00:00+0000][1] standaloneMode():299 Couldn't launch the child process\n$1",
    );
    expect(parseNsjailStatus({ code: 255, signal: null }, broken).started).toBe(false);
  });
});

describe('nsjailSetupError', () => {
  const failed = (name: string) => parseNsjailStatus({ code: 255, signal: null }, log('root', name));

  it('execve ENOENT → COMMAND_NOT_FOUND (127); EACCES → COMMAND_NOT_EXECUTABLE (126)', () => {
    expect(nsjailSetupError(failed('execve-enoent'))).toMatchObject({ code: 'COMMAND_NOT_FOUND', exitCode: 127 });
    expect(nsjailSetupError(failed('execve-eacces'))).toMatchObject({ code: 'COMMAND_NOT_EXECUTABLE', exitCode: 126 });
  });

  it("anything else → SANDBOX_SETUP (125) naming nsjail's reason", () => {
    const e = nsjailSetupError(failed('missing-bind'));
    expect(e).toMatchObject({ code: 'SANDBOX_SETUP', exitCode: 125 });
    expect(e.message).toBe(
      "nsjail could not build the sandbox (exit 255): Failed to mount mandatory point: '/opt/missing' (open_tree('/nonexistent/src'): No such file or directory)",
    );
    expect(e.hint).toMatch(/sbx explain --backend nsjail/);
  });
});

describe('log reader', () => {
  it('ignores colour codes and lines that are not nsjail log lines', () => {
    const text =
      "noise\n\x1b[1m[I][2026-01-01T00:00:00+0000] Executing '/bin/true' for '[STANDALONE MODE]'\x1b[0m\n[I][2026-01-01T00:00:00+0000] pid=7 ([STANDALONE MODE]) exited with status: 3, (PIDs left: 0)\n";
    expect(parseNsjailStatus({ code: 3, signal: null }, text)).toEqual(ran(3));
  });
});
