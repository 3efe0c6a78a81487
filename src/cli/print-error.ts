// Prints sbx's own failures: `file:line:col: message`, then `hint: ...`. Stack only with SBX_DEBUG=1.
// A refusal that stems from a rule ends with the rule's profile line (report/source-line.ts).
import type { SbxError } from '../errors.js';
import { printable } from './printable.js';
import { showSource, type SourceView } from '../report/source-line.js';
import { join } from 'node:path';
import { packageRoot } from '../package-root.js';

/** Files shown from where sbx was started (or the caller, for the warm server), built-ins by name. */
export function invokingView(cwd = process.cwd()): SourceView {
  return { cwd, builtinDir: join(packageRoot(), 'profiles') };
}

/**
 * Each part one line, control characters visible: a message may quote a path or a value from the
 * repository, and a newline in it would start a line of its own (on a terminal, or a workflow
 * command in a GitHub Actions log, where this prints after sbx resumes them: cli/actions-mode.ts). The
 * runner also reads the legacy `##[command]` form anywhere in a line, so a `#` opening one is shown
 * as `\x23` too.
 */
function oneLine(text: string): string {
  return printable(text).replace(/\n/g, '\\n').replace(/##\[/g, '#\\x23[');
}

export function formatError(
  error: SbxError,
  color: (s: string) => string = (s) => s,
  view: SourceView = invokingView(),
): string[] {
  const where = error.location ? `${error.location.file}:${error.location.line}:${error.location.col}: ` : '';
  // A command refusal's rule is its first violation's (commands/host/command-gate.ts names the error after it).
  // Only a profile line is news here: a message about a flag or a default starts with its name already.
  const source = error.source ?? error.violations[0]?.source;
  const rule = source?.file !== undefined ? ` ${showSource(source, view)}` : '';
  const lines = [`sbx: ${color('error')}: ${oneLine(where + error.message)}${rule}`];
  for (const detail of error.details) lines.push(`sbx: ${oneLine(detail)}`);
  if (error.hint) lines.push(`sbx: hint: ${oneLine(error.hint)}`);
  return lines;
}
