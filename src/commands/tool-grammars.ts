// How common tools read their arguments (docs/DESIGN.md, "Path guards"): which options take a value and
// what that value is to the tool, and what each operand is. A path guard judges an argument only where
// the tool reads a path (`grep -rn "/api" .`: the pattern is data, `.` a path), and the rules judge the
// programs a tool runs (`sort --compress-program=PROG`, `rg --pre=PROG`). The option lists follow each
// tool's --help (GNU grep 3, GNU sed 4, gawk 5, GNU coreutils 9, ripgrep 14, jq 1.7, git 2.39); an
// option that is not listed makes the reading uncertain, and every word is then judged as a path, as
// if the tool were unknown. Data only: tool-arguments.ts reads an argv with them.

/**
 * What an argument is to the tool: `data` (a pattern, a message: neither a path nor a program),
 * `path` (a file it reads or writes), `program` (a program it runs, with arguments of its own making),
 * `command` (a command line it runs, through sh when it has shell syntax, as git runs core.pager),
 * `shell` (a string it gives `sh -c`), `hidden` (what it runs cannot be judged: a makefile given with
 * --eval), `count` (a number, and only then the option's value: `make -j 4` but `make -j test`).
 */
export type Role = 'data' | 'path' | 'program' | 'command' | 'shell' | 'hidden' | 'count';

export interface Grammar {
  /** Options that take a value, by spelling (`-e`, `--regexp`): the value's role, or the roles of several values (jq --arg NAME VALUE). */
  valued: Readonly<Record<string, Role | readonly Role[]>>;
  /** Options that take none (a long one may still be given `=VALUE`, as `--color=auto`: data). */
  flags: readonly string[];
  /** Options whose value is optional and only ever attached (`sed -i.bak`, `--in-place=.bak`): its role. */
  attachedOnly?: Readonly<Record<string, Role>>;
  /** Every option the tool has takes no value and every word is data (echo, printf, tr): no list needed. */
  allData?: true;
  /** The roles of the operands in order; the last one repeats. */
  operands: readonly Role[];
  /** Options that give what the first operand would (grep -e PATTERN): the operands then start at the second role. */
  firstGivenBy?: readonly string[];
  /** Options after which the tool reads no more options (python -c CODE ARGS...). */
  endsOptions?: readonly string[];
  /** Options after which every operand is data (jq --args). */
  restAsData?: readonly string[];
  /** Options are read only before the first operand (POSIX getopt, python, node); GNU tools read them anywhere. */
  optionsFirst?: true;
  /** Long options may not be abbreviated (ripgrep's parser); getopt_long accepts any unique prefix. */
  exactLong?: true;
  /** `-NUM` is an option (grep -5, git log -3). */
  numeric?: true;
}

const DATA_TOOL: Grammar = { valued: {}, flags: [], allData: true, operands: ['data'] };

const GREP: Grammar = {
  valued: {
    ...Object.fromEntries(
      ['-e', '--regexp', '-m', '--max-count', '-A', '-B', '-C', '--after-context', '--before-context', '--context']
        .concat(['-d', '--directories', '-D', '--devices', '--label', '--binary-files', '--include', '--exclude'])
        .concat(['--exclude-dir', '--group-separator'])
        .map((o) => [o, 'data' as const]),
    ),
    '-f': 'path',
    '--file': 'path',
    '--exclude-from': 'path',
  },
  flags: [
    ...['-E', '-F', '-G', '-P', '-i', '-y', '-v', '-w', '-x', '-c', '-L', '-l', '-o', '-q', '-s', '-b', '-H', '-h'],
    ...['-n', '-T', '-Z', '-z', '-a', '-I', '-r', '-R', '-U', '-V', '--extended-regexp', '--fixed-strings'],
    ...['--basic-regexp', '--perl-regexp', '--ignore-case', '--no-ignore-case', '--word-regexp', '--line-regexp'],
    ...['--null-data', '--no-messages', '--invert-match', '--version', '--help', '--byte-offset', '--line-number'],
    ...['--line-buffered', '--with-filename', '--no-filename', '--only-matching', '--quiet', '--silent', '--text'],
    ...['--recursive', '--dereference-recursive', '--files-without-match', '--files-with-matches', '--count'],
    ...['--initial-tab', '--null', '--color', '--colour', '--no-group-separator', '--binary'],
  ],
  operands: ['data', 'path'],
  firstGivenBy: ['-e', '--regexp', '-f', '--file'],
  numeric: true,
};

