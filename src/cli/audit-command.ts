// `sbx audit -- CMD...`: the git-state auditor (src/git/) around a command sbx does not sandbox itself:
// a container run of an export (`docker run` of `sbx export docker`, `runc run` of a bundle) whose
// binds write the workspace. The writable trees are recorded before CMD starts and audited once it
// has exited: what a later host git would run from the container's writes is put back or quarantined
// and said, one line each. The container must have ended with CMD (run it in the foreground, with
// --rm): a process still writing after the audit is outside it. Exit: CMD's status (128+N for signal
// N), or 125 when the audit could not finish.
import { spawn } from 'node:child_process';
import { realpathSync, writeFileSync } from 'node:fs';
import { signalName } from '../backend/shared/signals.js';
import { ExitCode, SbxError } from '../errors.js';
import { auditGitState, planGitAudit, snapshotGitState } from '../git/host/auditor.js';
import { xdgDirs } from '../policy/user-dirs.js';
import { newSessionId } from '../host/session.js';
import { constants } from 'node:os';

export interface AuditFlags {
  writable?: string[];
  reportFile?: string;
}

function realDir(path: string): string {
  try {
    return realpathSync(path);
  } catch (cause) {
    throw new SbxError('USAGE', `--writable ${JSON.stringify(path)} cannot be resolved`, {
      hint: 'name each directory the container can write, as it exists on this host',
      cause,
    });
  }
}

/** CMD run to its end: its exit status, 128+N for a signal. */
function runToEnd(command: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), { stdio: 'inherit' });
    child.once('error', (cause) =>
      reject(
        new SbxError('COMMAND_NOT_FOUND', `${command[0]}: cannot be started`, { hint: 'check the command', cause }),
      ),
    );
    child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0)));
  });
}

export async function auditCommand(command: string[], flags: AuditFlags): Promise<void> {
  if (command.length === 0)
    throw new SbxError('USAGE', 'sbx audit needs a command after --', { hint: 'sbx audit -- docker run --rm ...' });
  const roots = (flags.writable?.length ? flags.writable : [process.cwd()]).map(realDir);
  const home = process.env.HOME ?? '/';
  const session = newSessionId();
  const plan = planGitAudit(roots, { home, ...xdgDirs(process.env, home) }, session, process.getuid?.() ?? -1);
  const before = snapshotGitState(plan);
  const status = await runToEnd(command);
  const { violations, incomplete } = auditGitState(plan, before);
  for (const v of violations) process.stderr.write(`sbx: git-state (${v.rule}): ${v.detail}\n`);
  const exitCode = incomplete ? ExitCode.SETUP : status;
  const signal = status > 128 ? signalName(status - 128) : undefined;
  if (flags.reportFile) {
    const report = {
      sessionId: session,
      command,
      exitCode,
      setBy: incomplete ? 'sbx' : 'child',
      ...(signal ? { signal } : {}),
      violations,
    };
    writeFileSync(flags.reportFile, `${JSON.stringify(report, null, 2)}\n`, { mode: 0o600 });
  }
  process.exitCode = exitCode;
}
