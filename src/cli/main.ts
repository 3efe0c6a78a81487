// The CLI door. `sbx run` with well-formed flags goes straight to the library, and `sbx hook AGENT`
// and `sbx mcp` to their commands; everything else goes through commander (loaded lazily). Only this file prints
// sbx's own errors and sets the exit code.
import { ExitCode, isSbxError } from '../errors.js';
import { parseMcpArgv, parseRunArgv } from './run-flags.js';
import { runHere } from './run-command.js';

/** commander signals help, --version and usage errors by throwing (exitOverride). */
function isCommanderError(error: unknown): error is { code: string; exitCode: number } {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { code?: unknown }).code?.toString().startsWith('commander.') === true
  );
}

/**
 * What sbx says of an error that ended a command, and its exit status: an SbxError's message and hint
 * (its stack too under SBX_DEBUG=1), anything else an internal error. For this process's stderr, and
 * for a warm server's caller's (cli/warm/warm-run.ts), which passes no color.
 */
export async function failureOf(
  error: unknown,
  env: Record<string, string | undefined>,
  color: (s: string) => string = (s) => s,
): Promise<{ text: string; exitCode: number }> {
  if (!isSbxError(error)) {
    return { text: `sbx: internal error: ${(error as Error)?.stack ?? String(error)}\n`, exitCode: ExitCode.SETUP };
  }
  const { formatError } = await import('./print-error.js');
  let text = formatError(error, color).join('\n') + '\n';
  if (env.SBX_DEBUG === '1' && error.stack) text += error.stack + '\n';
  return { text, exitCode: error.exitCode };
}

/** bin/sbx.js moved NODE_EXTRA_CA_CERTS aside to spare Node's start-up; the sandbox's env rules see it as it was. */
function restoreMovedEnv(): void {
  const moved = process.env.SBX_HOST_NODE_EXTRA_CA_CERTS;
  if (moved === undefined) return;
  delete process.env.SBX_HOST_NODE_EXTRA_CA_CERTS;
  process.env.NODE_EXTRA_CA_CERTS = moved;
}

export async function main(argv: string[]): Promise<void> {
  restoreMovedEnv();
  try {
    const fast = argv[2] === 'run' ? parseRunArgv(argv.slice(3)) : undefined;
    if (fast) {
      await runHere(fast.command, fast.flags);
      return;
    }
    // `sbx profiles list | head`: a reader that stopped reading is not an error.
    process.stdout.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit(process.exitCode ?? 0);
    });
    // An agent's hook runs before every tool call: its plain form skips commander too.
    if (argv[2] === 'hook') {
      const hook = await import('./hook/hook.js');
      const parsed = hook.parseHookArgv(argv.slice(3));
      if (parsed) {
        await hook.hookCommand(parsed.agent, parsed.flags);
        return;
      }
    }
    if (argv[2] === 'warm-server' && argv.length === 3) {
      const { warmServerCommand } = await import('./warm/warm-server.js');
      await warmServerCommand(process.env);
      return;
    }
    // An agent waits for its MCP server's first answer: the plain form skips commander too.
    const mcpFlags = argv[2] === 'mcp' ? parseMcpArgv(argv.slice(3)) : undefined;
    if (mcpFlags) {
      const { mcpCommand } = await import('./mcp/mcp.js');
      await mcpCommand(mcpFlags);
      return;
    }
    const { buildProgram } = await import('./program.js');
    await (await buildProgram()).parseAsync(argv);
  } catch (error) {
    if (isCommanderError(error)) {
      // commander already printed its message (or the help text).
      process.exitCode = error.exitCode === 0 ? 0 : ExitCode.USAGE;
      return;
    }
    const chalk = isSbxError(error) ? (await import('chalk')).chalkStderr : undefined;
    const color = chalk ? (s: string) => chalk.red.bold(s) : undefined;
    const failure = await failureOf(error, process.env, color);
    process.stderr.write(failure.text);
    process.exitCode = failure.exitCode;
  } finally {
    // The agents run the original command after a hook that fails with anything but 2 (hook/hook.ts):
    // whatever ended `sbx hook` early (a setup error, a bug) must block the call, not let it through.
    if (argv[2] === 'hook' && process.exitCode !== undefined && process.exitCode !== 0) process.exitCode = HOOK_BLOCK;
  }
}

/** The status both agents read as "block this call" (cli/hook/hook.ts). */
const HOOK_BLOCK = 2;
