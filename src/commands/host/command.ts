// Finds the command the way the sandbox will (its PATH, its mounts) before anything is spawned, so
// "not found" and "not executable" get their own exit codes (127, 126) instead of bwrap's generic 1.
import { accessSync, constants, statSync } from 'node:fs';
import { posix } from 'node:path';
import { SbxError } from '../../errors.js';
import { hostPathOf } from '../../policy/sandbox-path.js';
import type { Policy } from '../../policy/types.js';

function isExecutableFile(hostPath: string): 'yes' | 'no-exec' | 'missing' {
  try {
    if (!statSync(hostPath).isFile()) return 'missing';
  } catch {
    return 'missing';
  }
  try {
    accessSync(hostPath, constants.X_OK);
    return 'yes';
  } catch {
    return 'no-exec';
  }
}

/** Refuses a command the sandbox cannot run; returns its absolute path inside the sandbox. */
export function locateCommand(policy: Policy): string {
  const name = policy.command[0];
  if (name === undefined || name === '') {
    throw new SbxError('USAGE', 'no command given', { hint: 'sbx run [options] -- COMMAND [ARGS...]' });
  }
  const candidates = name.includes('/')
    ? [posix.resolve(policy.cwd, name)]
    : (policy.env.vars.PATH ?? '')
        .split(':')
        .filter(Boolean)
        .map((dir) => posix.join(posix.resolve(policy.cwd, dir), name));
  let sawNoExec: string | undefined;
  for (const inside of candidates) {
    const host = hostPathOf(policy.mounts, inside);
    if (host === undefined) continue;
    const state = isExecutableFile(host);
    if (state === 'yes') return inside;
    if (state === 'no-exec') sawNoExec ??= inside;
  }
  if (sawNoExec) {
    throw new SbxError('COMMAND_NOT_EXECUTABLE', `${sawNoExec} is not executable`, {
      hint: `chmod +x it, or run it through its interpreter (e.g. sh ${name})`,
    });
  }
  // A toolchain in HOME left out (another user could write it, too large to scan): say where to read why.
  const skipped = policy.toolchainsSkipped?.length ?? 0;
  const why =
    skipped > 0
      ? `; \`sbx explain\` says why ${skipped === 1 ? '1 PATH entry in HOME is' : `${skipped} PATH entries in HOME are`} not shown`
      : '';
  throw new SbxError('COMMAND_NOT_FOUND', `command not found in the sandbox: ${name}`, {
    hint: name.includes('/')
      ? "check the path; only the workspace and the profile's binds are visible inside"
      : `searched PATH=${policy.env.vars.PATH ?? ''}; if it is installed elsewhere, add its directory to the profile's read_only list${why}`,
  });
}
