// The tables of the commands the command rules know (docs/DESIGN.md, "Command rules"): the groups a
// profile names, the wrappers that run another command and how to skip their options, the global options
// before a subcommand, flag spellings, the clients that need the network, and the shell builtins that
// change the shell. Data only: command-layers.ts, shell-units.ts and command-rules.ts read them.
import type { CommandGroupName } from '../profile/schema-command-rules.js';

/** The members of each group the schema accepts (typed by its list, so the two cannot drift apart). */
export const COMMAND_GROUPS: Record<CommandGroupName, readonly string[]> = {
  '@network': [
    'curl',
    'wget',
    'ssh',
    'scp',
    'sftp',
    'rsync',
    'nc',
    'ncat',
    'netcat',
    'socat',
    'telnet',
    'ftp',
    'tftp',
    'lftp',
    'aria2c',
    'http',
    'https',
    'xh',
    'mosh',
    'ssh-keyscan',
  ],
  '@shells': ['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'fish', 'csh', 'tcsh', 'pwsh', 'powershell', 'cmd'],
  '@delete': ['rm', 'rmdir', 'unlink', 'shred', 'del', 'erase', 'srm', 'wipe'],
  '@privilege': ['sudo', 'su', 'doas', 'pkexec', 'runuser'],
};

/** How to skip a wrapper's own options to reach the command it runs. */
interface Wrapper {
  /** Options that take a value as the next argument. */
  withValue: readonly string[];
  /** Leading NAME=VALUE words (env). */
  assignments?: boolean;
  /** Positional arguments before the command (timeout's duration). */
  positionals?: number;
}

export const WRAPPERS: Record<string, Wrapper> = {
  env: { withValue: ['-u', '--unset', '-C', '--chdir', '-S', '--split-string'], assignments: true },
  nice: { withValue: ['-n', '--adjustment'] },
  ionice: { withValue: ['-c', '--class', '-n', '--classdata', '-p', '--pid', '-P', '--pgid', '-u', '--uid'] },
  nohup: { withValue: [] },
  setsid: { withValue: [] },
  timeout: { withValue: ['-s', '--signal', '-k', '--kill-after'], positionals: 1 },
  stdbuf: { withValue: ['-i', '-o', '-e', '--input', '--output', '--error'] },
  time: { withValue: ['-f', '--format', '-o', '--output'] },
  command: { withValue: [] },
  exec: { withValue: ['-a'] },
  xargs: {
    withValue: [
      '-a',
      '--arg-file',
      '-d',
      '--delimiter',
      '-E',
      '-I',
      '-L',
      '--max-lines',
      '-n',
      '--max-args',
      '-P',
      '--max-procs',
      '-s',
      '--max-chars',
    ],
  },
  sudo: {
    withValue: [
      '-u',
      '--user',
      '-g',
      '--group',
      '-C',
      '--close-from',
      '-D',
      '--chdir',
      '-h',
      '--host',
      '-p',
      '--prompt',
      '-r',
      '--role',
      '-t',
      '--type',
      '-U',
      '--other-user',
      '-T',
      '--command-timeout',
    ],
  },
  doas: { withValue: ['-u', '-C'] },
  busybox: { withValue: [] },
};

/** Wrappers that only change how a command runs: the command is judged, the wrapper needs no allow rule. */
export const PURE_WRAPPERS = new Set([
  'env',
  'nice',
  'ionice',
  'nohup',
  'setsid',
  'timeout',
  'stdbuf',
  'time',
  'command',
  'exec',
  'xargs',
  'busybox',
]);

/** env's options whose value is a command line of its own. */
export const SPLIT_STRING = new Set(['-S', '--split-string']);

/** Global options (with a value) before a subcommand. */
export const GLOBAL_OPTIONS: Record<string, readonly string[]> = {
  git: ['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--super-prefix', '--config-env', '--exec-path'],
  npm: ['--prefix', '-w', '--workspace', '-C'],
};

/** Spellings of one flag, per command and subcommand: the long form is the canonical one. */
export const FLAG_ALIASES: Record<string, Record<string, string>> = {
  'git push': { '-f': '--force', '--force-with-lease': '--force', '-d': '--delete' },
  'git clean': { '-f': '--force' },
  'git branch': { '-D': '--delete' },
  'git checkout': { '-f': '--force' },
};

/** git's subcommands that talk to a remote (command-rules.ts gitNeedsNetwork), and the pairs of subcommand and action that do. */
export const OFFLINE_GIT = new Set(['clone', 'fetch', 'pull', 'push', 'ls-remote']);
export const OFFLINE_GIT_PAIRS = new Set(['submodule update', 'submodule add', 'submodule sync', 'remote update']);

/** A package manager's subcommands that fetch from its registry, the hosts they need, and the flags that keep it offline. */
interface Fetcher {
  subcommands: readonly string[];
  /** Runs an install with no subcommand at all (`yarn`). */
  bare?: boolean;
  domains: readonly string[];
  offlineFlags: readonly string[];
}

const NPM_REGISTRY = ['registry.npmjs.org'];
const PYPI = ['pypi.org', 'files.pythonhosted.org'];
const NPM_SUBCOMMANDS = ['install', 'i', 'in', 'isntall', 'add', 'ci', 'clean-install', 'install-test', 'it'];

/**
 * Known network clients by argv[0] and subcommand (a table lookup: the launch path pays nothing
 * else). Package managers are not refused offline, since a cache, a lockfile-only step or a local
 * tarball can serve them; they are named, so a run that will hang says so at once (README "Command rules").
 */
export const NETWORK_FETCHERS: Record<string, Fetcher> = {
  npm: {
    subcommands: [...NPM_SUBCOMMANDS, 'update', 'up', 'upgrade', 'audit', 'outdated', 'view', 'info', 'publish'],
    domains: NPM_REGISTRY,
    offlineFlags: ['--offline'],
  },
  pnpm: {
    subcommands: ['install', 'i', 'add', 'update', 'up', 'fetch', 'dlx', 'outdated', 'audit'],
    domains: NPM_REGISTRY,
    offlineFlags: ['--offline'],
  },
  yarn: {
    subcommands: ['install', 'add', 'upgrade', 'up', 'dlx', 'outdated', 'audit'],
    bare: true,
    domains: ['registry.yarnpkg.com', 'registry.npmjs.org'],
    offlineFlags: ['--offline'],
  },
  pip: { subcommands: ['install', 'download'], domains: PYPI, offlineFlags: ['--no-index'] },
  pip3: { subcommands: ['install', 'download'], domains: PYPI, offlineFlags: ['--no-index'] },
  uv: { subcommands: ['sync', 'add', 'lock', 'pip'], domains: PYPI, offlineFlags: ['--offline', '--no-index'] },
  poetry: { subcommands: ['install', 'add', 'update', 'lock'], domains: PYPI, offlineFlags: [] },
  cargo: {
    subcommands: ['fetch', 'install', 'update', 'search', 'publish'],
    domains: ['index.crates.io', 'static.crates.io'],
    offlineFlags: ['--offline', '--frozen'],
  },
  go: { subcommands: ['get', 'install'], domains: ['proxy.golang.org', 'sum.golang.org'], offlineFlags: [] },
  gem: { subcommands: ['install', 'update', 'fetch'], domains: ['rubygems.org'], offlineFlags: ['--local'] },
  bundle: { subcommands: ['install', 'update'], domains: ['rubygems.org'], offlineFlags: ['--local'] },
  composer: { subcommands: ['install', 'update', 'require'], domains: ['repo.packagist.org'], offlineFlags: [] },
};

/**
 * Builtins a shell string may not run: they change the shell for the commands after it in ways the
 * rules do not follow (where relative paths resolve, which program a name runs, what runs on exit), or
 * run a string of their own. `cd DIR` in the string sbx runs is the one the rules follow (shell-units.ts
 * judgeCd); elsewhere (`command cd`, a nested `sh -c`) it stays refused.
 */
export const REFUSED_BUILTINS = new Set([
  ...['cd', 'chdir', 'pushd', 'popd', 'alias', 'unalias', 'trap', 'eval', '.', 'source', 'builtin', 'enable'],
  ...['shopt', 'let', 'hash', 'getopts', 'declare', 'typeset', 'mapfile', 'readarray', 'fc', 'complete'],
]);

/**
 * Builtins a shell string may run without an allow rule, each judged for what it changes: `export`,
 * `readonly`, `local` and `read` give variables values (judged where they are used, and the
 * variable's name: SHELL_VARIABLES), `set` only options; the rest change nothing later commands see.
 */
export const SCRIPT_BUILTINS = new Set([
  ...[':', 'true', 'false', 'break', 'continue', 'exit', 'return', 'shift', 'wait', 'umask', 'times'],
  ...['export', 'readonly', 'local', 'unset', 'read', 'set'],
]);

/**
 * Variables whose value decides which program a name runs, what a program loads or reads its options
 * from, or how sh reads the words after it: a command line that sets one (`PATH=. ls`, `export
 * LD_PRELOAD=...`, `env GIT_CONFIG_GLOBAL=x git`) runs what the rules cannot see. IFS and CDPATH are
 * refused as shell syntax instead (shell-units.ts).
 */
export const HIDDEN_VARIABLES = new Set([
  ...['PATH', 'BASH_ENV', 'ENV', 'SHELLOPTS', 'BASHOPTS', 'PS4', 'PROMPT_COMMAND', 'SHELL', 'MAKEFLAGS'],
  ...['MFLAGS', 'GNUMAKEFLAGS', 'RIPGREP_CONFIG_PATH', 'TAR_OPTIONS', 'LESSOPEN', 'LESSCLOSE', 'GIT_DIR'],
  ...['GIT_COMMON_DIR', 'GIT_EXEC_PATH', 'GIT_TEMPLATE_DIR', 'GIT_ALLOW_PROTOCOL', 'GIT_PROXY_COMMAND'],
  ...['GIT_CONFIG', 'GIT_CONFIG_GLOBAL', 'GIT_CONFIG_SYSTEM', 'GIT_CONFIG_COUNT', 'GIT_CONFIG_PARAMETERS'],
]);
export const HIDDEN_VARIABLE_PREFIXES = [
  'LD_',
  'DYLD_',
  'BASH_FUNC_',
  'GIT_CONFIG_KEY_',
  'GIT_CONFIG_VALUE_',
  'npm_config_',
  'NPM_CONFIG_',
];

/** Variables whose value is a command line a tool runs (git, man, less, editors): judged as that command. */
export const PROGRAM_VARIABLES = new Set([
  ...['GIT_PAGER', 'PAGER', 'MANPAGER', 'GIT_EDITOR', 'EDITOR', 'VISUAL', 'GIT_SEQUENCE_EDITOR'],
  ...['GIT_EXTERNAL_DIFF', 'GIT_SSH', 'GIT_SSH_COMMAND', 'GIT_ASKPASS', 'SSH_ASKPASS', 'BROWSER'],
]);
