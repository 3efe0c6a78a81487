// `shell_syntax: restricted` (docs/DESIGN.md): a shell string read the way sh reads it, as simple commands joined by
// `|`, `&&`, `||`, `;` or newlines, each with its words and redirections, or the construct that makes
// it more than that. Only what can be judged before it runs is accepted: quoting, file redirections of
// descriptors 0-2 and `2>&1`. Everything whose meaning is decided inside the sandbox at run time
// (expansions, substitutions, globs, `~`) or that hides commands from the split (subshells, groups,
// background jobs, here-documents, compound commands) is refused by name. Pure.

export interface Redirect {
  /** The descriptor redirected: 0, 1 or 2. */
  fd: number;
  /** `<` reads a file, `>`/`>>` write one, `>&` duplicates a descriptor (target is 0, 1 or 2). */
  op: '<' | '>' | '>>' | '>&';
  target: string;
}

export interface SimpleCommand {
  argv: string[];
  redirects: Redirect[];
}

export type ShellScript = { ok: true; commands: SimpleCommand[] } | { ok: false; construct: string };

/** Outside quotes, these characters start something other than a word or a simple command. */
const REFUSED_CHARACTERS: Record<string, string> = {
  '(': 'subshells or grouping ( )',
  ')': 'subshells or grouping ( )',
  '{': 'grouping or brace expansion { }',
  '}': 'grouping or brace expansion { }',
  '`': 'command substitution (`...`)',
  $: 'expansions and substitutions ($)',
  '\r': 'carriage returns',
};

/**
 * Words sh reads as syntax at the start of a command (POSIX reserved words, and bash's): as a
 * command name they would hide the commands of a compound command (`if curl x; then ...`) behind a
 * name no rule means.
 */
const RESERVED_WORDS = new Set([
  ...['if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'case', 'esac', 'while', 'until', 'for', 'in', '!'],
  ...['function', 'select', '[[', ']]', 'time', 'coproc'],
]);

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
  word: string;
  inWord: boolean;
  /** Whether the word has quotes or escapes: `"2">f` is the word 2, not descriptor 2. */
  quoted: boolean;
  quote: "'" | '"' | undefined;
  pending: Omit<Redirect, 'target'> | undefined;
}

/** The script's simple commands, in order, or the first construct restricted syntax refuses. */
export function parseShellScript(script: string): ShellScript {
  const r: Reader = {
    script,
    i: 0,
    commands: [],
    command: { argv: [], redirects: [] },
    previous: 'start',
    word: '',
    inWord: false,
    quoted: false,
    quote: undefined,
    pending: undefined,
  };
  for (; r.i < script.length; r.i++) {
    const error = readCharacter(r, script[r.i]!);
    if (error) return refuse(error);
  }
  if (r.quote) return refuse(`an unterminated ${r.quote === "'" ? 'single' : 'double'} quote`);
  const error = endCommand(r, 'end');
  if (error) return refuse(error);
  return { ok: true, commands: r.commands };
}

/** One character (and whatever it reads ahead): undefined, or the construct it refuses. */
function readCharacter(r: Reader, c: string): string | undefined {
  if (r.quote === "'") {
    if (c === "'") r.quote = undefined;
    else r.word += c;
    return undefined;
  }
  if (r.quote === '"') return readDoubleQuoted(r, c);
  if (c === "'" || c === '"') {
    r.quote = c;
    r.inWord = true;
    r.quoted = true;
    return undefined;
  }
  if (c === '\\') return readEscape(r);
  if (c === ' ' || c === '\t') return endWord(r);
  if (c === ';' || c === '\n' || c === '|' || c === '&') return readConnector(r, c);
  if (c === '<' || c === '>') return readRedirection(r, c);
  return readPlain(r, c);
}

function readDoubleQuoted(r: Reader, c: string): string | undefined {
  const next = r.script[r.i + 1];
  if (c === '"') r.quote = undefined;
  else if (c === '$' || c === '`') return `expansions inside double quotes (${c})`;
  else if (c === '\\' && next === '\n') return 'a line continuation (backslash-newline)';
  else if (c === '\\' && next !== undefined && '"\\$`'.includes(next)) r.word += r.script[++r.i];
  else r.word += c;
  return undefined;
}

