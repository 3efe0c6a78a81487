// The programs sed and awk are given on their command line (docs/DESIGN.md, "Command rules"): both are
// on the agent's allow list, and both can run a command or name a file from inside their program. A sed
// script is read the way GNU sed 4 reads it (compile.c): its `e` command and `s///e` flag run a
// command, `w`, `W` and `s///w` write a file, `r` and `R` read one; a script sed would not accept is
// not judged. An awk program is an expression language the rules do not parse: `system()`, a pipe
// (`print | "cmd"`, `"cmd" | getline`) or a gawk `@load`/`@include` runs what the rules cannot see,
// and `getline < FILE` or `print > FILE` name a file only known when it runs. A `|` in a program that
// prints or reads with getline is judged a pipe even inside a regular expression: which `/` starts one
// depends on awk's grammar, and a misreading would hide a pipe. Pure.

/** What a sed script or awk program does besides filtering text. */
export interface ProgramFindings {
  /** What it runs that the rules cannot judge, each as a phrase naming the construct. */
  hidden: string[];
  /** Files it names: read (`r FILE`) or written (`w FILE`). */
  paths: string[];
  /** Files it reads or writes whose names are expressions, known only when it runs. */
  unknownPaths: string[];
}

/** Commands that take no argument (`q` and `l` take an optional number, read as such). */
const SED_PLAIN = new Set(['=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F', 'l', 'L', 'q', 'Q']);

interface SedReader {
  text: string;
  i: number;
  out: ProgramFindings;
}

/** A script GNU sed would not accept, or sbx cannot follow: judged as running what the rules cannot see. */
function cannot(out: ProgramFindings, why: string): ProgramFindings {
  out.hidden.push(`a sed script sbx cannot read (${why})`);
  return out;
}

/** The rest of the line from `i` (a file name, a label, `a` text), and the reader moved past it. */
function restOfLine(r: SedReader): string {
  const end = r.text.indexOf('\n', r.i);
  const line = r.text.slice(r.i, end < 0 ? undefined : end);
  r.i = end < 0 ? r.text.length : end;
  return line;
}

/** Up to the next unescaped `delim` (GNU sed's match_slash); false when the line or script ends first. */
function toDelimiter(r: SedReader, delim: string): boolean {
  for (; r.i < r.text.length; r.i++) {
    const c = r.text[r.i]!;
    if (c === '\\') r.i++;
    else if (c === delim) {
      r.i++;
      return true;
    } else if (c === '\n') return false;
  }
  return false;
}

function skipBlanks(r: SedReader): void {
  while (r.i < r.text.length && /[ \t]/.test(r.text[r.i]!)) r.i++;
}

/** An address: a line number (`N`, `first~step`), `$`, `/re/` or `\cREc` with I/M, then `,` and a second one. */
function readAddress(r: SedReader): boolean {
  const one = (): boolean => {
    const c = r.text[r.i];
    if (c === undefined) return false;
    if (/[0-9]/.test(c)) {
      r.i += /^[0-9]+(~[0-9]+)?/.exec(r.text.slice(r.i))![0].length;
      return true;
    }
    if (c === '$') {
      r.i++;
      return true;
    }
    if (c === '/' || c === '\\') {
      const delim = c === '/' ? '/' : r.text[r.i + 1];
      if (delim === undefined || delim === '\n' || delim === '\\') return false;
      r.i += c === '/' ? 1 : 2;
      if (!toDelimiter(r, delim)) return false;
      while (r.text[r.i] === 'I' || r.text[r.i] === 'M') r.i++;
      return true;
    }
    return true;
  };
  if (!one()) return false;
  skipBlanks(r);
  if (r.text[r.i] !== ',') return true;
  r.i++;
  skipBlanks(r);
  if (/[+~]/.test(r.text[r.i] ?? '')) {
    r.i++;
    return /[0-9]/.test(r.text[r.i] ?? '') && one();
  }
  return one();
}

/** `s/re/replacement/flags`: `e` runs the result as a command, `w FILE` writes to a file. */
function readSubstitution(r: SedReader, command: 's' | 'y'): boolean {
  const delim = r.text[r.i];
  if (delim === undefined || delim === '\n' || delim === '\\') return false;
  r.i++;
  if (!toDelimiter(r, delim) || !toDelimiter(r, delim)) return false;
  if (command === 'y') return true;
  for (; r.i < r.text.length; r.i++) {
    const c = r.text[r.i]!;
    if (c === 'e') r.out.hidden.push("sed's s///e flag, which runs the pattern space as a command");
    else if (c === 'w') {
      r.i++;
      r.out.paths.push(restOfLine(r).trimStart());
      return true;
    } else if (!/[gpiImM0-9]/.test(c)) return true;
  }
  return true;
}

