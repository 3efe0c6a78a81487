// The restricted shell reader, pure: strings → simple commands (words and redirections) or the
// construct refused; a generated round trip shows an operator inside quotes never splits a command.
import { describe, expect, it } from 'vitest';
import { parseShellScript, type SimpleCommand } from '../../../src/commands/shell-words.js';

const cmd = (argv: string[], redirects: SimpleCommand['redirects'] = []): SimpleCommand => ({ argv, redirects });

describe('parseShellScript: what it accepts', () => {
  it('splits simple commands on | && || ; and newlines, words as sh would (quotes, escapes)', () => {
    const ok: [string, SimpleCommand[]][] = [
      ['make test', [cmd(['make', 'test'])]],
      ['  ls   -la  ', [cmd(['ls', '-la'])]],
      ['ls src | wc -l', [cmd(['ls', 'src']), cmd(['wc', '-l'])]],
      ['npm test && git status', [cmd(['npm', 'test']), cmd(['git', 'status'])]],
      ['a||b;c', [cmd(['a']), cmd(['b']), cmd(['c'])]],
      ['a\nb\n\nc\n', [cmd(['a']), cmd(['b']), cmd(['c'])]],
      ['a &&\n  b |\n c', [cmd(['a']), cmd(['b']), cmd(['c'])]],
      ['make;', [cmd(['make'])]],
      ["grep 'a|b' f", [cmd(['grep', 'a|b', 'f'])]],
      ['echo "a;b"', [cmd(['echo', 'a;b'])]],
      ['echo \'a && b\' "c || d" e\\;f', [cmd(['echo', 'a && b', 'c || d', 'e;f'])]],
      ['echo \'a b\' "c d"', [cmd(['echo', 'a b', 'c d'])]],
      ["echo it\\'s", [cmd(['echo', "it's"])]],
      ['echo "say \\"hi\\" \\$5"', [cmd(['echo', 'say "hi" $5'])]],
      ["echo '$HOME;|&'", [cmd(['echo', '$HOME;|&'])]],
      ["echo 'two\nlines'", [cmd(['echo', 'two\nlines'])]],
      ['echo ""', [cmd(['echo', ''])]],
      ['grep -r "foo bar" "src/*.ts"', [cmd(['grep', '-r', 'foo bar', 'src/*.ts'])]],
      ['echo a#b', [cmd(['echo', 'a#b'])]],
      ['cat 日本語.txt', [cmd(['cat', '日本語.txt'])]],
      ['git commit -m "fix: a=b"', [cmd(['git', 'commit', '-m', 'fix: a=b'])]],
    ];
    for (const [script, commands] of ok)
      expect(parseShellScript(script), JSON.stringify(script)).toEqual({ ok: true, commands });
  });

  it('redirections of 0, 1, 2 to files, and 2>&1, anywhere in the command', () => {
    const ok: [string, SimpleCommand[]][] = [
      ['npm test 2>&1 | tail -20', [cmd(['npm', 'test'], [{ fd: 2, op: '>&', target: '1' }]), cmd(['tail', '-20'])]],
      [
        'make >build.log 2>&1',
        [
          cmd(
            ['make'],
            [
              { fd: 1, op: '>', target: 'build.log' },
              { fd: 2, op: '>&', target: '1' },
            ],
          ),
        ],
      ],
      ['echo x >> "my log"', [cmd(['echo', 'x'], [{ fd: 1, op: '>>', target: 'my log' }])]],
      ['wc -l < in.txt', [cmd(['wc', '-l'], [{ fd: 0, op: '<', target: 'in.txt' }])]],
      ['>out echo hi', [cmd(['echo', 'hi'], [{ fd: 1, op: '>', target: 'out' }])]],
      ['ls 2>/dev/null', [cmd(['ls'], [{ fd: 2, op: '>', target: '/dev/null' }])]],
      ['echo >&2 oops', [cmd(['echo', 'oops'], [{ fd: 1, op: '>&', target: '2' }])]],
      // sh reads a2>f as the word a2 and a redirection of stdout.
      ['echo a2>f', [cmd(['echo', 'a2'], [{ fd: 1, op: '>', target: 'f' }])]],
    ];
    for (const [script, commands] of ok)
      expect(parseShellScript(script), JSON.stringify(script)).toEqual({ ok: true, commands });
  });
});

