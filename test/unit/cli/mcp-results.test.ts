// A tool call's result (src/cli/mcp/mcp-results.ts): the JSON report as structuredContent, and the text an
// agent reads first, with each violation's profile line and isError for every kind of failure.
import { describe, expect, it } from 'vitest';
import { describeSource, toolResult } from '../../../src/cli/mcp/mcp-results.js';
import { SbxError } from '../../../src/errors.js';
import type { Report } from '../../../src/report/report.js';

const base: Report = {
  format: 1,
  sessionId: 's1',
  profile: { name: 'agent', file: '/p/agent.yaml', hash: 'h', source: 'builtin' },
  command: ['ls'],
  exitCode: 0,
  setBy: 'child',
  durationMs: 12,
  violations: [],
};
const captured = (stdout: string, droppedBytes = 0) => ({
  stdout: { text: stdout, droppedBytes, redactions: [] },
  stderr: { text: '', droppedBytes: 0, redactions: [] },
});

describe('describeSource', () => {
  it('names the profile line, or the flag or default that stands in for one', () => {
    expect(describeSource({ key: 'commands.deny[0]', file: '/p/agent.yaml', line: 61, col: 5 })).toBe(
      'profile /p/agent.yaml:61 (commands.deny[0])',
    );
    expect(describeSource({ key: 'limits.timeout', origin: 'flag' })).toBe('flag (limits.timeout)');
    expect(describeSource({ key: 'network' })).toBe('default (network)');
  });
});

describe('toolResult', () => {
  it('a clean run: not an error, the report as structuredContent, the output under a heading', () => {
    const r = toolResult({ ...base, captured: captured('hello\n') }, []);
    expect(r.isError).toBe(false);
    expect(r.structuredContent).toEqual({ ...base, captured: captured('hello\n') });
    expect(r.content[0]!.text).toBe('ls exited 0 [profile agent, session s1, 12 ms]\n--- stdout ---\nhello');
  });

  it('a non-zero exit, a violation with its profile line, a cut stream', () => {
    const violation = {
      phase: 'runtime' as const,
      kind: 'timeout' as const,
      rule: 'limits.timeout',
      detail: 'ran past 1s',
      limit: '1s',
      source: { key: 'limits.timeout', file: '/p/short.yaml', line: 3 },
    };
    const cut = 'x\n[sbx: 10 bytes cut here]\ny\n';
    const r = toolResult(
      { ...base, exitCode: 124, setBy: 'sbx', violations: [violation], captured: captured(cut, 10) },
      ['sbx: npm install needs the network'],
    );
    expect(r.isError).toBe(true);
    const lines = r.content[0]!.text.split('\n');
    expect(lines[0]).toMatch(/^ls timed out/);
    expect(lines).toContain(
      'violation: timeout (limits.timeout): ran past 1s; profile /p/short.yaml:3 (limits.timeout)',
    );
    expect(lines).toContain('notice: npm install needs the network');
    expect(lines.slice(-3)).toEqual(['x', '[sbx: 10 bytes cut here]', 'y']);
  });

  it('files the policy hid are named with their rule on every run, a long list cut with the count', () => {
    const one = toolResult({ ...base, masked: { count: 1, paths: ['/w/.env'] } }, []);
    expect(one.isError).toBe(false);
    expect(one.content[0]!.text.split('\n')[1]).toBe(
      "hidden: 1 file by the sensitive-file rules (the profile's sensitive.files and sbx's built-in list), shown empty inside: /w/.env; sensitive.except in the profile lets one in",
    );
    const paths = Array.from({ length: 12 }, (_, i) => `/w/k${i}.pem`);
    const many = toolResult({ ...base, exitCode: 1, masked: { count: 40, paths } }, []);
    const line = many.content[0]!.text.split('\n')[1]!;
    expect(line).toMatch(
      /^hidden: 40 files .*: \/w\/k0\.pem, .*\/w\/k9\.pem, and 30 more \(structuredContent\.masked\);/,
    );
    expect(line).not.toContain('k10');
    expect(toolResult({ ...base, masked: { count: 0, paths: [] } }, []).content[0]!.text).toBe(
      'ls exited 0 [profile agent, session s1, 12 ms]',
    );
  });

  it('a refusal says nothing ran, with the code, the message and the hint', () => {
    const error = new SbxError('COMMAND_DENIED', 'rm is on the deny list', { hint: 'use another command' });
    const report = { ...base, exitCode: 126, setBy: 'sbx' as const, error: { code: 'COMMAND_DENIED', message: 'x' } };
    const r = toolResult(report, [], error);
    expect(r.isError).toBe(true);
    expect(r.content[0]!.text.split('\n')).toEqual([
      'refused, nothing ran: COMMAND_DENIED (exit 126) [profile agent, session s1]',
      'error: rm is on the deny list',
      'hint: use another command',
    ]);
  });

  it('a refusal by a rule points to the `sbx why` that names its line: the profile as the server has it, the command as given', () => {
    const rule = {
      phase: 'preflight' as const,
      kind: 'command' as const,
      rule: 'commands.deny',
      detail: 'rm is denied',
    };
    const error = new SbxError('COMMAND_DENIED', 'rm is denied', { violations: [rule] });
    const refused = { ...base, exitCode: 126, setBy: 'sbx' as const, violations: [rule] };
    const byPath = { ...refused, profile: { ...base.profile!, source: 'path' as const } };
    const argv = toolResult({ ...byPath, command: ['rm', 'a b'] }, [], error).content[0]!.text.split('\n');
    expect(argv).toContain("why: `sbx why -p /p/agent.yaml -- rm 'a b'` names the profile line that decides");
    const shell = toolResult({ ...refused, command: ['/bin/sh', '-c', '--', 'rm x && ls'] }, [], error);
    expect(shell.content[0]!.text.split('\n')).toContain(
      "why: `sbx why -p builtin:agent --shell 'rm x && ls'` names the profile line that decides",
    );
    // A refusal no rule made (no violation) has nothing for `sbx why` to name.
    const plain = toolResult({ ...refused, violations: [] }, [], new SbxError('COMMAND_NOT_FOUND', 'x'));
    expect(plain.content[0]!.text).not.toContain('sbx why');
  });
});
