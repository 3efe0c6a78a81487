// `sbx why`: whether a profile lets the sandbox see a path, reach a host or run a command, and the
// profile line (or sbx default) that decides. Runs nothing: the policy is derived as `sbx explain`
// derives it, with no launcher probed, and each target judged over it (policy/why.ts).
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ExitCode, SbxError, whyUnchecked, type Violation, type WhyAnswer, type WhyTarget } from '../api.js';
import { showSource, type SourceView } from '../report/source-line.js';
import { invokingView } from './print-error.js';
import { printable } from './printable.js';
import { shellJoin } from './quote.js';
import { toRunOptions, type RunFlags } from './run-flags.js';

/**
 * The flags of `sbx run` that `sbx why` takes: those that choose the profile, the workspace and the
 * command, and those that change the policy for one run (binds, environment, network, masks), so that
 * `sbx why` answers for the very run it is asked about. The launcher's (--backend) and the limits'
 * change no answer here.
 */
export const WHY_FLAGS = [
  'profile',
  'workspace',
  'shell',
  'trust-profile',
  'danger',
  'allow-denylisted-commands',
  'bind',
  'ro-bind',
  'env',
  'keep-env',
  'network',
  'allow-domain',
  'allow-private',
  'unmask',
  'allow-sensitive-roots',
];

export type WhyFlags = Pick<
  RunFlags,
  | 'profile'
  | 'workspace'
  | 'shell'
  | 'trustProfile'
  | 'danger'
  | 'allowDenylistedCommands'
  | 'bind'
  | 'roBind'
  | 'env'
  | 'keepEnv'
  | 'network'
  | 'allowDomain'
  | 'allowPrivate'
  | 'unmask'
  | 'allowSensitiveRoots'
> & {
  json?: boolean;
};

/** The options of `sbx why` that take a value: a `--` right after one is that value, not the end of the targets. */
const VALUE_OPTIONS = new Set([
  '-p',
  '--profile',
  '-w',
  '--workspace',
  '--shell',
  '--trust-profile',
  '--bind',
  '--ro-bind',
  '-e',
  '--env',
  '--keep-env',
  '--network',
  '--allow-domain',
  '--allow-private',
  '--unmask',
]);

/**
 * The command after `--` in `why`'s own arguments (commander drops the `--` itself, so the operands
 * it hands over are the targets then the command, and only the raw arguments tell them apart).
 */
export function commandOfRaw(raw: readonly string[]): string[] {
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === '--') return raw.slice(i + 1);
    if (VALUE_OPTIONS.has(raw[i]!)) i++;
  }
  return [];
}

/**
 * A target is a path when it looks like one (`/` in it, a leading `.` or `~`: no host name starts so) or
 * names a file in the current directory; else a host, `host:port` or `[v6]:port`.
 */
export function isPathTarget(target: string, exists: (path: string) => boolean): boolean {
  return target.includes('/') || /^[.~]/.test(target) || exists(target);
}

/** The host path a path target names: `~` expanded, relative to the cwd, symlinks resolved as far as they exist. */
function hostPathOf(target: string): string {
  const home = process.env.HOME ?? '/';
  const expanded = target === '~' || target.startsWith('~/') ? join(home, target.slice(1)) : target;
  const abs = resolve(expanded);
  // The Policy names real paths; the deepest existing ancestor is resolved, the rest kept as named.
  for (let dir = abs, rest = ''; ; rest = join(basename(dir), rest), dir = dirname(dir)) {
    if (existsSync(dir)) return join(realpathSync(dir), rest);
    if (dir === dirname(dir)) return abs;
  }
}

function targetsOf(operands: readonly string[], command: readonly string[], shell: string | undefined): WhyTarget[] {
  const named = operands.slice(0, operands.length - command.length);
  const targets: WhyTarget[] = named.map((t) =>
    isPathTarget(t, existsSync) ? { kind: 'path', target: t, hostPath: hostPathOf(t) } : { kind: 'host', target: t },
  );
  if (command.length > 0 && shell !== undefined)
    throw new SbxError('USAGE', 'sbx why: a shell string takes the place of the command: give one or the other', {
      hint: "sbx why --shell 'git push', or sbx why -- git push",
    });
  if (command.length > 0 || shell !== undefined) targets.push({ kind: 'command' });
  if (targets.length === 0)
    throw new SbxError('USAGE', 'sbx why: nothing to ask about', {
      hint: 'name a path, a host or a command: sbx why .env registry.npmjs.org -- git push (sbx why --help)',
    });
  return targets;
}

/** The verdict word of an answer. */
function verdictOf(a: WhyAnswer): string {
  if (a.kind === 'path') return a.access === 'absent' ? 'absent (not in the sandbox)' : a.access;
  if (a.kind === 'host') return a.allowed ? 'allowed' : 'denied';
  return a.verdict === 'allow' ? 'allowed' : a.verdict === 'ask' ? 'needs approval' : 'denied';
}

function ruleLine(because: string, source: Violation['source'], view: SourceView): string {
  return `  ${printable(because)}${source ? ` ${showSource(source, view)}` : ' (sbx)'}`;
}

/** One answer as text: the target and its verdict, then each rule that decided, with its profile line. */
export function answerLines(a: WhyAnswer, view: SourceView): string[] {
  if (a.kind === 'command') {
    const head = `${printable(shellJoin(a.argv))}: ${verdictOf(a)}`;
    return [head, ...a.rules.map((r) => ruleLine(r.because, r.source, view))];
  }
  // Inside, the workspace (or a mountAt bind) may sit elsewhere than on the host.
  const shown =
    a.kind === 'path' && a.host !== undefined && a.host !== a.path ? `${a.target} (at ${a.path} inside)` : a.target;
  const lines = [`${printable(shown)}: ${verdictOf(a)}`, ruleLine(a.because, a.source, view)];
  for (const also of a.also) lines.push(ruleLine(`also: ${also.because}`, also.source, view));
  return lines;
}

export async function whyCommand(operands: string[], raw: readonly string[], flags: WhyFlags): Promise<void> {
  const command = commandOfRaw(raw);
  const targets = targetsOf(operands, command, flags.shell);
  const none = { bind: [], roBind: [], env: [], keepEnv: [], allowDomain: [] };
  const options = toRunOptions({ ...none, ...flags }, command.length > 0 ? command : ['sh']);
  const { profile, answers } = await whyUnchecked({ ...options, hostEnv: process.env }, targets);
  if (flags.json) process.stdout.write(`${JSON.stringify({ profile, answers }, null, 2)}\n`);
  else {
    const view = invokingView();
    const lines = [`profile ${profile.name} (${profile.source}: ${profile.file})`];
    for (const a of answers) lines.push(...answerLines(a, view));
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  process.exitCode = answers.every((a) => a.allowed) ? 0 : ExitCode.NOT_ALLOWED;
}
