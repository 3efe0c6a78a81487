// sbx-landlock's restore report (native/sbx-guard.c) read back as violations: one per path put back,
// and one when the helper guarded paths but never reported the restore.
import { describe, expect, it } from 'vitest';
import { guardViolations } from '../../../../src/backend/landlock/guard.js';

describe('guardViolations', () => {
  it('names each reverted path with its change, as git-state violations', () => {
    const status = [
      '{ "guarded": 2 }',
      '{ "child-pid": 42 }',
      '{ "reverted": "/w/.git/hooks/pre-commit", "change": "added; removed" }',
      '{ "reverted": "/w/.git/config", "change": "changed; restored" }',
      '{ "restored": 2 }',
      '{ "exit-code": 0 }',
    ].join('\n');
    expect(guardViolations(status)).toEqual([
      {
        phase: 'runtime',
        kind: 'git-state',
        rule: 'landlock.guard',
        detail: '/w/.git/hooks/pre-commit: added; removed',
      },
      { phase: 'runtime', kind: 'git-state', rule: 'landlock.guard', detail: '/w/.git/config: changed; restored' },
    ]);
  });

  it('says so when the helper guarded paths and ended before restoring them', () => {
    const [v] = guardViolations('{ "guarded": 3 }\n{ "child-pid": 42 }\n');
    expect(v?.kind).toBe('git-state');
    expect(v?.detail).toContain('ended before it could check the 3 guarded paths');
  });

  it('is silent for a run that guarded nothing, and for lines it cannot read', () => {
    expect(guardViolations('{ "child-pid": 42 }\n{ "exit-code": 0 }\nnot json\n')).toEqual([]);
  });
});
