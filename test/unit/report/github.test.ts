// report/github.ts: workflow-command escaping as GitHub's toolkit does it, annotations that no text
// can break out of, and a step summary in which text from the sandbox stays text.
import { describe, expect, it } from 'vitest';
import type { Violation } from '../../../src/policy/violation.js';
import {
  errorCommand,
  escapeData,
  escapeProperty,
  markdownText,
  refusalCommands,
  stepSummary,
  violationCommands,
} from '../../../src/report/github.js';
import type { Report } from '../../../src/report/report.js';

const ctx = { workspace: '/home/runner/work/app/app' };

const network = (host: string): Violation => ({
  phase: 'runtime',
  kind: 'network',
  rule: 'network.deny',
  detail: `connection to ${host}:443 refused`,
  host,
  port: 443,
});

/** Every line a runner would split `text` into (CR, LF, CRLF, as .NET's ReadLine). */
const lines = (text: string) => text.split(/\r\n|\r|\n/);

describe('escaping (as @actions/core escapeData and escapeProperty)', () => {
  it.each([
    ['100%', '100%25'],
    ['a\r\nb', 'a%0D%0Ab'],
    ['%0A', '%250A'],
    ['a::b,c:d', 'a::b,c:d'],
  ])('data %j → %j', (text, escaped) => {
    expect(escapeData(text)).toBe(escaped);
  });

  it.each([
    ['a:b,c', 'a%3Ab%2Cc'],
    ['x=1\ny', 'x=1%0Ay'],
    ['50%:', '50%25%3A'],
  ])('property %j → %j', (text, escaped) => {
    expect(escapeProperty(text)).toBe(escaped);
  });

  it('no message or property can end the line, or add a property', () => {
    const evil = 'x\n::add-mask::s\r::error::t%0A::warning::u,line=1::v';
    const line = errorCommand({ title: evil, message: evil, file: evil, line: 3 });
    expect(lines(line)).toHaveLength(1);
    expect(line.startsWith('::error title=')).toBe(true);
    // The property list ends at the first `::`; inside it only our three keys appear.
    const props = line.slice('::error '.length, line.indexOf('::', 2));
    expect(props.split(',').map((p) => p.split('=')[0])).toEqual(['title', 'file', 'line']);
    expect(line).toContain('::x%0A::add-mask::s%0D::error::t%250A::warning::u,line=1::v');
  });
});

describe('annotations', () => {
  it('a violation with a profile line in the workspace: file= relative to the checkout, line=, col=', () => {
    const v: Violation = {
      ...network('evil.example'),
      source: { key: 'network.deny[0]', file: `${ctx.workspace}/.sbx/profiles/ci.yaml`, line: 7, col: 5 },
    };
    expect(violationCommands([v], ctx)).toEqual([
      '::error title=sbx%3A network.deny,file=.sbx/profiles/ci.yaml,line=7,col=5::runtime network: connection to evil.example:443 refused (profile key network.deny[0])',
    ]);
  });

  it("a built-in profile's line (outside the workspace): no file=, the key in the message", () => {
    const v: Violation = {
      ...network('evil.example'),
      source: { key: 'limits.memory', file: '/opt/sbx/profiles/untrusted.yaml', line: 14, col: 3 },
    };
    const [line] = violationCommands([v], ctx);
    expect(line).not.toMatch(/file=|line=/);
    expect(line).toMatch(/\(profile key limits\.memory\)$/);
  });

  it('a rule set by a flag or a default says so', () => {
    const v: Violation = { ...network('a.example'), source: { key: 'limits.memory', origin: 'flag' } };
    expect(violationCommands([v], ctx)[0]).toMatch(/\(profile key limits\.memory, set by a command-line flag\)$/);
  });

  it('a hostile host name stays one annotation', () => {
    const [line, ...rest] = violationCommands([network('x\n::add-mask::secret\r::error file=/etc/passwd::y')], ctx);
    expect(rest).toEqual([]);
    expect(lines(line!)).toHaveLength(1);
  });

  it('repeats are counted; past 9 distinct, one more annotation says how many were left out', () => {
    const many = Array.from({ length: 12 }, (_, i) => network(`h${i}.example`));
    const out = violationCommands([network('h0.example'), ...many], ctx);
    expect(out).toHaveLength(10);
    expect(out[0]).toMatch(/refused \(2 times\)$/);
    expect(out[9]).toBe(
      '::error title=sbx%3A violations::and 3 more distinct violations: the step summary lists them all',
    );
  });

  it("a refusal: titled with its code, at the profile error's location, the hint in the message", () => {
    const refusal = {
      code: 'PROFILE_INVALID',
      message: 'bogus: unknown key "bogus"',
      hint: 'see sbx profiles show default',
      location: { file: `${ctx.workspace}/ci.yaml`, line: 3, col: 1 },
    };
    expect(refusalCommands(refusal, [], ctx)).toEqual([
      '::error title=PROFILE_INVALID,file=ci.yaml,line=3,col=1::sbx refused: bogus: unknown key "bogus" (hint: see sbx profiles show default)',
    ]);
  });

  it("a command refusal's first violation is its message: said once, the others follow", () => {
    const deny: Violation = { phase: 'preflight', kind: 'command', rule: 'commands.deny', detail: 'curl is denied' };
    const offline: Violation = { ...deny, rule: 'commands.offline', detail: 'curl needs the network' };
    const out = refusalCommands({ code: 'COMMAND_DENIED', message: 'curl is denied' }, [deny, offline], ctx);
    expect(out).toEqual([
      '::error title=COMMAND_DENIED::sbx refused: curl is denied',
      '::error title=sbx%3A commands.offline::preflight command: curl needs the network',
    ]);
  });
});

