// `shell_syntax: restricted` (docs/DESIGN.md): a shell string read the way sh reads it, into the simple
// commands it runs, each with its words, its redirections and the assignments before it, or the
// construct that makes it more than the rules can follow. sbx runs the string with /bin/sh
// (policy/command-line.ts): dash on Debian and Ubuntu, bash in POSIX mode elsewhere. Where the two read
// a string differently (`{a,b}`, `$'..'`, `12>f`, `&>`), the string is refused; elsewhere the reading is
// POSIX's, which both follow.
//
// Compound commands (`if`, `while`, `until`, `for`, `{ }`, `( )`) and command substitutions `$(...)`
// are read into the same flat list of simple commands, in the order sh may run them, each marked when
// it runs in a loop: every command a string may run is judged, whichever branch runs. Words may hold
// what sh expands at run time: `$NAME`, `${NAME}`, the special parameters, a leading `~`, globs, and
// `$(...)`, whose output is unknown. Such a word keeps its parts (`expansions`), so the rules can
// refuse it where it would decide what runs (shell-units.ts) and the path guards can judge what it
// names (shell-fields.ts). Pure.
import {
  closerOf,
  COMPOUND_WORDS,
  type Connector,
  endForHeader,
  type Frame,
  inLoop,
  pushFrame,
  type Reader,
  readForHeader,
  readReservedWord,
  type WordState,
} from './shell-compound.js';
import { SPECIAL_PARAMETER, wordHasGlob } from './shell-fields.js';

/** One piece of a word that sh expands at run time, or the literal text around it. */
export type WordPart =
  | { kind: 'text'; text: string; quoted: boolean }
  /** `$NAME`, `${NAME}`, or a special parameter (`$?`, `$1`, `$@`, ...). */
  | { kind: 'param'; name: string; quoted: boolean }
  /** A leading unquoted `~` (then `/` or the end): the sandbox's HOME. */
  | { kind: 'home' }
  /** The output of `$(...)`: its commands are read into the list, what they print is unknown. */
  | { kind: 'command'; quoted: boolean };

export interface Redirect {
  /** The descriptor redirected: 0, 1 or 2. */
  fd: number;
  /**
   * `<` reads a file, `>`/`>>` write one, `>&` duplicates a descriptor (target is 0, 1 or 2), `<<`
   * feeds a here-document (target is its delimiter, `heredoc` its text: never a path).
   */
  op: '<' | '>' | '>>' | '>&' | '<<';
  /** The target as written when it is expanded at run time (then `parts` says how), else its value. */
  target: string;
  parts?: WordPart[];
  heredoc?: string;
}

/** `NAME=value` before a command (for it alone) or alone (for the shell): the value unsplit, unglobbed. */
export interface Assignment {
  name: string;
  parts: WordPart[];
}

export interface SimpleCommand {
  /** Each word's value; a word sh expands at run time is kept as written, its parts in `expansions`. */
  argv: string[];
  redirects: Redirect[];
  /** argv index → the parts of a word expanded at run time; absent when every word is literal. */
  expansions?: Record<number, WordPart[]>;
  /** Assignments before the command word; with no argv, assignments the shell keeps. */
  assignments?: Assignment[];
  /** Runs inside a loop (`for`, `while`, `until`): any number of times, after itself. */
  loop?: true;
  /** Follows `&&`: runs only when the command before it succeeded (`cd sub && ls ..` runs ls in sub). */
  andThen?: true;
}

/** `for NAME in WORDS`: the variable, and the words whose fields it takes in turn (`$@` without `in`). */
export interface ForLoop {
  name: string;
  words: WordPart[][];
}

export type ShellScript = { ok: true; commands: SimpleCommand[]; loops?: ForLoop[] } | { ok: false; construct: string };

/** Outside quotes, these characters start something other than a word or a simple command. */
const REFUSED_CHARACTERS: Record<string, string> = {
  '`': 'command substitution with backticks (write $(...) instead)',
  '\r': 'carriage returns',
};

