// The compound commands a restricted shell string may hold (docs/DESIGN.md, "Restricted shell strings"):
// `if`, `while`, `until`, `for`, `{ }`, `( )`, `!`, and the `$(...)` whose commands are read with the
// rest. shell-words.ts reads the characters; this is the grammar it follows once a reserved word
// starts a command: which word may come next, that no part of a compound command is empty, and
// which commands run in a loop. What sh would refuse as a syntax error is refused here too. Pure.
import type { ForLoop, Redirect, SimpleCommand, WordPart } from './shell-words.js';

/** Reserved words that open, continue or close a compound command the reader follows. */
export const COMPOUND_WORDS = new Set([
  'if',
  'then',
  'elif',
  'else',
  'fi',
  'while',
  'until',
  'do',
  'done',
  'for',
  '{',
  '}',
  '!',
]);
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Compound commands nested deeper than this are refused: deep enough for real use, bounded for a hostile string. */
const MAX_NESTING = 16;

/** What came before the command being read: the string's start, an operator, its end, or a word that opens a compound command. */
export type Connector = 'start' | '|' | '&&' | '||' | ';' | '\n' | 'end' | 'open';

/** The reading state of a word that a `$(...)` interrupts, restored at its `)`. */
export interface WordState {
  command: SimpleCommand;
  previous: Connector;
  parts: WordPart[];
  inWord: boolean;
  wordStart: number;
  quoted: boolean;
  quote: "'" | '"' | undefined;
  pending: Omit<Redirect, 'target'> | undefined;
  strip: boolean;
  compound: boolean;
}

/** An open compound command or substitution, and where in its grammar the reading is. */
export interface Frame {
  kind: 'if' | 'while' | 'until' | 'for' | 'brace' | 'subshell' | 'subst';
  stage: 'cond' | 'then' | 'else' | 'body' | 'name' | 'in' | 'words' | 'do';
  /** Commands read in this stage: no stage of a compound command may be empty. */
  count: number;
  loop?: ForLoop;
  saved?: WordState;
}

/** Where the reading is: the script, its position, the commands so far and the one being read. */
export interface Reader extends WordState {
  script: string;
  /** The character being read; a step that reads ahead moves it past what it consumed. */
  i: number;
  commands: SimpleCommand[];
  loops: ForLoop[];
  frames: Frame[];
  /** Whether a comment was read: a string of comments alone runs nothing, and is no error. */
  commented: boolean;
  /** Here-documents whose text starts after the next newline, in order. */
  heredocs: { redirect: Redirect; strip: boolean; literal: boolean }[];
}

/** The word that closes an open frame, for the message that it was never closed. */
export function closerOf(frame: Frame): string {
  return { if: 'fi', while: 'done', until: 'done', for: 'done', brace: '}', subshell: ')', subst: ')' }[frame.kind];
}

/** Opens a compound command or substitution; after it, a command may start (an empty one is an error). */
export function pushFrame(r: Reader, frame: Frame): string | undefined {
  if (r.frames.length >= MAX_NESTING) return `compound commands or $(...) nested more than ${MAX_NESTING} deep`;
  r.frames.push(frame);
  r.previous = 'open';
  return undefined;
}

/** The words of `for NAME [in WORDS]` before `do`. */
export function readForHeader(
  r: Reader,
  frame: Frame,
  parts: WordPart[],
  literal: string | undefined,
  quoted: boolean,
): string | undefined {
  if (frame.stage === 'name') {
    if (literal === undefined || quoted || !NAME.test(literal)) return 'a for loop without a plain variable name';
    frame.loop = { name: literal, words: [] };
    frame.stage = 'in';
    return undefined;
  }
  if (frame.stage === 'in' && literal === 'in' && !quoted) {
    frame.stage = 'words';
    return undefined;
  }
  if (frame.stage === 'words') {
    frame.loop!.words.push(parts);
    return undefined;
  }
  if (literal === 'do' && !quoted && frame.stage === 'do') {
    frame.stage = 'body';
    r.loops.push(frame.loop!);
    r.previous = 'open';
    return undefined;
  }
  return 'a for loop other than for NAME in WORDS; do ...; done';
}

/** A reserved word where a command starts: it opens, moves on or closes a compound command. */
export function readReservedWord(r: Reader, word: string): string | undefined {
  const top = r.frames.at(-1);
  const stageHas = (kinds: Frame['kind'][], stages: Frame['stage'][]) =>
    top !== undefined && kinds.includes(top.kind) && stages.includes(top.stage) && top.count > 0;
  const next = (stage: Frame['stage']) => {
    top!.stage = stage;
    top!.count = 0;
    r.previous = 'open';
    return undefined;
  };
  switch (word) {
    case 'if':
    case 'while':
    case 'until':
      return pushFrame(r, { kind: word, stage: 'cond', count: 0 });
    case 'for':
      return pushFrame(r, { kind: 'for', stage: 'name', count: 0 });
    case '{':
      return pushFrame(r, { kind: 'brace', stage: 'body', count: 0 });
    case '!':
      r.previous = 'open';
      return undefined;
    case 'then':
      return stageHas(['if'], ['cond']) ? next('then') : 'then without if CONDITION;';
    case 'elif':
      return stageHas(['if'], ['then']) ? next('cond') : 'elif without if ...; then ...;';
    case 'else':
      return stageHas(['if'], ['then']) ? next('else') : 'else without if ...; then ...;';
    case 'do':
      return stageHas(['while', 'until'], ['cond']) ? next('body') : 'do without while or until CONDITION;';
  }
  const closes =
    word === 'fi'
      ? stageHas(['if'], ['then', 'else'])
      : word === 'done'
        ? stageHas(['while', 'until', 'for'], ['body'])
        : stageHas(['brace'], ['body']);
  if (!closes) return `${word} without what it closes (or with nothing inside)`;
  r.frames.pop();
  // The compound command counts as one command: only redirections and a connector may follow it.
  r.compound = true;
  return undefined;
}

const LOOPS = new Set<Frame['kind']>(['while', 'until', 'for']);

/** Whether a command read now runs in a loop: in the body or the condition of `for`, `while` or `until`. */
export function inLoop(r: Reader): boolean {
  return r.frames.some((f) => LOOPS.has(f.kind) && (f.stage === 'body' || f.stage === 'cond'));
}

/**
 * A connector while a `for` header is read: `;` or a newline ends its words (then `do` must come);
 * undefined when no header is being read.
 */
export function endForHeader(r: Reader, connector: Connector): string | undefined | 'none' {
  const top = r.frames.at(-1);
  if (top?.kind !== 'for' || top.stage === 'body') return 'none';
  if (connector !== ';' && connector !== '\n') return 'a for loop other than for NAME in WORDS; do ...; done';
  if (top.stage === 'name') return 'a for loop without a plain variable name';
  if (top.stage === 'in' || top.stage === 'words') top.stage = 'do';
  return undefined;
}
