// How git reads its arguments (git 2.39's --help of each command; docs/DESIGN.md, "Path guards"): the
// global options before a subcommand, the configuration keys `-c` may set without running anything,
// and, for the subcommands an agent runs most, which options take a value and what it is. A
// subcommand not listed here is read as an unknown tool: every word may be a path. Data only:
// tool-arguments.ts reads a git argv with it.
import type { Grammar, Role } from './tool-grammars.js';

/** Global options that take a value, before the subcommand. `-c`/`--config-env` are judged by key; `--exec-path=DIR` runs git's programs from DIR. */
export const GIT_GLOBAL_VALUED: Readonly<Record<string, Role>> = {
  '-C': 'path',
  '--git-dir': 'path',
  '--work-tree': 'path',
  '--namespace': 'data',
  '--super-prefix': 'data',
  '--list-cmds': 'data',
  '--attr-source': 'data',
  '-c': 'data',
  '--config-env': 'data',
};

export const GIT_GLOBAL_FLAGS = [
  ...['-p', '--paginate', '-P', '--no-pager', '--bare', '--no-replace-objects', '--literal-pathspecs'],
  ...['--glob-pathspecs', '--noglob-pathspecs', '--icase-pathspecs', '--no-optional-locks', '--no-lazy-fetch'],
  ...['--no-advice', '--version', '--help', '-v', '-h', '--html-path', '--man-path', '--info-path', '--exec-path'],
];

/**
 * Configuration keys (lower case, as git compares them) that only change how git formats, names or
 * compares: `-c` may set them. Any other key may name a program git runs (core.pager, alias.*,
 * core.fsmonitor, diff.external, filter.*.smudge, ...), a file it reads or a protocol it allows
 * (protocol.ext.allow), so the rules cannot judge the command.
 */
export const GIT_SAFE_CONFIG: readonly RegExp[] = [
  /^user\.(name|email|signingkey)$/,
  /^(author|committer)\.(name|email)$/,
  /^color\.[a-z.-]+$/,
  /^core\.(quotepath|autocrlf|safecrlf|filemode|abbrev|ignorecase|precomposeunicode|longpaths|whitespace|eol)$/,
  /^advice\.[a-z]+$/,
  /^init\.defaultbranch$/,
  /^(commit|tag)\.gpgsign$/,
  /^diff\.(noprefix|renames|algorithm|mnemonicprefix|relative|context|interhunkcontext|indentheuristic|colormoved|statgraphwidth|submodule)$/,
  /^merge\.(conflictstyle|ff|renames|stat)$/,
  /^pull\.(rebase|ff)$/,
  /^push\.default$/,
  /^log\.(date|decorate|follow|abbrevcommit|showroot|mailmap)$/,
  /^format\.pretty$/,
  /^status\.[a-z]+$/,
  /^column\.[a-z]+$/,
  /^i18n\.[a-z]+$/,
  /^rebase\.(autosquash|autostash|stat)$/,
  /^safe\.directory$/,
  /^grep\.(patterntype|extendedregexp|linenumber|column|fullname)$/,
  /^blame\.(date|showemail|blankboundary|showroot)$/,
  /^versionsort\.suffix$/,
  /^gc\.auto$/,
  /^maintenance\.auto$/,
];

/**
 * Keys whose value is a command line git runs (through sh when it has shell syntax): judged as that
 * command. `pager.<cmd>` may also be a boolean.
 */
export const GIT_PROGRAM_CONFIG: readonly RegExp[] = [
  /^core\.(pager|editor|sshcommand|askpass)$/,
  /^sequence\.editor$/,
  /^pager\.[a-z-]+$/,
  /^diff\.external$/,
  /^gpg(\.[a-z0-9]+)?\.program$/,
];

const data = (...options: string[]) => Object.fromEntries(options.map((o) => [o, 'data' as const]));

