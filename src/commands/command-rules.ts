// Command rules (docs/DESIGN.md, "Command rules"): the command sbx is given → allow, ask, or deny with every
// reason. Judges every command it runs: wrappers (`env X=1 timeout 5 curl`) are looked through, and the
// commands its tools run (`find -exec`, `sort --compress-program`) judged too (command-layers.ts,
// tool-arguments.ts); a restricted shell string is split into the commands it runs (shell-units.ts),
// and the variables it sets are judged by name (known-commands.ts). Pure: path facts arrive from the
// runtime.
import { posix } from 'node:path';
import type { PathFact } from '../policy/host.js';
import type { CommandRules, Mode } from '../policy/types.js';
import { gitReachesOnlyLocal, type GitRemoteFacts } from '../git/git-remotes.js';
import { type Run, runsOf, subcommandOf } from './command-layers.js';
import {
  decidedBy,
  refuse,
  verdictOf,
  type CommandDecision,
  type NetworkUse,
  type Verdicts,
} from './command-verdict.js';
import {
  COMMAND_GROUPS,
  FLAG_ALIASES,
  HIDDEN_VARIABLE_PREFIXES,
  HIDDEN_VARIABLES,
  NETWORK_FETCHERS,
  OFFLINE_GIT,
  OFFLINE_GIT_PAIRS,
  PROGRAM_VARIABLES,
  PURE_WRAPPERS,
  SCRIPT_BUILTINS,
} from './known-commands.js';
import { checkPathArgs, guardsApply, pathFactsNeeded, shown, type Workspace } from './path-guards.js';
import { bindingsOf, valuesOf } from './shell-bindings.js';
import { assignedValues, type ShellValues } from './shell-fields.js';
import {
  basesOf,
  expandedOf,
  isCd,
  judgeBuiltin,
  judgeCd,
  judgeExpansions,
  marked,
  NO_VALUES,
  operandsOf,
  unitsOf,
  type CommandLine,
  type Unit,
} from './shell-units.js';
import { spawnOf } from './tool-arguments.js';

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
  /** Name the rules that let the command run or asked about it (CommandDecision `rules`): `sbx why`. */
  withRules?: boolean;
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
function judgeOffline(
  layer: readonly string[],
  gitRemotes: GitRemoteFacts | undefined,
  out: Verdicts,
  said: (detail: string) => string,
): void {
  const name = basename(layer[0]!);
  if (COMMAND_GROUPS['@network'].includes(name))
    refuse(out, 'commands.offline', said(`${name} needs the network, and this profile has none`));
  // A remote is local when the repository's config (or the command line) names a path or file:// URL
  // for it (git/git-remotes.ts); without those facts every remote counts as a network one.
  const git = name === 'git' ? subcommandOf(layer) : undefined;
  const local = git !== undefined && gitRemotes !== undefined && gitReachesOnlyLocal(layer, git.sub, gitRemotes);
  if (git && gitNeedsNetwork(layer, local))
    refuse(
      out,
      'commands.offline',
      said(`git ${subcommandOf(layer)!.sub} needs the network, and this profile has none`),
    );
  const use = networkUseOf(layer);
  if (use) out.network.push(use);
}

/** How a layer came to run: a tool started it (`find -exec`), and whether only the deny list judges it. */
interface Started {
  via?: string;
  scope: Run['scope'];
  /** A builtin of the shell string (`export`, `set`): it needs no allow rule. */
  builtin?: boolean;
}

/** `git --version`, `npm -v`, `npm` alone: they only print, so a subcommand allow-list does not apply. */
const INFO_ONLY = new Set(['--version', '-v', '-V', '--help', '-h']);

