// When a run is warned that its command can type into the caller's terminal (TIOCSTI): stdin a
// terminal, no seccomp rule denying TIOCSTI, and a kernel that still allows it. The kernel's answer is
// passed in, so nothing here reads /proc.
import { describe, expect, it } from 'vitest';
import { TIOCSTI_WARNING, terminalWarnings } from '../../../src/pipeline/terminal.js';
import { type SeccompSettings, resolveSeccompRules } from '../../../src/seccomp/index.js';

function seccomp(overrides: Partial<SeccompSettings>) {
  const settings: SeccompSettings = { preset: 'default', add: [], remove: [], allowIoUring: false, ...overrides };
  return { preset: settings.preset, rules: resolveSeccompRules(settings) };
}
const allows = () => true;
const refuses = () => false;

describe('terminalWarnings', () => {
  it.each([
    ['preset off', seccomp({ preset: 'off' })],
    ['default with ioctl removed', seccomp({ remove: ['ioctl'] })],
    ['strict with ioctl removed', seccomp({ preset: 'strict', remove: ['ioctl'] })],
  ])('%s, stdin a terminal, the kernel allows TIOCSTI: the warning', (_what, rules) => {
    expect(terminalWarnings(rules, true, allows)).toEqual([TIOCSTI_WARNING]);
  });

  it.each([
    ['default', seccomp({})],
    ['strict', seccomp({ preset: 'strict' })],
    ['off with ioctl added (every ioctl denied)', seccomp({ preset: 'off', add: ['ioctl'] })],
  ])('%s blocks TIOCSTI: no warning', (_what, rules) => {
    expect(terminalWarnings(rules, true, allows)).toEqual([]);
  });

  it('no warning when stdin is no terminal (the command gets its own session) or the kernel refuses TIOCSTI', () => {
    const off = seccomp({ preset: 'off' });
    expect(terminalWarnings(off, false, allows)).toEqual([]);
    expect(terminalWarnings(off, true, refuses)).toEqual([]);
  });

  it('the kernel is asked only when the rest would warn', () => {
    const asked = () => {
      throw new Error('asked');
    };
    expect(terminalWarnings(seccomp({}), true, asked)).toEqual([]);
    expect(terminalWarnings(seccomp({ preset: 'off' }), false, asked)).toEqual([]);
  });

  it('says what can happen and both fixes', () => {
    expect(TIOCSTI_WARNING).toMatch(/^terminal\.tiocsti: /);
    expect(TIOCSTI_WARNING).toContain('can type into it');
    expect(TIOCSTI_WARNING).toContain('keep seccomp on');
    expect(TIOCSTI_WARNING).toContain('without a terminal on stdin');
    expect(TIOCSTI_WARNING).not.toContain('\n');
  });
});