/** A backslash outside quotes: the next character, literally. */
function readEscape(r: Reader): string | undefined {
  if (r.i + 1 >= r.script.length) return 'a trailing backslash';
  const next = r.script[++r.i]!;
  if (next === '\n') return 'a line continuation (backslash-newline)';
  if (next === '\r') return REFUSED_CHARACTERS['\r'];
  r.word += next;
  r.inWord = true;
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
  return endCommand(r, connector);
}

/** `<` or `>`, with the descriptor a single digit before it names; the target is the next word. */
function readRedirection(r: Reader, c: '<' | '>'): string | undefined {
  let fd = c === '<' ? 0 : 1;
  if (r.inWord && /^[0-9]+$/.test(r.word)) {
    // sh reads one unquoted digit before < or > as a descriptor; bash reads several, dash a word.
    if (r.quoted || r.word.length > 1) return `a descriptor number sh and bash read differently (${r.word}${c})`;
    if (r.pending) return 'a redirection without a target';
    fd = Number(r.word);
    r.word = '';
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

/** The operator starting at `c`: `<`, `>`, `>>` or `>&` (moving past its second character), or what it refuses. */
function redirectionOp(r: Reader, c: '<' | '>'): Redirect['op'] | { refused: string } {
  const next = r.script[r.i + 1];
  if (c === '<') {
    if (next === '<') return { refused: 'here-documents (<<)' };
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

/** Any other character: part of a word, unless sh would give it a meaning decided at run time. */
function readPlain(r: Reader, c: string): string | undefined {
  const refused = REFUSED_CHARACTERS[c];
  if (refused) return refused;
  if (c === '#' && !r.inWord) return 'comments (#)';
  // Expanded by sh into names the rules never see: `.*` can yield `..`, `~` the home directory.
  if (c === '*' || c === '?' || c === '[') return `unquoted globs (${c}); quote the word if it is literal`;
  if (c === '~') return 'unquoted ~ (home directory expansion)';
  if (/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(c)) return 'control characters';
  r.word += c;
  r.inWord = true;
  return undefined;
}

/** Ends the word being read: the target of a pending redirection, or the command's next argument. */
function endWord(r: Reader): string | undefined {
  if (!r.inWord) return undefined;
  if (r.pending) {
    if (r.word === '') return 'a redirection to an empty name';
    if (r.pending.op === '>&' && (r.quoted || !/^[0-2]$/.test(r.word))) {
      return `duplication of a descriptor other than 0, 1 or 2 (>&${r.word})`;
    }
    r.command.redirects.push({ ...r.pending, target: r.word });
    r.pending = undefined;
  } else {
    r.command.argv.push(r.word);
  }
  r.word = '';
  r.inWord = false;
  r.quoted = false;
  return undefined;
}

/** Closes the command before `connector`; a blank line, or a final `;`, ends nothing. */
function endCommand(r: Reader, connector: Connector): string | undefined {
  const error = endWord(r);
  if (error) return error;
  if (r.pending) return 'a redirection without a target';
  const { command, previous } = r;
  if (command.argv.length === 0 && command.redirects.length === 0) {
    // sh reads on after a newline that follows `|`, `&&` or `||`, and skips blank lines.
    if (connector === '\n') return undefined;
    if (connector === 'end' && (previous === ';' || previous === '\n')) return undefined;
    if (connector === 'end' && previous === 'start') return 'no command';
    return 'an empty command (nothing between two operators)';
  }
  if (command.argv.length === 0) return 'a redirection without a command';
  const name = command.argv[0]!;
  if (RESERVED_WORDS.has(name)) return `the reserved word ${name} (compound commands: if, for, while, case, !)`;
  // Before a special builtin (`PATH=./bin :`) an assignment stays in the shell for every command
  // after it; `env NAME=value cmd` is a program of its own, and sets it for cmd alone.
  if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(name)) return 'variable assignments (NAME=value cmd; write env NAME=value cmd)';
  r.commands.push(command);
  r.command = { argv: [], redirects: [] };
  r.previous = connector;
  return undefined;
}