function judgeLayer(
  layer: readonly string[],
  input: PreflightInput,
  deny: ReadonlySet<string>,
  out: Verdicts,
  started: Started,
): void {
  const { rules } = input;
  // `[` is test by another name (POSIX), and the rules name it so.
  const name = basename(layer[0]!) === '[' ? 'test' : basename(layer[0]!);
  const said = (detail: string) => (started.via ? `${started.via} runs ${name}: ${detail}` : detail);
  if (!input.allowDenylisted && deny.has(name)) {
    const group = rules.deny.find((d) => d.startsWith('@') && groupMembers(d)?.includes(name));
    // The entry that names it: the command itself, else its group (rules.deny is the profile's list, in order).
    const at = rules.deny.indexOf(rules.deny.includes(name) ? name : group!);
    const detail = `${name} is on the profile's deny list${group ? ` (${group})` : ''}`;
    refuse(out, 'commands.deny', said(detail), `commands.deny[${at}]`);
  }
  if (input.network === 'none') judgeOffline(layer, input.gitRemotes, out, said);
  if (started.scope === 'deny' || started.builtin) return;
  if (PURE_WRAPPERS.has(name) && layer.length > 1) return;
  const entry = Object.hasOwn(rules.allow, name) ? rules.allow[name]! : undefined;
  if (!entry) {
    if (rules.default === 'deny')
      refuse(out, 'commands.default', said(`${name} is not on the profile's allow list (commands.default: deny)`));
    else decidedBy(out, 'commands.default');
    if (rules.default === 'ask') out.asks.push(said(`${name} is not on the profile's allow list`));
    return;
  }
  const refusedBefore = out.violations.length;
  const found = subcommandOf(layer);
  for (const [i, pattern] of (entry.block ?? []).entries()) {
    if (found && matchesBlock(pattern, name, found.sub, found.rest))
      refuse(
        out,
        `commands.allow.${name}.block`,
        said(`${name} ${pattern} is blocked by the profile (commands.allow.${name}.block)`),
        `commands.allow.${name}.block[${i}]`,
      );
  }
  const infoOnly = !found && layer.slice(1).every((a) => INFO_ONLY.has(a));
  if (entry.allow && !infoOnly && !(found && entry.allow.some((a) => matchesAllowed(a, found.sub, found.rest)))) {
    const what = found ? `${name} ${shown(found.sub)}` : `${name} without a subcommand`;
    const detail = said(
      `${what} is not among the allowed subcommands (commands.allow.${name}.allow: ${entry.allow.join(', ')})`,
    );
    if (rules.default === 'ask') {
      out.asks.push(detail);
      decidedBy(out, `commands.allow.${name}.allow`);
    } else refuse(out, `commands.allow.${name}`, detail, `commands.allow.${name}.allow`);
  } else if (out.violations.length === refusedBefore) decidedBy(out, `commands.allow.${name}`);
}

/**
 * What a command runs that the rules cannot see (`make --eval`, `git -c alias.x=...`, `PATH=. ls`) is a
 * command no rule names, and could be one on the deny list: refused when the profile has a deny list,
 * else judged by commands.default.
 */
function judgeHidden(what: string, input: PreflightInput, out: Verdicts): void {
  const { rules } = input;
  const detail = `${what}: the rules cannot see what it runs`;
  if (rules.deny.length > 0 && !input.allowDenylisted)
    refuse(out, 'commands.deny', `${detail}, and it could be on the profile's deny list`, 'commands.deny');
  else if (rules.default === 'deny') refuse(out, 'commands.default', `${detail} (commands.default: deny)`);
  else {
    decidedBy(out, 'commands.default');
    if (rules.default === 'ask') out.asks.push(detail);
  }
}

/** A variable the command line sets, by name: one that decides what runs or how words split, or whose value is a command. */
interface SetVariable {
  name: string;
  /** Its values when known (a program variable's value is judged as the command it names). */
  values: readonly string[] | undefined;
}

