// The units the command rules judge, apart from the rules themselves: which simple commands a command
// line comes to (and how deep in shell strings), where each one's relative paths resolve after the cds
// before it, which of its words the path guards look at, and the values its variables may take.
import { describe, expect, it } from 'vitest';
import { runsOf } from '../../../src/commands/command-layers.js';
import type { Verdicts } from '../../../src/commands/command-verdict.js';
import { valuesOf } from '../../../src/commands/shell-bindings.js';
import type { ShellValues } from '../../../src/commands/shell-fields.js';
import {
  basesOf,
  expandedOf,
  judgeBuiltin,
  marked,
  NO_VALUES,
  operandsOf,
  unitsOf,
  type CommandLine,
  type Unit,
} from '../../../src/commands/shell-units.js';
import type { CommandRules } from '../../../src/policy/types.js';

const WS = { host: '/home/alice/proj', sandbox: '/work' };

const rules = (shellSyntax: CommandRules['shellSyntax']): CommandRules => ({
  default: 'allow',
  allow: {},
  deny: [],
  paths: 'workspace',
  shellSyntax,
});

function units(command: CommandLine, shellSyntax: CommandRules['shellSyntax'] = 'restricted') {
  const out: Verdicts = { violations: [], asks: [], network: [] };
  return { units: unitsOf(command, rules(shellSyntax), out).units, refused: out.violations.map((v) => v.detail) };
}

/** The path operands of a unit, its commands read as the rules read them. */
const operands = (unit: Unit, values: ShellValues = NO_VALUES) =>
  operandsOf(unit, runsOf(marked(unit), expandedOf(unit, values)).runs, values);

const script = (text: string) => units({ kind: 'shell', script: text }).units;

describe('unitsOf', () => {
  it("an argv is one unit; under restricted syntax a shell it runs adds its string's commands, one level deeper", () => {
    const { units: found } = units({ kind: 'argv', argv: ['timeout', '5', 'sh', '-c', 'ls; cat x'] });
    expect(found.map((u) => [u.argv, u.inScript, u.depth])).toEqual([
      [['timeout', '5', 'sh', '-c', 'ls; cat x'], false, 0],
      [['ls'], true, 2],
      [['cat', 'x'], true, 2],
    ]);
    expect(units({ kind: 'argv', argv: ['sh', '-c', 'ls'] }, 'full').units).toHaveLength(1);
    expect(units({ kind: 'argv', argv: [] }).units).toEqual([]);
  });

  it('a shell string: each simple command under restricted syntax; under full syntax the shell that runs it', () => {
    expect(script('cd src && ls > out').map((u) => [u.argv, u.redirects.length, u.depth])).toEqual([
      [['cd', 'src'], 0, 1],
      [['ls'], 1, 1],
    ]);
    const [shell, ...rest] = units({ kind: 'shell', script: 'ls | wc' }, 'full').units;
    expect(rest).toEqual([]);
    expect(shell!.inScript).toBe(false);
    expect(shell!.argv.slice(1)).toEqual(['-c', '--', 'ls | wc']);
  });

  it('refuses what it cannot split, and shells nested beyond 4 deep', () => {
    expect(units({ kind: 'shell', script: 'echo `id`' }).refused).toHaveLength(1);
    const nested = 'sh -c "sh -c \'sh -c \\"sh -c ls\\"\'"';
    const { units: found, refused } = units({ kind: 'shell', script: nested });
    expect(Math.max(...found.map((u) => u.depth))).toBe(4);
    expect(refused).toEqual([
      'the shell string uses shells nested more than 4 deep, which shell_syntax: restricted refuses',
    ]);
  });
});

describe('basesOf', () => {
  it('after `cd DIR`, a unit is judged from every directory the shell may be in', () => {
    const found = script('ls; cd src; cd /work/lib; cd /etc; cat x');
    expect(basesOf(found, WS, WS.host)).toEqual([
      [WS.host],
      [WS.host],
      [WS.host, `${WS.host}/src`],
      [WS.host, `${WS.host}/src`, `${WS.host}/lib`],
      [WS.host, `${WS.host}/src`, `${WS.host}/lib`],
    ]);
  });

  it('after `cd DIR &&`, the commands it chains run only in DIR; `||`, `;` and `|` break the chain', () => {
    const found = script('cd src && ls .. && cat x; wc y; cd lib || pwd');
    expect(basesOf(found, WS, WS.host)).toEqual([
      [WS.host],
      [`${WS.host}/src`],
      [`${WS.host}/src`],
      [WS.host, `${WS.host}/src`],
      [WS.host, `${WS.host}/src`],
      [WS.host, `${WS.host}/src`, `${WS.host}/lib`, `${WS.host}/src/lib`],
    ]);
  });
});

