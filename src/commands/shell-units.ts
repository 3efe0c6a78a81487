// The simple commands the command rules judge (docs/DESIGN.md, "Command rules"), and the judging that
// belongs to a shell string: under shell_syntax: restricted a string is parsed (shell-words.ts) into its
// simple commands, those of its compound commands and `$(...)` included, and into those of any `sh -c`
// string or shell command line its commands run (`git -c core.pager=...`), each judged as a unit; a
// word sh expands at run time must not decide what runs; `cd DIR` moves where later relative paths
// resolve; builtins that change the shell in ways the rules cannot follow are refused. What each unit's
// paths are is here too, for the path guards (path-guards.ts). Pure.
import { posix } from 'node:path';
import { shellArgv } from '../policy/command-line.js';
import type { CommandRules, Mode } from '../policy/types.js';
import { type Run, runsOf, shellScriptAt, splitString, subcommandOf } from './command-layers.js';
import { refuse, type Verdicts } from './command-verdict.js';
import { NETWORK_FETCHERS, REFUSED_BUILTINS } from './known-commands.js';
import { guardsApply, shown, type PathOperands, type Workspace } from './path-guards.js';
import { fieldsOf, type ShellValues, wordHasGlob } from './shell-fields.js';
import { type Assignment, type ForLoop, parseShellScript, type Redirect, type WordPart } from './shell-words.js';
import type { Expanded, ExpandedOf } from './tool-arguments.js';

/** What is judged: the argv given, or a shell string sbx runs with the system shell (policy/command-line.ts). */
export type CommandLine = { kind: 'argv'; argv: readonly string[] } | { kind: 'shell'; script: string };

/** One simple command to judge: a direct argv, or one command of a shell string. */
export interface Unit {
  argv: readonly string[];
  redirects: readonly Redirect[];
  /** argv index → the parts of a word sh expands at run time (shell-words.ts). */
  expansions?: Readonly<Record<number, readonly WordPart[]>>;
  /** `NAME=value` before the command, or alone. */
  assignments?: readonly Assignment[];
  /** Runs inside a loop, any number of times. */
  loop?: true;
  /** Follows `&&` in its string: runs only when the command before it succeeded. */
  andThen?: true;
  /** A command of a shell string: sh runs it, so its shell builtins matter. */
  inScript: boolean;
  /** How deep in shell strings: 1 for the string sbx runs, more for a `sh -c` inside it. */
  depth: number;
}

/** A command line read: its units, and the for loops of its shell strings (their variables' values). */
export interface ReadLine {
  units: Unit[];
  loops: ForLoop[];
}

const basename = (arg: string) => posix.basename(arg);

/** sh -c inside sh -c inside ...: deep enough for real use, bounded for a hostile string. */
const MAX_SHELL_DEPTH = 4;
/** Marks a word sh expands at run time (`\0` and its argv index): no name, subcommand or flag a rule names starts so. */
const EXPANDED = '\u0000';

/** Reading the tools of a unit to find the shell strings they run needs no values: each expansion may be anything. */
const ANY_VALUE: ExpandedOf = (word) =>
  isMarked(word) ? { dash: true, many: true, written: word, prefix: '' } : undefined;

/**
 * The simple commands of a shell string, and of any shell string one of them runs (`xargs sh -c
 * '...'`, `git -c core.pager='...'`), or a shell_syntax refusal naming the construct.
 */
function scriptUnits(script: string, depth: number, out: Verdicts): ReadLine {
  const parsed = parseShellScript(script);
  if (!parsed.ok || depth >= MAX_SHELL_DEPTH) {
    const what = parsed.ok ? `shells nested more than ${MAX_SHELL_DEPTH} deep` : parsed.construct;
    refuse(out, 'commands.shell_syntax', `the shell string uses ${what}, which shell_syntax: restricted refuses`);
    return { units: [], loops: [] };
  }
  const read: ReadLine = { units: [], loops: [...(parsed.loops ?? [])] };
  for (const c of parsed.commands) {
    const unit: Unit = {
      argv: c.argv,
      redirects: c.redirects,
      ...(c.expansions ? { expansions: c.expansions } : {}),
      ...(c.assignments ? { assignments: c.assignments } : {}),
      ...(c.loop ? { loop: true } : {}),
      ...(c.andThen ? { andThen: true } : {}),
      inScript: true,
      depth: depth + 1,
    };
    const nested = nestedUnits(unit, depth + 1, out);
    read.units.push(unit, ...nested.units);
    read.loops.push(...nested.loops);
  }
  return read;
}

