// How the rules read a tool's argv, apart from any rule (tool-arguments.ts, tool-readings.ts): what each
// argument is to the tool, which commands it runs, and what it runs that cannot be judged. Pure.
import { describe, expect, it } from 'vitest';
import type { ExpandedOf, ToolReading } from '../../../src/commands/tool-arguments.js';
import { readTool } from '../../../src/commands/tool-readings.js';

const literal: ExpandedOf = () => undefined;
const read = (...argv: string[]): ToolReading => readTool(argv, literal)!;
/** Each argument as `role:value`. */
const roles = (argv: string[]) => read(...argv).args.map((a) => `${a.role}:${argv[a.at]!.slice(a.skip)}`);
const spawned = (argv: string[]) =>
  read(...argv).spawned.map((s) =>
    s.kind === 'argv' ? `${s.via}: ${s.argv.join(' ')}` : `${s.via}: sh -c ${s.script}`,
  );

describe('a grammar: options with values, operands by position', () => {
  it('grep: the first operand is the pattern, unless -e or -f gave it; -f and --exclude-from read files', () => {
    expect(roles(['grep', '-rn', '/api/users', '.'])).toEqual(['data:/api/users', 'path:.']);
    expect(roles(['grep', '-e', '/x', '-f/pats', 'a'])).toEqual(['data:/x', 'path:/pats', 'path:a']);
    expect(roles(['grep', '--regexp=/x', '--exclude-from', '/ex', 'a'])).toEqual(['data:/x', 'path:/ex', 'path:a']);
    // getopt_long's abbreviations, clusters ending in a valued option, and -NUM.
    expect(roles(['grep', '--exclude-f', '/pats', 'a'])).toEqual(['path:/pats', 'data:a']);
    // An ambiguous abbreviation (--file? --fixed-strings?) is no option grep accepts: uncertain.
    expect(read('grep', '--fi', '/pats', 'a').certain).toBe(false);
    expect(roles(['grep', '-rnA3', '-5', 'x', 'f'])).toEqual(['data:3', 'data:x', 'path:f']);
    expect(read('grep', '-x', 'a').certain).toBe(true);
  });

  it('an option it does not know makes the reading uncertain', () => {
    expect(read('grep', '--no-such', 'a').certain).toBe(false);
    expect(read('grep', '-Q', 'a').certain).toBe(false);
  });

  it('echo, printf, tr: every word is data', () => {
    expect(roles(['echo', '-n', '/', '//'])).toEqual(['data:-n', 'data:/', 'data://']);
  });

  it('python -c and node -e: the code is data; a script is a path', () => {
    expect(roles(['python3', '-c', '/x/', 'arg'])).toEqual(['data:/x/', 'path:arg']);
    expect(roles(['node', '-e', '/re/.test(x)'])).toEqual(['data:/re/.test(x)']);
    expect(roles(['python', 'run.py', '-v'])).toEqual(['path:run.py', 'path:-v']);
  });

  it('jq: --arg takes two values, --args makes the rest data', () => {
    expect(roles(['jq', '--arg', 'k', '/v', '.', 'f.json'])).toEqual(['data:k', 'data:/v', 'data:.', 'path:f.json']);
    expect(roles(['jq', '-n', '--args', '$ARGS', '/a'])).toEqual(['data:$ARGS', 'data:/a']);
  });

  it('make -j takes a number only when one follows', () => {
    expect(roles(['make', '-j', '4', 'test'])).toEqual(['data:4', 'data:test']);
    expect(roles(['make', '-j', 'test'])).toEqual(['data:test']);
  });
});