const RG: Grammar = {
  valued: {
    ...Object.fromEntries(
      ['-e', '--regexp', '-g', '--glob', '--iglob', '-t', '--type', '-T', '--type-not', '--type-add', '--type-clear']
        .concat(['-A', '-B', '-C', '--after-context', '--before-context', '--context', '-m', '--max-count', '-d'])
        .concat(['--max-depth', '--maxdepth', '--max-filesize', '-M', '--max-columns', '-j', '--threads', '--color'])
        .concat(['--colors', '-E', '--encoding', '--sort', '--sortr', '-r', '--replace', '--path-separator'])
        .concat(['--context-separator', '--field-context-separator', '--field-match-separator', '--pre-glob'])
        .concat(['--engine', '--dfa-size-limit', '--regex-size-limit', '--hyperlink-format', '--generate'])
        .map((o) => [o, 'data' as const]),
    ),
    '-f': 'path',
    '--file': 'path',
    '--ignore-file': 'path',
    '--pre': 'program',
    '--hostname-bin': 'program',
  },
  flags: [
    ...['-i', '-s', '-S', '-w', '-x', '-v', '-c', '-l', '-n', '-N', '-H', '-I', '-p', '-u', '-.', '-a', '-z', '-L'],
    ...['-o', '-q', '-U', '-P', '-F', '-b', '-0', '-h', '-V', '--files', '--files-with-matches'],
    ...['--files-without-match', '--count', '--count-matches', '--json', '--vimgrep', '--heading', '--no-heading'],
    ...['--hidden', '--no-hidden', '--no-ignore', '--no-ignore-vcs', '--no-ignore-dot', '--no-ignore-parent'],
    ...['--no-ignore-global', '--no-ignore-exclude', '--no-ignore-files', '--follow', '--fixed-strings'],
    ...['--ignore-case', '--smart-case', '--case-sensitive', '--word-regexp', '--line-regexp', '--invert-match'],
    ...['--line-number', '--no-line-number', '--with-filename', '--no-filename', '--only-matching', '--quiet'],
    ...['--stats', '--multiline', '--multiline-dotall', '--pcre2', '--crlf', '--null', '--null-data', '--trim'],
    ...['--column', '--no-column', '--byte-offset', '--passthru', '--search-zip', '--text', '--binary'],
    ...['--one-file-system', '--no-messages', '--no-config', '--debug', '--trace', '--type-list', '--version'],
    ...['--help', '--unrestricted', '--pretty', '--sort-files', '--max-columns-preview', '--no-unicode'],
    ...['--include-zero', '--no-require-git', '--block-buffered', '--line-buffered', '--mmap', '--no-mmap'],
    ...['--auto-hybrid-regex', '--glob-case-insensitive', '--no-pcre2-unicode', '--no-pre'],
  ],
  operands: ['data', 'path'],
  firstGivenBy: ['-e', '--regexp', '-f', '--file'],
  exactLong: true,
};

const SORT: Grammar = {
  valued: {
    ...Object.fromEntries(
      ['-k', '--key', '-t', '--field-separator', '-S', '--buffer-size', '--batch-size', '--parallel', '--sort'].map(
        (o) => [o, 'data' as const],
      ),
    ),
    '-T': 'path',
    '--temporary-directory': 'path',
    '-o': 'path',
    '--output': 'path',
    '--files0-from': 'path',
    '--random-source': 'path',
    '--compress-program': 'program',
  },
  flags: [
    ...['-b', '-d', '-f', '-g', '-i', '-M', '-h', '-n', '-R', '-r', '-V', '-c', '-C', '-m', '-s', '-u', '-z'],
    ...['--ignore-leading-blanks', '--dictionary-order', '--ignore-case', '--general-numeric-sort'],
    ...['--ignore-nonprinting', '--month-sort', '--human-numeric-sort', '--numeric-sort', '--random-sort'],
    ...['--reverse', '--version-sort', '--check', '--merge', '--stable', '--unique', '--zero-terminated'],
    ...['--debug', '--help', '--version'],
  ],
  operands: ['path'],
};