/** The units of the shell strings a unit's commands run: `sh -c STRING` anywhere, a tool's command line. */
function nestedUnits(unit: Unit, depth: number, out: Verdicts): ReadLine {
  const { runs, scripts } = runsOf(marked(unit), ANY_VALUE);
  const strings = [
    ...runs.flatMap(({ layers }) =>
      layers.flatMap((layer) => {
        const at = shellScriptAt(layer);
        return at === undefined ? [] : [isMarked(layer[at] ?? '') ? undefined : (layer[at] ?? '')];
      }),
    ),
    ...scripts.map((s) => s.script),
  ];
  const read: ReadLine = { units: [], loops: [] };
  // An expanded script is refused by judgeExpansions; its text is not read.
  for (const script of strings.filter((s): s is string => s !== undefined)) {
    const nested = scriptUnits(script, depth, out);
    read.units.push(...nested.units);
    read.loops.push(...nested.loops);
  }
  return read;
}

/** Every simple command to judge: the argv given (and the strings its shells run), or a shell string's commands. */
export function unitsOf(command: CommandLine, rules: CommandRules, out: Verdicts): ReadLine {
  const restricted = rules.shellSyntax === 'restricted';
  if (command.kind === 'shell') {
    // Under full syntax the string is not read: the shell is judged as the command (README).
    if (!restricted)
      return { units: [{ argv: shellArgv(command.script), redirects: [], inScript: false, depth: 0 }], loops: [] };
    return scriptUnits(command.script, 0, out);
  }
  if (command.argv.length === 0) return { units: [], loops: [] };
  const given: Unit = { argv: command.argv, redirects: [], inScript: false, depth: 0 };
  const nested = restricted ? nestedUnits(given, 1, out) : { units: [], loops: [] };
  return { units: [given, ...nested.units], loops: nested.loops };
}

/** The unit's argv with each word sh expands replaced by its mark (EXPANDED and its index). */
export function marked(unit: Unit): string[] {
  const { expansions } = unit;
  return expansions ? unit.argv.map((a, i) => (expansions[i] ? `${EXPANDED}${i}` : a)) : [...unit.argv];
}

const isMarked = (word: string) => word.startsWith(EXPANDED);

/** The values a word may take in a unit of this depth: a nested shell's `$1`, `$@` are its own arguments, unknown. */
function valuesAt(unit: Unit, values: ShellValues): ShellValues {
  return unit.depth > 1 ? { ...values, arguments: 'unknown' } : values;
}

