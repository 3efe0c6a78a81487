// A tool's argv as the tool reads it (docs/DESIGN.md, "Command rules" and "Path guards"): what each
// argument is (data, a path, a program), the commands the tool runs (`sort --compress-program=PROG`,
// `rg --pre=PROG`), and what it runs that cannot be judged (`make --eval`). This is the reading a
// grammar drives (tool-grammars.ts); tool-readings.ts reads the tools with a syntax of their own (find,
// git, npm, tar, ...). A reading that meets an option it does not know is uncertain: every word may
// then be a path. Pure.
import { posix } from 'node:path';
import type { Grammar, Role } from './tool-grammars.js';

/** What the reading may know of a word sh expands at run time (shell-units.ts builds it). */
export interface Expanded {
  /** It may start with `-`: it could be an option. */
  dash: boolean;
  /** It may yield other than one field (an unquoted expansion, a glob): the operands after it may shift. */
  many: boolean;
  /** As written, for messages. */
  written: string;
  /** Its literal start, before anything sh expands (`-j` of `-j$(nproc)`). */
  prefix: string;
}

/** The expansion behind a word of the layer, if sh expands it. */
export type ExpandedOf = (word: string) => Expanded | undefined;

/** One argument and its role: the word at `at`, its value starting `skip` characters in (`--file=X`, `-fX`). */
export interface Argument {
  at: number;
  skip: number;
  role: Role;
  /** The option it is the value of; else the operand position it has (after firstGivenBy). */
  option?: string;
  operand?: number;
}

/**
 * A command a tool runs: an argv (`find -exec`), judged like any command, or a command line it gives
 * a shell (`git -c core.pager='less -R'`), whose commands are judged. `deny` scope: only the deny list
 * and the network apply (what `npx CMD` or a make variable runs is the project's own tool).
 */
export type Spawn =
  | { kind: 'argv'; argv: string[]; via: string; scope: 'all' | 'deny' }
  | { kind: 'script'; script: string; via: string };

export interface ToolReading {
  args: Argument[];
  /** Every option was understood: otherwise every word may be a path. */
  certain: boolean;
  spawned: Spawn[];
  /** What it runs that the rules cannot judge, each a phrase naming it. */
  hidden: string[];
  /** Words sh expands where they could change what runs (an option of a tool that runs programs). */
  unreadable: string[];
  /** Files a program of the tool names (sed `w FILE`). */
  named: string[];
  /** Files it reads or writes that are only known when it runs (awk's getline < EXPR). */
  unknownPaths: string[];
}

export const emptyReading = (): ToolReading => ({
  args: [],
  certain: true,
  spawned: [],
  hidden: [],
  unreadable: [],
  named: [],
  unknownPaths: [],
});

