// Prints sbx's own failures: `file:line:col: message`, then `hint: ...`. Stack only with SBX_DEBUG=1.
import type { SbxError } from '../errors.js';
import { printable } from './printable.js';

/**
 * Each part one line, control characters visible: a message may quote a path or a value from the
 * repository, and a newline in it would start a line of its own (on a terminal, or a workflow
 * command in a GitHub Actions log, where this prints after sbx resumes them: cli/github.ts).
 */
function oneLine(text: string): string {
  return printable(text).replace(/\n/g, '\\n');
}

export function formatError(error: SbxError, color: (s: string) => string = (s) => s): string[] {
  const where = error.location ? `${error.location.file}:${error.location.line}:${error.location.col}: ` : '';
  const lines = [`sbx: ${color('error')}: ${oneLine(where + error.message)}`];
  for (const detail of error.details) lines.push(`sbx: ${oneLine(detail)}`);
  if (error.hint) lines.push(`sbx: hint: ${oneLine(error.hint)}`);
  return lines;
}
