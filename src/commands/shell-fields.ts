// What sh makes of a word at run time, as far as sbx can know it before anything runs (POSIX 2.6:
// tilde and parameter expansion, field splitting, pathname expansion): the path guards judge the
// fields a word yields, and the rules refuse a word whose value could decide what runs. A variable
// takes the sandbox's environment and every value the string itself gives it (shell-units.ts
// bindingsOf); the output of a command substitution and a secret's value are unknown. Pure.
import type { WordPart } from './shell-words.js';

/** What sh's expansions yield for the path guards: the environment the string runs with, and what it assigns. */
export interface ShellValues {
  /** The command's environment (the policy's): `$HOME`, `$PATH`, ... */
  vars: Readonly<Record<string, string>>;
  /** Variables whose values only the runtime holds (secrets): what they name cannot be judged. */
  secrets: readonly string[];
  /**
   * Values the string itself may give a variable (`NAME=value`, `export`, `for NAME in ...`, `read
   * NAME`), besides the environment's: each is one it may hold when expanded; `unknown` when one of
   * them is not known before the string runs (what `read` or `$(...)` yields).
   */
  bound?: Readonly<Record<string, readonly Field[] | 'unknown'>>;
  /** `$1`, `$@`, ...: empty in the string sbx runs; unknown in a shell it starts (`sh -c '...' ARGS`). */
  arguments?: 'unknown';
}

/** One field a word yields after expansion and splitting; `glob` when sh matches it against file names. */
export interface Field {
  text: string;
  glob: boolean;
}

/** More alternatives than this (a word of many variables, each with many values) is judged unknown. */
const MAX_ALTERNATIVES = 256;

/** Parameters sh sets itself: `$?`, `$#`, `$$`, `$!`, `$-`, `$@`, `$*`, `$0`-`$9`. */
export const SPECIAL_PARAMETER = /^[?#$!\-@*0-9]$/;

/** Unquoted characters sh matches against file names: `*`, `?`, or a bracket expression `[...]`. */
export function hasGlob(text: string): boolean {
  return /[*?]|\[.*\]/.test(text);
}

/**
 * Whether sh would glob the word: its unquoted characters in place, each quoted character or
 * expansion a neutral one. A bracket expression is judged across the word's parts, since a quoted
 * character inside one is still a member of it (`[a"b"]`, `.["."]` glob in dash and bash).
 */
export function wordHasGlob(parts: readonly WordPart[]): boolean {
  const shape = parts.map((p) => (p.kind === 'text' ? (p.quoted ? '_'.repeat(p.text.length) : p.text) : '_')).join('');
  return hasGlob(shape);
}

/** The values a parameter may have inside the sandbox (each one a field as sh would see it unsplit), or undefined when one is unknown. */
function parameterValues(name: string, values: ShellValues): Field[] | undefined {
  if (name === '0') return [{ text: 'sh', glob: false }];
  if ('?#$!'.includes(name)) return [{ text: '0', glob: false }];
  if (SPECIAL_PARAMETER.test(name)) return values.arguments === 'unknown' ? undefined : [{ text: '', glob: false }];
  if (values.secrets.includes(name)) return undefined;
  const bound = values.bound?.[name];
  if (bound === 'unknown') return undefined;
  // sh sets PWD and OLDPWD itself: the current directory, which the path guards judge as `.`; the
  // string may still give them other values, as any variable.
  const own = name === 'PWD' || name === 'OLDPWD' ? '.' : (values.vars[name] ?? '');
  return [{ text: own, glob: false }, ...(bound ?? [])];
}

/** Fields being built: the finished ones and the one still open. */
interface Building {
  fields: Field[];
  current: Field | undefined;
}

function add(p: Building, text: string, glob: boolean): Building {
  const current = { text: (p.current?.text ?? '') + text, glob: (p.current?.glob ?? false) || glob };
  return { fields: p.fields, current };
}

/** Appends a value to every alternative: quoted, as one piece; unquoted, split on the default IFS. */
function appendValue(p: Building, value: Field, quoted: boolean): Building {
  // A glob's match is one file name: it stays one field, judged by its pattern (path-guards.ts).
  if (quoted || value.glob) return add(p, value.text, value.glob);
  let out = p;
  value.text.split(/[ \t\n]+/).forEach((piece, i) => {
    if (i > 0 && out.current) out = { fields: [...out.fields, out.current], current: undefined };
    if (piece !== '') out = add(out, piece, hasGlob(piece));
  });
  return out;
}

/**
 * The fields sh may make of a word at run time (POSIX 2.6: tilde and parameter expansion, then field
 * splitting of unquoted results on the default IFS, which dash and bash do not take from the
 * environment, then pathname expansion), for every combination of the values its variables may
 * hold: undefined when one is unknown (a secret, what `$(...)` or `read` yields) or there are too many.
 */
export function fieldsOf(parts: readonly WordPart[], values: ShellValues): Field[] | undefined {
  let alternatives: Building[] = [{ fields: [], current: undefined }];
  for (const part of parts) {
    if (part.kind === 'text') {
      alternatives = alternatives.map((p) => add(p, part.text, !part.quoted && hasGlob(part.text)));
      continue;
    }
    if (part.kind === 'command') return undefined;
    // `~` is the value HOME has when it is expanded: the sandbox's, or one the string gave it.
    const choices =
      part.kind === 'home'
        ? values.vars.HOME === undefined
          ? undefined
          : parameterValues('HOME', values)
        : parameterValues(part.name, values);
    if (choices === undefined || alternatives.length * choices.length > MAX_ALTERNATIVES) return undefined;
    const quoted = part.kind === 'home' || part.quoted;
    alternatives = alternatives.flatMap((p) => choices.map((c) => appendValue(p, c, quoted)));
  }
  const fields = alternatives.flatMap((p) => (p.current ? [...p.fields, p.current] : p.fields));
  // A bracket expression split over quoted and unquoted parts globs all the same (wordHasGlob).
  return wordHasGlob(parts) ? fields.map((f) => ({ ...f, glob: true })) : fields;
}

/**
 * The values an assignment gives (`NAME=value`: expanded, neither split nor globbed), or undefined
 * when one is unknown.
 */
export function assignedValues(parts: readonly WordPart[], values: ShellValues): Field[] | undefined {
  const fields = fieldsOf(
    parts.map((p): WordPart => (p.kind === 'text' || p.kind === 'param' ? { ...p, quoted: true } : p)),
    values,
  );
  // An empty assignment is one empty value, not no value.
  return fields?.length === 0 ? [{ text: '', glob: false }] : fields;
}
