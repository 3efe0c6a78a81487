// Error lines: a message may quote a repository's file name or text; each part stays one line.
import { describe, expect, it } from 'vitest';
import { formatError } from '../../../src/cli/print-error.js';
import { SbxError } from '../../../src/errors.js';

describe('formatError', () => {
  it('a message, detail or hint quoting repository text stays one line, control characters visible', () => {
    const error = new SbxError('PROFILE_INVALID', 'bad\n::add-mask::x', {
      hint: 'h\r\x1b[2J',
      details: ['d\n::error::y'],
      location: { file: '/ws/a\nb.yaml', line: 1, col: 2 },
    });
    expect(formatError(error)).toEqual([
      'sbx: error: /ws/a\\nb.yaml:1:2: bad\\n::add-mask::x',
      'sbx: d\\n::error::y',
      'sbx: hint: h\\x0d\\x1b[2J',
    ]);
  });

  it("defuses the runner's legacy ##[command] form anywhere in a line", () => {
    const error = new SbxError('GIT_WORKTREE_INVALID', 'its common directory ##[add-mask]hunter2 does not exist', {
      details: ['x ##[error]y'],
    });
    const lines = formatError(error);
    expect(lines.join('\n')).not.toContain('##[');
    expect(lines[0]).toBe('sbx: error: its common directory #\\x23[add-mask]hunter2 does not exist');
    expect(lines[1]).toBe('sbx: x #\\x23[error]y');
  });
});
