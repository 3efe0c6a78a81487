// What sbx-landlock's restore reported on its status descriptor (native/sbx-guard.c), as violations.
// Pure. The lines come from sbx's own helper, outside the sandbox; the paths in them were named by
// the command (a file it planted), so they are only ever shown, never used.
import type { Violation } from '../../policy/violation.js';

const RULE = 'landlock.guard';

interface StatusLine {
  guarded?: number;
  reverted?: string;
  change?: string;
  restored?: number;
}

function linesOf(status: string): StatusLine[] {
  return status.split('\n').flatMap((line) => {
    try {
      const value: unknown = JSON.parse(line);
      return typeof value === 'object' && value !== null ? [value as StatusLine] : [];
    } catch {
      return [];
    }
  });
}

/**
 * One `git-state` violation per path the helper put back, and one more when it guarded paths but
 * never said it had restored them (it was killed from outside: SIGKILL, the OOM killer), so that
 * nobody takes a planted hook for checked.
 */
export function guardViolations(status: string): Violation[] {
  const lines = linesOf(status);
  const guarded = lines.find((l) => typeof l.guarded === 'number')?.guarded ?? 0;
  const violations = lines.flatMap((l): Violation[] =>
    typeof l.reverted === 'string'
      ? [{ phase: 'runtime', kind: 'git-state', rule: RULE, detail: `${l.reverted}: ${l.change ?? 'changed'}` }]
      : [],
  );
  if (guarded > 0 && !lines.some((l) => typeof l.restored === 'number')) {
    violations.push({
      phase: 'runtime',
      kind: 'git-state',
      rule: RULE,
      detail:
        `sbx-landlock ended before it could check the ${guarded} guarded paths (git hooks, git config, .sbx): ` +
        'inspect them before the next git command',
    });
  }
  return violations;
}
