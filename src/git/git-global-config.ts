// The user's global git config (~/.gitconfig and $XDG_CONFIG_HOME/git/config) as the sandbox sees
// it: HOME inside is an empty tmpfs, so without it `git commit` stops at "Author identity unknown".
// An allow-list, not a deny-list: the file also holds credential helpers, core.sshCommand,
// core.fsmonitor, hooksPath, includes of other files, editors, pagers, diff and merge drivers and
// filters, each naming a program or a file on the host; a key git adds tomorrow must not pass
// because nobody listed it. What passes names no program, no host file and no credential: the
// identity, git-subcommand aliases, and settings that only change how git formats or merges.
// Pure: text in, text out (git/git-config.ts parses it as git does).
import { carriesUserinfo, rewriteGitConfig, type SanitizedGitConfig } from './git-config.js';

/** Keys kept per section ('*': every key); sections not listed are dropped whole. */
const ALLOWED: Record<string, ReadonlySet<string> | '*'> = {
  // Identity. Not user.signingKey: signing needs keys and an agent the sandbox does not have.
  user: new Set(['name', 'email', 'useconfigonly']),
  author: new Set(['name', 'email']),
  committer: new Set(['name', 'email']),
  core: new Set([
    'autocrlf',
    'eol',
    'safecrlf',
    'filemode',
    'ignorecase',
    'precomposeunicode',
    'quotepath',
    'whitespace',
    'abbrev',
    'compression',
    'loosecompression',
    'bigfilethreshold',
    'symlinks',
    'checkstat',
    'trustctime',
    'commentchar',
    'commentstring',
    'untrackedcache',
    'preloadindex',
    'splitindex',
    'logallrefupdates',
    'warnambiguousrefs',
  ]),
  init: new Set(['defaultbranch']),
  pull: new Set(['rebase', 'ff']),
  push: new Set(['default', 'autosetupremote', 'followtags']),
  merge: new Set(['conflictstyle', 'ff', 'log', 'renames', 'renamelimit', 'stat', 'autostash', 'verbosity']),
  diff: new Set([
    'algorithm',
    'colormoved',
    'colormovedws',
    'context',
    'interhunkcontext',
    'mnemonicprefix',
    'noprefix',
    'relative',
    'renames',
    'renamelimit',
    'indentheuristic',
    'submodule',
    'statgraphwidth',
    'wserrorhighlight',
    'suppressblankempty',
  ]),
  rebase: new Set(['autosquash', 'autostash', 'updaterefs', 'abbreviatecommands', 'missingcommitscheck', 'stat']),
  fetch: new Set(['prune', 'prunetags', 'parallel']),
  branch: new Set(['autosetupmerge', 'autosetuprebase', 'sort']),
  status: new Set(['showuntrackedfiles', 'short', 'branch', 'relativepaths', 'submodulesummary', 'aheadbehind']),
  log: new Set(['date', 'decorate', 'follow', 'abbrevcommit', 'mailmap', 'graphcolors']),
  commit: new Set(['verbose', 'status', 'cleanup']),
  tag: new Set(['sort']),
  grep: new Set(['linenumber', 'extendedregexp', 'patterntype', 'column', 'fullname']),
  rerere: new Set(['enabled', 'autoupdate']),
  column: new Set(['ui']),
  help: new Set(['autocorrect']),
  format: new Set(['pretty']),
  submodule: new Set(['recurse']),
  transfer: new Set(['fsckobjects']),
  gc: new Set(['auto']),
  // Colours and advice are display only; named pretty formats are format strings.
  color: '*',
  advice: '*',
  pretty: '*',
  alias: '*',
  url: new Set(['insteadof', 'pushinsteadof']),
  pager: '*',
};

/** Sections whose subsections are kept: colour slots (`[color "diff"]`) and URL rewrites (`[url "BASE"]`). */
const WITH_SUBSECTIONS = new Set(['color', 'url']);

const BOOLEAN = /^(?:true|false|yes|no|on|off|1|0)?$/i;

/** Keys that pass only with some values: those that could name a program or leave the sandbox's view. */
function keepValue(section: string, value: string | undefined): boolean {
  // `!cmd` aliases run a shell command (and are where tokens get pasted); git-subcommand aliases do not.
  if (section === 'alias') return value !== undefined && !value.trimStart().startsWith('!');
  // pager.<cmd> is a boolean or a pager command line: only the boolean.
  if (section === 'pager') return value === undefined || BOOLEAN.test(value);
  return true;
}

/** `file` as the user wrote it (~/.gitconfig), for the header. */
export function sanitizeGlobalGitConfig(input: string, file: string): SanitizedGitConfig {
  return rewriteGitConfig(input, {
    header: `# sbx: ${file} limited to identity, aliases and settings that run nothing (read-only)\n`,
    keepSection: (name, sub) =>
      Object.hasOwn(ALLOWED, name) && (sub === undefined || (WITH_SUBSECTIONS.has(name) && !carriesUserinfo(sub))),
    keepKey: (name, _sub, key, value) => {
      const keys = Object.hasOwn(ALLOWED, name) ? ALLOWED[name] : undefined;
      return keys !== undefined && (keys === '*' || keys.has(key)) && keepValue(name, value);
    },
    emptySections: false,
  });
}