/** Reserved words (POSIX's and bash's) of what the reader does not follow. */
const REFUSED_WORDS = new Set(['case', 'esac', 'in', 'function', 'select', '[[', ']]', 'coproc']);

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Characters that end an unquoted word. */
const WORD_END = ' \t\n;|&<>()';
const refuse = (construct: string): ShellScript => ({ ok: false, construct });

const freshCommand = (): SimpleCommand => ({ argv: [], redirects: [] });

/** The script's simple commands, in order, or the first construct restricted syntax refuses. */
export function parseShellScript(script: string): ShellScript {
  const r: Reader = {
    script,
    i: 0,
    commands: [],
    loops: [],
    frames: [],
    command: freshCommand(),
    previous: 'start',
    parts: [],
    inWord: false,
    wordStart: 0,
    quoted: false,
    quote: undefined,
    pending: undefined,
    strip: false,
    compound: false,
    commented: false,
    heredocs: [],
  };
  for (; r.i < script.length; r.i++) {
    const error = readCharacter(r, script[r.i]!);
    if (error) return refuse(error);
  }
  if (r.quote) return refuse(`an unterminated ${r.quote === "'" ? 'single' : 'double'} quote`);
  const error = endCommand(r, 'end');
  if (error) return refuse(error);
  if (r.heredocs.length > 0) return refuse('a here-document without its text');
  const open = r.frames.at(-1);
  if (open)
    return refuse(
      open.kind === 'subst' ? 'an unterminated $(...)' : `an unterminated ${open.kind} (${closerOf(open)})`,
    );
  return { ok: true, commands: r.commands, ...(r.loops.length > 0 ? { loops: r.loops } : {}) };
}

/** Appends literal characters to the word being read. */
function addText(r: Reader, text: string, quoted: boolean): void {
  if (!r.inWord) r.wordStart = r.i;
  r.inWord = true;
  const last = r.parts.at(-1);
  if (last?.kind === 'text' && last.quoted === quoted) last.text += text;
  else r.parts.push({ kind: 'text', text, quoted });
}

/** One character (and whatever it reads ahead): undefined, or the construct it refuses. */
function readCharacter(r: Reader, c: string): string | undefined {
  if (r.quote === "'") {
    if (c === "'") r.quote = undefined;
    else addText(r, c, true);
    return undefined;
  }
  if (r.quote === '"') return readDoubleQuoted(r, c);
  if (c === "'" || c === '"') {
    if (!r.inWord) r.wordStart = r.i;
    r.quote = c;
    r.inWord = true;
    r.quoted = true;
    // An empty pair is still a word: `echo ""` passes one empty argument.
    addText(r, '', true);
    return undefined;
  }
  if (c === '\\') return readEscape(r);
  if (c === ' ' || c === '\t') return endWord(r);
  if (c === ';' || c === '\n' || c === '|' || c === '&') return readConnector(r, c);
  if (c === '<' || c === '>') return readRedirection(r, c);
  if (c === '(' || c === ')') return readParenthesis(r, c);
  if (c === '$') return readDollar(r, false);
  return readPlain(r, c);
}

function readDoubleQuoted(r: Reader, c: string): string | undefined {
  const next = r.script[r.i + 1];
  if (c === '"') r.quote = undefined;
  else if (c === '`') return REFUSED_CHARACTERS['`'];
  else if (c === '$') return readDollar(r, true);
  else if (c === '\\' && next === '\n') return 'a line continuation (backslash-newline)';
  else if (c === '\\' && next !== undefined && '"\\$`'.includes(next)) addText(r, r.script[++r.i]!, true);
  else addText(r, c, true);
  return undefined;
}

/**
 * `$` and what follows: a parameter (`$NAME`, `${NAME}`, `$?`, ...), a command substitution, or a
 * literal `$` where sh reads none. Arithmetic and parameter operators (`${X:=v}`, `${X:-$(id)}`)
 * assign or nest: refused.
 */
