// The values a shell string gives its variables (docs/DESIGN.md, "Restricted shell strings"): `NAME=value`
// before a command or alone, `export`/`readonly`/`local NAME=value`, `for NAME in WORDS`, and `read
// NAME` (what it reads is unknown). A variable may hold any of them wherever it is used, as well as
// the sandbox's environment value: the reading ignores order and branches, so a path built from it is
// judged for every value it could have. Pure.
import { posix } from 'node:path';
import { assignedValues, type Field, fieldsOf, type ShellValues } from './shell-fields.js';
import type { ReadLine, Unit } from './shell-units.js';
import type { WordPart } from './shell-words.js';

/** A variable a unit gives a value: its name, and the value's parts (undefined: unknown, as what `read` reads). */
export interface Binding {
  name: string;
  parts: readonly WordPart[] | undefined;
}

/** More values than this for one variable is judged unknown. */
const MAX_VALUES = 64;
/** Passes over the string's assignments until each variable's values stop growing (`A=$B/x; B=$A`). */
const MAX_PASSES = 4;

/** `NAME=value` written as a word (an operand of export): its name and value parts. */
function assignmentWord(unit: Unit, i: number): Binding | undefined {
  const word = unit.argv[i]!;
  const parts: readonly WordPart[] = unit.expansions?.[i] ?? [{ kind: 'text', text: word, quoted: true }];
  const first = parts[0];
  const name = first?.kind === 'text' ? /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(first.text)?.[1] : undefined;
  if (name === undefined || first?.kind !== 'text') return undefined;
  const rest = first.text.slice(name.length + 1);
  return { name, parts: [...(rest ? [{ ...first, text: rest }] : []), ...parts.slice(1)] };
}

/** read's options that take a value (dash and bash). */
const READ_VALUED = /^-[ptnNd]$/;

/** Every variable the unit gives a value (`env NAME=value cmd` gives none: that is the command's environment). */
export function bindingsOf(unit: Unit): Binding[] {
  const out: Binding[] = (unit.assignments ?? []).map((a) => ({ name: a.name, parts: a.parts }));
  const { argv } = unit;
  const name = unit.expansions?.[0] ? undefined : posix.basename(argv[0] ?? '');
  if (unit.inScript && (name === 'export' || name === 'readonly' || name === 'local'))
    for (let i = 1; i < argv.length; i++) {
      const binding = assignmentWord(unit, i);
      if (binding) out.push(binding);
    }
  if (unit.inScript && name === 'read')
    for (let i = 1; i < argv.length; i++) {
      if (READ_VALUED.test(argv[i]!)) i++;
      else if (!argv[i]!.startsWith('-')) out.push({ name: argv[i]!, parts: undefined });
    }
  if (unit.inScript && name === 'printf' && argv[1] === '-v' && argv[2] !== undefined)
    out.push({ name: argv[2], parts: undefined });
  return out;
}

type Bound = Record<string, Field[] | 'unknown'>;

function addValues(bound: Bound, name: string, values: readonly Field[] | undefined): void {
  const had = bound[name];
  if (had === 'unknown') return;
  if (values === undefined) {
    bound[name] = 'unknown';
    return;
  }
  const merged = [...(had ?? [])];
  for (const v of values) if (!merged.some((m) => m.text === v.text && m.glob === v.glob)) merged.push(v);
  bound[name] = merged.length > MAX_VALUES ? 'unknown' : merged;
}

/** The values the string runs with: the environment, and every value the string may give each variable. */
export function valuesOf(read: ReadLine, env: ShellValues): ShellValues {
  const bindings = read.units.flatMap(bindingsOf);
  if (bindings.length === 0 && read.loops.length === 0) return env;
  let bound: Bound = {};
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const values = { ...env, bound };
    const next: Bound = {};
    for (const b of bindings) addValues(next, b.name, b.parts && assignedValues(b.parts, values));
    for (const loop of read.loops) {
      // `for NAME` without `in` walks the string's arguments: unknown in a nested shell, none at the top.
      if (loop.words.length === 0) addValues(next, loop.name, undefined);
      for (const word of loop.words) addValues(next, loop.name, fieldsOf(word, values));
    }
    if (JSON.stringify(next) === JSON.stringify(bound)) return { ...env, bound };
    bound = next;
  }
  // Still growing: each value feeds another (`A=$A/x` in a loop), so what they hold is unknown.
  return { ...env, bound: Object.fromEntries(Object.keys(bound).map((k) => [k, 'unknown' as const])) };
}
