// The restricted shell reader, pure: strings → simple commands (words, redirections, assignments, and
// those of compound commands and $(...)) or the construct refused; a generated round trip shows an
// operator inside quotes never splits a command.
import { describe, expect, it } from 'vitest';
import { parseShellScript, type SimpleCommand } from '../../../src/commands/shell-words.js';

const cmd = (
  argv: string[],
  redirects: SimpleCommand['redirects'] = [],
  more: Partial<SimpleCommand> = {},
): SimpleCommand => ({ argv, redirects, ...more });
const then = { andThen: true } as const;
const loop = { loop: true } as const;

describe('parseShellScript: what it accepts', () => {
  it('splits simple commands on | && || ; and newlines, words as sh would (quotes, escapes)', () => {
    const ok: [string, SimpleCommand[]][] = [
      ['make test', [cmd(['make', 'test'])]],
      ['  ls   -la  ', [cmd(['ls', '-la'])]],
      ['ls src | wc -l', [cmd(['ls', 'src']), cmd(['wc', '-l'])]],
      ['npm test && git status', [cmd(['npm', 'test']), cmd(['git', 'status'], [], then)]],
      ['a||b;c', [cmd(['a']), cmd(['b']), cmd(['c'])]],
      ['a\nb\n\nc\n', [cmd(['a']), cmd(['b']), cmd(['c'])]],
      ['a &&\n  b |\n c', [cmd(['a']), cmd(['b'], [], then), cmd(['c'])]],
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

describe('parseShellScript: compound commands, assignments and $(...)', () => {
  it('reads the commands of if, while, until, for, { }, ( ) and ! in order, marking those in a loop', () => {
    const ok: [string, SimpleCommand[]][] = [
      [
        'if test -f x; then cat x; elif true; then :; else echo no; fi',
        [cmd(['test', '-f', 'x']), cmd(['cat', 'x']), cmd(['true']), cmd([':']), cmd(['echo', 'no'])],
      ],
      [
        'while read -r l; do echo "$l"; done < f',
        [
          cmd(['read', '-r', 'l'], [], loop),
          cmd(['echo', '"$l"'], [], {
            ...loop,
            expansions: {
              1: [
                { kind: 'text', text: '', quoted: true },
                { kind: 'param', name: 'l', quoted: true },
              ],
            },
          }),
          cmd([], [{ fd: 0, op: '<', target: 'f' }]),
        ],
      ],
      ['until false\ndo\n  ls\ndone', [cmd(['false'], [], loop), cmd(['ls'], [], loop)]],
      ['{ ls; wc -l f; } > out', [cmd(['ls']), cmd(['wc', '-l', 'f']), cmd([], [{ fd: 1, op: '>', target: 'out' }])]],
      ['(cd x && make) || true', [cmd(['cd', 'x']), cmd(['make'], [], then), cmd(['true'])]],
      ['! grep -q x f', [cmd(['grep', '-q', 'x', 'f'])]],
      ['time ls', [cmd(['time', 'ls'])]],
    ];
    for (const [script, commands] of ok)
      expect(parseShellScript(script), JSON.stringify(script)).toEqual({ ok: true, commands });
  });

  it('for NAME in WORDS: the loop and its words, the body marked as a loop', () => {
    expect(parseShellScript('for f in a *.ts; do wc -l $f; done')).toEqual({
      ok: true,
      commands: [
        cmd(['wc', '-l', '$f'], [], { ...loop, expansions: { 2: [{ kind: 'param', name: 'f', quoted: false }] } }),
      ],
      loops: [
        {
          name: 'f',
          words: [[{ kind: 'text', text: 'a', quoted: false }], [{ kind: 'text', text: '*.ts', quoted: false }]],
        },
      ],
    });
  });

  it('NAME=value before a command, or alone; ~ after = in an assignment is the sandbox HOME', () => {
    expect(parseShellScript('A=1 B="x y" make; C=~/x')).toEqual({
      ok: true,
      commands: [
        cmd(['make'], [], {
          assignments: [
            { name: 'A', parts: [{ kind: 'text', text: '1', quoted: false }] },
            { name: 'B', parts: [{ kind: 'text', text: 'x y', quoted: true }] },
          ],
        }),
        cmd([], [], {
          assignments: [{ name: 'C', parts: [{ kind: 'home' }, { kind: 'text', text: '/x', quoted: false }] }],
        }),
      ],
    });
    // After the command word it is an argument.
    expect(parseShellScript('make CC=clang')).toEqual({ ok: true, commands: [cmd(['make', 'CC=clang'])] });
  });

  it('$(...): its commands first, then the word, whose part is the output (unknown), quoted or not', () => {
    expect(parseShellScript('echo "v$(git rev-parse HEAD | head -c 7)"')).toEqual({
      ok: true,
      commands: [
        cmd(['git', 'rev-parse', 'HEAD']),
        cmd(['head', '-c', '7']),
        cmd(['echo', '"v$(git rev-parse HEAD | head -c 7)"'], [], {
          expansions: {
            1: [
              { kind: 'text', text: 'v', quoted: true },
              { kind: 'command', quoted: true },
            ],
          },
        }),
      ],
    });
    // A here-document inside: the agents' commit message form.
    const commit = parseShellScript('git commit -m "$(cat <<\'EOF\'\nfix: a;b\nEOF\n)"');
    expect(commit.ok && commit.commands.map((c) => c.argv[0])).toEqual(['cat', 'git']);
    expect(commit.ok && commit.commands[0]!.redirects[0]!.heredoc).toBe('fix: a;b\n');
  });
});

describe('parseShellScript: what it refuses, naming the construct', () => {
  it('every construct whose meaning is decided at run time, or that hides a command from the split', () => {
    const refused: [string, string][] = [
      ['echo $((1+2))', 'arithmetic expansion $((...))'],
      ['echo ${x:-$(id)}', 'parameter expansions with operators (${...})'],
      ['echo ${#x}', 'parameter expansions with operators (${...})'],
      ["echo $'\\x41'", '$\'...\' or $"..." (bash reads them as quoting, dash as a $)'],
      ['echo `id`', 'command substitution with backticks (write $(...) instead)'],
      ['echo "`id`"', 'command substitution with backticks (write $(...) instead)'],
      ['a & b', 'background jobs (&)'],
      ['sleep 1 &', 'background jobs (&)'],
      ['a &> f', '&> (bash writes stdout and stderr to the file, dash runs a background job; write > FILE 2>&1)'],
      ['a |& b', '|& (bash pipes stderr too, dash runs a background job; write 2>&1 |)'],
      ['echo {a,b}', 'brace expansion {a,b} (bash expands it, dash does not)'],
      ['echo x{1..3}', 'brace expansion {a,b} (bash expands it, dash does not)'],
      ['f() { ls; }', 'a ( after a word (function definitions, arrays)'],
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
      ['case x in x) ls;; esac', 'the reserved word case (case, select, function, [[ ]])'],
      ['[[ -f x ]]', 'the reserved word [[ (case, select, function, [[ ]])'],
      ['then ls', 'then without if CONDITION;'],
      ['if ls; fi', 'fi without what it closes (or with nothing inside)'],
      ['if ls; then fi', 'fi without what it closes (or with nothing inside)'],
      ['if ls; then; fi', 'an empty command (nothing between two operators)'],
      ['if ls; then ls', 'an unterminated if (fi)'],
      ['while ls; do done', 'done without what it closes (or with nothing inside)'],
      ['for 1 in a; do ls; done', 'a for loop without a plain variable name'],
      ['for x in a | b; do ls; done', 'a for loop other than for NAME in WORDS; do ...; done'],
      ['for x in a b do ls; done', 'a for loop other than for NAME in WORDS; do ...; done'],
      ['{ ls; } x', 'the word x after a compound command'],
      ['A=1 if ls; then ls; fi', 'the reserved word if after an assignment or redirection'],
      ['(ls', 'an unterminated subshell ())'],
      ['ls)', 'an unmatched )'],
      ['()', 'an empty command (nothing between two operators)'],
      ['echo $(ls', 'an unterminated $(...)'],
      ['echo $()', 'an empty $(...)'],
      ['cat <<EOF $(ls)\nx\nEOF', 'a $(...) on the line of a here-document'],
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
      // A string of comments alone runs nothing; `$(` and `(` each start commands of their own.
      const opened = script.match(/\(/g)?.length ?? 0;
      if (!/#/.test(script)) expect(parsed.commands.length, JSON.stringify(script)).toBeGreaterThan(0);
      expect(parsed.commands.length, JSON.stringify(script)).toBeLessThanOrEqual(operators + opened + 1);
      // A command has a word, or is assignments alone, or redirects a compound command.
      for (const c of parsed.commands)
        expect(
          c.argv.length + (c.assignments?.length ?? 0) + c.redirects.length,
          JSON.stringify(script),
        ).toBeGreaterThan(0);
    }
  });
});