function readDollar(r: Reader, quoted: boolean): string | undefined {
  const { script } = r;
  const next = script[r.i + 1];
  if (!r.inWord) r.wordStart = r.i;
  if (next === '(') return script[r.i + 2] === '(' ? 'arithmetic expansion $((...))' : openSubstitution(r);
  if (!quoted && (next === "'" || next === '"')) return '$\'...\' or $"..." (bash reads them as quoting, dash as a $)';
  let name: string | undefined;
  if (next === '{') {
    const close = script.indexOf('}', r.i + 2);
    const inner = close < 0 ? '' : script.slice(r.i + 2, close);
    if (!NAME.test(inner) && !SPECIAL_PARAMETER.test(inner)) return 'parameter expansions with operators (${...})';
    name = inner;
    r.i = close;
  } else if (next !== undefined && SPECIAL_PARAMETER.test(next)) {
    name = next;
    r.i++;
  } else if (next !== undefined && /[A-Za-z_]/.test(next)) {
    name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(script.slice(r.i + 1))![0];
    r.i += name.length;
  }
  if (name === undefined) {
    addText(r, '$', quoted);
    return undefined;
  }
  r.inWord = true;
  r.parts.push({ kind: 'param', name, quoted });
  return undefined;
}

const wordState = (r: Reader): WordState => ({
  command: r.command,
  previous: r.previous,
  parts: r.parts,
  inWord: r.inWord,
  wordStart: r.wordStart,
  quoted: r.quoted,
  quote: r.quote,
  pending: r.pending,
  strip: r.strip,
  compound: r.compound,
});

/** `$(`: the word being read waits while the commands inside are read like any others. */
function openSubstitution(r: Reader): string | undefined {
  if (r.heredocs.length > 0) return 'a $(...) on the line of a here-document';
  const error = pushFrame(r, { kind: 'subst', stage: 'body', count: 0, saved: wordState(r) });
  if (error) return error;
  Object.assign(r, {
    command: freshCommand(),
    previous: 'start',
    parts: [],
    inWord: false,
    quoted: false,
    quote: undefined,
    pending: undefined,
    strip: false,
    compound: false,
  });
  r.i++;
  return undefined;
}

/** `)` of a `$(...)`: the word it interrupted goes on, with the substitution's output as one of its parts. */
function closeSubstitution(r: Reader, frame: Frame): string | undefined {
  if (frame.count === 0) return 'an empty $(...)';
  if (r.heredocs.length > 0) return 'a here-document without its text';
  r.frames.pop();
  const saved = frame.saved!;
  // readDollar set the word's start at the `$` before saving it.
  Object.assign(r, saved);
  r.inWord = true;
  r.parts.push({ kind: 'command', quoted: saved.quote === '"' });
  return undefined;
}

/** A backslash outside quotes: the next character, literally. */
function readEscape(r: Reader): string | undefined {
  if (r.i + 1 >= r.script.length) return 'a trailing backslash';
  if (!r.inWord) r.wordStart = r.i;
  const next = r.script[++r.i]!;
  if (next === '\n') return 'a line continuation (backslash-newline)';
  if (next === '\r') return REFUSED_CHARACTERS['\r'];
  addText(r, next, true);
  r.quoted = true;
  return undefined;
}

/** `;`, newline, `|`, `||` or `&&` ends the command before it; a lone `&` is a background job. */
function readConnector(r: Reader, c: ';' | '\n' | '|' | '&'): string | undefined {
  let connector: Connector = c === '&' ? '&&' : c;
  const next = r.script[r.i + 1];
  if (c === '&') {
    if (next === '>')
      return '&> (bash writes stdout and stderr to the file, dash runs a background job; write > FILE 2>&1)';
    if (next !== '&') return 'background jobs (&)';
    r.i++;
  } else if (c === '|' && next === '&') {
    return '|& (bash pipes stderr too, dash runs a background job; write 2>&1 |)';
  } else if (c === '|' && next === '|') {
    connector = '||';
    r.i++;
  }
  const error = endCommand(r, connector);
  if (error || c !== '\n') return error;
  return readHeredocs(r);
}

