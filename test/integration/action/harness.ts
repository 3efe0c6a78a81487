// Runs action.yml's steps the way a GitHub runner does, without GitHub: each `run:` script with
// `bash --noprofile --norc -eo pipefail` (the runner's `shell: bash`), its `env:` expressions
// evaluated (inputs, github.action_path), GITHUB_ACTIONS=true and the runner's file-command files
// (GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH, GITHUB_STATE, GITHUB_STEP_SUMMARY) as temp files outside
// the workspace. stdout and stderr share one O_APPEND file, so the log keeps the order of writes;
// or, as the runner reads them, each has a file of its own (`split`).
// `workflowCommands` then reads that log as the runner's command parser does.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from '../../helpers/paths.js';
import { SAFETY_MS, type TestHost } from '../../helpers/sbx-cli.js';

export interface ActionStep {
  name: string;
  id?: string;
  shell: string;
  run: string;
  env?: Record<string, string>;
}

export interface ActionFile {
  runs: { using: string; steps: ActionStep[] };
  inputs: Record<string, { required?: boolean; default?: string; description: string }>;
  outputs: Record<string, { value: string }>;
}

export function loadAction(): ActionFile {
  return parse(readFileSync(join(REPO_ROOT, 'action.yml'), 'utf8')) as ActionFile;
}

/** `${{ inputs.NAME }}` and `${{ github.action_path }}`: the only expressions the action may use in env. */
export function evaluate(
  value: string,
  inputs: Record<string, string>,
  action: ActionFile,
  actionPath: string = REPO_ROOT,
): string {
  return value.replace(/\$\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g, (_, expr: string) => {
    if (expr === 'github.action_path') return actionPath;
    const input = /^inputs\.(.+)$/.exec(expr)?.[1];
    if (input === undefined || !(input in action.inputs)) throw new Error(`unexpected expression ${expr}`);
    return inputs[input] ?? action.inputs[input]!.default ?? '';
  });
}

export interface RunnerFiles {
  dir: string;
  GITHUB_OUTPUT: string;
  GITHUB_ENV: string;
  GITHUB_PATH: string;
  GITHUB_STATE: string;
  GITHUB_STEP_SUMMARY: string;
}

/** The runner's temp directory: beside the workspace, never in it (as $RUNNER_TEMP on a hosted runner). */
export function runnerFiles(t: TestHost, name: string): RunnerFiles {
  const dir = join(t.root, 'runner', name);
  mkdirSync(dir, { recursive: true });
  const files = {} as Record<string, string>;
  for (const v of ['GITHUB_OUTPUT', 'GITHUB_ENV', 'GITHUB_PATH', 'GITHUB_STATE', 'GITHUB_STEP_SUMMARY']) {
    files[v] = join(dir, v.toLowerCase());
    writeFileSync(files[v]!, '');
  }
  return { dir, ...files } as unknown as RunnerFiles;
}

export interface StepRun {
  step: string;
  code: number | null;
}

export interface ActionRun {
  steps: StepRun[];
  /** The job log: every step's stdout and stderr in the order they were written (split: stdout only). */
  log: string;
  /** split: stderr alone. */
  err: string;
  /** The last step's exit status (the one the job sees when every step before it passed). */
  status: number | null;
  output: string;
  summary: string;
}

function runScript(
  script: string,
  env: Record<string, string>,
  cwd: string,
  fds: { out: number; err: number },
  safetyMs: number,
): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', script], {
      env,
      cwd,
      stdio: ['ignore', fds.out, fds.err],
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`safety timeout: a step of action.yml still running after ${safetyMs} ms`));
    }, safetyMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/** Where the runner put the action (this checkout, or a release's copy), and a step's safety net. */
export interface ActionCopy {
  path: string;
  /** A step that installs and builds (npm ci of a copy without dist/) takes far longer than one run. */
  stepSafetyMs?: number;
}

/** Every step in order, as the runner would: the job stops at the first step that fails. */
export async function runAction(
  t: TestHost,
  name: string,
  inputs: Record<string, string>,
  streams: 'merged' | 'split' = 'merged',
  copy: ActionCopy = { path: REPO_ROOT },
): Promise<ActionRun> {
  const actionPath = copy.path;
  const action = loadAction();
  const files = runnerFiles(t, name);
  const logPath = join(files.dir, 'log');
  const errPath = join(files.dir, streams === 'split' ? 'err' : 'log');
  const logFd = openSync(logPath, 'a');
  const errFd = openSync(errPath, 'a');
  const steps: StepRun[] = [];
  try {
    for (const step of action.runs.steps) {
      const env: Record<string, string> = {
        ...t.env,
        GITHUB_ACTIONS: 'true',
        CI: 'true',
        GITHUB_WORKSPACE: t.workspace,
        RUNNER_TEMP: files.dir,
        GITHUB_OUTPUT: files.GITHUB_OUTPUT,
        GITHUB_ENV: files.GITHUB_ENV,
        GITHUB_PATH: files.GITHUB_PATH,
        GITHUB_STATE: files.GITHUB_STATE,
        GITHUB_STEP_SUMMARY: files.GITHUB_STEP_SUMMARY,
      };
      for (const [k, v] of Object.entries(step.env ?? {})) env[k] = evaluate(v, inputs, action, actionPath);
      const code = await runScript(
        step.run,
        env,
        t.workspace,
        { out: logFd, err: errFd },
        copy.stepSafetyMs ?? SAFETY_MS,
      );
      steps.push({ step: step.name, code });
      if (code !== 0) break;
    }
  } finally {
    closeSync(logFd);
    closeSync(errFd);
  }
  return {
    steps,
    log: readFileSync(logPath, 'utf8'),
    err: streams === 'split' ? readFileSync(errPath, 'utf8') : '',
    status: steps.at(-1)?.code ?? null,
    output: readFileSync(files.GITHUB_OUTPUT, 'utf8'),
    summary: readFileSync(files.GITHUB_STEP_SUMMARY, 'utf8'),
  };
}

export interface WorkflowCommand {
  name: string;
  properties: Record<string, string>;
  data: string;
}

const decode = (s: string) =>
  s.replace(/%0D/gi, '\r').replace(/%0A/gi, '\n').replace(/%3A/gi, ':').replace(/%2C/gi, ',').replace(/%25/g, '%');

/**
 * The commands a runner would act on in `log`: lines split as .NET's ReadLine splits them (CR, LF,
 * CRLF), leading spaces trimmed, `::name props::data`; `::stop-commands::TOKEN` ignores every
 * command until a `::TOKEN::` line (actions/runner ActionCommandManager). Stop and resume lines are
 * not returned.
 */
export function workflowCommands(log: string): WorkflowCommand[] {
  const found: WorkflowCommand[] = [];
  let stopToken: string | undefined;
  for (const raw of log.split(/\r\n|\r|\n/)) {
    const line = raw.trimStart();
    const m = /^::([^\s:]+)(?: ([^:]*))?::(.*)$/s.exec(line);
    if (!m) continue;
    const [, name, props, data] = m as unknown as [string, string, string | undefined, string];
    if (stopToken !== undefined) {
      if (name.toLowerCase() === stopToken.toLowerCase()) stopToken = undefined;
      continue;
    }
    if (name === 'stop-commands') {
      stopToken = data;
      continue;
    }
    const properties: Record<string, string> = {};
    for (const pair of (props ?? '').split(',').filter(Boolean)) {
      const i = pair.indexOf('=');
      properties[pair.slice(0, i)] = decode(pair.slice(i + 1));
    }
    found.push({ name, properties, data: decode(data) });
  }
  return found;
}