/** The variables a unit sets: its assignments, export and read operands, and env's own `NAME=value` words. */
function variablesOf(unit: Unit, runs: readonly Run[], values: ShellValues): SetVariable[] {
  const set: SetVariable[] = bindingsOf(unit).map((b) => ({
    name: b.name,
    values: b.parts && assignedValues(b.parts, values)?.map((f) => f.text),
  }));
  for (const { layers } of runs)
    layers.forEach((layer, n) => {
      const next = layers[n + 1];
      if (!next || basename(layer[0]!) !== 'env') return;
      for (const word of layer.slice(1, layer.length - next.length)) {
        const eq = /^[A-Za-z_][A-Za-z0-9_]*=/.test(word) ? word.indexOf('=') : -1;
        if (eq > 0) set.push({ name: word.slice(0, eq), values: [word.slice(eq + 1)] });
      }
    });
  return set;
}

/** The runs a variable's value names, when it is a program variable (`GIT_PAGER=less git log`). */
function judgeVariables(variables: readonly SetVariable[], input: PreflightInput, out: Verdicts): Run[] {
  const runs: Run[] = [];
  for (const { name, values } of variables) {
    if (name === 'IFS' || name === 'CDPATH')
      refuse(
        out,
        'commands.shell_syntax',
        `the shell string sets ${name}, which changes how sh ${name === 'IFS' ? 'splits the words after it' : 'finds the directory cd goes to'}`,
      );
    else if (HIDDEN_VARIABLES.has(name) || HIDDEN_VARIABLE_PREFIXES.some((p) => name.startsWith(p)))
      judgeHidden(`setting ${name}, which decides what programs run or load`, input, out);
    else if (PROGRAM_VARIABLES.has(name)) {
      if (values === undefined) judgeHidden(`${name}, a command line whose value is unknown`, input, out);
      for (const value of values ?? []) {
        const spawn = spawnOf('command', value, `${name}=`);
        if (spawn.kind === 'script') judgeHidden(`${name}='${value}', a command line with shell syntax`, input, out);
        else runs.push(...runsOf(spawn.argv, () => undefined).runs.map((r) => ({ ...r, via: `${name}=` })));
      }
    }
  }
  return runs;
}

/** Every command a unit runs, with the shell strings its tools run judged as `sh -c` under full syntax. */
function runsOfUnit(unit: Unit, rules: CommandRules, values: ShellValues): { runs: Run[]; overflow: boolean } {
  const { runs, scripts, overflow } = runsOf(marked(unit), expandedOf(unit, values));
  if (rules.shellSyntax === 'restricted') return { runs, overflow };
  // Under full syntax a string is not read: the shell that runs it is the command (README).
  const shells = scripts.flatMap((s) =>
    runsOf(['sh', '-c', s.script], () => undefined).runs.map((r) => ({ ...r, via: s.via })),
  );
  return { runs: [...runs, ...shells], overflow };
}

/** What decideCommand and pathsToCheck both read of a command line: its units, and the values its variables may take. */
function readCommand(command: CommandLine, rules: CommandRules, env: ShellValues | undefined, out: Verdicts) {
  const read = unitsOf(command, rules, out);
  return { units: read.units, loops: read.loops, values: valuesOf(read, env ?? NO_VALUES) };
}

/** Host paths whose realpath facts decideCommand needs (empty when path guards are off). */
export function pathsToCheck(
  command: CommandLine,
  rules: CommandRules,
  mode: Mode,
  workspace: Workspace,
  base: string,
  env?: ShellValues,
): string[] {
  if (!guardsApply(rules, mode)) return [];
  const { units, values } = readCommand(command, rules, env, { violations: [], asks: [], network: [] });
  const bases = basesOf(units, workspace, base);
  const needed = units.flatMap((unit, n) => {
    const { runs } = runsOfUnit(unit, rules, values);
    const operands = operandsOf(unit, runs, values);
    return bases[n]!.flatMap((b) => pathFactsNeeded(operands, workspace, b));
  });
  return [...new Set(needed)];
}