describe('what a tool runs', () => {
  it('sort --compress-program, rg --pre and --hostname-bin run a program', () => {
    expect(spawned(['sort', '--compress-program=gzip', 'f'])).toEqual(['sort --compress-program: gzip']);
    expect(spawned(['sort', '--compress=sh', 'f'])).toEqual(['sort --compress-program: sh']);
    expect(spawned(['rg', '--pre', 'pdftotext', 'x'])).toEqual(['rg --pre: pdftotext']);
    // ripgrep takes no abbreviations: --pr is not --pre.
    expect(spawned(['rg', '--pr=sh', 'x'])).toEqual([]);
  });

  it('find: -exec, -execdir, -ok and -okdir run their command; -delete deletes as rm does', () => {
    expect(
      spawned(['find', '.', '-name', '*.py', '-exec', 'grep', '-l', 'x', '{}', '+', '-o', '-execdir', 'wc', '{}', ';']),
    ).toEqual(['find -exec: grep -l x {}', 'find -execdir: wc {}']);
    expect(spawned(['find', '.', '-delete'])).toEqual(['find -delete: rm']);
    expect(roles(['find', 'src', '-name', '/x', '-newer', 'ref', '-fprint', 'out'])).toEqual([
      'path:src',
      'data:/x',
      'path:ref',
      'path:out',
    ]);
    expect(read('find', '.', '-exec', 'ls').hidden).toEqual(['find -exec without its command and ;']);
  });

  it('git: -c keys that run a program are judged as that program; others that may, cannot be', () => {
    expect(spawned(['git', '-c', 'core.pager=less -R', 'log'])).toEqual(['git -c core.pager: less -R']);
    expect(spawned(['git', '-c', 'core.pager=less | head', 'log'])).toEqual(['git -c core.pager: sh -c less | head']);
    expect(read('git', '-c', 'user.name=a', '-c', 'color.ui=never', 'log').hidden).toEqual([]);
    expect(read('git', '-c', 'alias.x=!sh', 'x').hidden).toEqual([
      'git -c alias.x, which may make git run a program or read a file the rules do not see',
    ]);
    expect(read('git', '--exec-path=.', 'status').hidden).toHaveLength(1);
    expect(spawned(['git', 'grep', '-O', 'x'])).toEqual(['git grep --open-files-in-pager: less']);
    expect(spawned(['git', 'fetch', '--upload-pack=x y', 'r'])).toEqual(['git fetch --upload-pack: sh -c x y']);
    expect(spawned(['git', 'push', 'ext::sh -c id'])).toEqual(['git ext::: sh -c sh -c id']);
  });

  it("git: the subcommand's grammar says what is data", () => {
    expect(roles(['git', 'commit', '-m', '/ci: skip', '-F', 'msg'])).toEqual(['data:/ci: skip', 'path:msg']);
    expect(roles(['git', '-C', 'sub', 'log', '--grep=/fix', '--oneline', 'a'])).toEqual([
      'path:sub',
      'data:/fix',
      'path:a',
    ]);
    expect(read('git', 'frobnicate', 'x').certain).toBe(false);
  });

  it('npx and npm exec run a package program (deny list only); -c runs a command line', () => {
    expect(read('npx', '-y', 'eslint', '.').spawned).toEqual([
      { kind: 'argv', argv: ['eslint', '.'], via: 'npx', scope: 'deny' },
    ]);
    expect(spawned(['npm', 'exec', '-c', 'eslint .'])).toEqual(['npm exec -c: sh -c eslint .']);
    expect(spawned(['npm', '--script-shell=bash', 'test'])).toEqual(['npm --script-shell: bash']);
  });

  it('make: --eval and a makefile from stdin cannot be judged; variables name what recipes run', () => {
    expect(read('make', '--eval=x:;id').hidden).toEqual(['make --eval']);
    expect(read('make', '-f', '-').hidden).toEqual(['make -f -, which reads a makefile from stdin']);
    expect(read('make', 'SHELL=/bin/sh').hidden).toHaveLength(1);
    expect(read('make', 'CFLAGS=-O2 -g', 'CC=clang').spawned.map((s) => s.kind === 'argv' && s.argv)).toEqual([
      ['-O2', '-g'],
      ['clang'],
    ]);
  });

  it('tar: its program options in every spelling', () => {
    expect(spawned(['tar', '--to-command=wc', '-xf', 'a.tar'])).toEqual(['tar --to-command: sh -c wc']);
    expect(spawned(['tar', '-xIzstd', '-f', 'a.tar'])).toEqual(['tar -I: zstd']);
    expect(spawned(['tar', '--use-comp', 'gzip -9', '-cf', 'a.tgz', 'x'])).toEqual([
      'tar --use-compress-program: gzip -9',
    ]);
    expect(read('tar', '-F', 'x.sh', '-cf', 'a.tar', 'x').hidden).toHaveLength(1);
  });

  it('editors and pagers whose commands can run a shell', () => {
    expect(read('vim', '-c', ':!sh', 'f').hidden).toHaveLength(1);
    expect(read('less', '+!sh', 'f').hidden).toHaveLength(1);
    expect(read('less', 'f').hidden).toEqual([]);
    expect(spawned(['man', '-P', 'cat', 'ls'])).toEqual(['man --pager: cat']);
  });
});

describe('words sh expands, where they could be an option of a tool that runs programs', () => {
  const expanded: ExpandedOf = (w) =>
    w.startsWith('$') ? { dash: w !== '$SAFE', many: true, written: w, prefix: '' } : undefined;
  it('rg, sort, find: refused; grep (which runs nothing): uncertain, so every word is a path', () => {
    expect(readTool(['rg', '$X', 'x'], expanded)!.unreadable).toHaveLength(1);
    expect(readTool(['find', '.', '$X'], expanded)!.unreadable).toHaveLength(1);
    // find: a value that is one field is only a value; an unquoted one could be several primaries.
    const one: ExpandedOf = (w) => (w === '"$P"' ? { dash: true, many: false, written: w, prefix: '' } : expanded(w));
    expect(readTool(['find', '.', '-name', '"$P"'], one)!.unreadable).toEqual([]);
    expect(readTool(['find', '.', '-name', '$P'], one)!.unreadable).toHaveLength(1);
    const grep = readTool(['grep', '$X', 'x'], expanded)!;
    expect([grep.unreadable, grep.certain]).toEqual([[], false]);
    expect(readTool(['rg', '$SAFE', 'x'], expanded)!.unreadable).toEqual([]);
  });

  it('an option whose literal start is known is read: -j$(nproc) is -j and a value', () => {
    const nproc: ExpandedOf = (w) => (w === '-j$N' ? { dash: true, many: false, written: w, prefix: '-j' } : undefined);
    const make = readTool(['make', '-j$N', 'test'], nproc)!;
    expect([make.unreadable, make.certain, make.args.map((a) => a.role)]).toEqual([[], true, ['data', 'data']]);
  });
});