/** `(` opens a subshell where a command starts; `)` closes it, or a `$(...)`. */
function readParenthesis(r: Reader, c: '(' | ')'): string | undefined {
  if (c === '(') {
    if (r.inWord || r.pending || r.compound || r.command.argv.length > 0 || r.command.redirects.length > 0)
      return 'a ( after a word (function definitions, arrays)';
    return pushFrame(r, { kind: 'subshell', stage: 'body', count: 0 });
  }
  const frame = r.frames.at(-1);
  if (frame?.kind !== 'subst' && frame?.kind !== 'subshell') return 'an unmatched )';
  const error = endCommand(r, 'end');
  if (error) return error;
  if (frame.kind === 'subst') return closeSubstitution(r, frame);
  if (frame.count === 0) return 'an empty subshell ( )';
  r.frames.pop();
  r.compound = true;
  return undefined;
}

/**
 * After a newline, the text of each here-document opened on the line, up to its delimiter line. With
 * a quoted delimiter (`<<'EOF'`) the text is literal; otherwise sh expands `$` and backticks in it,
 * so such text is refused (quoting the delimiter is the fix).
 */
function readHeredocs(r: Reader): string | undefined {
  for (const doc of r.heredocs) {
    const lines: string[] = [];
    for (;;) {
      if (r.i + 1 >= r.script.length) return 'an unterminated here-document';
      const end = r.script.indexOf('\n', r.i + 1);
      const raw = r.script.slice(r.i + 1, end < 0 ? undefined : end);
      r.i = end < 0 ? r.script.length : end;
      const line = doc.strip ? raw.replace(/^\t+/, '') : raw;
      if (line === doc.redirect.target) break;
      if (end < 0) return 'an unterminated here-document';
      lines.push(line);
    }
    const text = lines.map((l) => `${l}\n`).join('');
    if (!doc.literal && /[$`\\]/.test(text))
      return "expansions in a here-document (quote its delimiter: <<'EOF' keeps the text literal)";
    doc.redirect.heredoc = text;
  }
  r.heredocs = [];
  return undefined;
}

/** `<` or `>`, with the descriptor a single digit before it names; the target is the next word. */
function readRedirection(r: Reader, c: '<' | '>'): string | undefined {
  let fd = c === '<' ? 0 : 1;
  const word = literalOf(r.parts);
  if (r.inWord && word !== undefined && /^[0-9]+$/.test(word)) {
    // sh reads one unquoted digit before < or > as a descriptor; bash reads several, dash a word.
    if (r.quoted || word.length > 1) return `a descriptor number sh and bash read differently (${word}${c})`;
    if (r.pending) return 'a redirection without a target';
    fd = Number(word);
    r.parts = [];
    r.inWord = false;
  } else {
    const error = endWord(r);
    if (error) return error;
  }
  if (r.pending) return 'a redirection without a target';
  if (fd > 2) return `redirection of descriptor ${fd} (only 0, 1 and 2)`;
  const op = redirectionOp(r, c);
  if (typeof op === 'object') return op.refused;
  r.pending = { fd, op };
  return undefined;
}

/** The operator starting at `c` (moving past its other characters), or what it refuses. */
function redirectionOp(r: Reader, c: '<' | '>'): Redirect['op'] | { refused: string } {
  const next = r.script[r.i + 1];
  if (c === '<') {
    if (next === '<') {
      const third = r.script[r.i + 2];
      if (third === '<') return { refused: 'here-strings (<<<, bash only)' };
      r.strip = third === '-';
      r.i += r.strip ? 2 : 1;
      return '<<';
    }
    if (next === '>') return { refused: 'read-write redirections (<>)' };
    if (next === '&') return { refused: 'input duplication (<&)' };
    if (next === '(') return { refused: 'process substitution (<(...))' };
    return '<';
  }
  if (next === '|') return { refused: 'clobbering redirections (>|)' };
  if (next === '(') return { refused: 'process substitution (>(...))' };
  const op = next === '>' ? '>>' : next === '&' ? '>&' : '>';
  if (op !== '>') r.i++;
  return op;
}

/** Any other character: part of a word, unless sh gives it a meaning the rules cannot follow. */
function readPlain(r: Reader, c: string): string | undefined {
  const refused = REFUSED_CHARACTERS[c];
  if (refused) return refused;
  if (/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(c)) return 'control characters';
  if (c === '#' && !r.inWord) {
    // A comment runs to the end of the line; the newline still ends the command.
    const end = r.script.indexOf('\n', r.i);
    r.i = (end < 0 ? r.script.length : end) - 1;
    r.commented = true;
    return undefined;
  }
  if (c === '~') return readTilde(r);
  addText(r, c, false);
  return undefined;
}

/** Whether the word read so far is `NAME=` before a command: an assignment, where POSIX expands a `~`. */
function inAssignmentValue(r: Reader): boolean {
  const [first, ...rest] = r.parts;
  return (
    rest.length === 0 &&
    first?.kind === 'text' &&
    !first.quoted &&
    /^[A-Za-z_][A-Za-z0-9_]*=$/.test(first.text) &&
    r.command.argv.length === 0 &&
    !r.pending
  );
}

/**
 * POSIX expands `~` only at the start of a word and of an assignment's value: `HEAD~1` is literal.
 * bash also expands `a=~/x` in an argument and dash does not, so that spelling is refused, as is
 * `:~` in an assignment. `~user`, `~+` and `~-` name other directories: refused.
 */
function readTilde(r: Reader): string | undefined {
  const next = r.script[r.i + 1];
  const other = next !== undefined && next !== '/' && !WORD_END.includes(next);
  if (r.inWord && inAssignmentValue(r)) {
    if (other) return '~user, ~+ or ~- (only ~ and ~/ name the sandbox HOME)';
    r.parts.push({ kind: 'home' });
    return undefined;
  }
  if (r.inWord) {
    const last = r.parts.at(-1);
    const before = last?.kind === 'text' && !last.quoted ? last.text.at(-1) : undefined;
    if (before === '=' || before === ':') return 'a ~ after = or : (bash expands it there, dash does not)';
    addText(r, '~', false);
    return undefined;
  }
  if (other) return '~user, ~+ or ~- (only ~ and ~/ name the sandbox HOME)';
  r.wordStart = r.i;
  r.inWord = true;
  r.parts.push({ kind: 'home' });
  return undefined;
}

/** The word's value when nothing in it expands at run time. */
function literalOf(parts: readonly WordPart[]): string | undefined {
  if (wordHasGlob(parts)) return undefined;
  let out = '';
  for (const part of parts) {
    if (part.kind !== 'text') return undefined;
    out += part.text;
  }
  return out;
}

/** bash (not dash) expands `{a,b}` and `{1..3}` in unquoted text. */
function bashBraceExpansion(parts: readonly WordPart[]): boolean {
  const unquoted = parts.map((p) => (p.kind === 'text' && !p.quoted ? p.text : '\0')).join('');
  return /\{[^{}]*(,|\.\.)[^{}]*\}/.test(unquoted);
}

/** The assignment a word before the command word makes, if it is one (`NAME=value`, the name unquoted). */
function assignmentOf(parts: readonly WordPart[]): Assignment | undefined {
  const first = parts[0];
  if (first?.kind !== 'text' || first.quoted) return undefined;
  const name = /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(first.text)?.[1];
  if (name === undefined) return undefined;
  const rest = first.text.slice(name.length + 1);
  return { name, parts: [...(rest ? [{ ...first, text: rest }] : []), ...parts.slice(1)] };
}

/** Ends the word being read: the target of a pending redirection, an assignment, a reserved word, or an argument. */
function endWord(r: Reader): string | undefined {
  if (!r.inWord) return undefined;
  const parts = r.parts;
  const literal = literalOf(parts);
  const written = r.script.slice(r.wordStart, r.i);
  r.parts = [];
  r.inWord = false;
  const quoted = r.quoted;
  r.quoted = false;
  if (r.pending) {
    if (bashBraceExpansion(parts)) return 'brace expansion {a,b} (bash expands it, dash does not)';
    return endTarget(r, parts, literal, written, quoted);
  }
  if (bashBraceExpansion(parts)) return 'brace expansion {a,b} (bash expands it, dash does not)';
  const header = r.frames.at(-1);
  if (header?.kind === 'for' && header.stage !== 'body') return readForHeader(r, header, parts, literal, quoted);
  if (r.compound) return `the word ${written} after a compound command`;
  const { command } = r;
  const atStart = command.argv.length === 0 && command.redirects.length === 0;
  const assignment = command.argv.length === 0 ? assignmentOf(parts) : undefined;
  if (assignment) {
    command.assignments = [...(command.assignments ?? []), assignment];
    return undefined;
  }
  if (literal !== undefined && !quoted && command.argv.length === 0) {
    if (REFUSED_WORDS.has(literal)) return `the reserved word ${literal} (case, select, function, [[ ]])`;
    if (COMPOUND_WORDS.has(literal)) {
      if (!atStart || command.assignments) return `the reserved word ${literal} after an assignment or redirection`;
      return readReservedWord(r, literal);
    }
  }
  if (literal !== undefined) command.argv.push(literal);
  else {
    command.expansions ??= {};
    command.expansions[command.argv.length] = parts;
    command.argv.push(written);
  }
  return undefined;
}

function endTarget(
  r: Reader,
  parts: WordPart[],
  literal: string | undefined,
  written: string,
  quoted: boolean,
): string | undefined {
  const pending = r.pending!;
  if (literal === '') return 'a redirection to an empty name';
  if (pending.op === '>&' && (quoted || literal === undefined || !/^[0-2]$/.test(literal)))
    return `duplication of a descriptor other than 0, 1 or 2 (>&${literal ?? written})`;
  if (pending.op === '<<') {
    if (literal === undefined || parts.some((p) => p.kind !== 'text'))
      return "a here-document delimiter that expands (write <<EOF or <<'EOF')";
    const redirect: Redirect = { ...pending, target: literal };
    r.command.redirects.push(redirect);
    r.heredocs.push({ redirect, strip: r.strip, literal: quoted });
  } else if (literal !== undefined) {
    r.command.redirects.push({ ...pending, target: literal });
  } else {
    // bash globs a redirection target outside POSIX mode; dash never does: refused either way.
    if (wordHasGlob(parts)) return 'a glob in a redirection target';
    r.command.redirects.push({ ...pending, target: written, parts });
  }
  r.pending = undefined;
  return undefined;
}

const marks = (loop: boolean, previous: Connector) => ({
  ...(loop ? { loop: true as const } : {}),
  ...(previous === '&&' ? { andThen: true as const } : {}),
});

/** Closes the command before `connector`; a blank line, or a final `;`, ends nothing. */
function endCommand(r: Reader, connector: Connector): string | undefined {
  const error = endWord(r);
  if (error) return error;
  if (r.pending) return 'a redirection without a target';
  const header = endForHeader(r, connector);
  if (header !== 'none') return header;
  const top = r.frames.at(-1);
  const { command, previous } = r;
  const loop = inLoop(r);
  if (r.compound) {
    if (command.argv.length > 0 || command.assignments) return 'words after a compound command';
    if (command.redirects.length > 0) r.commands.push({ ...command, ...marks(loop, previous) });
  } else if (command.argv.length === 0 && command.redirects.length === 0 && !command.assignments) {
    // sh reads on after a newline that follows `|`, `&&`, `||` or a word that opens a compound
    // command, and skips blank lines and comments.
    if (connector === '\n') return undefined;
    if (connector === 'end' && (previous === ';' || previous === '\n')) return undefined;
    if (connector === 'end' && previous === 'start') return r.commented || top ? undefined : 'no command';
    return 'an empty command (nothing between two operators)';
  } else {
    if (command.argv.length === 0 && !command.assignments) return 'a redirection without a command';
    r.commands.push({ ...command, ...marks(loop, previous) });
  }
  if (top) top.count++;
  r.command = freshCommand();
  r.compound = false;
  r.previous = connector;
  return undefined;
}