const CUT: Grammar = {
  valued: Object.fromEntries(
    ['-b', '-c', '-d', '-f', '--bytes', '--characters', '--delimiter', '--fields', '--output-delimiter'].map((o) => [
      o,
      'data' as const,
    ]),
  ),
  flags: ['-n', '-s', '-z', '--complement', '--only-delimited', '--zero-terminated', '--help', '--version'],
  operands: ['path'],
};

const JQ: Grammar = {
  valued: {
    '--arg': ['data', 'data'],
    '--argjson': ['data', 'data'],
    '--slurpfile': ['data', 'path'],
    '--rawfile': ['data', 'path'],
    '-f': 'path',
    '--from-file': 'path',
    '-L': 'path',
    '--indent': 'data',
  },
  flags: [
    ...['-r', '-j', '-a', '-c', '-n', '-s', '-e', '-S', '-C', '-M', '-h', '-V', '-R', '-0', '--raw-output'],
    ...['--join-output', '--ascii-output', '--compact-output', '--null-input', '--slurp', '--exit-status'],
    ...['--sort-keys', '--color-output', '--monochrome-output', '--tab', '--seq', '--stream', '--stream-errors'],
    ...['--raw-input', '--raw-output0', '--help', '--version', '--unbuffered', '--args', '--jsonargs'],
  ],
  operands: ['data', 'path'],
  firstGivenBy: ['-f', '--from-file'],
  restAsData: ['--args', '--jsonargs'],
};

const DATE: Grammar = {
  valued: {
    '-d': 'data',
    '--date': 'data',
    '-s': 'data',
    '--set': 'data',
    '-f': 'path',
    '--file': 'path',
    '-r': 'path',
    '--reference': 'path',
  },
  flags: ['-u', '--utc', '--universal', '-R', '--rfc-email', '--debug', '--help', '--version', '-I', '--iso-8601'],
  operands: ['data'],
};

const PYTHON: Grammar = {
  valued: { '-c': 'data', '-m': 'data', '-W': 'data', '-X': 'data', '--check-hash-based-pycs': 'data' },
  flags: [
    ...['-b', '-B', '-d', '-E', '-h', '-i', '-I', '-O', '-P', '-q', '-s', '-S', '-u', '-v', '-V', '-x', '-?'],
    ...['--version', '--help'],
  ],
  operands: ['path'],
  endsOptions: ['-c', '-m'],
  optionsFirst: true,
};

const NODE: Grammar = {
  valued: {
    ...Object.fromEntries(
      ['-e', '--eval', '-p', '--print', '--input-type', '--import', '--loader', '-C', '--conditions'].map((o) => [
        o,
        'data' as const,
      ]),
    ),
    '-r': 'path',
    '--require': 'path',
    '--env-file': 'path',
  },
  flags: [
    ...['-c', '--check', '-i', '--interactive', '-v', '--version', '-h', '--help', '--test', '--watch'],
    ...['--enable-source-maps', '--no-warnings', '--trace-warnings', '--expose-gc', '--inspect', '--inspect-brk'],
    ...[
      '--no-deprecation',
      '--trace-deprecation',
      '--throw-deprecation',
      '--preserve-symlinks',
      '--abort-on-uncaught-exception',
    ],
  ],
  operands: ['path'],
  optionsFirst: true,
};

