// Shell quoting: for display (`sbx explain`), and for the one command sbx writes for a shell to run,
// an agent hook's wrapped command (cli/hook/hook-protocol.ts). sbx's own argv always stays an array.

const SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** One argument as a POSIX shell would need it; control characters become $'\n'-style escapes. */
export function shellQuote(arg: string): string {
  if (arg !== '' && SAFE.test(arg)) return arg;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(arg)) {
    const escaped = arg
      .replace(/[\\']/g, (c) => '\\' + c)
      .replace(/[\x00-\x1f\x7f]/g, (c) => {
        const named: Record<string, string> = { '\n': '\\n', '\t': '\\t', '\r': '\\r' };
        return named[c] ?? '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0');
      });
    return `$'${escaped}'`;
  }
  return singleQuote(arg);
}

/**
 * One POSIX shell word with exactly these bytes, whatever they are (newlines, quotes, unicode): inside
 * single quotes nothing is special but `'`, which closes, is escaped and reopens. Valid in sh, bash and
 * zsh alike, unlike $'...'. A NUL cannot be in a shell argument at all: callers refuse it first.
 */
export function singleQuote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

export function shellJoin(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}
