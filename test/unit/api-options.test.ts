// The library door's option check (src/api-options.ts), and why the CLI may skip it: every RunOptions
// the CLI builds from any flags its parser accepts passes the same schema.
import { describe, expect, it } from 'vitest';
import { checkCompileOptions, checkRunOptions } from '../../src/api-options.js';
import { parseRunArgv } from '../../src/cli/run-flags.js';
import { runOptionsOf } from '../../src/cli/run-command.js';
import { SbxError } from '../../src/errors.js';

describe('the CLI builds only options the library door accepts', () => {
  it.each([
    [['--', 'true']],
    [
      [
        '-p',
        'agent',
        '-w',
        '/w',
        '--bind',
        '/a:/b',
        '--ro-bind',
        '/c',
        '-e',
        'A=1',
        '--keep-env',
        'LC_*',
        '--network',
        'host',
        '--',
        'make',
      ],
    ],
    [
      [
        '--allow-domain',
        'example.com',
        '--danger',
        '--allow-sensitive-roots',
        '--allow-denylisted-commands',
        '--backend',
        'auto',
        '--',
        'x',
      ],
    ],
    [
      [
        '--memory',
        '1GiB',
        '--pids',
        '100',
        '--cpus',
        '1.5',
        '--timeout',
        '10s',
        '--cpu-time',
        '5s',
        '--file-size',
        '1MiB',
        '--nofile',
        '64',
        '--tmp-size',
        '64MiB',
        '--',
        'x',
      ],
    ],
    [['--capture', '--capture-limit', '1MiB', '--no-audit', '--approval', 'never', '--', 'x']],
    [['--audit-file', '/tmp/a.jsonl', '--report-fd', '3', '--', 'x']],
    [['--memory', 'none', '--address-space', '16GiB', '--trust-profile', 'a'.repeat(64), '--shell', 'ls | wc -l']],
  ])('%j', (argv) => {
    const parsed = parseRunArgv(argv)!;
    expect(parsed).toBeDefined();
    const options = runOptionsOf(parsed.command, parsed.flags);
    expect(checkRunOptions(options)).toBe(options);
  });
});

describe('the CLI asks about a destination on the terminal only when the command cannot read it', () => {
  const asks = (argv: string[], tty: boolean) => {
    const saved = process.stdin.isTTY;
    process.stdin.isTTY = tty;
    try {
      const parsed = parseRunArgv(argv)!;
      return runOptionsOf(parsed.command, parsed.flags).onNetworkRequest !== undefined;
    } finally {
      process.stdin.isTTY = saved;
    }
  };
  it.each([
    [['--capture', '--', 'x'], true, true],
    [['--', 'x'], true, false],
    [['--capture', '--', 'x'], false, false],
    [['--capture', '--approval', 'never', '--', 'x'], true, false],
  ])('%j with a terminal on stdin: %s → asks: %s', (argv, tty, expected) => {
    expect(asks(argv, tty)).toBe(expected);
  });
});

describe('checkRunOptions / checkCompileOptions', () => {
  it('takes process.env itself as hostEnv (an exotic object, not a plain record)', () => {
    const options = { command: ['true'], hostEnv: process.env };
    expect(checkRunOptions(options)).toBe(options);
    expect(checkCompileOptions(options)).toBe(options);
  });

  const invalid = (value: unknown, check = checkRunOptions) => {
    try {
      check(value as never);
    } catch (error) {
      expect(error).toBeInstanceOf(SbxError);
      expect((error as SbxError).code).toBe('OPTIONS_INVALID');
      return error as SbxError;
    }
    throw new Error(`accepted ${JSON.stringify(value)}`);
  };

  it("returns the caller's own object (functions and the signal keep their identity)", () => {
    const signal = new AbortController().signal;
    const approve = async () => 'once' as const;
    const options = { command: ['x'], signal, approve, input: new Uint8Array([1]) };
    expect(checkRunOptions(options)).toBe(options);
  });

  it.each([
    ['a string command', { command: 'ls' }, 'run(): command: Invalid input: expected array, received string'],
    ['no command', {}, 'run(): command: give exactly one of command (an argv array) and shell (a string)'],
    [
      'a non-string argument',
      { command: ['ls', 5] },
      'run(): command.1: Invalid input: expected string, received number',
    ],
    [
      'a bad bind access',
      { command: ['x'], binds: [{ source: '/a', access: 'rwx' }] },
      'run(): binds.0.access: Invalid option: expected one of "ro"|"rw"',
    ],
    [
      'a fractional capture limit',
      { command: ['x'], captureLimitBytes: 1.5 },
      'run(): captureLimitBytes: Invalid input: expected int, received number',
    ],
    ['input of a wrong type', { command: ['x'], input: 5 }, 'run(): input: must be a string or a Uint8Array'],
    [
      'an onNetworkRequest that is not a function',
      { command: ['x'], onNetworkRequest: 'once' },
      'run(): onNetworkRequest: must be a function ({ host, port }) => "once" | "always" | "deny" (or a Promise of one)',
    ],
    [
      'a question timeout no one could answer in',
      { command: ['x'], networkRequestTimeoutMs: 10 },
      'run(): networkRequestTimeoutMs: must be at least 1000 (a person answers)',
    ],
  ])('%s', (_what, value, message) => {
    expect(invalid(value).message).toBe(message);
  });

  it('not an object', () => {
    expect(invalid(null).message).toBe('run(): options must be an object, got null');
    expect(invalid(['ls']).message).toBe('run(): options must be an object, got an array');
    expect(invalid('ls', checkCompileOptions).message).toBe('compile(): options must be an object, got string');
  });

  it('compile() refuses run-only keys', () => {
    expect(invalid({ command: ['x'], stdio: 'capture' }, checkCompileOptions).message).toBe(
      'compile(): (options): Unrecognized key: "stdio"',
    );
  });
});