/** Whether decideCommand would judge a git remote under network none: the runtime then reads the repository's remotes. */
export function gitRemotesNeeded(
  command: CommandLine,
  rules: CommandRules,
  network: PreflightInput['network'],
): boolean {
  if (network !== 'none') return false;
  const { units } = unitsOf(command, rules, { violations: [], asks: [], network: [] });
  return units.some((unit) =>
    runsOf(marked(unit), () => undefined).runs.some((run) =>
      run.layers.some((layer) => basename(layer[0]!) === 'git' && OFFLINE_GIT.has(subcommandOf(layer)?.sub ?? '')),
    ),
  );
}

function judgeUnit(
  unit: Unit,
  input: PreflightInput,
  values: ShellValues,
  deny: ReadonlySet<string>,
  bases: readonly string[],
): Verdicts {
  const out: Verdicts = { violations: [], asks: [], network: [] };
  const { runs: own, overflow } = runsOfUnit(unit, input.rules, values);
  if (overflow) judgeHidden(`${shown(unit.argv[0] ?? '')} runs more than 32 commands`, input, out);
  const runs = [...own, ...judgeVariables(variablesOf(unit, own, values), input, out)];
  if (isCd(unit)) judgeCd(unit, { ...input, values }, out);
  else {
    judgeExpansions(unit, runs, input.rules, out);
    for (const [r, run] of runs.entries())
      for (const [n, layer] of run.layers.entries()) {
        // The unit's own commands may be builtins of the string (export, set, `command eval`).
        if (r === 0) judgeBuiltin(unit, layer, out);
        const builtin = r === 0 && n === 0 && unit.inScript && SCRIPT_BUILTINS.has(layer[0]!);
        judgeLayer(layer, input, deny, out, { scope: run.scope, builtin, ...(run.via ? { via: run.via } : {}) });
      }
    for (const what of runs.flatMap((r) => r.reading?.hidden ?? [])) judgeHidden(what, input, out);
  }
  if (guardsApply(input.rules, input.mode)) {
    const seen = new Set<string>();
    const operands = operandsOf(unit, runs, values);
    for (const what of runs.flatMap((r) => r.reading?.unknownPaths ?? []))
      out.violations.push({
        phase: 'preflight',
        kind: 'path',
        rule: 'paths.unknown',
        detail: `${what}: a path known only when it runs`,
      });
    for (const base of bases)
      for (const v of checkPathArgs(operands, input.workspace, base, input.paths)) {
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
  const { units, loops, values } = readCommand(input.command, input.rules, input.values, out);
  // A loop sets its variable as an assignment does (`for PATH in .`); a command line in one is not read.
  judgeVariables(
    loops.map((l) => ({ name: l.name, values: undefined })),
    input,
    out,
  );
  const deny = new Set(input.rules.deny.flatMap((d) => groupMembers(d) ?? [d]));
  const bases = basesOf(units, input.workspace, input.base);
  const judged = units.map((unit, n) => ({ unit, verdicts: judgeUnit(unit, input, values, deny, bases[n]!) }));
  for (const { verdicts } of judged) {
    out.violations.push(...verdicts.violations);
    out.asks.push(...verdicts.asks);
    for (const key of verdicts.decidedBy ?? []) decidedBy(out, key);
    for (const use of verdicts.network) if (!out.network.some((u) => u.command === use.command)) out.network.push(use);
  }
  const network = out.network.length > 0 ? { needsNetwork: out.network } : {};
  const named = input.withRules ? { rules: [...new Set(out.decidedBy ?? [])] } : {};
  const decision = { ...verdictOf(out), ...network, ...named };
  if (!judged.some(({ unit }) => unit.inScript)) return decision;
  const commands = judged.map(({ unit, verdicts }) => ({
    argv: [...unit.argv],
    redirects: [...unit.redirects],
    decision: verdictOf(verdicts),
  }));
  return { ...decision, commands };
}
