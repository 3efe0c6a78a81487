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

/** The script's simple commands, in order, or the first construct restricted syntax refuses. */
export function parseShellScript(script: string): ShellScript {
  const commands: SimpleCommand[] = [];
  let command: SimpleCommand = { argv: [], redirects: [] };
  let previous: Connector = 'start';
  let word = '';
  let inWord = false;
  /** Whether the word has quotes or escapes: `"2">f` is the word 2, not descriptor 2. */
  let quoted = false;
  let quote: "'" | '"' | undefined;
  let pending: Omit<Redirect, 'target'> | undefined;

  const endWord = (): string | undefined => {
    if (!inWord) return undefined;
    if (pending) {
      if (word === '') return 'a redirection to an empty name';
      if (pending.op === '>&' && (quoted || !/^[0-2]$/.test(word))) {
        return `duplication of a descriptor other than 0, 1 or 2 (>&${word})`;
      }
      command.redirects.push({ ...pending, target: word });
      pending = undefined;
    } else {
      command.argv.push(word);
    }
    word = '';
    inWord = false;
    quoted = false;
    return undefined;
  };

  /** Closes the command before `connector`; a blank line, or a final `;`, ends nothing. */
  const endCommand = (connector: Connector): string | undefined => {
    const error = endWord();
    if (error) return error;
    if (pending) return 'a redirection without a target';
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
    commands.push(command);
    command = { argv: [], redirects: [] };
    previous = connector;
    return undefined;
  };

  for (let i = 0; i < script.length; i++) {
    const c = script[i]!;
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else word += c;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === '$' || c === '`') return refuse(`expansions inside double quotes (${c})`);
      else if (c === '\\' && script[i + 1] === '\n') return refuse('a line continuation (backslash-newline)');
      else if (c === '\\' && i + 1 < script.length && '"\\$`'.includes(script[i + 1]!)) word += script[++i];
      else word += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
      quoted = true;
      continue;
    }
    if (c === '\\') {
      if (i + 1 >= script.length) return refuse('a trailing backslash');
      const next = script[++i]!;
      if (next === '\n') return refuse('a line continuation (backslash-newline)');
      if (next === '\r') return refuse(REFUSED_CHARACTERS['\r']!);
      word += next;
      inWord = true;
      quoted = true;
      continue;
    }
    if (c === ' ' || c === '\t') {
      const error = endWord();
      if (error) return refuse(error);
      continue;
    }
    if (c === ';' || c === '\n' || c === '|' || c === '&') {
      let connector: Connector = c === '&' ? '&&' : c;
      if (c === '&') {
        if (script[i + 1] !== '&') return refuse('background jobs (&)');
        i++;
      } else if (c === '|' && script[i + 1] === '|') {
        connector = '||';
        i++;
      }
      const error = endCommand(connector);
      if (error) return refuse(error);
      continue;
    }
    if (c === '<' || c === '>') {
      let fd = c === '<' ? 0 : 1;
      if (inWord && /^[0-9]+$/.test(word)) {
        // sh reads one unquoted digit before < or > as a descriptor; bash reads several, dash a word.
        if (quoted || word.length > 1) return refuse(`a descriptor number sh and bash read differently (${word}${c})`);
        if (pending) return refuse('a redirection without a target');
        fd = Number(word);
        word = '';
        inWord = false;
      } else {
        const error = endWord();
        if (error) return refuse(error);
      }
      if (pending) return refuse('a redirection without a target');
      if (fd > 2) return refuse(`redirection of descriptor ${fd} (only 0, 1 and 2)`);
      const next = script[i + 1];
      let op: Redirect['op'];
      if (c === '<') {
        if (next === '<') return refuse('here-documents (<<)');
        if (next === '>') return refuse('read-write redirections (<>)');
        if (next === '&') return refuse('input duplication (<&)');
        if (next === '(') return refuse('process substitution (<(...))');
        op = '<';
      } else {
        if (next === '|') return refuse('clobbering redirections (>|)');
        if (next === '(') return refuse('process substitution (>(...))');
        op = next === '>' ? '>>' : next === '&' ? '>&' : '>';
        if (op !== '>') i++;
      }
      pending = { fd, op };
      continue;
    }
    const refused = REFUSED_CHARACTERS[c];
    if (refused) return refuse(refused);
    if (c === '#' && !inWord) return refuse('comments (#)');
    // Expanded by sh into names the rules never see: `.*` can yield `..`, `~` the home directory.
    if (c === '*' || c === '?' || c === '[') return refuse(`unquoted globs (${c}); quote the word if it is literal`);
    if (c === '~') return refuse('unquoted ~ (home directory expansion)');
    // eslint-disable-next-line no-control-regex
    if (/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(c)) return refuse('control characters');
    word += c;
    inWord = true;
  }
  if (quote) return refuse(`an unterminated ${quote === "'" ? 'single' : 'double'} quote`);
  const error = endCommand('end');
  if (error) return refuse(error);
  return { ok: true, commands };
}
