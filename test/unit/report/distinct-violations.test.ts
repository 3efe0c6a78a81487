// One refusal repeated by a retrying client is one line with a count; the report keeps every occurrence.
import { describe, expect, it } from 'vitest';
import { type Report, summaryLines } from '../../../src/report/report.js';
import type { Violation } from '../../../src/policy/violation.js';

const refusal = (host: string): Violation => ({
  phase: 'runtime',
  kind: 'network',
  rule: 'network.allow',
  detail: `${host}:443 is not in network.allow`,
  host,
  port: 443,
});

function report(violations: Violation[]): Report {
  return {
    format: 1,
    sessionId: 's',
    profile: null,
    command: ['curl'],
    exitCode: 7,
    setBy: 'child',
    durationMs: 5,
    violations,
  };
}

describe('summaryLines: distinct violations', () => {
  it('prints a refusal repeated 10 times once, with its count, in order of first occurrence', () => {
    const violations = [...Array(10).fill(refusal('a.test')), refusal('b.test'), refusal('a.test')];
    const lines = summaryLines(report(violations)).slice(1);
    expect(lines).toEqual([
      'sbx:   runtime network (network.allow): a.test:443 is not in network.allow (11 times)',
      'sbx:   runtime network (network.allow): b.test:443 is not in network.allow',
    ]);
  });

  it('counts distinct violations against the shown limit, not occurrences', () => {
    const violations = Array.from({ length: 12 }, (_, i) => refusal(`h${i}.test`)).flatMap((v) => [v, v]);
    const lines = summaryLines(report(violations)).slice(1);
    expect(lines).toHaveLength(11);
    expect(lines[0]).toMatch(/h0\.test.*\(2 times\)$/);
    expect(lines[10]).toBe('sbx:   and 2 more violations: the report lists them all (--report-fd)');
  });
});