/** What log, show, diff and whatchanged share: revision walking and diff output. */
const REVISION_VALUED = data(
  ...['--grep', '--author', '--committer', '-S', '-G', '--format', '--pretty', '--since', '--until', '--after'],
  ...['--before', '--date', '-n', '--max-count', '--skip', '--min-parents', '--max-parents', '--diff-filter'],
  ...['--word-diff-regex', '-U', '--unified', '--encoding', '--decorate-refs', '--decorate-refs-exclude', '-L'],
  ...['--src-prefix', '--dst-prefix', '--line-prefix', '--inter-hunk-context', '--anchored', '-I'],
  ...['--ignore-matching-lines', '--ws-error-highlight', '--since-as-filter', '--grep-reflog', '--stat-width'],
);

const REVISION_FLAGS = [
  ...['--oneline', '--graph', '--all', '--stat', '--name-only', '--name-status', '--cached', '--staged', '-p'],
  ...['--patch', '-u', '--no-patch', '-s', '--no-merges', '--merges', '--first-parent', '--reverse', '--follow'],
  ...['--decorate', '--no-decorate', '--color', '--no-color', '--numstat', '--shortstat', '--summary', '--raw'],
  ...['--patch-with-stat', '--abbrev-commit', '--no-abbrev-commit', '--full-history', '--simplify-merges'],
  ...['--topo-order', '--date-order', '--author-date-order', '--left-right', '--cherry-pick', '--boundary'],
  ...['--source', '--walk-reflogs', '-g', '--regexp-ignore-case', '-i', '--invert-grep', '--all-match', '-E'],
  ...['-F', '-P', '--extended-regexp', '--fixed-strings', '--perl-regexp', '--quiet', '-q', '--exit-code'],
  ...['--no-index', '--check', '--binary', '--full-index', '-w', '--ignore-all-space', '-b', '--abbrev'],
  ...['--ignore-space-change', '--ignore-blank-lines', '--ignore-space-at-eol', '--minimal', '--patience'],
  ...['--histogram', '-R', '--text', '-a', '--word-diff', '--color-words', '--no-renames', '--find-renames'],
  ...['--find-copies', '--find-copies-harder', '-M', '-C', '-B', '-D', '--irreversible-delete', '--pickaxe-all'],
  ...['--pickaxe-regex', '-W', '--function-context', '--ext-diff', '--no-ext-diff', '--textconv', '--no-textconv'],
  ...['--no-prefix', '--default-prefix', '--full-diff', '--log-size', '--notes', '--no-notes', '--show-signature'],
  ...['--mailmap', '--no-mailmap', '--use-mailmap', '--tags', '--branches', '--remotes', '--not', '--ancestry-path'],
  ...['--no-walk', '--do-walk', '--children', '--parents', '--expand-tabs', '--no-expand-tabs', '--show-notes'],
  ...['--relative-date', '--merge', '-m', '-c', '--cc', '--dd', '--combined-all-paths', '--diff-merges'],
  ...['--remerge-diff', '-t', '--root', '--no-color-moved', '--color-moved', '--compact-summary', '--dirstat'],
  ...['--ignore-submodules', '--ita-invisible-in-index', '-z', '--relative', '--no-relative', '--submodule'],
  ...['--minimal', '--indent-heuristic', '--no-indent-heuristic', '--output-indicator-new', '--single-worktree'],
];

const REVISIONS: Grammar = {
  valued: { ...REVISION_VALUED, '--output': 'path', '-O': 'path' },
  flags: REVISION_FLAGS,
  operands: ['path'],
  numeric: true,
};

const COMMIT: Grammar = {
  valued: {
    ...data('-m', '--message', '-C', '--reuse-message', '-c', '--reedit-message', '--fixup', '--squash', '--author'),
    ...data('--date', '--cleanup', '--trailer'),
    '-F': 'path',
    '--file': 'path',
    '-t': 'path',
    '--template': 'path',
    '--pathspec-from-file': 'path',
  },
  flags: [
    ...['-a', '--all', '-p', '--patch', '-q', '--quiet', '-v', '--verbose', '-n', '--no-verify', '--no-edit', '-e'],
    ...['--edit', '--amend', '--allow-empty', '--allow-empty-message', '-s', '--signoff', '--no-signoff', '-i'],
    ...['--include', '-o', '--only', '--dry-run', '--short', '--porcelain', '--long', '--branch', '-z', '--null'],
    ...['-u', '--untracked-files', '--reset-author', '--status', '--no-status', '-S', '--gpg-sign', '--no-gpg-sign'],
    ...['--no-post-rewrite', '--verify', '--pathspec-file-nul'],
  ],
  operands: ['path'],
};

