// What a run executes: the caller's argv, or a shell string (`--shell`, the library's `shell`) that
// sbx itself hands to the system shell. Keeping the string apart from the argv is what lets the
// command rules judge the commands of the string, and not the shell sbx put in front of them. Pure.
import { SbxError } from '../errors.js';

/**
 * The shell a shell string runs in: an absolute path, so no PATH entry (a workspace's
 * node_modules/.bin, say) decides which program reads the string sbx judged.
 */
export const SYSTEM_SHELL = '/bin/sh';

/** `--` ends sh's options: a string that starts with `-` or `+` is still the script, never a flag. */
export function shellArgv(script: string): string[] {
  return [SYSTEM_SHELL, '-c', '--', script];
}

/** The argv a request runs. A command and a shell string together is a usage error. */
export function requestedArgv(request: { command?: string[]; shell?: string }): string[] {
  if (request.shell === undefined) return request.command ?? [];
  if (request.command !== undefined && request.command.length > 0) {
    throw new SbxError('USAGE', 'a shell string takes the place of the command: give one or the other', {
      hint: "e.g. sbx run --shell 'make test', or sbx run -- make test (library: shell or command)",
    });
  }
  return shellArgv(request.shell);
}
