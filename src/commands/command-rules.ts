// Command rules (docs/DESIGN.md, "Command rules"): the command sbx is given → allow, ask, or deny with every
// reason. Judges each layer of it: wrappers (`env X=1 timeout 5 curl`) are looked through, and a
// restricted shell string is split into the command it runs. Pure: path facts arrive from the runtime.
import { posix } from 'node:path';
import type { PathFact } from '../policy/host.js';
import type { CommandRules, Mode } from '../policy/types.js';
import type { Violation } from '../policy/violation.js';
import type { CommandGroupName } from '../profile/schema-command-rules.js';
import { shellArgv } from '../policy/command-line.js';
import { gitReachesOnlyLocal, type GitRemoteFacts } from '../git/git-remotes.js';
import { checkPathArgs, pathFactsNeeded, shown, type PathOperands, type Workspace } from './path-guards.js';
import { fieldsOf, parseShellScript, type Redirect, type ShellValues, type WordPart } from './shell-words.js';

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

export interface PreflightInput {
  rules: CommandRules;
  command: CommandLine;
  mode: Mode;
  network: 'none' | 'host' | 'filtered';
  allowDenylisted: boolean;
  workspace: Workspace;
  /** Host directory relative arguments resolve against (the command's cwd, on the host). */
  base: string;
  /** Facts for exactly the paths pathsToCheck returned. */
  paths: Record<string, PathFact>;
  /** The environment a shell string runs with: what its `$NAME` and `~` yield for the path guards. */
  values?: ShellValues;
  /** What the repository's config says about remotes (when gitRemotesNeeded): a local one is not the network. */
  gitRemotes?: GitRemoteFacts;
}

export type Verdict =
  | { verdict: 'allow' }
  | { verdict: 'ask'; detail: string }
  | { verdict: 'deny'; violations: Violation[] };

/** The verdict on one command of a shell string (`sbx explain --shell` shows each). */
export interface CommandVerdict {
  argv: string[];
  redirects: Redirect[];
  decision: Verdict;
}

/**
 * A command that will reach for the network when the sandbox has none, and is not refused for it (a
 * package manager may find what it needs in a cache): the run is told why it will fail or hang.
 */
export interface NetworkUse {
  /** As the user would say it: `npm install`. */
  command: string;
  /** The hosts it needs, for an allow-list (`--allow-domain`, `allowDomains`). */
  domains: readonly string[];
}

/** The verdict; for a shell string judged command by command, each command's own verdict too. */
export type CommandDecision = Verdict & { commands?: CommandVerdict[]; needsNetwork?: NetworkUse[] };

/** How to skip a wrapper's own options to reach the command it runs. */
interface Wrapper {
  /** Options that take a value as the next argument. */
  withValue: readonly string[];
  /** Leading NAME=VALUE words (env). */
  assignments?: boolean;
  /** Positional arguments before the command (timeout's duration). */
  positionals?: number;
}

