// The report's JSON Schema ships in the package (schema/report.schema.json) and is generated from the
// zod schema; the refusal report carries the run's facts; the stderr summary spells out violations.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SbxError } from '../../../src/errors.js';
import type { Violation } from '../../../src/policy/violation.js';
import { reportJsonSchema, reportSchema } from '../../../src/report/report-schema.js';
import { reportFromError, reportFromOutcome, summaryLines } from '../../../src/report/report.js';
import { refusal } from '../../../src/commands/host/command-gate.js';
import { REPO_ROOT } from '../../helpers/paths.js';

const SCHEMA_FILE = join(REPO_ROOT, 'schema', 'report.schema.json');
const profile = { name: 'default', file: '/p/default.yaml', hash: 'a'.repeat(64), source: 'builtin' as const };
const violation = (i: number): Violation => ({
  phase: 'preflight',
  kind: 'command',
  rule: 'commands.deny',
  detail: `reason ${i}`,
});

describe('the report schema', () => {
  it('schema/report.schema.json is the one generated from src/report/report-schema.ts (SBX_UPDATE_SCHEMA=1 rewrites it)', () => {
    const generated = JSON.stringify(reportJsonSchema(), null, 2) + '\n';
    if (process.env.SBX_UPDATE_SCHEMA === '1') writeFileSync(SCHEMA_FILE, generated);
    expect(readFileSync(SCHEMA_FILE, 'utf8')).toBe(generated);
  });

  it('ships in the package', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('schema');
  });

  it('a refusal report carries sessionId, profile, policyHash, durationMs and validates', () => {
    const error = new SbxError('COMMAND_DENIED', 'rm is denied', { violations: [violation(1)] });
    const report = reportFromError(error, ['rm', 'x'], {
      sessionId: 's-1',
      profile,
      policyHash: 'b'.repeat(16),
      backend: 'bwrap',
      durationMs: 12.345,
    });
    expect(report).toMatchObject({
      sessionId: 's-1',
      profile,
      policyHash: 'b'.repeat(16),
      durationMs: 12.3,
      setBy: 'sbx',
      exitCode: 126,
    });
    expect(reportSchema.safeParse(report).success).toBe(true);
  });

  it('a profile that failed to resolve: profile null, no policyHash, still valid', () => {
    const error = new SbxError('PROFILE_NOT_FOUND', 'no profile "x"');
    const report = reportFromError(error, ['true'], { sessionId: 's-2', profile: null, durationMs: 1 });
    expect(report.profile).toBeNull();
    expect(report).not.toHaveProperty('policyHash');
    expect(reportSchema.safeParse(report).success).toBe(true);
  });

  it('rejects a report without sessionId or with an unknown key (control: the complete one passes)', () => {
    const good = reportFromOutcome({
      sessionId: 's-3',
      profile,
      backend: 'bwrap',
      policyHash: 'c'.repeat(16),
      command: ['sleep', '1'],
      exitCode: 130,
      setBy: 'child',
      signal: 'SIGINT',
      interruptedBy: 'user',
      durationMs: 5,
      violations: [],
      droppedEnv: [],
      secrets: [],
      masked: [],
    });
    expect(reportSchema.safeParse(good).success).toBe(true);
    const { sessionId: _, ...noSession } = good;
    expect(reportSchema.safeParse(noSession).success).toBe(false);
    expect(reportSchema.safeParse({ ...good, forged: true }).success).toBe(false);
  });
});

describe('the stderr summary', () => {
  it('a refusal spells out every reason (no "and N more reasons"), up to 10', () => {
    const error = refusal([1, 2, 3].map(violation), 'cli');
    expect(error.message).toBe('reason 1');
    expect(error.details).toEqual(['also: reason 2', 'also: reason 3']);
    const many = refusal(
      Array.from({ length: 14 }, (_, i) => violation(i + 1)),
      'cli',
    );
    expect(many.details).toHaveLength(10);
    expect(many.details[8]).toBe('also: reason 10');
    expect(many.details[9]).toBe('and 4 more reasons, listed in the report (--report-fd)');
  });

  it('summary lines: one per violation up to 10, then how many more', () => {
    const report = reportFromError(
      new SbxError('COMMAND_DENIED', 'x', { violations: Array.from({ length: 12 }, (_, i) => violation(i)) }),
      ['x'],
      {
        sessionId: 's',
        profile,
        durationMs: 1,
      },
    );
    const lines = summaryLines(report);
    expect(lines).toHaveLength(12);
    expect(lines[10]).toBe('sbx:   preflight command (commands.deny): reason 9');
    expect(lines[11]).toBe('sbx:   and 2 more violations: the report lists them all (--report-fd)');
  });

  it('a run the user interrupted: who sent the signal, no violation line', () => {
    const report = reportFromOutcome({
      sessionId: 's',
      profile,
      backend: 'bwrap',
      policyHash: 'c',
      command: ['sleep', '9'],
      exitCode: 130,
      setBy: 'child',
      signal: 'SIGINT',
      interruptedBy: 'user',
      durationMs: 5,
      violations: [],
      droppedEnv: [],
      secrets: [],
      masked: [],
    });
    expect(summaryLines(report)).toEqual([
      expect.stringMatching(
        /^sbx: sleep was interrupted by SIGINT from the user \(exit 130\) \[profile default, session s, /,
      ),
    ]);
  });
});
