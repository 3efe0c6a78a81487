// How a rule's source reads after a refusal: a profile line relative to cwd when shorter, a built-in
// by name, a flag, a default; in the summary's violation lines and in sbx's error line.
import { describe, expect, it } from 'vitest';
import { formatError } from '../../../src/cli/print-error.js';
import { SbxError } from '../../../src/errors.js';
import type { Violation } from '../../../src/policy/violation.js';
import { distinctViolations } from '../../../src/report/report.js';
import { showSource } from '../../../src/report/source-line.js';

const view = { cwd: '/home/alice/proj', builtinDir: '/opt/sbx/profiles' };
const line = { line: 14, col: 5, origin: 'profile' as const };

describe('showSource', () => {
  it('a profile line: relative to cwd when shorter, else absolute; a built-in by name', () => {
    const file = '/home/alice/proj/.sbx/profiles/ci.yaml';
    expect(showSource({ key: 'commands.deny[2]', file, ...line }, view)).toBe(
      '(.sbx/profiles/ci.yaml:14:5 commands.deny[2])',
    );
    expect(showSource({ key: 'mode', file: '/etc/p.yaml', ...line }, view)).toBe('(/etc/p.yaml:14:5 mode)');
    expect(showSource({ key: 'network', file: '/opt/sbx/profiles/agent.yaml', ...line }, view)).toBe(
      '(builtin:agent:14:5 network)',
    );
  });

  it('a path with control characters is quoted: a directory name cannot start a line of its own', () => {
    const file = '/home/alice/proj/x\nsbx: all clear/p.yaml';
    expect(showSource({ key: 'mode', file, ...line }, view)).toBe('("x\\nsbx: all clear/p.yaml":14:5 mode)');
  });

  it('a flag, a default, and a key not located (compile before the profile resolved)', () => {
    expect(showSource({ key: '--memory', origin: 'flag' }, view)).toBe('(flag --memory)');
    expect(showSource({ key: 'seccomp', origin: 'default' }, view)).toBe('(default seccomp)');
    expect(showSource({ key: 'writable_roots[0]' }, view)).toBe('(writable_roots[0])');
  });
});

describe('the summary and the error line name the rule', () => {
  const source = { key: 'limits.timeout', file: '/home/alice/proj/p.yaml', ...line };
  const timeout: Violation = {
    phase: 'runtime',
    kind: 'timeout',
    rule: 'limits.timeout',
    detail: 'ran past 1s',
    source,
  };

  it('each distinct violation ends with its source; without a view, as before', () => {
    expect(distinctViolations([timeout], view)).toEqual([
      { line: 'runtime timeout (limits.timeout): ran past 1s (p.yaml:14:5 limits.timeout)', count: 1 },
    ]);
    expect(distinctViolations([timeout])[0]!.line).toBe('runtime timeout (limits.timeout): ran past 1s');
  });

  it("an error's own profile line, else its first violation's; a flag's or a default's message names it already", () => {
    const own = new SbxError('HOST_STATE_WRITABLE', 'writable_roots[0]: /home/alice is HOME', {
      source: { key: 'writable_roots[0]', file: '/home/alice/proj/p.yaml', line: 3, col: 5, origin: 'profile' },
    });
    expect(formatError(own, undefined, view)[0]).toBe(
      'sbx: error: writable_roots[0]: /home/alice is HOME (p.yaml:3:5 writable_roots[0])',
    );
    const denied = new SbxError('COMMAND_DENIED', 'curl is on the deny list', {
      violations: [{ phase: 'preflight', kind: 'command', rule: 'commands.deny', detail: 'x', source }],
    });
    expect(formatError(denied, undefined, view)[0]).toBe(
      'sbx: error: curl is on the deny list (p.yaml:14:5 limits.timeout)',
    );
    const flag = new SbxError('ENV_RESERVED', 'SBX_X: reserved', { source: { key: '--env', origin: 'flag' } });
    expect(formatError(flag, undefined, view)[0]).toBe('sbx: error: SBX_X: reserved');
    expect(formatError(new SbxError('USAGE', 'no command given'), undefined, view)[0]).toBe(
      'sbx: error: no command given',
    );
  });
});
