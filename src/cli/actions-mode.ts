// `sbx run` inside a GitHub Actions job (GITHUB_ACTIONS=true): the runner's environment read once at
// the door, the sandboxed command's output fenced off from the runner's workflow-command parser,
// then sbx's own annotations and step summary. The lines themselves are built by report/github.ts.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, realpathSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { isSbxError, SbxError } from '../errors.js';
import type { Policy } from '../policy/types.js';
import { refusalEnding } from '../report/ending.js';
import { type GithubContext, refusalCommands, stepSummary, violationCommands } from '../report/github.js';
import { writableRootHolding } from '../report/report-file.js';
import { reportFromError, type Report } from '../report/report.js';

/**
 * The runner's file commands: it reads these files after the step. Written by the sandbox, GITHUB_ENV
 * and GITHUB_PATH would set the environment (LD_PRELOAD, PATH) of every later step of the job, which
 * runs unsandboxed; GITHUB_OUTPUT and GITHUB_STATE feed later steps' inputs; GITHUB_STEP_SUMMARY is
 * the report sbx writes.
 */
const RUNNER_FILES = {
  GITHUB_ENV: "set the environment of the job's later steps",
  GITHUB_PATH: "set the PATH of the job's later steps",
  GITHUB_OUTPUT: "set the outputs the job's later steps read",
  GITHUB_STATE: "set the state this action's post step reads",
  GITHUB_STEP_SUMMARY: 'forge the step summary',
} as const;

export interface GithubDoor {
  context: GithubContext;
  /** Each runner file named in the environment, as its directory's real path and its name. */
  runnerFiles: { name: keyof typeof RUNNER_FILES; path: string }[];
  /** The step summary opened at the door (before anything runs), or why it could not be. */
  summary: { fd: number } | { reason: string } | undefined;
  /**
   * The stop-commands tokens, one for stdout and one for stderr: random per run, never in the
   * sandbox's argv, environment or files. Two, so a command that reads a stop line out of its
   * inherited pipe before the runner does (open /proc/self/fd/1 for reading) learns only the token
   * the runner did not see.
   */
  tokens: { stdout: string; stderr: string };
}

function realOrUndefined(path: string | undefined): string | undefined {
  if (!path) return undefined;
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Opened for appending only, never through a symlink at the name (O_NOFOLLOW), and only if it is a
 * regular file: the runner creates it before the step; sbx never creates one.
 */
function openSummary(path: string): GithubDoor['summary'] {
  let fd: number;
  try {
    // Node opens with O_CLOEXEC: the sandbox never inherits it.
    fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW);
  } catch (error) {
    return { reason: (error as NodeJS.ErrnoException).code ?? String(error) };
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    return { reason: 'not a regular file' };
  }
  return { fd };
}

/** Called only when GITHUB_ACTIONS=true (src/cli/run-command.ts): outside Actions sbx prints no workflow command. */
export function githubAtDoor(env: NodeJS.ProcessEnv): GithubDoor {
  const runnerFiles: GithubDoor['runnerFiles'] = [];
  for (const name of Object.keys(RUNNER_FILES) as (keyof typeof RUNNER_FILES)[]) {
    const given = env[name];
    const dir = given ? realOrUndefined(dirname(given)) : undefined;
    if (given && dir) runnerFiles.push({ name, path: join(dir, basename(given)) });
  }
  const workspace = realOrUndefined(env.GITHUB_WORKSPACE);
  const summaryPath = env.GITHUB_STEP_SUMMARY;
  return {
    context: workspace === undefined ? {} : { workspace },
    runnerFiles,
    summary: summaryPath ? openSummary(summaryPath) : undefined,
    tokens: { stdout: randomBytes(16).toString('hex'), stderr: randomBytes(16).toString('hex') },
  };
}

/** Before anything runs: refused when the sandbox could write a file the runner reads back after the step. */
export function refuseWritableRunnerFiles(policy: Policy, door: GithubDoor): void {
  for (const { name, path } of door.runnerFiles) {
    const root = writableRootHolding(policy, path);
    if (root === undefined) continue;
    throw new SbxError(
      'HOST_STATE_WRITABLE',
      `$${name} (${path}) lies in ${root}, which the sandbox can write: the command could ${RUNNER_FILES[name]}`,
      { hint: 'keep the runner temp directory ($RUNNER_TEMP) out of --bind, --workspace and the profile binds' },
    );
  }
}

function appendSummary(door: GithubDoor, text: string): void {
  const summary = door.summary;
  if (summary === undefined) return;
  if ('reason' in summary) {
    process.stderr.write(`sbx: the step summary ($GITHUB_STEP_SUMMARY) was not written: ${summary.reason}\n`);
    return;
  }
  const bytes = Buffer.from(text);
  try {
    for (let done = 0; done < bytes.length; ) done += writeSync(summary.fd, bytes, done);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    process.stderr.write(`sbx: the step summary ($GITHUB_STEP_SUMMARY) was not written: ${reason}\n`);
  } finally {
    closeSync(summary.fd);
  }
}

/**
 * Runs `run` (the command, sbx's report and its human summary) with the runner's workflow commands
 * stopped, then resumes them and adds the annotations and the step summary. Whatever the sandboxed
 * command prints (`::add-mask::`, `::error::`, `::stop-commands::` of its own) is shown as text.
 *
 * The runner reads stdout and stderr on two pipes and, of what both hold at once, handles stderr
 * first: a stop line goes on both, so one comes before anything the command writes on either.
 * Resuming goes on stdout, after the command's processes are gone and after a newline on each stream
 * (a last line the command left unfinished ends inside the fence, not glued to sbx's next line).
 */
export async function inGithubActions(
  door: GithubDoor,
  command: string[],
  run: () => Promise<Report | undefined>,
): Promise<void> {
  const { tokens } = door;
  process.stdout.write(`::stop-commands::${tokens.stdout}\n`);
  process.stderr.write(`::stop-commands::${tokens.stderr}\n`);
  let report: Report | undefined;
  let failure: unknown;
  try {
    report = await run();
  } catch (error) {
    failure = error;
  } finally {
    process.stderr.write('\n');
    // Whichever stop the runner saw first is in force; the other resume line is then an unknown command.
    process.stdout.write(`\n::${tokens.stderr}::\n::${tokens.stdout}::\n`);
  }
  if (isSbxError(failure)) {
    const violations = refusalEnding(failure).violations;
    const refusal = { code: failure.code, message: failure.message, hint: failure.hint, location: failure.location };
    for (const line of refusalCommands(refusal, violations, door.context)) process.stdout.write(`${line}\n`);
    const refused = failure.run ? reportFromError(failure, failure.run.command ?? command, failure.run) : undefined;
    appendSummary(door, stepSummary(refused, refusal, door.context));
  } else if (report) {
    for (const line of violationCommands(report.violations, door.context)) process.stdout.write(`${line}\n`);
    appendSummary(door, stepSummary(report, undefined, door.context));
  } else if (door.summary !== undefined && 'fd' in door.summary) {
    closeSync(door.summary.fd); // --dry-run: nothing ran
  }
  if (failure !== undefined) throw failure;
}
