// The units the command rules judge, apart from the rules themselves: which simple commands a command
// line comes to (and how deep in shell strings), where each one's relative paths resolve after the cds
// before it, and which of its words the path guards look at.
import { describe, expect, it } from 'vitest';
import type { Verdicts } from '../../../src/commands/command-verdict.js';
import {
  basesOf,
  judgeBuiltin,
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
  return { units: unitsOf(command, rules(shellSyntax), out), refused: out.violations.map((v) => v.detail) };
}

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
    expect(units({ kind: 'shell', script: 'echo $(id)' }).refused).toHaveLength(1);
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
});

describe('operandsOf', () => {
  it("every word but the command's name and a shell's script; redirection targets, not a descriptor or delimiter", () => {
    const [unit] = script('env X=1 nice -n 5 cp a b > out 2>&1 < in');
    const operands = operandsOf(unit!);
    expect(new Set(operands.args)).toEqual(new Set(['X=1', 'nice', '-n', '5', 'cp', 'a', 'b']));
    expect(operands.targets).toEqual(['out', 'in']);
    const [sh] = units({ kind: 'argv', argv: ['sh', '-c', 'cat /etc/passwd', 'name'] }).units;
    expect(operandsOf(sh!).args).toEqual(['-c', 'name']);
  });

  it("cd's directory is a target; an expanded word carries the fields sh makes of it", () => {
    expect(operandsOf(script('cd ../x')[0]!)).toEqual({ args: [], targets: ['../x'] });
    const [cat] = script('cat "$DIR"/f');
    expect(operandsOf(cat!, { vars: { DIR: '/etc' }, secrets: [] }).expanded).toEqual([
      { written: '"$DIR"/f', fields: [{ text: '/etc/f', glob: false }], target: false },
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
    expect(judged(script('export X=1')[0]!)).toEqual(['commands.shell_syntax']);
    expect(judged(script('exec')[0]!)).toEqual(['commands.shell_syntax']);
    expect(judged(script('exec ls')[0]!)).toEqual([]);
    expect(judged({ argv: ['export', 'X=1'], redirects: [], inScript: false, depth: 0 })).toEqual([]);
  });
});