/** git's rule for a command line (run-command.c prepare_shell_cmd): through sh when it holds any of these. */
const SHELL_SYNTAX = /[|&;<>()$`\\"' \t\n*?[#~=%]/;

/** A value the tool runs: a program, a command line (its words, or a shell string when it has shell syntax), or a shell string. */
export function spawnOf(role: Role, value: string, via: string): Spawn {
  if (role === 'program') return { kind: 'argv', argv: [value], via, scope: 'all' };
  const words = value.trim().split(/[ \t]+/);
  if (role === 'command' && words.every((w) => w !== '' && !SHELL_SYNTAX.test(w)))
    return { kind: 'argv', argv: words, via, scope: 'all' };
  return { kind: 'script', script: value, via };
}

const RUNS: ReadonlySet<Role> = new Set(['program', 'command', 'shell', 'hidden']);

/** Whether a grammar has an option that runs something: an expanded word there could be that option. */
const runsPrograms = (grammar: Grammar) =>
  Object.values(grammar.valued).some((r) => (typeof r === 'string' ? RUNS.has(r) : r.some((x) => RUNS.has(x))));

/** Records a value of `role` at `at` (from `skip`): an argument, a command run, or what cannot be judged. */
export function addValue(
  out: ToolReading,
  layer: readonly string[],
  arg: Argument,
  via: string,
  expandedOf: ExpandedOf,
): void {
  const word = layer[arg.at];
  if (word === undefined) return;
  if (arg.role === 'hidden') out.hidden.push(via);
  else if (RUNS.has(arg.role)) {
    const x = expandedOf(word);
    if (x) out.unreadable.push(`the program ${via} runs (${x.written}) is unknown until sh expands it`);
    else out.spawned.push(spawnOf(arg.role, word.slice(arg.skip), via));
  } else out.args.push(arg);
}

/** The long option `given` names: exact, or (getopt_long) the one option it is a unique prefix of. */
function longOption(given: string, names: readonly string[], exact: boolean): string | undefined {
  if (names.includes(given)) return given;
  if (exact || given.length < 3) return undefined;
  const matches = names.filter((n) => n.startsWith(given));
  return matches.length === 1 ? matches[0] : undefined;
}

/** The reading of a tool whose options a grammar lists; `from` is where its arguments start. */
export function readGrammar(layer: readonly string[], grammar: Grammar, expandedOf: ExpandedOf, from = 1): ToolReading {
  const out = emptyReading();
  const name = posix.basename(layer[0]!);
  if (grammar.allData) {
    for (let i = from; i < layer.length; i++) out.args.push({ at: i, skip: 0, role: 'data' });
    return out;
  }
  const attached = grammar.attachedOnly ?? {};
  const longNames = [...Object.keys(grammar.valued), ...grammar.flags, ...Object.keys(attached)].filter((o) =>
    o.startsWith('--'),
  );
  let operand = 0;
  let optionsOpen = true;
  let restData = false;
  const taken = (option: string) => {
    if (grammar.firstGivenBy?.includes(option) && operand === 0) operand = 1;
    if (grammar.endsOptions?.includes(option)) optionsOpen = false;
    if (grammar.restAsData?.includes(option)) restData = true;
  };
  /** The values of a valued option: attached to `at` from `skip`, then the words after it. Returns the last index used. */
  const values = (option: string, at: number, skip: number | undefined): number => {
    const spec = grammar.valued[option]!;
    const roles = typeof spec === 'string' ? [spec] : spec;
    let i = at;
    roles.forEach((role, n) => {
      const via = `${name} ${option}`;
      if (n === 0 && skip !== undefined)
        addValue(out, layer, { at, skip, role: role === 'count' ? 'data' : role, option }, via, expandedOf);
      else if (role !== 'count' || /^[0-9]+$/.test(layer[i + 1] ?? '')) {
        i++;
        addValue(out, layer, { at: i, skip: 0, role: role === 'count' ? 'data' : role, option }, via, expandedOf);
      }
    });
    taken(option);
    return i;
  };
  /**
   * The option word at `at`, read from `text` (all of it, or the literal start of a word sh expands:
   * `complete` false): the last index it used, or undefined when it names an option the grammar does
   * not list, or one only the expansion would name.
   */
  const readOption = (text: string, complete: boolean, at: number): number | undefined => {
    if (text.startsWith('--')) {
      const eq = text.indexOf('=');
      if (eq < 0 && !complete) return undefined;
      const option = longOption(eq < 0 ? text : text.slice(0, eq), longNames, grammar.exactLong ?? false);
      if (option === undefined) {
        if (eq >= 0) out.args.push({ at, skip: eq + 1, role: 'path' });
        return undefined;
      }
      if (grammar.valued[option] !== undefined) return values(option, at, eq < 0 ? undefined : eq + 1);
      if (eq >= 0)
        addValue(out, layer, { at, skip: eq + 1, role: attached[option] ?? 'data', option }, name, expandedOf);
      taken(option);
      return at;
    }
    if (grammar.numeric && complete && /^-[0-9]+$/.test(text)) return at;
    for (let j = 1; j < text.length; j++) {
      const option = `-${text[j]}`;
      const rest = j + 1 < text.length || !complete;
      if (grammar.valued[option] !== undefined) return values(option, at, rest ? j + 1 : undefined);
      if (attached[option] !== undefined) {
        if (rest) addValue(out, layer, { at, skip: j + 1, role: attached[option], option }, name, expandedOf);
        return at;
      }
      if (!grammar.flags.includes(option)) return undefined;
      taken(option);
    }
    return complete ? at : undefined;
  };
  for (let i = from; i < layer.length; i++) {
    const word = layer[i]!;
    const x = expandedOf(word);
    if (optionsOpen && word === '--') {
      optionsOpen = false;
      continue;
    }
    if (optionsOpen && (x ? x.dash : word.startsWith('-') && word !== '-')) {
      // A word sh expands is read as far as its literal start goes (`-j$(nproc)`: -j and its value).
      const read = readOption(x ? x.prefix : word, x === undefined, i);
      if (read === undefined) {
        out.certain = false;
        if (x && runsPrograms(grammar))
          out.unreadable.push(`${x.written} could be an option of ${name} that runs a program`);
      } else i = read;
      continue;
    }
    const position = Math.min(operand, grammar.operands.length - 1);
    const role = restData ? 'data' : grammar.operands[position]!;
    addValue(out, layer, { at: i, skip: 0, role, operand }, name, expandedOf);
    if (x?.many && position < grammar.operands.length - 1) out.certain = false;
    operand++;
    if (grammar.optionsFirst) optionsOpen = false;
  }
  return out;
}