describe('step summary', () => {
  const report: Report = {
    format: 1,
    sessionId: 's1',
    profile: { name: 'untrusted', file: '/opt/sbx/profiles/untrusted.yaml', hash: 'h', source: 'builtin' },
    backend: 'bwrap',
    policyHash: 'p',
    command: ['/bin/sh', '-c', 'make test'],
    exitCode: 2,
    setBy: 'child',
    durationMs: 1534,
    violations: [network('a.example'), network('a.example')],
    limits: [
      { name: 'memory', value: '2GiB', base: 2 ** 31, mechanism: 'cgroup-v2', exact: true, enforced: true },
      { name: 'cpus', value: '2', base: 2, mechanism: 'none', exact: false, enforced: false, reason: 'no cgroup' },
    ],
  };

  it('a table of the run, its violations (counted) and its limits', () => {
    expect(stepSummary(report, undefined, ctx)).toBe(
      [
        '### sbx run: /bin/sh -c make test',
        '',
        '|  |  |',
        '| --- | --- |',
        '| Result | exited 2, set by the command |',
        '| Profile | untrusted (builtin) |',
        '| Backend | bwrap |',
        '| Duration | 1.5 s |',
        '| Session | s1 |',
        '',
        '#### Violations',
        '',
        '| Phase | Kind | Rule | Detail | Profile line | Count |',
        '| --- | --- | --- | --- | --- | --- |',
        '| runtime | network | network.deny | connection to a.example:443 refused |  | 2 |',
        '',
        '#### Limits',
        '',
        '| Limit | Value | Enforced by | Exact |',
        '| --- | --- | --- | --- |',
        '| memory | 2GiB | cgroup-v2 | yes |',
        '| cpus | 2 | not enforced | no cgroup |',
        '',
        '',
      ].join('\n'),
    );
  });

  it('a refusal before any run: only the refusal', () => {
    const md = stepSummary(undefined, { code: 'USAGE', message: 'no command given', hint: 'put it after --' }, ctx);
    expect(md).toBe(
      '### sbx run\n\n|  |  |\n| --- | --- |\n| Refused | USAGE: no command given |\n| Hint | put it after -- |\n\n',
    );
  });

  it.each([
    ['a | b', 'a &#124; b'],
    ['x\ny', 'x&#92;x0ay'],
    ['<img src=x onerror=alert(1)>', '&#60;img src=x onerror=alert(1)&#62;'],
    ['[click](https://evil.example)', '&#91;click&#93;(https://evil.example)'],
    ['`code` *em* _u_ $x$ \\', '&#96;code&#96; &#42;em&#42; &#95;u&#95; &#36;x&#36; &#92;'],
    ['é\u202e', '&#233;&#8238;'],
  ])('text %j is inert in a cell: %j', (text, md) => {
    expect(markdownText(text)).toBe(md);
  });

  it('hostile text cannot add a row or a line', () => {
    const hostile = network('x|y\n| Result | exited 0 |\r\n::add-mask::z');
    const md = stepSummary({ ...report, violations: [hostile] }, undefined, ctx);
    expect(md.split('\n').filter((l) => l.startsWith('| Result |'))).toHaveLength(1);
    expect(md).not.toMatch(/^::/m);
  });
});
