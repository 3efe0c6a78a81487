// Command rules (docs/DESIGN.md, "Command rules"): the command sbx is given → allow, ask, or deny with every
// reason. Judges each layer of it: wrappers (`env X=1 timeout 5 curl`) are looked through
// (command-layers.ts), and a restricted shell string is split into the commands it runs (shell-units.ts).
// The tables of known commands are known-commands.ts. Pure: path facts arrive from the runtime.
import { posix } from 'node:path';
import type { PathFact } from '../policy/host.js';
import type { CommandRules, Mode } from '../policy/types.js';
import { gitReachesOnlyLocal, type GitRemoteFacts } from '../git/git-remotes.js';
import { layersOf, subcommandOf } from './command-layers.js';
import { refuse, verdictOf, type CommandDecision, type NetworkUse, type Verdicts } from './command-verdict.js';
import {
  COMMAND_GROUPS,
  FLAG_ALIASES,
  NETWORK_FETCHERS,
  OFFLINE_GIT,
  OFFLINE_GIT_PAIRS,
  PURE_WRAPPERS,
} from './known-commands.js';
import { checkPathArgs, guardsApply, pathFactsNeeded, shown, type Workspace } from './path-guards.js';
import {
  basesOf,
  isCd,
  judgeBuiltin,
  judgeCd,
  judgeExpansions,
  operandsOf,
  unitsOf,
  type CommandLine,
  type Unit,
} from './shell-units.js';
import type { ShellValues } from './shell-words.js';

// What callers of the decision name: its input and what it comes to, defined where the judges share them.
export type { CommandDecision, CommandVerdict, NetworkUse, Verdict } from './command-verdict.js';
export type { CommandLine } from './shell-units.js';

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

/** The commands a deny entry stands for when it names a group (`@network`); undefined for a command's own name. */
const groupMembers = (name: string): readonly string[] | undefined =>
  (COMMAND_GROUPS as Record<string, readonly string[]>)[name];
const basename = (arg: string) => posix.basename(arg);

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

/** Host paths whose realpath facts decideCommand needs (empty when path guards are off). */
export function pathsToCheck(
  command: CommandLine,
  rules: CommandRules,
  mode: Mode,
  workspace: Workspace,
  base: string,
  values?: ShellValues,
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
      judgeBuiltin(unit, layer, out);
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
