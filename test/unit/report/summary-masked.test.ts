// The stderr summary after a failure names the masked files (report/report.ts summaryLines): a
// command that needed one learns why without --verbose. A success says nothing of them.
import { describe, expect, it } from 'vitest';
import { summaryLines, type Report } from '../../../src/report/report.js';

const WHERE =
  'if the command needed one, let it in with --unmask GLOB (or sensitive.except in the profile); --verbose lists them';
const report = (exitCode: number, paths: string[], count = paths.length): Report => ({
  format: 1,
  sessionId: 's',
  profile: { name: 'default', file: '', hash: '' },
  backend: 'bwrap',
  command: ['npm', 'test'],
  exitCode,
  setBy: 'child',
  durationMs: 12,
  violations: [],
  masked: { count, paths },
});

describe('summaryLines: masked files', () => {
  it('a failed command: the count, the first three paths, and where to look', () => {
    expect(summaryLines(report(1, ['/p/.env', '/p/keys/dev.pem', '/p/a.key', '/p/b.key'], 5))).toEqual([
      'sbx: npm exited 1 [profile default, session s, 12 ms]',
      `sbx: 5 sensitive files were masked (/p/.env, /p/keys/dev.pem, /p/a.key, and 2 more); ${WHERE}`,
    ]);
    expect(summaryLines(report(2, ['/p/.env']))[1]).toBe(`sbx: 1 sensitive file was masked (/p/.env); ${WHERE}`);
  });

  it('a name with a control character is quoted; success or nothing masked adds no line', () => {
    expect(summaryLines(report(1, ['/p/a\nb.pem']))[1]).toContain('("/p/a\\nb.pem")');
    expect(summaryLines(report(0, ['/p/.env']))).toHaveLength(1);
    expect(summaryLines(report(1, []))).toHaveLength(1);
  });
});
