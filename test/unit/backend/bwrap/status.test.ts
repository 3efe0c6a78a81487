// bwrap's --json-status-fd as backend/host/exec.ts reads it while it streams in: the sandbox's init pid
// once built, the command's exit status once it ended (sbx-landlock writes the same lines).
import { describe, expect, it } from 'vitest';
import { statusChildPid, statusExitCode } from '../../../../src/backend/bwrap/status.js';

describe('bwrap status lines', () => {
  it('reads child-pid first, exit-code once written (as bwrap and sbx-landlock format them)', () => {
    const started = '{ "child-pid": 4242 }\n';
    expect(statusChildPid(started)).toBe(4242);
    expect(statusExitCode(started)).toBeUndefined();
    const ended = `${started}{ "exit-code": 3 }\n`;
    expect(statusExitCode(ended)).toBe(3);
    expect(statusChildPid(ended)).toBe(4242);
  });

  it('nothing yet (bwrap failed before building the sandbox): neither', () => {
    expect(statusChildPid('')).toBeUndefined();
    expect(statusExitCode('')).toBeUndefined();
  });
});