const GIT_GREP: Grammar = {
  valued: {
    ...data('-e', '-A', '-B', '-C', '--after-context', '--before-context', '--context', '-m', '--max-count'),
    ...data('--max-depth', '--threads'),
    '-f': 'path',
  },
  flags: [
    ...['-i', '--ignore-case', '-I', '-w', '--word-regexp', '-v', '--invert-match', '-h', '-H', '--full-name', '-E'],
    ...['-G', '-F', '-P', '--extended-regexp', '--basic-regexp', '--fixed-strings', '--perl-regexp', '-n'],
    ...['--line-number', '--column', '-l', '--files-with-matches', '--name-only', '-L', '--files-without-match'],
    ...['-z', '--null', '-o', '--only-matching', '-c', '--count', '--color', '--no-color', '--break', '--heading'],
    ...['-p', '--show-function', '-W', '--function-context', '-q', '--quiet', '--cached', '--untracked'],
    ...['--no-index', '--no-exclude-standard', '--exclude-standard', '--recurse-submodules', '-a', '--text'],
    ...['--textconv', '--no-textconv', '-r', '--recursive', '--no-recursive', '--all-match', '--and', '--or'],
    ...['--not', '(', ')'],
  ],
  operands: ['data', 'path'],
  firstGivenBy: ['-e', '-f'],
  numeric: true,
};

const TAG: Grammar = {
  valued: {
    ...data('-m', '--message', '-u', '--local-user', '--sort', '--format', '--contains', '--no-contains'),
    ...data('--merged', '--no-merged', '--points-at', '--cleanup'),
    '-F': 'path',
    '--file': 'path',
  },
  flags: [
    ...['-a', '-s', '-d', '-v', '-l', '-f', '-n', '--list', '--delete', '--verify', '--annotate', '--sign'],
    ...['--force', '-i', '--ignore-case', '--column', '--no-column', '--create-reflog'],
  ],
  operands: ['data'],
};

const STASH: Grammar = {
  valued: { ...data('-m', '--message'), '--pathspec-from-file': 'path' },
  flags: [
    ...['-p', '--patch', '-k', '--keep-index', '--no-keep-index', '-u', '--include-untracked', '-a', '--all'],
    ...['-q', '--quiet', '-S', '--staged', '--index', '--pathspec-file-nul'],
  ],
  operands: ['data', 'path'],
};

const BRANCH: Grammar = {
  valued: data(
    ...['-u', '--set-upstream-to', '--sort', '--format', '--contains', '--no-contains', '--merged', '--no-merged'],
    '--points-at',
  ),
  flags: [
    ...['-a', '-r', '-l', '-v', '-vv', '-d', '-D', '-m', '-M', '-c', '-C', '-f', '-q', '--list', '--all'],
    ...['--remotes', '--show-current', '--delete', '--move', '--copy', '--force', '--verbose', '--no-color'],
    ...['--color', '--column', '--no-column', '--track', '--no-track', '--unset-upstream', '--edit-description'],
    ...['-i', '--ignore-case', '--quiet'],
  ],
  operands: ['data'],
};

