// `shell_syntax: restricted` (docs/DESIGN.md): a shell string read the way sh reads it, as simple commands joined by
// `|`, `&&`, `||`, `;` or newlines, each with its words and redirections, or the construct that makes
// it more than that. sbx runs the string with /bin/sh (policy/command-line.ts): dash on Debian and
// Ubuntu, bash in POSIX mode elsewhere. Where the two read a string differently (`{a,b}`, `$'..'`,
// `12>f`, `a=~/x`), the string is refused; elsewhere the reading is POSIX's, which both follow.
//
// Words may hold what sh expands at run time from values sbx knows or can bound: `$NAME`, `${NAME}`,
// the special parameters, a leading `~`, and globs. Such a word keeps its parts (`expansions`), so the
// rules can refuse it where the command it runs would depend on it (shell-units.ts) and the path
// guards can judge what it names. What runs a command of its own, or hides one from the split
// (substitutions, subshells, groups, background jobs, compound commands), is refused by name. Pure.

/** One piece of a word that sh expands at run time, or the literal text around it. */
export type WordPart =
  | { kind: 'text'; text: string; quoted: boolean }
  /** `$NAME`, `${NAME}`, or a special parameter (`$?`, `$1`, `$@`, ...). */
  | { kind: 'param'; name: string; quoted: boolean }
  /** A leading unquoted `~` (then `/` or the end): the sandbox's HOME. */
  | { kind: 'home' };

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

export interface SimpleCommand {
  /** Each word's value; a word sh expands at run time is kept as written, its parts in `expansions`. */
  argv: string[];
  redirects: Redirect[];
  /** argv index → the parts of a word expanded at run time; absent when every word is literal. */
  expansions?: Record<number, WordPart[]>;
}

export type ShellScript = { ok: true; commands: SimpleCommand[] } | { ok: false; construct: string };

/** Outside quotes, these characters start something other than a word or a simple command. */
const REFUSED_CHARACTERS: Record<string, string> = {
  '(': 'subshells or grouping ( )',
  ')': 'subshells or grouping ( )',
  '`': 'command substitution (`...`)',
  '\r': 'carriage returns',
};

/**
 * Words sh reads as syntax at the start of a command (POSIX reserved words, and bash's): as a
 * command name they would hide the commands of a compound command (`if curl x; then ...`) behind a
 * name no rule means.
 */
