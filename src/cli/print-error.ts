// Prints sbx's own failures: `file:line:col: message`, then `hint: ...`. Stack only with SBX_DEBUG=1.
import type { SbxError } from '../errors.js';

export function formatError(error: SbxError, color: (s: string) => string = (s) => s): string[] {
  const where = error.location ? `${error.location.file}:${error.location.line}:${error.location.col}: ` : '';
  const lines = [`sbx: ${color('error')}: ${where}${error.message}`];
  for (const detail of error.details) lines.push(`sbx: ${detail}`);
  if (error.hint) lines.push(`sbx: hint: ${error.hint}`);
  return lines;
}
