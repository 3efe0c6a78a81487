// A shell string becomes sbx's own shell invocation in exactly one place; both a command and a
// string is a usage error (the CLI's --shell and the library's `shell` share it).
import { describe, expect, it } from 'vitest';
import { requestedArgv, shellArgv } from '../../../src/policy/command-line.js';
import { toRunOptions, type RunFlags } from '../../../src/cli/run-flags.js';

describe('requestedArgv', () => {
  it('the command, or /bin/sh -c -- STRING (a string starting with - is still the script)', () => {
    expect(requestedArgv({ command: ['make', 'test'] })).toEqual(['make', 'test']);
    expect(requestedArgv({ shell: 'ls | wc -l' })).toEqual(['/bin/sh', '-c', '--', 'ls | wc -l']);
    expect(requestedArgv({ command: [], shell: '-x' })).toEqual(shellArgv('-x'));
    expect(() => requestedArgv({ command: ['ls'], shell: 'ls' })).toThrow(expect.objectContaining({ code: 'USAGE' }));
  });

  it('the CLI passes --shell through as the library option, never as a composed sh -c argv', () => {
    const flags: RunFlags = { bind: [], roBind: [], env: [], keepEnv: [], allowDomain: [], shell: 'ls src | wc -l' };
    const options = toRunOptions(flags, []);
    expect(options.shell).toBe('ls src | wc -l');
    expect(options.command).toBeUndefined();
  });
});