/** After a command: blanks, then `;`, a newline, `}`, `#` or the end. */
function endOfCommand(r: SedReader): boolean {
  skipBlanks(r);
  const c = r.text[r.i];
  if (c === undefined || c === '\n' || c === '#' || c === '}') return true;
  if (c === ';') {
    r.i++;
    return true;
  }
  return false;
}

/** A sed script's commands, as GNU sed reads them; stops at the first it cannot read. */
export function judgeSedScript(text: string): ProgramFindings {
  const r: SedReader = { text, i: 0, out: { hidden: [], paths: [], unknownPaths: [] } };
  while (r.i < text.length) {
    const c = text[r.i]!;
    if (/[ \t\n;]/.test(c)) {
      r.i++;
      continue;
    }
    if (c === '#') {
      restOfLine(r);
      continue;
    }
    if (!readAddress(r)) return cannot(r.out, 'an address');
    skipBlanks(r);
    while (text[r.i] === '!') {
      r.i++;
      skipBlanks(r);
    }
    const command = text[r.i];
    r.i++;
    if (command === undefined) return cannot(r.out, 'an address without a command');
    if (command === '{' || command === '}') continue;
    if (SED_PLAIN.has(command)) {
      skipBlanks(r);
      while (/[0-9]/.test(text[r.i] ?? '')) r.i++;
    } else if (command === ':' || command === 'b' || command === 't' || command === 'T' || command === 'v') {
      while (r.i < text.length && !/[;\n]/.test(text[r.i]!)) r.i++;
    } else if (command === 'a' || command === 'i' || command === 'c') {
      // Text to the end of the line, and on while a line ends with a backslash.
      do restOfLine(r);
      while (text[r.i - 1] === '\\' && r.i++ < text.length);
      continue;
    } else if (command === 'r' || command === 'R' || command === 'w' || command === 'W') {
      r.out.paths.push(restOfLine(r).trimStart());
      continue;
    } else if (command === 'e') {
      r.out.hidden.push("sed's e command, which runs a command");
      restOfLine(r);
      continue;
    } else if (command === 's' || command === 'y') {
      if (!readSubstitution(r, command)) return cannot(r.out, `an unterminated ${command} command`);
    } else return cannot(r.out, `the command ${JSON.stringify(command)}`);
    if (!endOfCommand(r)) return cannot(r.out, `text after the command ${JSON.stringify(command)}`);
  }
  return r.out;
}

/** The text of an awk program with its string literals blanked, so that their contents are not read as code. */
function withoutStrings(text: string): string {
  return text.replace(/"(?:[^"\\\n]|\\.)*"/g, (s) => `"${' '.repeat(s.length - 2)}"`);
}

/**
 * What an awk program does besides filtering text, read conservatively from its text: a word
 * `system`, a pipe, a gawk directive, `getline` with `<`, or a `>` after `print`/`printf` (outside a
 * string) in the same statement.
 */
export function judgeAwkProgram(text: string): ProgramFindings {
  const out: ProgramFindings = { hidden: [], paths: [], unknownPaths: [] };
  // Anywhere, strings included: a regular expression the reading took for a division could hide one.
  if (/\bsystem\b/.test(text)) out.hidden.push("awk's system(), which runs a command");
  const pipe = text.replace(/\|\|/g, '').includes('|');
  if (pipe && /\b(printf?|getline)\b/.test(text)) out.hidden.push('an awk pipe to or from a command');
  if (/@(include|load|namespace)\b/.test(text)) out.hidden.push('a gawk @include or @load, which loads code');
  const code = withoutStrings(text);
  if (/\bgetline\b/.test(code) && code.includes('<'))
    out.unknownPaths.push("awk's getline < FILE, which reads a file the program names");
  for (const m of code.matchAll(/\bprintf?\b[^;{}\n]*/g))
    if (m[0].replace(/\([^()]*\)/g, '').includes('>')) {
      out.unknownPaths.push("awk's print > FILE, which writes a file the program names");
      break;
    }
  return out;
}
