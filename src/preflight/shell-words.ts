// `shell_syntax: restricted` (docs/DESIGN.md): a shell string that is one simple command, split into its
// words the way sh would, or the reason it is more than that. Anything sh would interpret beyond
// quoting (chaining, pipes, redirections, substitutions, expansions, grouping, comments,
// assignments) is refused, so the words judged are exactly the argv sh will run. Pure.

export type ShellWords = { ok: true; argv: string[] } | { ok: false; reason: string };

/** Outside quotes, these characters make sh do more than run one command. */
const OPERATORS: Record<string, string> = {
  ';': 'command chaining (;)',
  '&': 'chaining or background jobs (&, &&)',
  '|': 'pipes or chaining (|, ||)',
  '<': 'redirections (<)',
  '>': 'redirections (>)',
  '(': 'subshells or grouping ( )',
  ')': 'subshells or grouping ( )',
  '{': 'grouping or brace expansion { }',
  '}': 'grouping or brace expansion { }',
  '`': 'command substitution (`...`)',
  '$': 'expansions and substitutions ($)',
  '\n': 'several lines',
  '\r': 'several lines',
};

const refuse = (reason: string): ShellWords => ({ ok: false, reason });

export function parseRestrictedShell(script: string): ShellWords {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: "'" | '"' | undefined;
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
      else if (c === '\\' && i + 1 < script.length && '"\\$`'.includes(script[i + 1]!)) word += script[++i];
      else if (c === '\\' && script[i + 1] === '\n') return refuse(OPERATORS['\n']!);
      else word += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
      continue;
    }
    if (c === '\\') {
      if (i + 1 >= script.length) return refuse('a trailing backslash');
      const next = script[++i]!;
      if (next === '\n' || next === '\r') return refuse(OPERATORS['\n']!);
      word += next;
      inWord = true;
      continue;
    }
    if (c === ' ' || c === '\t') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      continue;
    }
    const operator = OPERATORS[c];
    if (operator) return refuse(operator);
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
  if (inWord) words.push(word);
  if (words.length === 0) return refuse('no command');
  // `NAME=value cmd` sets the variable for cmd (LD_PRELOAD=... is a way around every rule here).
  if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!)) return refuse('variable assignments (NAME=value)');
  return { ok: true, argv: words };
}
