// The simple commands the command rules judge (docs/DESIGN.md, "Command rules"), and the judging that
// belongs to a shell string: under shell_syntax: restricted a string is parsed (shell-words.ts) into its
// simple commands, and into those of any `sh -c` string they run, each judged as a unit; a word sh
// expands at run time must not decide what runs; `cd DIR` moves where later relative paths resolve;
// builtins that change the shell are refused. What each unit's paths are is here too, for the path
// guards (path-guards.ts). Pure.
import { posix } from 'node:path';
import { shellArgv } from '../policy/command-line.js';
import type { CommandRules, Mode } from '../policy/types.js';
import { layersOf, shellScriptAt, splitsString, subcommandOf } from './command-layers.js';
import { refuse, type Verdicts } from './command-verdict.js';
import { NETWORK_FETCHERS, SHELL_STATE_BUILTINS } from './known-commands.js';
import { guardsApply, shown, type PathOperands, type Workspace } from './path-guards.js';
import { fieldsOf, parseShellScript, type Redirect, type ShellValues, type WordPart } from './shell-words.js';

/** What is judged: the argv given, or a shell string sbx runs with the system shell (policy/command-line.ts). */
export type CommandLine = { kind: 'argv'; argv: readonly string[] } | { kind: 'shell'; script: string };

/** One simple command to judge: a direct argv, or one command of a shell string. */
export interface Unit {
  argv: readonly string[];
  redirects: readonly Redirect[];
  /** argv index → the parts of a word sh expands at run time (shell-words.ts). */
  expansions?: Readonly<Record<number, readonly WordPart[]>>;
  /** A command of a shell string: sh runs it, so its shell builtins matter. */
  inScript: boolean;
  /** How deep in shell strings: 1 for the string sbx runs, more for a `sh -c` inside it. */
  depth: number;
}

const basename = (arg: string) => posix.basename(arg);

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
export function unitsOf(command: CommandLine, rules: CommandRules, out: Verdicts): Unit[] {
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

/** The unit's argv with each word sh expands replaced by its mark (EXPANDED and its index). */
function marked(unit: Unit): string[] {
  const { expansions } = unit;
  return expansions ? unit.argv.map((a, i) => (expansions[i] ? `${EXPANDED}${i}` : a)) : [...unit.argv];
}

const isMarked = (word: string) => word.startsWith(EXPANDED);

/** `cd` as the string sbx runs has it, the one form judgeCd follows. */
export function isCd(unit: Unit): boolean {
  return unit.inScript && unit.depth === 1 && unit.argv[0] === 'cd' && unit.expansions?.[0] === undefined;
}

/**
 * Where a word sh expands at run time would decide what runs, the rules cannot judge it: a command
 * name (`$CMD`, `*`), a wrapper's operand before the command it runs (`timeout $T curl`: `$T` could
 * be `5 curl`), a shell's script, the subcommand of a command whose rules or network use depend on
 * it (`git $SUB`), or an argument where a block pattern looks for a flag. Elsewhere the command is
 * known, and an expanded argument is only data (its paths are the guards' business).
 */
export function judgeExpansions(unit: Unit, rules: CommandRules, out: Verdicts): void {
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

/** What judgeCd reads of the decision's input (command-rules.ts PreflightInput). */
interface CdContext {
  rules: CommandRules;
  mode: Mode;
  workspace: Workspace;
  values?: ShellValues;
}

/**
 * `cd DIR`: one directory as written (no option, `-`, expansion, or CDPATH to search), inside the
 * workspace when path guards are on. Later relative paths are then judged from every directory the
 * shell may be in (basesOf): cd may fail, and a pipeline runs it in a subshell.
 */
export function judgeCd(unit: Unit, input: CdContext, out: Verdicts): void {
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

/** A layer that runs a builtin which changes the shell for the commands after it, in a shell string. */
export function judgeBuiltin(unit: Unit, layer: readonly string[], out: Verdicts): void {
  const name = basename(layer[0]!);
  // `exec` alone keeps the shell and redirects it for every command after it.
  if (unit.inScript && (SHELL_STATE_BUILTINS.has(name) || (name === 'exec' && layer.length === 1))) {
    const what = `the shell string runs the builtin ${shown(name)}`;
    refuse(out, 'commands.shell_syntax', `${what}, which changes the shell for the commands after it`);
  }
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
export function basesOf(units: readonly Unit[], workspace: Workspace, base: string): string[][] {
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

export const NO_VALUES: ShellValues = { vars: {}, secrets: [] };

/**
 * What path guards look at: the arguments of every layer but its command name, and the redirection
 * targets (not a here-document's delimiter). A shell's script is not a path: under restricted syntax
 * its commands are units of their own, under full syntax it is not judged (the README says so).
 * Words sh expands are judged by the fields they yield with the sandbox's environment.
 */
export function operandsOf(unit: Unit, values: ShellValues = NO_VALUES): PathOperands {
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