const CHECKOUT: Grammar = {
  valued: {
    ...data('-b', '-B', '--orphan', '-c', '-C', '--create', '--force-create', '--conflict', '-s', '--source'),
    '--pathspec-from-file': 'path',
  },
  flags: [
    ...['-f', '--force', '-q', '--quiet', '-m', '--merge', '--detach', '-d', '-t', '--track', '--no-track'],
    ...['--ours', '--theirs', '-p', '--patch', '--progress', '--no-progress', '--guess', '--no-guess', '-S'],
    ...['--discard-changes', '--ignore-other-worktrees', '--staged', '-W', '--worktree', '--overlay'],
    ...['--no-overlay', '--ignore-unmerged', '--pathspec-file-nul'],
  ],
  operands: ['path'],
};

const ADD: Grammar = {
  valued: { ...data('--chmod'), '--pathspec-from-file': 'path' },
  flags: [
    ...['-A', '--all', '-u', '--update', '-p', '--patch', '-i', '--interactive', '-e', '--edit', '-n', '--dry-run'],
    ...['-f', '--force', '-v', '--verbose', '-N', '--intent-to-add', '--refresh', '--ignore-errors'],
    ...['--ignore-missing', '--renormalize', '--sparse', '-q', '--quiet', '--no-all', '--pathspec-file-nul'],
  ],
  operands: ['path'],
};

const STATUS: Grammar = {
  valued: {},
  flags: [
    ...['-s', '--short', '-b', '--branch', '--porcelain', '--long', '-v', '--verbose', '-u', '--untracked-files'],
    ...['--ignored', '--ignore-submodules', '-z', '--column', '--no-column', '--ahead-behind', '--no-ahead-behind'],
    ...['--renames', '--no-renames', '--find-renames', '--show-stash'],
  ],
  operands: ['path'],
};

const LS_FILES: Grammar = {
  valued: { ...data('-x', '--exclude', '--exclude-per-directory', '--format'), '-X': 'path', '--exclude-from': 'path' },
  flags: [
    ...['-c', '-d', '-m', '-o', '-i', '-s', '-u', '-k', '-z', '-t', '-v', '-f', '--cached', '--deleted'],
    ...['--modified', '--others', '--ignored', '--stage', '--unmerged', '--killed', '--directory', '--eol'],
    ...['--no-empty-directory', '--exclude-standard', '--error-unmatch', '--full-name', '--recurse-submodules'],
    ...['--debug', '--deduplicate', '--sparse', '--abbrev'],
  ],
  operands: ['path'],
};

const BLAME: Grammar = {
  valued: {
    ...data('-L', '--ignore-rev', '--date'),
    '-S': 'path',
    '--contents': 'path',
    '--ignore-revs-file': 'path',
  },
  flags: [
    ...['-b', '--root', '--show-stats', '-l', '-t', '-f', '--show-name', '-n', '--show-number', '-s', '-e'],
    ...['--show-email', '-w', '-c', '-p', '--porcelain', '--line-porcelain', '--incremental', '--progress', '-M'],
    ...['-C', '--color-lines', '--color-by-age'],
  ],
  operands: ['path'],
};

const RESET: Grammar = {
  valued: { '--pathspec-from-file': 'path' },
  flags: ['--soft', '--mixed', '--hard', '--merge', '--keep', '-q', '--quiet', '-p', '--patch', '-N'],
  operands: ['path'],
};

/** rev-parse and the like print names: every operand is data. */
const NAMES: Grammar = { valued: {}, flags: [], allData: true, operands: ['data'] };

export const GIT_SUBCOMMANDS: Readonly<Record<string, Grammar>> = {
  log: REVISIONS,
  show: REVISIONS,
  diff: REVISIONS,
  whatchanged: REVISIONS,
  commit: COMMIT,
  grep: GIT_GREP,
  tag: TAG,
  stash: STASH,
  branch: BRANCH,
  checkout: CHECKOUT,
  switch: CHECKOUT,
  restore: CHECKOUT,
  add: ADD,
  status: STATUS,
  'ls-files': LS_FILES,
  blame: BLAME,
  reset: RESET,
  'rev-parse': NAMES,
  'rev-list': REVISIONS,
  'merge-base': NAMES,
  'symbolic-ref': NAMES,
  describe: NAMES,
  'cat-file': NAMES,
  version: NAMES,
};
