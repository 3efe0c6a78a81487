// Command rules (docs/DESIGN.md, "Command rules"): the command sbx is given → allow, ask, or deny with every
// reason. Judges each layer of it: wrappers (`env X=1 timeout 5 curl`) are looked through, and a
// restricted shell string is split into the command it runs. Pure: path facts arrive from the runtime.
import { posix } from 'node:path';
import type { PathFact } from '../policy/host.js';
import type { CommandRules, Mode } from '../policy/types.js';
import type { Violation } from '../policy/violation.js';
import type { CommandGroupName } from '../profile/schema-command-rules.js';
import { checkPathArgs, pathFactsNeeded, shown, type Workspace } from './path-guards.js';
import { parseRestrictedShell } from './shell-words.js';

/** The members of each group the schema accepts (typed by its list, so the two cannot drift apart). */
export const COMMAND_GROUPS: Record<CommandGroupName, readonly string[]> = {
  '@network': ['curl', 'wget', 'ssh', 'scp', 'sftp', 'rsync', 'nc', 'ncat', 'netcat', 'socat', 'telnet', 'ftp', 'tftp', 'lftp', 'aria2c', 'http', 'https', 'xh', 'mosh', 'ssh-keyscan'],
  '@shells': ['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'fish', 'csh', 'tcsh', 'pwsh', 'powershell', 'cmd'],
  '@delete': ['rm', 'rmdir', 'unlink', 'shred', 'del', 'erase', 'srm', 'wipe'],
  '@privilege': ['sudo', 'su', 'doas', 'pkexec', 'runuser'],
};

export interface PreflightInput {
  rules: CommandRules;
  argv: readonly string[];
  mode: Mode;
  network: 'none' | 'host' | 'filtered';
  allowDenylisted: boolean;
  workspace: Workspace;
  /** Host directory relative arguments resolve against (the command's cwd, on the host). */
  base: string;
  /** Facts for exactly the paths pathsToCheck returned. */
  paths: Record<string, PathFact>;
}

export type CommandDecision = { verdict: 'allow' } | { verdict: 'ask'; detail: string } | { verdict: 'deny'; violations: Violation[] };

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
  xargs: { withValue: ['-a', '--arg-file', '-d', '--delimiter', '-E', '-I', '-L', '--max-lines', '-n', '--max-args', '-P', '--max-procs', '-s', '--max-chars'] },
  sudo: { withValue: ['-u', '--user', '-g', '--group', '-C', '--close-from', '-D', '--chdir', '-h', '--host', '-p', '--prompt', '-r', '--role', '-t', '--type', '-U', '--other-user', '-T', '--command-timeout'] },
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
const groupMembers = (name: string): readonly string[] | undefined => (COMMAND_GROUPS as Record<string, readonly string[]>)[name];
const OFFLINE_GIT = new Set(['clone', 'fetch', 'pull', 'push', 'ls-remote']);
const OFFLINE_GIT_PAIRS = new Set(['submodule update', 'submodule add', 'submodule sync', 'remote update']);
/** Wrappers that only change how a command runs: the command is judged, the wrapper needs no allow rule. */
const PURE_WRAPPERS = new Set(['env', 'nice', 'ionice', 'nohup', 'setsid', 'timeout', 'stdbuf', 'time', 'command', 'exec', 'xargs', 'busybox']);
const URL = /\b(?:https?|ftps?|wss?|ssh|git|rsync|sftp):\/\/(?:[^\s/?#@]*@)?(\[[^\]\s]*\]|[^\s/?#:]+)/gi;
const SCP_LIKE = /^[A-Za-z0-9._-]+@([A-Za-z0-9.-]+):/;

const basename = (arg: string) => posix.basename(arg);
const isLoopback = (host: string) => /^(localhost|127(\.\d{1,3}){3}|\[::1\]|::1|0\.0\.0\.0)$/i.test(host.replace(/\.$/, ''));

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

/** The script of `sh -c SCRIPT` (also `-ec`, `-lc`), when the layer is a shell running one. */
function shellScript(layer: readonly string[]): string | undefined {
  if (!SHELLS.has(basename(layer[0]!))) return undefined;
  for (let i = 1; i < layer.length; i++) {
    const arg = layer[i]!;
    if (!arg.startsWith('-') || arg === '-' || arg === '--') return undefined;
    if (/^-[A-Za-z]*c[A-Za-z]*$/.test(arg)) return layer[i + 1] ?? '';
  }
  return undefined;
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
function canonicalTokens(tokens: readonly string[], aliases: Record<string, string>, pushRefspecs: boolean): Set<string> {
  const out = new Set<string>();
  for (const token of tokens) {
    const parts = /^-[A-Za-z]{2,}$/.test(token) ? [...token.slice(1)].map((c) => `-${c}`) : [token.startsWith('--') && token.includes('=') ? token.slice(0, token.indexOf('=')) : token];
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

function refuse(out: Verdicts, rule: string, detail: string): void {
  out.violations.push({ phase: 'preflight', kind: 'command', rule, detail });
}

/** Network tools, git's remote subcommands and URLs to other hosts, when the sandbox has no network. */
function judgeOffline(layer: readonly string[], out: Verdicts): void {
  const name = basename(layer[0]!);
  if (COMMAND_GROUPS['@network'].includes(name)) refuse(out, 'commands.offline', `${name} needs the network, and this profile has none`);
  const git = name === 'git' ? subcommandOf(layer) : undefined;
  if (git && (OFFLINE_GIT.has(git.sub) || OFFLINE_GIT_PAIRS.has(`${git.sub} ${git.rest.find((a) => !a.startsWith('-')) ?? ''}`))) {
    refuse(out, 'commands.offline', `git ${git.sub} needs the network, and this profile has none`);
  }
  for (const arg of layer.slice(1)) {
    // The host only: the rest of a URL may carry a token.
    const hosts = [...arg.matchAll(URL)].map((m) => m[1]!).concat(SCP_LIKE.exec(arg)?.[1] ?? []);
    const remote = hosts.find((h) => !isLoopback(h));
    if (remote !== undefined) refuse(out, 'commands.offline', `an argument names ${shown(remote)}, and this profile has no network`);
  }
}

function judgeLayer(layer: readonly string[], input: PreflightInput, deny: ReadonlySet<string>, out: Verdicts): void {
  const { rules } = input;
  const name = basename(layer[0]!);
  if (!input.allowDenylisted && deny.has(name)) {
    const group = rules.deny.find((d) => d.startsWith('@') && groupMembers(d)?.includes(name));
    refuse(out, 'commands.deny', `${name} is on the profile's deny list${group ? ` (${group})` : ''}`);
  }
  if (input.network === 'none') judgeOffline(layer, out);
  if (PURE_WRAPPERS.has(name) && layer.length > 1) return;
  const entry = Object.hasOwn(rules.allow, name) ? rules.allow[name]! : undefined;
  if (!entry) {
    if (rules.default === 'deny') refuse(out, 'commands.default', `${name} is not on the profile's allow list (commands.default: deny)`);
    if (rules.default === 'ask') out.asks.push(`${name} is not on the profile's allow list`);
    return;
  }
  const found = subcommandOf(layer);
  for (const pattern of entry.block ?? []) {
    if (found && matchesBlock(pattern, name, found.sub, found.rest)) refuse(out, `commands.allow.${name}.block`, `${name} ${pattern} is blocked by the profile (commands.allow.${name}.block)`);
  }
  if (entry.allow && !(found && entry.allow.some((a) => matchesAllowed(a, found.sub, found.rest)))) {
    const what = found ? `${name} ${shown(found.sub)}` : `${name} without a subcommand`;
    const detail = `${what} is not among the allowed subcommands (commands.allow.${name}.allow: ${entry.allow.join(', ')})`;
    if (rules.default === 'ask') out.asks.push(detail);
    else refuse(out, `commands.allow.${name}`, detail);
  }
}

/** Every command layer to judge: wrappers, the wrapped command, and a restricted shell string's command. */
function commandsToJudge(argv: readonly string[], rules: CommandRules, out: Verdicts): string[][] {
  const layers = layersOf(argv);
  const script = rules.shellSyntax === 'restricted' && layers.length > 0 ? shellScript(layers[layers.length - 1]!) : undefined;
  if (script === undefined) return layers;
  const words = parseRestrictedShell(script);
  if (!words.ok) {
    refuse(out, 'commands.shell_syntax', `the shell string uses ${words.reason}, which shell_syntax: restricted refuses`);
    return layers;
  }
  return [...layers, ...layersOf(words.argv)];
}

function guardsApply(rules: CommandRules, mode: Mode): boolean {
  return rules.paths === 'workspace' && mode !== 'danger';
}

/**
 * The arguments path guards look at: those of every layer but its command name. A shell's script is
 * not a path: under restricted syntax its words are a layer of their own, under full syntax it is
 * not judged (the README says so).
 */
function argumentsOf(layers: readonly string[][]): string[] {
  return layers.flatMap((layer) => {
    const script = shellScript(layer);
    const at = script === undefined ? -1 : layer.lastIndexOf(script);
    return layer.slice(1).filter((_, i) => i + 1 !== at);
  });
}

/** Host paths whose realpath facts decideCommand needs (empty when path guards are off). */
export function pathsToCheck(argv: readonly string[], rules: CommandRules, mode: Mode, workspace: Workspace, base: string): string[] {
  if (!guardsApply(rules, mode) || argv.length === 0) return [];
  return pathFactsNeeded(argumentsOf(commandsToJudge(argv, rules, { violations: [], asks: [] })), workspace, base);
}

export function decideCommand(input: PreflightInput): CommandDecision {
  const out: Verdicts = { violations: [], asks: [] };
  if (input.argv.length === 0) return { verdict: 'allow' };
  const deny = new Set(input.rules.deny.flatMap((d) => groupMembers(d) ?? [d]));
  const layers = commandsToJudge(input.argv, input.rules, out);
  for (const layer of layers) judgeLayer(layer, input, deny, out);
  if (guardsApply(input.rules, input.mode)) out.violations.push(...checkPathArgs(argumentsOf(layers), input.workspace, input.base, input.paths));
  if (out.violations.length > 0) return { verdict: 'deny', violations: out.violations };
  if (out.asks.length > 0) return { verdict: 'ask', detail: out.asks.join('; ') };
  return { verdict: 'allow' };
}
