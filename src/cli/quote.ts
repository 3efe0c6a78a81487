// Shell quoting for display only (`sbx explain`): the argv itself always stays an array.

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
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

export function shellJoin(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}