const SED: Grammar = {
  valued: {
    '-e': 'data',
    '--expression': 'data',
    '-l': 'data',
    '--line-length': 'data',
    '-f': 'hidden',
    '--file': 'hidden',
  },
  flags: [
    ...['-n', '-s', '-E', '-r', '-u', '-z', '-b', '--quiet', '--silent', '--posix', '--debug', '--sandbox'],
    ...['--follow-symlinks', '--separate', '--regexp-extended', '--unbuffered', '--null-data', '--zero-terminated'],
    ...['--binary', '--help', '--version'],
  ],
  attachedOnly: { '-i': 'data', '--in-place': 'data' },
  operands: ['data', 'path'],
  firstGivenBy: ['-e', '--expression', '-f', '--file'],
};

const AWK: Grammar = {
  valued: {
    '-F': 'data',
    '--field-separator': 'data',
    '-v': 'data',
    '--assign': 'data',
    '-e': 'data',
    '--source': 'data',
    '-f': 'hidden',
    '--file': 'hidden',
    '-E': 'hidden',
    '--exec': 'hidden',
    '-i': 'hidden',
    '--include': 'hidden',
    '-l': 'hidden',
    '--load': 'hidden',
    '-W': 'hidden',
  },
  flags: [
    ...['-b', '-c', '-C', '-g', '-h', '-M', '-n', '-N', '-O', '-P', '-r', '-s', '-S', '-t', '-V'],
    ...['--characters-as-bytes', '--traditional', '--copyright', '--gen-pot', '--help', '--bignum', '--posix'],
    ...['--non-decimal-data', '--use-lc-numeric', '--optimize', '--re-interval', '--no-optimize', '--sandbox'],
    ...['--lint-old', '--version'],
  ],
  operands: ['data', 'path'],
  firstGivenBy: ['-f', '--file', '-e', '--source', '-E', '--exec'],
};

const MAKE: Grammar = {
  valued: {
    '-C': 'path',
    '--directory': 'path',
    '-f': 'path',
    '--file': 'path',
    '--makefile': 'path',
    '-I': 'path',
    '--include-dir': 'path',
    '-o': 'path',
    '--old-file': 'path',
    '--assume-old': 'path',
    '-W': 'path',
    '--what-if': 'path',
    '--new-file': 'path',
    '--assume-new': 'path',
    '-j': 'count',
    '--jobs': 'count',
    '-l': 'count',
    '--load-average': 'count',
    '-E': 'hidden',
    '--eval': 'hidden',
  },
  flags: [
    ...['-B', '-d', '-e', '-i', '-k', '-n', '-p', '-q', '-r', '-R', '-s', '-S', '-t', '-v', '-w', '-L'],
    ...['--always-make', '--environment-overrides', '--ignore-errors', '--keep-going', '--just-print', '--dry-run'],
    ...['--recon', '--print-data-base', '--question', '--no-builtin-rules', '--no-builtin-variables', '--silent'],
    ...['--quiet', '--stop', '--no-keep-going', '--touch', '--version', '--print-directory', '--trace'],
    ...['--no-print-directory', '--warn-undefined-variables', '--check-symlink-times', '--help'],
  ],
  operands: ['data'],
};

/** The grammars of whole tools, by name (basename of argv[0]). git, find, npm, npx and tar are read apart (tool-arguments.ts). */
export const GRAMMARS: Readonly<Record<string, Grammar>> = {
  ...Object.fromEntries(
    ['echo', 'printf', 'tr', 'sleep', 'which', 'seq', 'expr', 'true', 'false', 'pwd', 'basename', 'dirname']
      .concat(['uname', 'nproc', 'whoami', 'id', 'hostname', 'yes', 'type'])
      .map((name) => [name, DATA_TOOL]),
  ),
  grep: GREP,
  egrep: GREP,
  fgrep: GREP,
  rg: RG,
  sort: SORT,
  cut: CUT,
  jq: JQ,
  date: DATE,
  python: PYTHON,
  python3: PYTHON,
  node: NODE,
  sed: SED,
  awk: AWK,
  gawk: AWK,
  mawk: AWK,
  nawk: AWK,
  make: MAKE,
  gmake: MAKE,
};
