// Command rules (docs/DESIGN.md, "Command rules"): the command sbx is given → allow, ask, or deny with every
// reason. Judges each layer of it: wrappers (`env X=1 timeout 5 curl`) are looked through, and a
// restricted shell string is split into the command it runs. Pure: path facts arrive from the runtime.
import { posix } from 'node:path';
import type { PathFact } from '../policy/host.js';
import type { CommandRules, Mode } from '../policy/types.js';
import type { Violation } from '../policy/violation.js';
import type { CommandGroupName } from '../profile/schema-command-rules.js';
import { shellArgv } from '../policy/command-line.js';
import { gitReachesOnlyLocal, type GitRemoteFacts } from './git-remotes.js';
import { checkPathArgs, pathFactsNeeded, shown, type PathOperands, type Workspace } from './path-guards.js';
import { parseShellScript, type Redirect } from './shell-words.js';

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

/** The verdict; for a shell string judged command by command, each command's own verdict too. */
export type CommandDecision = Verdict & { commands?: CommandVerdict[] };

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
const URL = /\b(?:https?|ftps?|wss?|ssh|git|rsync|sftp):\/\/(?:[^\s/?#@]*@)?(\[[^\]\s]*\]|[^\s/?#:]+)/gi;
const SCP_LIKE = /^[A-Za-z0-9._-]+@([A-Za-z0-9.-]+):/;

const basename = (arg: string) => posix.basename(arg);
const isLoopback = (host: string) =>
  /^(localhost|127(\.\d{1,3}){3}|\[::1\]|::1|0\.0\.0\.0)$/i.test(host.replace(/\.$/, ''));

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
      if (name === 'env' && (arg === '-S' || arg === '--split-string')) {
        split = (rest[++i] ?? '').split(/\s+/).filter(Boolean);
        continue;
      }
      if (arg.startsWith('-') && arg.length > 1) {
        if (wrapper.withValue.includes(arg)) i++;
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
}

/** What is judged: the argv given, or a shell string sbx runs with the system shell (policy/command-line.ts). */
export type CommandLine = { kind: 'argv'; argv: readonly string[] } | { kind: 'shell'; script: string };

/** One simple command to judge: a direct argv, or one command of a shell string. */
interface Unit {
  argv: readonly string[];
  redirects: readonly Redirect[];
  /** A command of a shell string: sh runs it, so its shell builtins matter. */
  inScript: boolean;
}

function refuse(out: Verdicts, rule: string, detail: string): void {
  out.violations.push({ phase: 'preflight', kind: 'command', rule, detail });
}

/** Network tools, git's remote subcommands and URLs to other hosts, when the sandbox has no network. */
function judgeOffline(layer: readonly string[], gitRemotes: GitRemoteFacts | undefined, out: Verdicts): void {
  const name = basename(layer[0]!);
  if (COMMAND_GROUPS['@network'].includes(name))
    refuse(out, 'commands.offline', `${name} needs the network, and this profile has none`);
  const git = name === 'git' ? subcommandOf(layer) : undefined;
  const local = git && OFFLINE_GIT.has(git.sub) && gitRemotes && gitReachesOnlyLocal(layer, git.sub, gitRemotes);
  if (
    git &&
    !local &&
    (OFFLINE_GIT.has(git.sub) || OFFLINE_GIT_PAIRS.has(`${git.sub} ${git.rest.find((a) => !a.startsWith('-')) ?? ''}`))
  ) {
    refuse(out, 'commands.offline', `git ${git.sub} needs the network, and this profile has none`);
  }
  for (const arg of layer.slice(1)) {
    // The host only: the rest of a URL may carry a token.
    const hosts = [...arg.matchAll(URL)].map((m) => m[1]!).concat(SCP_LIKE.exec(arg)?.[1] ?? []);
    const remote = hosts.find((h) => !isLoopback(h));
    if (remote !== undefined)
      refuse(out, 'commands.offline', `an argument names ${shown(remote)}, and this profile has no network`);
  }
}

function judgeLayer(layer: readonly string[], input: PreflightInput, deny: ReadonlySet<string>, out: Verdicts): void {
  const { rules } = input;
  const name = basename(layer[0]!);
  if (!input.allowDenylisted && deny.has(name)) {
    const group = rules.deny.find((d) => d.startsWith('@') && groupMembers(d)?.includes(name));
    refuse(out, 'commands.deny', `${name} is on the profile's deny list${group ? ` (${group})` : ''}`);
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
  for (const pattern of entry.block ?? []) {
    if (found && matchesBlock(pattern, name, found.sub, found.rest))
      refuse(
        out,
        `commands.allow.${name}.block`,
        `${name} ${pattern} is blocked by the profile (commands.allow.${name}.block)`,
      );
  }
  if (entry.allow && !(found && entry.allow.some((a) => matchesAllowed(a, found.sub, found.rest)))) {
    const what = found ? `${name} ${shown(found.sub)}` : `${name} without a subcommand`;
    const detail = `${what} is not among the allowed subcommands (commands.allow.${name}.allow: ${entry.allow.join(', ')})`;
    if (rules.default === 'ask') out.asks.push(detail);
    else refuse(out, `commands.allow.${name}`, detail);
  }
}

/**
 * Builtins that change the shell for the commands after them (where relative paths resolve, which
 * program a name runs, what runs on exit) or run a string of their own: in a shell string, the
 * rules could no longer judge what follows. `cd`: use git -C, npm --prefix, make -C, or the cwd.
 */
const SHELL_STATE_BUILTINS = new Set([
  ...['cd', 'chdir', 'pushd', 'popd', 'export', 'unset', 'readonly', 'local', 'declare', 'typeset', 'read', 'getopts'],
  ...['alias', 'unalias', 'trap', 'eval', '.', 'source', 'builtin', 'enable', 'shopt', 'let', 'hash'],
]);
/** sh -c inside sh -c inside ...: deep enough for real use, bounded for a hostile string. */
const MAX_SHELL_DEPTH = 4;

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
    { argv: c.argv, redirects: c.redirects, inScript: true },
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
    if (!restricted) return [{ argv: shellArgv(command.script), redirects: [], inScript: false }];
    return scriptUnits(command.script, 0, out);
  }
  if (command.argv.length === 0) return [];
  const given: Unit = { argv: command.argv, redirects: [], inScript: false };
  return [given, ...(restricted ? nestedUnits(command.argv, 1, out) : [])];
}

function guardsApply(rules: CommandRules, mode: Mode): boolean {
  return rules.paths === 'workspace' && mode !== 'danger';
}

/**
 * What path guards look at: the arguments of every layer but its command name, and the redirection
 * targets. A shell's script is not a path: under restricted syntax its commands are units of their
 * own, under full syntax it is not judged (the README says so).
 */
function operandsOf(unit: Unit): PathOperands {
  const args = layersOf(unit.argv).flatMap((layer) => {
    const at = shellScriptAt(layer);
    return layer.slice(1).filter((_, i) => i + 1 !== at);
  });
  return { args, targets: unit.redirects.flatMap((r) => (r.op === '>&' ? [] : [r.target])) };
}

/** Host paths whose realpath facts decideCommand needs (empty when path guards are off). */
export function pathsToCheck(
  command: CommandLine,
  rules: CommandRules,
  mode: Mode,
  workspace: Workspace,
  base: string,
): string[] {
  if (!guardsApply(rules, mode)) return [];
  const units = unitsOf(command, rules, { violations: [], asks: [] });
  return [...new Set(units.flatMap((unit) => pathFactsNeeded(operandsOf(unit), workspace, base)))];
}

/** Whether decideCommand would judge a git remote under network none: the runtime then reads the repository's remotes. */
export function gitRemotesNeeded(
  command: CommandLine,
  rules: CommandRules,
  network: PreflightInput['network'],
): boolean {
  if (network !== 'none') return false;
  const units = unitsOf(command, rules, { violations: [], asks: [] });
  return units.some((unit) =>
    layersOf(unit.argv).some(
      (layer) => basename(layer[0]!) === 'git' && OFFLINE_GIT.has(subcommandOf(layer)?.sub ?? ''),
    ),
  );
}

function judgeUnit(unit: Unit, input: PreflightInput, deny: ReadonlySet<string>): Verdicts {
  const out: Verdicts = { violations: [], asks: [] };
  const layers = layersOf(unit.argv);
  for (const layer of layers) {
    const name = basename(layer[0]!);
    // `exec` alone keeps the shell and redirects it for every command after it.
    if (unit.inScript && (SHELL_STATE_BUILTINS.has(name) || (name === 'exec' && layer.length === 1))) {
      const what = `the shell string runs the builtin ${shown(name)}`;
      refuse(out, 'commands.shell_syntax', `${what}, which changes the shell for the commands after it`);
    }
    judgeLayer(layer, input, deny, out);
  }
  if (guardsApply(input.rules, input.mode)) {
    out.violations.push(...checkPathArgs(operandsOf(unit), input.workspace, input.base, input.paths));
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
  const out: Verdicts = { violations: [], asks: [] };
  const units = unitsOf(input.command, input.rules, out);
  const deny = new Set(input.rules.deny.flatMap((d) => groupMembers(d) ?? [d]));
  const judged = units.map((unit) => ({ unit, verdicts: judgeUnit(unit, input, deny) }));
  for (const { verdicts } of judged) {
    out.violations.push(...verdicts.violations);
    out.asks.push(...verdicts.asks);
  }
  const decision = verdictOf(out);
  if (!judged.some(({ unit }) => unit.inScript)) return decision;
  const commands = judged.map(({ unit, verdicts }) => ({
    argv: [...unit.argv],
    redirects: [...unit.redirects],
    decision: verdictOf(verdicts),
  }));
  return { ...decision, commands };
}