describe('parseShellScript: what it refuses, naming the construct', () => {
  it('every construct whose meaning is decided at run time, or that hides a command from the split', () => {
    const refused: [string, string][] = [
      ['echo $(id)', 'command substitution $(...)'],
      ['echo $((1+2))', 'arithmetic expansion $((...))'],
      ['echo ${x:-$(id)}', 'parameter expansions with operators (${...})'],
      ['echo ${#x}', 'parameter expansions with operators (${...})'],
      ["echo $'\\x41'", '$\'...\' or $"..." (bash reads them as quoting, dash as a $)'],
      ['echo `id`', 'command substitution (`...`)'],
      ['echo "$(id)"', 'command substitution $(...)'],
      ['echo "`id`"', 'command substitution (`...`)'],
      ['a & b', 'background jobs (&)'],
      ['sleep 1 &', 'background jobs (&)'],
      ['a &> f', 'background jobs (&)'],
      ['a |& b', 'background jobs (&)'],
      ['(ls)', 'subshells or grouping ( )'],
      ['(cd x && make)', 'subshells or grouping ( )'],
      ['{ make; }', 'the reserved word { (compound commands: if, for, while, case, !, { })'],
      ['echo {a,b}', 'brace expansion {a,b} (bash expands it, dash does not)'],
      ['echo x{1..3}', 'brace expansion {a,b} (bash expands it, dash does not)'],
      ['f() { ls; }', 'subshells or grouping ( )'],
      ['cat <<EOF\n$x\nEOF', "expansions in a here-document (quote its delimiter: <<'EOF' keeps the text literal)"],
      ['cat <<EOF', 'a here-document without its text'],
      ['cat <<EOF\nx', 'an unterminated here-document'],
      ['cat <<$X\nx\n$X', "a here-document delimiter that expands (write <<EOF or <<'EOF')"],
      ['cat <<< x', 'here-strings (<<<, bash only)'],
      ['diff <(a) <(b)', 'process substitution (<(...))'],
      ['tee >(wc)', 'process substitution (>(...))'],
      ['a <> f', 'read-write redirections (<>)'],
      ['a <&3', 'input duplication (<&)'],
      ['a >| f', 'clobbering redirections (>|)'],
      ['a 3>f', 'redirection of descriptor 3 (only 0, 1 and 2)'],
      ['a 2>&3', 'duplication of a descriptor other than 0, 1 or 2 (>&3)'],
      ['a 2>&-', 'duplication of a descriptor other than 0, 1 or 2 (>&-)'],
      ['a 10>f', 'a descriptor number sh and bash read differently (10>)'],
      ['a "2">f', 'a descriptor number sh and bash read differently (2>)'],
      ['a >', 'a redirection without a target'],
      ['a > | b', 'a redirection without a target'],
      ['a > > f', 'a redirection without a target'],
      ['a > ""', 'a redirection to an empty name'],
      ['> f', 'a redirection without a command'],
      ['a ; ; b', 'an empty command (nothing between two operators)'],
      ['; a', 'an empty command (nothing between two operators)'],
      ['a &&', 'an empty command (nothing between two operators)'],
      ['a | | b', 'an empty command (nothing between two operators)'],
      ['', 'no command'],
      ['  \n ', 'no command'],
      ['if curl x; then ls; fi', 'the reserved word if (compound commands: if, for, while, case, !, { })'],
      ['for f in a; do rm $f; done', 'the reserved word for (compound commands: if, for, while, case, !, { })'],
      ['! ls', 'the reserved word ! (compound commands: if, for, while, case, !, { })'],
      ['ls; while true; do ls; done', 'the reserved word while (compound commands: if, for, while, case, !, { })'],
      ['LD_PRELOAD=./x.so ls', 'variable assignments (NAME=value cmd; write env NAME=value cmd)'],
      ['ls && PATH=. ls', 'variable assignments (NAME=value cmd; write env NAME=value cmd)'],
      ['make \\\n test', 'a line continuation (backslash-newline)'],
      ['echo "a\\\nb"', 'a line continuation (backslash-newline)'],
      ['ls\r', 'carriage returns'],
      ["echo 'unterminated", 'an unterminated single quote'],
      ['echo "unterminated', 'an unterminated double quote'],
      ['echo trailing\\', 'a trailing backslash'],
      ['cat ~root/.ssh/id_rsa', '~user, ~+ or ~- (only ~ and ~/ name the sandbox HOME)'],
      ['ls ~+', '~user, ~+ or ~- (only ~ and ~/ name the sandbox HOME)'],
      ['npm --prefix=~/x i', 'a ~ after = or : (bash expands it there, dash does not)'],
      ['ls > *.txt', 'a glob in a redirection target'],
      ['echo a\x1bb', 'control characters'],
    ];
    for (const [script, construct] of refused)
      expect(parseShellScript(script), JSON.stringify(script)).toEqual({ ok: false, construct });
  });
});