/** What the tools' readings may know of the unit's expanded words (tool-arguments.ts). */
export function expandedOf(unit: Unit, values: ShellValues): ExpandedOf {
  return (word) => {
    if (!isMarked(word)) return undefined;
    const i = Number(word.slice(1));
    const parts = unit.expansions![i]!;
    const fields = fieldsOf(parts, valuesAt(unit, values));
    const literal = parts.findIndex((p) => p.kind !== 'text' || (!p.quoted && /[*?[]/.test(p.text)));
    const prefix = parts
      .slice(0, literal < 0 ? parts.length : literal)
      .map((p) => (p.kind === 'text' ? p.text : ''))
      .join('');
    const expanded: Expanded = {
      written: shown(unit.argv[i]!),
      prefix,
      // A glob that starts with a pattern may match a file named like an option (`--pre=sh`).
      dash: fields === undefined || fields.some((f) => f.text.startsWith('-') || (f.glob && /^[*?[]/.test(f.text))),
      many: wordHasGlob(parts) || parts.some((p) => (p.kind === 'param' || p.kind === 'command') && !p.quoted),
    };
    return expanded;
  };
}

/** `cd` as the string sbx runs has it, the one form judgeCd follows. */
export function isCd(unit: Unit): boolean {
  return unit.inScript && unit.depth === 1 && unit.argv[0] === 'cd' && unit.expansions?.[0] === undefined;
}

/**
 * Where a word sh expands at run time would decide what runs, the rules cannot judge it: a command
 * name (`$CMD`, `*`), a wrapper's operand before the command it runs (`timeout $T curl`: `$T` could
 * be `5 curl`), a shell's script, the subcommand of a command whose rules or network use depend on
 * it (`git $SUB`), an argument where a block pattern looks for a flag, or an option of a tool that
 * runs programs (`rg $X`: `--pre=sh`). Elsewhere the command is known, and an expanded argument is
 * only data (its paths are the guards' business).
 */
export function judgeExpansions(unit: Unit, runs: readonly Run[], rules: CommandRules, out: Verdicts): void {
  const why = 'sh expands it at run time';
  for (const { layers, reading } of runs) {
    for (const what of reading?.unreadable ?? []) {
      refuse(out, 'commands.shell_syntax', `${what}, and ${why}`);
      return;
    }
    // env -S reads quotes, escapes and ${NAME} its own way; the rules split its string on blanks only.
    const split = layers
      .map((l) => (basename(l[0]!) === 'env' ? splitString(l) : undefined))
      .find((s) => s !== undefined);
    if (split !== undefined && /['"\\$#]/.test(split)) {
      refuse(
        out,
        'commands.shell_syntax',
        `env -S ${shown(split)} quotes, escapes or expands in its own way, which the rules do not read (run the command without env -S)`,
      );
      return;
    }
    if (!unit.expansions) continue;
    const written = (word: string) => shown(unit.argv[Number(word.slice(1))]!);
    for (const [n, layer] of layers.entries()) {
      const name = layer[0]!;
      if (isMarked(name)) {
        refuse(out, 'commands.shell_syntax', `the command word ${written(name)} is unknown until ${why}`);
        return;
      }
      const next = layers[n + 1];
      if (next) {
        const split = basename(name) === 'env' && splitString(layer) !== undefined;
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
      if (!(entry?.allow || entry?.block || Object.hasOwn(NETWORK_FETCHERS, base) || base === 'git')) continue;
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
 * workspace when path guards are on, and not relative in a loop (each pass would move on). Later
 * relative paths are then judged from every directory the shell may be in (basesOf): cd may fail, and
 * a pipeline or a subshell runs it apart.
 */
export function judgeCd(unit: Unit, input: CdContext, out: Verdicts): void {
  const [, dir, ...more] = unit.argv;
  if (dir === undefined || more.length > 0 || unit.expansions || dir === '' || dir.startsWith('-')) {
    const what = 'cd without exactly one directory as written (no options, -, or expansions)';
    refuse(out, 'commands.shell_syntax', `the shell string runs ${what}, which the rules cannot follow`);
    return;
  }
  if (unit.loop && !dir.startsWith('/'))
    refuse(
      out,
      'commands.shell_syntax',
      `the shell string runs cd ${shown(dir)} in a loop: where later paths resolve would depend on how often it ran (write an absolute directory)`,
    );
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

/** Options `set` may take in a string (`-euo pipefail`): each changes how sh runs later commands, none what they are. */
const SET_OPTIONS = /^[-+][euxvfnCbhmaBo]+$/;
/**
 * The long names `set -o` may take: the same options. bash's `keyword` (-k) would put every NAME=value
 * argument in the command's environment, past the rules' reading of assignments.
 */
const SET_NAMES = new Set(['errexit', 'nounset', 'pipefail', 'xtrace', 'verbose', 'noglob', 'noclobber', 'allexport']);

/**
 * A layer that runs a builtin in a shell string: refused when it changes the shell in a way the rules
 * cannot follow (eval, source, alias, trap, `exec` alone, `set -- ARGS`, ...). The values `export`,
 * `read` and the like give are judged where they are used (bindingsOf), their names by judgeVariables.
 */
export function judgeBuiltin(unit: Unit, layer: readonly string[], out: Verdicts): void {
  if (!unit.inScript) return;
  const name = basename(layer[0]!);
  const refused = (what: string) =>
    refuse(
      out,
      'commands.shell_syntax',
      `the shell string runs ${what}, which changes the shell for the commands after it`,
    );
  // `exec` alone keeps the shell and redirects it for every command after it.
  if (REFUSED_BUILTINS.has(name) || (name === 'exec' && layer.length === 1)) refused(`the builtin ${shown(name)}`);
  else if (name === 'set') {
    const args = layer.slice(1);
    // An option cluster ending in o takes an option name (`-o pipefail`).
    const named = (i: number) => i > 0 && /^[-+][a-zA-Z]*o$/.test(args[i - 1]!);
    const names = args.filter((a, i) => named(i) && !SET_NAMES.has(a));
    const operands = args.filter((a, i) => !SET_OPTIONS.test(a) && !named(i));
    if (names.length > 0) refused(`set -o ${shown(names[0]!)}`);
    else if (operands.length > 0) refused(`set with operands (${shown(operands[0]!)}: they become $1, $2, ...)`);
  } else if (['export', 'readonly', 'local'].includes(name)) {
    const option = layer.slice(1).find((a) => a.startsWith('-') && a !== '-p' && a !== '-n');
    if (option) refused(`${name} ${shown(option)}`);
  } else if (name === 'read') {
    const option = layer.slice(1).find((a) => /^-[au]/.test(a));
    if (option) refused(`read ${shown(option)}`);
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

/**
 * For each unit, every host directory its relative paths may resolve against, after the cds before it:
 * any of them (cd may fail, a pipeline or subshell runs it apart), but only the new one for what
 * follows a `cd` with `&&` (`cd sub && ls ..` lists the workspace).
 */
export function basesOf(units: readonly Unit[], workspace: Workspace, base: string): string[][] {
  let all = [base];
  /** Where the shell is when every command since the last cd succeeded, while `&&` chains them. */
  let chain: string[] | undefined;
  return units.map((unit) => {
    const current = unit.andThen && chain ? chain : all;
    const dir = isCd(unit) && unit.argv.length === 2 && !unit.expansions ? unit.argv[1]! : undefined;
    if (dir !== undefined) {
      const next = current.flatMap((b) =>
        dir.startsWith('/') ? (hostPathOf(dir, workspace) ?? []) : posix.resolve(b, dir),
      );
      all = [...new Set([...all, ...next])];
      chain = next;
    } else if (!unit.andThen) chain = undefined;
    return current;
  });
}

export const NO_VALUES: ShellValues = { vars: {}, secrets: [] };

/**
 * What path guards look at: for each command the unit runs, the words its tool reads as paths (all of
 * them but its name when the tool is unknown or its reading uncertain, never a shell's script), the
 * files its program names, and the redirection targets (not a here-document's delimiter). Words sh
 * expands are judged by the fields they yield with the values the string runs with.
 */
export function operandsOf(unit: Unit, runs: readonly Run[], values: ShellValues = NO_VALUES): PathOperands {
  if (isCd(unit)) return { args: [], targets: unit.argv.slice(1) };
  const words: { word: string; skip: number }[] = [];
  const named: string[] = [];
  for (const { layers, reading } of runs) {
    layers.forEach((layer, n) => {
      const next = layers[n + 1];
      if (next) {
        const env = basename(layer[0]!) === 'env';
        const own = layer
          .slice(1, layer.length - next.length)
          .filter((w) => !(env && /^[A-Za-z_][A-Za-z0-9_]*=/.test(w)));
        words.push(...own.map((word) => ({ word, skip: 0 })));
        return;
      }
      named.push(...(reading?.named ?? []));
      if (reading?.certain) {
        for (const arg of reading.args) if (arg.role === 'path') words.push({ word: layer[arg.at]!, skip: arg.skip });
        return;
      }
      const script = shellScriptAt(layer);
      // An attached value of an option the reading knows keeps its role (`--grep=/fix` is data).
      const data = new Set((reading?.args ?? []).filter((a) => a.role === 'data' && a.skip > 0).map((a) => a.at));
      layer.forEach((word, i) => {
        if (i > 0 && i !== script && !data.has(i)) words.push({ word, skip: 0 });
      });
    });
  }
  const at = valuesAt(unit, values);
  const expandedWord = ({ word, skip }: { word: string; skip: number }) => {
    const i = Number(word.slice(1));
    return { written: unit.argv[i]!, fields: fieldsOf(unit.expansions![i]!, at), target: false, skip };
  };
  const files = unit.redirects.filter((r) => r.op !== '>&' && r.op !== '<<');
  return {
    args: words.filter((w) => !isMarked(w.word)).map((w) => w.word.slice(w.skip)),
    targets: [...files.filter((r) => !r.parts).map((r) => r.target), ...named],
    expanded: [
      ...words.filter((w) => isMarked(w.word)).map(expandedWord),
      ...files
        .filter((r) => r.parts)
        .map((r) => ({ written: r.target, fields: fieldsOf(r.parts!, at), target: true, skip: 0 })),
    ],
  };
}
