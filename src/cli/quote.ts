// Shell quoting: for display (`sbx explain`, the `sbx why` line a refusal points to), and for the one
// command sbx writes for a shell to run, an agent hook's wrapped command (cli/hook/hook-protocol.ts).
// sbx's own argv always stays an array.

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

/** Past this, a refusal's pointer names the command by a placeholder: a pointer is one line to read. */
const WHY_COMMAND_SHOWN = 200;

/**
 * The `sbx why` a person runs at a terminal to see which profile line decides `command` (an argv, or a
 * shell string as an agent's hook and `sbx mcp` pass it): where a hook's deny and an MCP refusal point.
 */
export function whyCommandLine(profile: string, command: { argv: readonly string[] } | { shell: string }): string {
  const text = 'shell' in command ? command.shell : shellJoin(command.argv);
  const long = text.length > WHY_COMMAND_SHOWN;
  const what =
    'shell' in command
      ? `--shell ${long ? "'<the command>'" : shellQuote(command.shell)}`
      : `-- ${long ? '<the command>' : text}`;
  return `sbx why -p ${shellQuote(profile)} ${what}`;
}