const WRAPPERS: Record<string, Wrapper> = {
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

/** Global options (with a value) before a subcommand. */
const GLOBAL_OPTIONS: Record<string, readonly string[]> = {
  git: ['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--super-prefix', '--config-env', '--exec-path'],
  npm: ['--prefix', '-w', '--workspace', '-C'],
};

/** Spellings of one flag, per command and subcommand: the long form is the canonical one. */
const FLAG_ALIASES: Record<string, Record<string, string>> = {
  'git push': { '-f': '--force', '--force-with-lease': '--force', '-d': '--delete' },
  'git clean': { '-f': '--force' },
  'git branch': { '-D': '--delete' },
  'git checkout': { '-f': '--force' },
};

const SHELLS = new Set(COMMAND_GROUPS['@shells']);
const groupMembers = (name: string): readonly string[] | undefined =>
  (COMMAND_GROUPS as Record<string, readonly string[]>)[name];
const OFFLINE_GIT = new Set(['clone', 'fetch', 'pull', 'push', 'ls-remote']);
const OFFLINE_GIT_PAIRS = new Set(['submodule update', 'submodule add', 'submodule sync', 'remote update']);

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
/** Wrappers that only change how a command runs: the command is judged, the wrapper needs no allow rule. */
const PURE_WRAPPERS = new Set([
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

const basename = (arg: string) => posix.basename(arg);

/** env's options whose value is a command line of its own. */
const SPLIT_STRING = new Set(['-S', '--split-string']);

/**
 * The option of `withValue` that `arg` gives, and its value when attached: `--opt=VALUE`, a long
 * option abbreviated as getopt_long allows (`--split=…`), `-oVALUE`, or the last option of a
 * short cluster (`-iS'cmd'`). Undefined when `arg` takes no value here.
 */
function optionTaken(arg: string, withValue: readonly string[]): { opt: string; attached?: string } | undefined {
  if (arg.startsWith('--')) {
    const eq = arg.indexOf('=');
    const given = eq < 0 ? arg : arg.slice(0, eq);
    const opt = withValue.find((o) => o === given) ?? withValue.find((o) => given.length > 2 && o.startsWith(given));
    if (opt === undefined) return undefined;
    return eq < 0 ? { opt } : { opt, attached: arg.slice(eq + 1) };
  }
  for (let j = 1; j < arg.length; j++) {
    const opt = `-${arg[j]}`;
    if (withValue.includes(opt)) return j + 1 < arg.length ? { opt, attached: arg.slice(j + 1) } : { opt };
  }
  return undefined;
}

/** Whether an env layer runs a command line given as one string (`-S`, in any of its spellings). */
function splitsString(layer: readonly string[]): boolean {
  return layer.slice(1).some((arg) => SPLIT_STRING.has(optionTaken(arg, WRAPPERS.env!.withValue)?.opt ?? ''));
}

/** The command and every command it wraps: `env X=1 timeout 5 curl u` → [env…], [timeout…], [curl u]. */
function layersOf(argv: readonly string[]): string[][] {
  const layers: string[][] = [];
  let rest = [...argv];
  while (rest.length > 0 && layers.length < 16) {
    layers.push(rest);
    const name = basename(rest[0]!);
    const wrapper = WRAPPERS[name];
    if (!wrapper) break;
    let i = 1;
    let split: string[] = [];
    for (; i < rest.length; i++) {
      const arg = rest[i]!;
      if (arg === '--') {
        i++;
        break;
      }
      if (arg.startsWith('-') && arg.length > 1) {
        const taken = optionTaken(arg, wrapper.withValue);
        if (taken) {
          const value = taken.attached ?? rest[++i] ?? '';
          if (name === 'env' && SPLIT_STRING.has(taken.opt)) split = value.split(/\s+/).filter(Boolean);
        }
        continue;
      }
      if (wrapper.assignments && /^[A-Za-z_][A-Za-z0-9_]*=/.test(arg)) continue;
      break;
    }
    i += wrapper.positionals ?? 0;
    rest = [...split, ...rest.slice(i)];
  }
  return layers;
}

/**
 * Where the script of `sh [options] -c [options] [--] SCRIPT` sits in the layer (also `-ec`, `-lc`,
 * `bash -O opt -c`); undefined when the shell runs no -c string. A missing script is past the end.
 */
function shellScriptAt(layer: readonly string[]): number | undefined {
  if (!SHELLS.has(basename(layer[0]!))) return undefined;
  const c = layer.findIndex((arg, i) => i > 0 && /^-[A-Za-z]*c[A-Za-z]*$/.test(arg));
  if (c < 0) return undefined;
  for (let i = c + 1; i < layer.length; i++) {
    const arg = layer[i]!;
    if (arg === '--') return i + 1;
    if (/^[-+][oO]$/.test(arg)) i++;
    else if (!/^[-+]./.test(arg)) return i;
  }
  return layer.length;
}

/** Subcommand and what follows it, skipping global options (and their values). */
function subcommandOf(layer: readonly string[]): { sub: string; rest: string[] } | undefined {
  const withValue = GLOBAL_OPTIONS[basename(layer[0]!)] ?? [];
  for (let i = 1; i < layer.length; i++) {
    const arg = layer[i]!;
    if (arg === '--') return undefined;
    if (arg.startsWith('-')) {
      if (withValue.includes(arg)) i++;
      continue;
    }
    return { sub: arg, rest: layer.slice(i + 1) };
  }
  return undefined;
}

/** Flags in one canonical spelling: clusters split (-fdx → -f -d -x), values dropped, aliases applied. */
function canonicalTokens(
  tokens: readonly string[],
  aliases: Record<string, string>,
  pushRefspecs: boolean,
): Set<string> {
  const out = new Set<string>();
  for (const token of tokens) {
    const parts = /^-[A-Za-z]{2,}$/.test(token)
      ? [...token.slice(1)].map((c) => `-${c}`)
      : [token.startsWith('--') && token.includes('=') ? token.slice(0, token.indexOf('=')) : token];
    for (const part of parts) out.add(aliases[part] ?? part);
    // `git push origin +main` force-pushes main.
    if (pushRefspecs && /^\+[^+]/.test(token)) out.add('--force');
  }
  return out;
}

function matchesBlock(pattern: string, name: string, sub: string, rest: readonly string[]): boolean {
  const [first, ...words] = pattern.split(/\s+/);
  if (first !== sub) return false;
  const aliases = FLAG_ALIASES[`${name} ${sub}`] ?? {};
  const have = canonicalTokens(rest, aliases, name === 'git' && sub === 'push');
  return [...canonicalTokens(words, aliases, false)].every((w) => have.has(w));
}

function matchesAllowed(entry: string, sub: string, rest: readonly string[]): boolean {
  const [first, ...words] = entry.split(/\s+/);
  const positionals = rest.filter((a) => !a.startsWith('-'));
  return first === sub && words.every((w, i) => positionals[i] === w);
}

interface Verdicts {
  violations: Violation[];
  asks: string[];
  network: NetworkUse[];
}

/** What is judged: the argv given, or a shell string sbx runs with the system shell (policy/command-line.ts). */
export type CommandLine = { kind: 'argv'; argv: readonly string[] } | { kind: 'shell'; script: string };

/** One simple command to judge: a direct argv, or one command of a shell string. */
interface Unit {
  argv: readonly string[];
  redirects: readonly Redirect[];
  /** argv index → the parts of a word sh expands at run time (shell-words.ts). */
  expansions?: Readonly<Record<number, readonly WordPart[]>>;
  /** A command of a shell string: sh runs it, so its shell builtins matter. */
  inScript: boolean;
  /** How deep in shell strings: 1 for the string sbx runs, more for a `sh -c` inside it. */
  depth: number;
}

/** `key`: the profile key path of the very entry that refused (`commands.deny[2]`), when the rule id does not say it. */
function refuse(out: Verdicts, rule: string, detail: string, key?: string): void {
  out.violations.push({ phase: 'preflight', kind: 'command', rule, detail, ...(key ? { source: { key } } : {}) });
}

/**
 * Whether a git subcommand talks to a remote, and so needs the network. `remoteIsLocal` is a fact
 * about the remote it names (a path or a file:// URL reaches no network): the caller decides it, so
 * the rule that reads a remote's URL stays apart from this table.
 */
export function gitNeedsNetwork(layer: readonly string[], remoteIsLocal: boolean): boolean {
  const git = subcommandOf(layer);
  if (!git || remoteIsLocal) return false;
  const second = git.rest.find((a) => !a.startsWith('-')) ?? '';
  return OFFLINE_GIT.has(git.sub) || OFFLINE_GIT_PAIRS.has(`${git.sub} ${second}`);
}

/** The package manager's fetch this layer runs, if any: argv[0] and its subcommand, looked up. */
export function networkUseOf(layer: readonly string[]): NetworkUse | undefined {
  const name = basename(layer[0]!);
  const fetcher = Object.hasOwn(NETWORK_FETCHERS, name) ? NETWORK_FETCHERS[name]! : undefined;
  if (!fetcher || layer.some((a) => fetcher.offlineFlags.includes(a))) return undefined;
  const found = subcommandOf(layer);
  if (found ? !fetcher.subcommands.includes(found.sub) : !fetcher.bare) return undefined;
  return { command: found ? `${name} ${found.sub}` : name, domains: fetcher.domains };
}

/**
 * Without network: network tools and git's remote subcommands are refused (they can only fail);
 * a package manager's fetch is noted (out.network), not refused. An argument that merely holds a
 * URL (`git commit -m "see https://..."`, `grep -rn https:// src`) uses no network.
 */
function judgeOffline(layer: readonly string[], gitRemotes: GitRemoteFacts | undefined, out: Verdicts): void {
  const name = basename(layer[0]!);
  if (COMMAND_GROUPS['@network'].includes(name))
    refuse(out, 'commands.offline', `${name} needs the network, and this profile has none`);
  // A remote is local when the repository's config (or the command line) names a path or file:// URL
  // for it (git/git-remotes.ts); without those facts every remote counts as a network one.
  const git = name === 'git' ? subcommandOf(layer) : undefined;
  const local = git !== undefined && gitRemotes !== undefined && gitReachesOnlyLocal(layer, git.sub, gitRemotes);
  if (git && gitNeedsNetwork(layer, local))
    refuse(out, 'commands.offline', `git ${subcommandOf(layer)!.sub} needs the network, and this profile has none`);
  const use = networkUseOf(layer);
  if (use) out.network.push(use);
}

function judgeLayer(layer: readonly string[], input: PreflightInput, deny: ReadonlySet<string>, out: Verdicts): void {
  const { rules } = input;
  const name = basename(layer[0]!);
  if (!input.allowDenylisted && deny.has(name)) {
    const group = rules.deny.find((d) => d.startsWith('@') && groupMembers(d)?.includes(name));
    // The entry that names it: the command itself, else its group (rules.deny is the profile's list, in order).
    const at = rules.deny.indexOf(rules.deny.includes(name) ? name : group!);
    const detail = `${name} is on the profile's deny list${group ? ` (${group})` : ''}`;
    refuse(out, 'commands.deny', detail, `commands.deny[${at}]`);
  }
  if (input.network === 'none') judgeOffline(layer, input.gitRemotes, out);
  if (PURE_WRAPPERS.has(name) && layer.length > 1) return;
  const entry = Object.hasOwn(rules.allow, name) ? rules.allow[name]! : undefined;
  if (!entry) {
    if (rules.default === 'deny')
      refuse(out, 'commands.default', `${name} is not on the profile's allow list (commands.default: deny)`);
    if (rules.default === 'ask') out.asks.push(`${name} is not on the profile's allow list`);
    return;
  }
  const found = subcommandOf(layer);
  for (const [i, pattern] of (entry.block ?? []).entries()) {
    if (found && matchesBlock(pattern, name, found.sub, found.rest))
      refuse(
        out,
        `commands.allow.${name}.block`,
        `${name} ${pattern} is blocked by the profile (commands.allow.${name}.block)`,
        `commands.allow.${name}.block[${i}]`,
      );
  }
  if (entry.allow && !(found && entry.allow.some((a) => matchesAllowed(a, found.sub, found.rest)))) {
    const what = found ? `${name} ${shown(found.sub)}` : `${name} without a subcommand`;
    const detail = `${what} is not among the allowed subcommands (commands.allow.${name}.allow: ${entry.allow.join(', ')})`;
    if (rules.default === 'ask') out.asks.push(detail);
    else refuse(out, `commands.allow.${name}`, detail, `commands.allow.${name}.allow`);
  }
}

/**
 * Builtins that change the shell for the commands after them (where relative paths resolve, which
 * program a name runs, what runs on exit) or run a string of their own: in a shell string, the
 * rules could no longer judge what follows. `cd DIR` in the string sbx runs is the one the rules
 * follow (judgeCd); elsewhere (`command cd`, a nested `sh -c`) it stays refused.
 */
const SHELL_STATE_BUILTINS = new Set([
  ...['cd', 'chdir', 'pushd', 'popd', 'export', 'unset', 'readonly', 'local', 'declare', 'typeset', 'read', 'getopts'],
  ...['alias', 'unalias', 'trap', 'eval', '.', 'source', 'builtin', 'enable', 'shopt', 'let', 'hash'],
]);
/** sh -c inside sh -c inside ...: deep enough for real use, bounded for a hostile string. */
const MAX_SHELL_DEPTH = 4;
/** Marks a word sh expands at run time (`\0` and its argv index): no name, subcommand or flag a rule names starts so. */
const EXPANDED = '\u0000';

/**
 * The simple commands of a shell string, and of any shell string one of them runs (`xargs sh -c
 * '...'`), or a shell_syntax refusal naming the construct.
 */
function scriptUnits(script: string, depth: number, out: Verdicts): Unit[] {
  const parsed = parseShellScript(script);
  if (!parsed.ok || depth >= MAX_SHELL_DEPTH) {
    const what = parsed.ok ? `shells nested more than ${MAX_SHELL_DEPTH} deep` : parsed.construct;
    refuse(out, 'commands.shell_syntax', `the shell string uses ${what}, which shell_syntax: restricted refuses`);
    return [];
  }
  return parsed.commands.flatMap((c) => [
    {
      argv: c.argv,
      redirects: c.redirects,
      ...(c.expansions ? { expansions: c.expansions } : {}),
      inScript: true,
      depth: depth + 1,
    },
    ...nestedUnits(c.argv, depth + 1, out),
  ]);
}

function nestedUnits(argv: readonly string[], depth: number, out: Verdicts): Unit[] {
  const last = layersOf(argv).at(-1);
  const at = last === undefined ? undefined : shellScriptAt(last);
  return at === undefined ? [] : scriptUnits(last![at] ?? '', depth, out);
}

/** Every simple command to judge: the argv given (and the string of a shell it runs), or a shell string's commands. */
function unitsOf(command: CommandLine, rules: CommandRules, out: Verdicts): Unit[] {
  const restricted = rules.shellSyntax === 'restricted';
  if (command.kind === 'shell') {
    // Under full syntax the string is not read: the shell is judged as the command (README).
    if (!restricted) return [{ argv: shellArgv(command.script), redirects: [], inScript: false, depth: 0 }];
    return scriptUnits(command.script, 0, out);
  }
  if (command.argv.length === 0) return [];
  const given: Unit = { argv: command.argv, redirects: [], inScript: false, depth: 0 };
  return [given, ...(restricted ? nestedUnits(command.argv, 1, out) : [])];
}

function guardsApply(rules: CommandRules, mode: Mode): boolean {
  return rules.paths === 'workspace' && mode !== 'danger';
}

/** The unit's argv with each word sh expands replaced by its mark (EXPANDED and its index). */
function marked(unit: Unit): string[] {
  const { expansions } = unit;
  return expansions ? unit.argv.map((a, i) => (expansions[i] ? `${EXPANDED}${i}` : a)) : [...unit.argv];
}

const isMarked = (word: string) => word.startsWith(EXPANDED);

/** `cd` as the string sbx runs has it, the one form judgeCd follows. */
function isCd(unit: Unit): boolean {
  return unit.inScript && unit.depth === 1 && unit.argv[0] === 'cd' && unit.expansions?.[0] === undefined;
}

/**
 * Where a word sh expands at run time would decide what runs, the rules cannot judge it: a command
 * name (`$CMD`, `*`), a wrapper's operand before the command it runs (`timeout $T curl`: `$T` could
 * be `5 curl`), a shell's script, the subcommand of a command whose rules or network use depend on
 * it (`git $SUB`), or an argument where a block pattern looks for a flag. Elsewhere the command is
 * known, and an expanded argument is only data (its paths are the guards' business).
 */
function judgeExpansions(unit: Unit, rules: CommandRules, out: Verdicts): void {
  if (!unit.expansions) return;
  const written = (word: string) => shown(unit.argv[Number(word.slice(1))]!);
  const why = 'sh expands it at run time';
  const layers = layersOf(marked(unit));
  for (const [n, layer] of layers.entries()) {
    const name = layer[0]!;
    if (isMarked(name)) {
      refuse(out, 'commands.shell_syntax', `the command word ${written(name)} is unknown until ${why}`);
      return;
    }
    const next = layers[n + 1];
    if (next) {
      const split = basename(name) === 'env' && splitsString(layer);
      const word = (split ? layer : layer.slice(0, layer.length - next.length)).find(isMarked);
      if (word) {
        refuse(out, 'commands.shell_syntax', `${written(word)} could change what ${basename(name)} runs, and ${why}`);
        return;
      }
      continue;
    }
    const at = shellScriptAt(layer);
    if (at !== undefined && isMarked(layer[at] ?? '')) {
      refuse(out, 'commands.shell_syntax', `the script of ${basename(name)} is unknown until ${why}`);
      return;
    }
    const base = basename(name);
    const entry = Object.hasOwn(rules.allow, base) ? rules.allow[base] : undefined;
    if (!(entry?.allow || entry?.block || Object.hasOwn(NETWORK_FETCHERS, base) || base === 'git')) return;
    const found = subcommandOf(layer);
    const word = (found ? layer.slice(0, layer.length - found.rest.length) : layer).find(isMarked);
    if (word) {
      refuse(out, 'commands.shell_syntax', `${written(word)} decides the subcommand of ${base}, and ${why}`);
      return;
    }
    const blocked = (entry?.block ?? []).some((p) => p.split(/\s+/)[0] === found?.sub);
    const flag = found?.rest.find(isMarked);
    if (blocked && flag)
      refuse(
        out,
        'commands.shell_syntax',
        `${written(flag)} could be a flag commands.allow.${base}.block refuses, and ${why}`,
      );
  }
}

/**
 * `cd DIR`: one directory as written (no option, `-`, expansion, or CDPATH to search), inside the
 * workspace when path guards are on. Later relative paths are then judged from every directory the
 * shell may be in (basesOf): cd may fail, and a pipeline runs it in a subshell.
 */
function judgeCd(unit: Unit, input: PreflightInput, out: Verdicts): void {
  const [, dir, ...more] = unit.argv;
  if (dir === undefined || more.length > 0 || unit.expansions || dir === '' || dir.startsWith('-')) {
    const what = 'cd without exactly one directory as written (no options, -, or expansions)';
    refuse(out, 'commands.shell_syntax', `the shell string runs ${what}, which the rules cannot follow`);
    return;
  }
  if (input.values?.vars.CDPATH !== undefined)
    refuse(
      out,
      'commands.shell_syntax',
      'the shell string runs cd with CDPATH set, which searches directories the rules do not see',
    );
  if (guardsApply(input.rules, input.mode) && dir.startsWith('/') && hostPathOf(dir, input.workspace) === undefined)
    out.violations.push({
      phase: 'preflight',
      kind: 'path',
      rule: 'paths.absolute',
      detail: `cd ${shown(dir)} leaves the workspace: the paths of later commands could not be judged`,
    });
}

/** An absolute sandbox path inside the workspace, on the host. */
function hostPathOf(path: string, workspace: Workspace): string | undefined {
  const normal = posix.normalize(path);
  const within = (root: string) => normal === root || normal.startsWith(`${root}/`);
  if (within(workspace.host)) return normal;
  if (within(workspace.sandbox)) return posix.join(workspace.host, posix.relative(workspace.sandbox, normal));
  return undefined;
}

/** For each unit, every host directory its relative paths may resolve against, after the cds before it. */
function basesOf(units: readonly Unit[], workspace: Workspace, base: string): string[][] {
  let bases = [base];
  return units.map((unit) => {
    const current = bases;
    const dir = isCd(unit) && unit.argv.length === 2 && !unit.expansions ? unit.argv[1]! : undefined;
    if (dir !== undefined) {
      const next = current.flatMap((b) =>
        dir.startsWith('/') ? (hostPathOf(dir, workspace) ?? []) : posix.resolve(b, dir),
      );
      bases = [...new Set([...current, ...next])];
    }
    return current;
  });
}

const NO_VALUES: ShellValues = { vars: {}, secrets: [] };

/**
 * What path guards look at: the arguments of every layer but its command name, and the redirection
 * targets (not a here-document's delimiter). A shell's script is not a path: under restricted syntax
 * its commands are units of their own, under full syntax it is not judged (the README says so).
 * Words sh expands are judged by the fields they yield with the sandbox's environment.
 */
function operandsOf(unit: Unit, values: ShellValues = NO_VALUES): PathOperands {
  if (isCd(unit)) return { args: [], targets: unit.argv.slice(1) };
  const words = layersOf(marked(unit)).flatMap((layer) => {
    const at = shellScriptAt(layer);
    return layer.slice(1).filter((_, i) => i + 1 !== at);
  });
  const expandedWord = (word: string) => {
    const i = Number(word.slice(1));
    return { written: unit.argv[i]!, fields: fieldsOf(unit.expansions![i]!, values), target: false };
  };
  const files = unit.redirects.filter((r) => r.op !== '>&' && r.op !== '<<');
  return {
    args: words.filter((w) => !isMarked(w)),
    targets: files.filter((r) => !r.parts).map((r) => r.target),
    expanded: [
      ...words.filter(isMarked).map(expandedWord),
      ...files
        .filter((r) => r.parts)
        .map((r) => ({ written: r.target, fields: fieldsOf(r.parts!, values), target: true })),
    ],
  };
}

/** Host paths whose realpath facts decideCommand needs (empty when path guards are off). */
export function pathsToCheck(
  command: CommandLine,
  rules: CommandRules,
  mode: Mode,
  workspace: Workspace,
  base: string,
  values: ShellValues = NO_VALUES,
): string[] {
  if (!guardsApply(rules, mode)) return [];
  const units = unitsOf(command, rules, { violations: [], asks: [], network: [] });
  const bases = basesOf(units, workspace, base);
  return [
    ...new Set(
      units.flatMap((unit, n) => bases[n]!.flatMap((b) => pathFactsNeeded(operandsOf(unit, values), workspace, b))),
    ),
  ];
}

/** Whether decideCommand would judge a git remote under network none: the runtime then reads the repository's remotes. */
export function gitRemotesNeeded(
  command: CommandLine,
  rules: CommandRules,
  network: PreflightInput['network'],
): boolean {
  if (network !== 'none') return false;
  const units = unitsOf(command, rules, { violations: [], asks: [], network: [] });
  return units.some((unit) =>
    layersOf(unit.argv).some(
      (layer) => basename(layer[0]!) === 'git' && OFFLINE_GIT.has(subcommandOf(layer)?.sub ?? ''),
    ),
  );
}

function judgeUnit(unit: Unit, input: PreflightInput, deny: ReadonlySet<string>, bases: readonly string[]): Verdicts {
  const out: Verdicts = { violations: [], asks: [], network: [] };
  if (isCd(unit)) judgeCd(unit, input, out);
  else {
    judgeExpansions(unit, input.rules, out);
    for (const layer of layersOf(unit.argv)) {
      const name = basename(layer[0]!);
      // `exec` alone keeps the shell and redirects it for every command after it.
      if (unit.inScript && (SHELL_STATE_BUILTINS.has(name) || (name === 'exec' && layer.length === 1))) {
        const what = `the shell string runs the builtin ${shown(name)}`;
        refuse(out, 'commands.shell_syntax', `${what}, which changes the shell for the commands after it`);
      }
      judgeLayer(layer, input, deny, out);
    }
  }
  if (guardsApply(input.rules, input.mode)) {
    const seen = new Set<string>();
    for (const base of bases)
      for (const v of checkPathArgs(operandsOf(unit, input.values), input.workspace, base, input.paths)) {
        if (seen.has(v.detail)) continue;
        seen.add(v.detail);
        out.violations.push(v);
      }
  }
  return out;
}

function verdictOf(out: Verdicts): Verdict {
  if (out.violations.length > 0) return { verdict: 'deny', violations: out.violations };
  if (out.asks.length > 0) return { verdict: 'ask', detail: out.asks.join('; ') };
  return { verdict: 'allow' };
}

/**
 * The rules' verdict. A refusal names the first command that is refused, in the string's order; an
 * approval is one question for the whole string, naming each command that needs it.
 */
export function decideCommand(input: PreflightInput): CommandDecision {
  const out: Verdicts = { violations: [], asks: [], network: [] };
  const units = unitsOf(input.command, input.rules, out);
  const deny = new Set(input.rules.deny.flatMap((d) => groupMembers(d) ?? [d]));
  const bases = basesOf(units, input.workspace, input.base);
  const judged = units.map((unit, n) => ({ unit, verdicts: judgeUnit(unit, input, deny, bases[n]!) }));
  for (const { verdicts } of judged) {
    out.violations.push(...verdicts.violations);
    out.asks.push(...verdicts.asks);
    for (const use of verdicts.network) if (!out.network.some((u) => u.command === use.command)) out.network.push(use);
  }
  const network = out.network.length > 0 ? { needsNetwork: out.network } : {};
  const decision = { ...verdictOf(out), ...network };
  if (!judged.some(({ unit }) => unit.inScript)) return decision;
  const commands = judged.map(({ unit, verdicts }) => ({
    argv: [...unit.argv],
    redirects: [...unit.redirects],
    decision: verdictOf(verdicts),
  }));
  return { ...decision, commands };
}
