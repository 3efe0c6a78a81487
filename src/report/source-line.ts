// A rule's source as a person reads it, after the refusal it explains:
//   (.sbx/profiles/ci.yaml:14:5 commands.deny[2])   a profile line, the path relative to cwd when shorter
//   (builtin:agent:31:5 network)                     a built-in profile (sbx profiles show builtin:agent)
//   (flag --memory)                                  set by a flag of this run (or the library option)
//   (default network)                                sbx's default: no profile says otherwise
// The JSON report keeps the absolute file, line and col (report-schema.ts); only this text is shortened.
import { basename, dirname, relative } from 'node:path';
import type { ViolationSource } from '../policy/violation.js';

/** What a file is shown relative to: the invoking cwd and sbx's built-in profiles directory. */
export interface SourceView {
  cwd: string;
  builtinDir: string;
}

function shownFile(file: string, view: SourceView): string {
  if (dirname(file) === view.builtinDir && file.endsWith('.yaml')) return `builtin:${basename(file, '.yaml')}`;
  const near = relative(view.cwd, file);
  const shown = near.length < file.length ? near : file;
  // A repository names its own directories: a newline there must not start a forged `sbx:` line.
  return /[\x00-\x1f\x7f]/.test(shown) ? JSON.stringify(shown) : shown;
}

export function showSource(source: ViolationSource, view: SourceView): string {
  if (source.origin === 'flag') return `(flag ${source.key})`;
  if (source.origin === 'default') return `(default ${source.key})`;
  if (source.file === undefined) return `(${source.key})`;
  return `(${shownFile(source.file, view)}:${source.line}:${source.col} ${source.key})`;
}
