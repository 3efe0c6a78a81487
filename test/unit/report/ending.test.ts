// How a run ended, one case per row of the README's exit code table (and the corner cases of each):
// the cases name their row, the README's rows are read from the README itself, and both directions
// are checked, so changing a row in the README or in src/report/ending.ts fails here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Ending, type EndingFacts, endingOf, refusalEnding } from '../../../src/report/ending.js';
import type { ErrorCode } from '../../../src/errors.js';
import type { Violation } from '../../../src/policy/violation.js';
import { REPO_ROOT as ROOT } from '../../helpers/paths.js';

function readmeExitRows(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Exit codes'));
  const table = section.slice(0, section.indexOf('\n## ', 1));
  return table
    .split('\n')
    .filter((line) => /^\| [^-]/.test(line) && !line.startsWith('| code |'))
    .map((line) => line.split('|')[1]!.trim());
}

const ran = (facts: Partial<EndingFacts>): EndingFacts => ({
  status: 0,
  timedOut: false,
  interrupts: [],
  observed: [],
  limits: {},
  seccomp: true,
  ...facts,
});

const oom: Violation = { phase: 'runtime', kind: 'oom', rule: 'limits.memory', detail: 'oom kill', limit: '2GiB' };
const denied: Violation = { phase: 'runtime', kind: 'network', rule: 'network.deny', detail: 'dial refused' };
const nsjailSeccomp: Violation = { phase: 'runtime', kind: 'seccomp', rule: 'seccomp', detail: 'syscall 101' };
const rule: Violation = { phase: 'preflight', kind: 'command', rule: 'commands.deny', detail: 'curl is denied' };

type Case = { row: string; name: string; ending: () => Ending; expected: Partial<Ending> & { kinds?: string[] } };