describe('operandsOf', () => {
  it("every word but the command's name and a shell's script; redirection targets, not a descriptor or delimiter", () => {
    const [unit] = script('env X=1 nice -n 5 cp a b > out 2>&1 < in');
    const found = operands(unit!);
    expect(new Set(found.args)).toEqual(new Set(['-n', '5', 'a', 'b']));
    expect(found.targets).toEqual(['out', 'in']);
    const [sh] = units({ kind: 'argv', argv: ['sh', '-c', 'cat /etc/passwd', 'name'] }).units;
    expect(operands(sh!).args).toEqual(['-c', 'name']);
  });

  it("a tool's data is not a path: grep's pattern, git's message, echo's words; its files are", () => {
    const args = (line: string) => operands(script(line)[0]!).args;
    expect(args('grep -rn "/api/users" src')).toEqual(['src']);
    expect(args('grep -e /x -f /pats a b')).toEqual(['/pats', 'a', 'b']);
    expect(args('git commit -m "/ci: skip" --file=/msg x')).toEqual(['/msg', 'x']);
    expect(args('echo / //')).toEqual([]);
    expect(args('sed -n "s/a/b/w out" f')).toEqual(['f']);
    expect(operands(script('sed -n "s/a/b/w out" f')[0]!).targets).toEqual(['out']);
    // An option the reading does not know: every word may be a path, as for an unknown tool.
    expect(args('grep --weird /x f')).toEqual(['--weird', '/x', 'f']);
  });

  it("cd's directory is a target; an expanded word carries the fields sh makes of it", () => {
    expect(operands(script('cd ../x')[0]!)).toEqual({ args: [], targets: ['../x'] });
    const [cat] = script('cat "$DIR"/f');
    expect(operands(cat!, { vars: { DIR: '/etc' }, secrets: [] }).expanded).toEqual([
      { written: '"$DIR"/f', fields: [{ text: '/etc/f', glob: false }], target: false, skip: 0 },
    ]);
  });
});

describe('judgeBuiltin', () => {
  const judged = (unit: Unit) => {
    const out: Verdicts = { violations: [], asks: [], network: [] };
    judgeBuiltin(unit, unit.argv, out);
    return out.violations.map((v) => v.rule);
  };

  it('refuses a builtin that changes the shell, and a bare exec, only in a shell string', () => {
    expect(judged(script('eval ls')[0]!)).toEqual(['commands.shell_syntax']);
    expect(judged(script('exec')[0]!)).toEqual(['commands.shell_syntax']);
    expect(judged(script('exec ls')[0]!)).toEqual([]);
    expect(judged({ argv: ['eval', 'ls'], redirects: [], inScript: false, depth: 0 })).toEqual([]);
  });

  it('export, read and set are judged by what they change: values and options, not operands of set', () => {
    for (const line of ['export X=1 Y', 'read -r -p "? " a b', 'set -euo pipefail', 'set +x', 'unset X'])
      expect(judged(script(line)[0]!), line).toEqual([]);
    for (const line of ['set -- a b', 'set -k', 'set -o keyword', 'export -f f', 'read -a arr'])
      expect(judged(script(line)[0]!), line).toEqual(['commands.shell_syntax']);
  });
});

describe('valuesOf', () => {
  const values = (line: string) =>
    valuesOf(
      unitsOf({ kind: 'shell', script: line }, rules('restricted'), { violations: [], asks: [], network: [] }),
      NO_VALUES,
    ).bound;

  it('every value a string may give a variable: assignments, export, for words, read (unknown)', () => {
    expect(values('A=/x; export B=$A/y; for f in a *.ts; do :; done; read C')).toEqual({
      A: [{ text: '/x', glob: false }],
      B: [
        { text: '/y', glob: false },
        { text: '/x/y', glob: false },
      ],
      f: [
        { text: 'a', glob: false },
        { text: '*.ts', glob: true },
      ],
      C: 'unknown',
    });
    expect(values('X=$(pwd)')).toEqual({ X: 'unknown' });
    // Values that keep growing are unknown.
    expect(values('while true; do A=$A/x; done')).toEqual({ A: 'unknown' });
  });
});