describe('parseShellScript: properties', () => {
  /** A deterministic generator: the same cases on every run. */
  const generator = (seed: number) => () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
  const ALPHABET = [
    'a',
    'b',
    '-',
    '/',
    '.',
    ' ',
    '\t',
    '|',
    '||',
    '&&',
    ';',
    '&',
    '<',
    '>',
    '2>&1',
    '\n',
    "'",
    '"',
    '\\',
    '$',
    '(',
    ')',
    '#',
    '*',
    '=',
    '日',
  ];

  it('round trip: words with operators and spaces, quoted any way, joined by any operator, come back exactly', () => {
    const next = generator(0x5eed);
    const pick = <T>(xs: readonly T[]): T => xs[next() % xs.length]!;
    const quote = (w: string): string => {
      if (w.includes('$') || w.includes('`') || w.includes('\n') || next() % 2 === 0)
        return `'${w.replace(/'/g, `'\\''`)}'`;
      return `"${w.replace(/["\\]/g, (c) => `\\${c}`)}"`;
    };
    for (let n = 0; n < 2000; n++) {
      const commands = Array.from({ length: 1 + (next() % 4) }, () =>
        Array.from({ length: 1 + (next() % 4) }, (_, i) =>
          i === 0
            ? pick(['ls', 'git', 'npm', 'wc'])
            : Array.from({ length: next() % 6 }, () => pick(ALPHABET)).join(''),
        ),
      );
      const script = commands
        .map((argv) => [argv[0]!, ...argv.slice(1).map(quote)].join(' '))
        .reduce((acc, c) => `${acc}${pick([' | ', ' && ', '||', ';', '\n'])}${c}`);
      expect(parseShellScript(script), JSON.stringify(script)).toEqual({
        ok: true,
        commands: commands.map((argv) => cmd(argv)),
      });
    }
  });

  it('random strings: never throws; an accepted one never has an empty command, nor more commands than operators allow', () => {
    const next = generator(0xc0ffee);
    for (let n = 0; n < 5000; n++) {
      const script = Array.from({ length: next() % 12 }, () => ALPHABET[next() % ALPHABET.length]!).join('');
      const parsed = parseShellScript(script);
      if (!parsed.ok) continue;
      const operators = script.match(/\|\||&&|[|;\n]/g)?.length ?? 0;
      // A string of comments alone runs nothing.
      if (!/#/.test(script)) expect(parsed.commands.length, JSON.stringify(script)).toBeGreaterThan(0);
      expect(parsed.commands.length, JSON.stringify(script)).toBeLessThanOrEqual(operators + 1);
      for (const c of parsed.commands) expect(c.argv.length, JSON.stringify(script)).toBeGreaterThan(0);
    }
  });
});