const CASES: Case[] = [
  {
    row: "the command's",
    name: 'exit 0',
    ending: () => endingOf(ran({})),
    expected: { exitCode: 0, setBy: 'child', kinds: [] },
  },
  {
    row: "the command's",
    name: 'exit 3 passes through',
    ending: () => endingOf(ran({ status: 3 })),
    expected: { exitCode: 3, setBy: 'child', kinds: [] },
  },
  {
    row: "the command's",
    name: 'what the proxy refused stays a violation',
    ending: () => endingOf(ran({ status: 7, observed: [denied] })),
    expected: { exitCode: 7, setBy: 'child', kinds: ['network'] },
  },
  {
    row: '128+N',
    name: 'SIGKILL from elsewhere is a signal violation',
    ending: () => endingOf(ran({ status: 137 })),
    expected: { exitCode: 137, setBy: 'child', signal: 'SIGKILL', kinds: ['signal'] },
  },
  {
    row: '128+N',
    name: 'SIGUSR1 is named too',
    ending: () => endingOf(ran({ status: 138 })),
    expected: { exitCode: 138, signal: 'SIGUSR1', kinds: ['signal'] },
  },
  {
    row: '128+N',
    name: "the user's own Ctrl-C is theirs, not a violation",
    ending: () => endingOf(ran({ status: 130, interrupts: [{ by: 'user', signal: 2 }] })),
    expected: { exitCode: 130, setBy: 'child', signal: 'SIGINT', interruptedBy: 'user', kinds: [] },
  },
  {
    row: '128+N',
    name: "the caller's abort is theirs",
    ending: () => endingOf(ran({ status: 143, interrupts: [{ by: 'caller', signal: 15 }] })),
    expected: { exitCode: 143, interruptedBy: 'caller', kinds: [] },
  },
  {
    row: '128+N',
    name: 'an interrupt of another signal does not excuse this one',
    ending: () => endingOf(ran({ status: 137, interrupts: [{ by: 'user', signal: 2 }] })),
    expected: { exitCode: 137, kinds: ['signal'] },
  },
  {
    row: '128+N',
    name: 'SIGKILL by the OOM killer is the memory limit, once',
    ending: () => endingOf(ran({ status: 137, observed: [oom] })),
    expected: { exitCode: 137, signal: 'SIGKILL', kinds: ['oom'] },
  },
  {
    row: '128+N',
    name: 'SIGXCPU with a cpu-time limit is that limit',
    ending: () => endingOf(ran({ status: 152, limits: { 'cpu-time': '20m' } })),
    expected: { exitCode: 152, signal: 'SIGXCPU', kinds: ['cpu-time'] },
  },
  {
    row: '128+N',
    name: 'status 152 without a cpu-time limit is no cpu-time violation',
    ending: () => endingOf(ran({ status: 152 })),
    expected: { exitCode: 152, kinds: ['signal'] },
  },
  {
    row: '128+N',
    name: 'SIGXFSZ with a file-size limit is that limit',
    ending: () => endingOf(ran({ status: 153, limits: { 'file-size': '1GiB' } })),
    expected: { exitCode: 153, signal: 'SIGXFSZ', kinds: ['file-size'] },
  },
  {
    row: '128+N',
    name: 'SIGSYS under a filter is the filter',
    ending: () => endingOf(ran({ status: 159 })),
    expected: { exitCode: 159, signal: 'SIGSYS', kinds: ['seccomp'] },
  },
  {
    row: '128+N',
    name: 'status 159 without a filter is no seccomp violation',
    ending: () => endingOf(ran({ status: 159, seccomp: false })),
    expected: { exitCode: 159, kinds: ['signal'] },
  },
  {
    row: '128+N',
    name: 'a seccomp kill nsjail named is not counted twice',
    ending: () => endingOf(ran({ status: 159, observed: [nsjailSeccomp] })),
    expected: { exitCode: 159, kinds: ['seccomp'] },
  },
  {
    row: '124',
    name: 'the timeout ended the sandbox',
    ending: () => endingOf(ran({ status: 143, timedOut: true, limits: { timeout: '30s' } })),
    expected: { exitCode: 124, setBy: 'sbx', signal: 'SIGTERM', kinds: ['timeout'] },
  },
  {
    row: '124',
    name: 'a timeout is the timeout even when the command exited by itself meanwhile',
    ending: () => endingOf(ran({ status: 0, timedOut: true, interrupts: [{ by: 'user', signal: 15 }] })),
    expected: { exitCode: 124, setBy: 'sbx', kinds: ['timeout'] },
  },
  ...(
    [
      ['2', 'USAGE'],
      ['2', 'OPTIONS_INVALID'],
      ['2', 'REPORT_FILE'],
      ['125', 'SANDBOX_SETUP'],
      ['125', 'PROFILE_UNTRUSTED'],
      ['125', 'BWRAP_MISSING'],
      ['125', 'LAUNCH_TOO_LARGE'],
      ['127', 'COMMAND_NOT_FOUND'],
      ['143', 'ABORTED'],
    ] as [string, ErrorCode][]
  ).map(
    ([row, code]): Case => ({
      row,
      name: `refused: ${code}`,
      ending: () => refusalEnding({ code, message: 'm', violations: [] }),
      expected: { exitCode: Number(row), setBy: 'sbx', kinds: [] },
    }),
  ),
  {
    row: '126',
    name: 'a command rule refuses, naming the rule',
    ending: () => refusalEnding({ code: 'COMMAND_DENIED', message: 'curl is denied', violations: [rule] }),
    expected: { exitCode: 126, setBy: 'sbx', kinds: ['command'] },
  },
  {
    row: '126',
    name: 'a policy refusal without a rule becomes one policy violation',
    ending: () => refusalEnding({ code: 'DANGER_NOT_ALLOWED', message: 'needs --danger', violations: [] }),
    expected: { exitCode: 126, setBy: 'sbx', kinds: ['policy'] },
  },
  {
    row: '126',
    name: 'a command that is not executable is no policy violation',
    ending: () => refusalEnding({ code: 'COMMAND_NOT_EXECUTABLE', message: 'x', violations: [] }),
    expected: { exitCode: 126, setBy: 'sbx', kinds: [] },
  },
];

describe('the ending of a run', () => {
  it("covers every row of the README's exit code table, and no other", () => {
    const rows = readmeExitRows();
    expect(rows.length).toBeGreaterThanOrEqual(8);
    expect([...new Set(CASES.map((c) => c.row))].sort()).toEqual([...rows].sort());
  });

  it.each(CASES)('$row: $name', ({ ending, expected }) => {
    const { kinds, ...fields } = expected;
    const got = ending();
    expect(got).toMatchObject(fields);
    if (kinds) expect(got.violations.map((v) => v.kind)).toEqual(kinds);
    if (expected.signal === undefined && fields.exitCode !== undefined && fields.exitCode <= 128) {
      expect(got.signal).toBeUndefined();
    }
  });

  it('a limit that fired carries its value', () => {
    const timeout = endingOf(ran({ status: 143, timedOut: true, limits: { timeout: '30s' } }));
    expect(timeout.violations[0]).toMatchObject({ rule: 'limits.timeout', limit: '30s' });
    const cpu = endingOf(ran({ status: 152, limits: { 'cpu-time': '20m' } }));
    expect(cpu.violations[0]).toMatchObject({ rule: 'limits.cpu_time', limit: '20m' });
  });

  it('the refusal rule id is the error code, lower case', () => {
    const ending = refusalEnding({ code: 'DANGER_NOT_ALLOWED', message: 'needs --danger', violations: [] });
    expect(ending.violations[0]).toMatchObject({ rule: 'danger_not_allowed', detail: 'needs --danger' });
  });
});