const RESERVED_WORDS = new Set([
  ...['if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'case', 'esac', 'while', 'until', 'for', 'in', '!'],
  ...['{', '}', 'function', 'select', '[[', ']]', 'time', 'coproc'],
]);

/** Parameters sh sets itself: `$?`, `$#`, `$$`, `$!`, `$-`, `$@`, `$*`, `$0`-`$9`. */
const SPECIAL_PARAMETER = /^[?#$!\-@*0-9]$/;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Characters that end an unquoted word. */
const WORD_END = ' \t\n;|&<>';

type Connector = 'start' | '|' | '&&' | '||' | ';' | '\n' | 'end';

const refuse = (construct: string): ShellScript => ({ ok: false, construct });

/** Where the reading is: the script, its position, the commands so far and the one being read. */
interface Reader {
  script: string;
  /** The character being read; a step that reads ahead moves it past what it consumed. */
  i: number;
  commands: SimpleCommand[];
  command: SimpleCommand;
  previous: Connector;
  parts: WordPart[];
  inWord: boolean;
  /** Where the word being read starts in the script (shown as written when it expands). */
  wordStart: number;
  /** Whether the word has quotes or escapes: `"2">f` is the word 2, not descriptor 2. */
  quoted: boolean;
  quote: "'" | '"' | undefined;
  pending: Omit<Redirect, 'target'> | undefined;
  /** Whether the pending `<<` was `<<-` (leading tabs stripped from its text). */
  strip: boolean;
  /** Whether a comment was read: a string of comments alone runs nothing, and is no error. */
  commented: boolean;
  /** Here-documents whose text starts after the next newline, in order. */
  heredocs: { redirect: Redirect; strip: boolean; literal: boolean }[];
}

/** The script's simple commands, in order, or the first construct restricted syntax refuses. */
export function parseShellScript(script: string): ShellScript {
  const r: Reader = {
    script,
    i: 0,
    commands: [],
    command: { argv: [], redirects: [] },
    previous: 'start',
    parts: [],
    inWord: false,
    wordStart: 0,
    quoted: false,
    quote: undefined,
    pending: undefined,
    strip: false,
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
  return { ok: true, commands: r.commands };
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
  if (c === '$') return readDollar(r, false);
  return readPlain(r, c);
}

function readDoubleQuoted(r: Reader, c: string): string | undefined {
  const next = r.script[r.i + 1];
  if (c === '"') r.quote = undefined;
  else if (c === '`') return 'command substitution (`...`)';
  else if (c === '$') return readDollar(r, true);
  else if (c === '\\' && next === '\n') return 'a line continuation (backslash-newline)';
  else if (c === '\\' && next !== undefined && '"\\$`'.includes(next)) addText(r, r.script[++r.i]!, true);
  else addText(r, c, true);
  return undefined;
}

/**
 * `$` and what follows: a parameter (`$NAME`, `${NAME}`, `$?`, ...), or a literal `$` where sh reads
 * none. Substitutions run a command, and parameter operators (`${X:=v}`, `${X:-$(id)}`) assign or
 * nest: refused.
 */
function readDollar(r: Reader, quoted: boolean): string | undefined {
  const { script } = r;
  const next = script[r.i + 1];
  if (!r.inWord) r.wordStart = r.i;
  if (next === '(') return script[r.i + 2] === '(' ? 'arithmetic expansion $((...))' : 'command substitution $(...)';
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
  if (c === '&') {
    if (r.script[r.i + 1] !== '&') return 'background jobs (&)';
    r.i++;
  } else if (c === '|' && r.script[r.i + 1] === '|') {
    connector = '||';
    r.i++;
  }
  const error = endCommand(r, connector);
  if (error || c !== '\n') return error;
  return readHeredocs(r);
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

/**
 * POSIX expands `~` only at the start of a word (and after `=` or `:` in an assignment, which
 * restricted syntax refuses): `HEAD~1` is literal. bash also expands `a=~/x` in an argument and dash
 * does not, so that spelling is refused. `~user`, `~+` and `~-` name other directories: refused.
 */
function readTilde(r: Reader): string | undefined {
  if (r.inWord) {
    const last = r.parts.at(-1);
    const before = last?.kind === 'text' && !last.quoted ? last.text.at(-1) : undefined;
    if (before === '=' || before === ':') return 'a ~ after = or : (bash expands it there, dash does not)';
    addText(r, '~', false);
    return undefined;
  }
  const next = r.script[r.i + 1];
  if (next !== undefined && next !== '/' && !WORD_END.includes(next))
    return '~user, ~+ or ~- (only ~ and ~/ name the sandbox HOME)';
  r.wordStart = r.i;
  r.inWord = true;
  r.parts.push({ kind: 'home' });
  return undefined;
}

/**
 * Whether sh would glob the word: its unquoted characters in place, each quoted character or
 * expansion a neutral one. A bracket expression is judged across the word's parts, since a quoted
 * character inside one is still a member of it (`[a"b"]`, `.["."]` glob in dash and bash).
 */
function wordHasGlob(parts: readonly WordPart[]): boolean {
  const shape = parts.map((p) => (p.kind === 'text' ? (p.quoted ? '_'.repeat(p.text.length) : p.text) : '_')).join('');
  return hasGlob(shape);
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

/** Unquoted characters sh matches against file names: `*`, `?`, or a bracket expression `[...]`. */
function hasGlob(text: string): boolean {
  return /[*?]|\[.*\]/.test(text);
}

/** bash (not dash) expands `{a,b}` and `{1..3}` in unquoted text. */
function bashBraceExpansion(parts: readonly WordPart[]): boolean {
  const unquoted = parts.map((p) => (p.kind === 'text' && !p.quoted ? p.text : '\0')).join('');
  return /\{[^{}]*(,|\.\.)[^{}]*\}/.test(unquoted);
}

/** Ends the word being read: the target of a pending redirection, or the command's next argument. */
function endWord(r: Reader): string | undefined {
  if (!r.inWord) return undefined;
  const parts = r.parts;
  const literal = literalOf(parts);
  const written = r.script.slice(r.wordStart, r.i);
  if (bashBraceExpansion(parts)) return 'brace expansion {a,b} (bash expands it, dash does not)';
  if (r.pending) {
    const error = endTarget(r, parts, literal, written);
    if (error) return error;
  } else if (literal !== undefined) {
    r.command.argv.push(literal);
  } else {
    r.command.expansions ??= {};
    r.command.expansions[r.command.argv.length] = parts;
    r.command.argv.push(written);
  }
  r.parts = [];
  r.inWord = false;
  r.quoted = false;
  return undefined;
}

function endTarget(r: Reader, parts: WordPart[], literal: string | undefined, written: string): string | undefined {
  const pending = r.pending!;
  if (literal === '') return 'a redirection to an empty name';
  if (pending.op === '>&' && (r.quoted || literal === undefined || !/^[0-2]$/.test(literal)))
    return `duplication of a descriptor other than 0, 1 or 2 (>&${literal ?? written})`;
  if (pending.op === '<<') {
    if (literal === undefined || parts.some((p) => p.kind !== 'text'))
      return "a here-document delimiter that expands (write <<EOF or <<'EOF')";
    const redirect: Redirect = { ...pending, target: literal };
    r.command.redirects.push(redirect);
    r.heredocs.push({ redirect, strip: r.strip, literal: r.quoted });
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

/** Closes the command before `connector`; a blank line, or a final `;`, ends nothing. */
function endCommand(r: Reader, connector: Connector): string | undefined {
  const error = endWord(r);
  if (error) return error;
  if (r.pending) return 'a redirection without a target';
  const { command, previous } = r;
  if (command.argv.length === 0 && command.redirects.length === 0) {
    // sh reads on after a newline that follows `|`, `&&` or `||`, and skips blank lines and comments.
    if (connector === '\n') return undefined;
    if (connector === 'end' && (previous === ';' || previous === '\n')) return undefined;
    if (connector === 'end' && previous === 'start') return r.commented ? undefined : 'no command';
    return 'an empty command (nothing between two operators)';
  }
  if (command.argv.length === 0) return 'a redirection without a command';
  const name = command.argv[0]!;
  if (command.expansions?.[0] === undefined && RESERVED_WORDS.has(name))
    return `the reserved word ${name} (compound commands: if, for, while, case, !, { })`;
  // Before a special builtin (`PATH=./bin :`) an assignment stays in the shell for every command
  // after it; `env NAME=value cmd` is a program of its own, and sets it for cmd alone.
  if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(name)) return 'variable assignments (NAME=value cmd; write env NAME=value cmd)';
  r.commands.push(command);
  r.command = { argv: [], redirects: [] };
  r.previous = connector;
  return undefined;
}

/** What sh's expansions yield for the path guards: the environment the string runs with. */
export interface ShellValues {
  /** The command's environment (the policy's): `$HOME`, `$PATH`, ... */
  vars: Readonly<Record<string, string>>;
  /** Variables whose values only the runtime holds (secrets): what they name cannot be judged. */
  secrets: readonly string[];
}

/** One field a word yields after expansion and splitting; `glob` when sh matches it against file names. */
export interface Field {
  text: string;
  glob: boolean;
}

/** A parameter's value inside the sandbox, or undefined when sbx cannot know it. */
function parameterValue(name: string, values: ShellValues): string | undefined {
  // sh sets PWD and OLDPWD itself: the current directory, which the path guards judge as `.`.
  if (name === 'PWD' || name === 'OLDPWD') return '.';
  if (name === '0') return 'sh';
  if ('?#$!'.includes(name)) return '0';
  if (SPECIAL_PARAMETER.test(name)) return '';
  if (values.secrets.includes(name)) return undefined;
  return values.vars[name] ?? '';
}

/**
 * The fields sh makes of a word at run time (POSIX 2.6: tilde and parameter expansion, then field
 * splitting of unquoted results on the default IFS, which dash and bash do not take from the
 * environment, then pathname expansion): undefined when a value is a secret.
 */
export function fieldsOf(parts: readonly WordPart[], values: ShellValues): Field[] | undefined {
  const fields: Field[] = [];
  let current: Field | undefined;
  const add = (text: string, glob: boolean) => {
    current ??= { text: '', glob: false };
    current.text += text;
    current.glob ||= glob;
  };
  for (const part of parts) {
    if (part.kind === 'text') add(part.text, !part.quoted && hasGlob(part.text));
    else if (part.kind === 'home') {
      const home = values.vars.HOME;
      if (home === undefined) return undefined;
      add(home, false);
    } else {
      const value = parameterValue(part.name, values);
      if (value === undefined) return undefined;
      if (part.quoted) {
        add(value, false);
        continue;
      }
      const pieces = value.split(/[ \t\n]+/);
      pieces.forEach((piece, i) => {
        if (i > 0 && current) {
          fields.push(current);
          current = undefined;
        }
        if (piece !== '') add(piece, hasGlob(piece));
      });
    }
  }
  if (current) fields.push(current);
  // A bracket expression split over quoted and unquoted parts globs all the same (wordHasGlob).
  if (wordHasGlob(parts)) for (const field of fields) field.glob = true;
  return fields;
}
