// The command rules at run time: the pure decision (commands/command-rules.ts) on the facts it needs,
// then, for a command no rule allows under `default: ask`, the approval: a remembered answer, or the
// user asked on the terminal (README "Command rules").
import { posix } from 'node:path';
import { SbxError, type ErrorCode } from '../../errors.js';
import type { Host } from '../../policy/host.js';
import type { Policy } from '../../policy/types.js';
import type { Violation } from '../../policy/violation.js';
import { type Door, networkNotice, refusalHint, spell } from '../../advice.js';
import {
  decideCommand,
  gitRemotesNeeded,
  pathsToCheck,
  type CommandDecision,
  type CommandLine,
} from '../command-rules.js';
import { rootsOf } from '../path-guards.js';
import { isWithin } from '../../path-within.js';
import { appendAuditRecordOrWarn, redactArgv } from '../../report/host/ledger.js';
import type { AuditRecord } from '../../report/ledger-line.js';
import { readGitRemoteFacts } from '../../git/host/git-remote-facts.js';
import { probePaths } from '../../host/host-probe.js';

/** `deny` is remembered for 10 minutes; `deny-once` (Enter at the prompt) refuses this run only. */
export type ApprovalAnswer = 'once' | 'always' | 'deny' | 'deny-once';

export interface ApprovalRequest {
  argv: readonly string[];
  profile: string;
  /** Why approval is needed (no rule allows the command). */
  reason: string;
}

/**
 * Asks someone. undefined: nobody can be asked (no terminal), which refuses the command. Only 'once'
 * and 'always' approve: a library caller's approver is JavaScript, and any other value it returns
 * ('no', false, null, 0, a typo) or a throw refuses (fail closed); only 'deny' is remembered.
 */
export type Approver = (request: ApprovalRequest) => Promise<ApprovalAnswer | undefined>;

/** What an approver's answer means, whatever it returned: 'invalid' and 'failed' refuse like 'deny'. */
type Answer = ApprovalAnswer | 'nobody' | { invalid: string } | { failed: unknown };

async function ask(approve: Approver, request: ApprovalRequest): Promise<Answer> {
  let answer: unknown;
  try {
    answer = await approve(request);
  } catch (error) {
    return { failed: error };
  }
  if (answer === 'once' || answer === 'always' || answer === 'deny' || answer === 'deny-once') return answer;
  if (answer === undefined) return 'nobody';
  return { invalid: typeof answer === 'string' ? JSON.stringify(answer).slice(0, 40) : String(answer).slice(0, 40) };
}

export interface GateInput {
  policy: Policy;
  host: Host;
  sessionId: string;
  allowDenylisted: boolean;
  approve?: Approver;
  audit?: { file: string };
  /** Values to redact from the argv written to the ledger. */
  secrets: readonly string[];
  /** Which door the run came through: hints name its flags or its options (advice.ts). */
  door: Door;
  /** Told one line per foreseeable failure the rules do not refuse (a package manager offline). */
  onNotice?: (line: string) => void;
}

function refusalCode(violations: readonly Violation[]): ErrorCode {
  // The first refusal names the error: `curl x; cd /` is refused for curl before the cd.
  if (violations[0]?.rule === 'commands.shell_syntax') return 'SHELL_SYNTAX';
  if (violations.every((v) => v.kind === 'path')) return 'PATH_ESCAPE';
  return 'COMMAND_DENIED';
}

function badAnswer(answer: { invalid: string } | { failed: unknown }): string {
  if ('invalid' in answer) return `the approver answered ${answer.invalid}`;
  const message = answer.failed instanceof Error ? answer.failed.message : String(answer.failed);
  return `the approver failed (${message.slice(0, 80)})`;
}

/** Reasons spelled out on stderr after the first; the report lists them all. */
const REASONS_SHOWN = 10;

export function refusal(violations: Violation[], door: Door): SbxError {
  const [first, ...rest] = violations;
  const details = rest.slice(0, REASONS_SHOWN - 1).map((v) => `also: ${v.detail}`);
  const more = rest.length - (REASONS_SHOWN - 1);
  if (more > 0) details.push(`and ${more} more reasons, listed in ${spell(door, 'allReasons')}`);
  // The refusal's own source is its first reason's rule: run.ts locates both (file, line) once the profile is known.
  return new SbxError(refusalCode(violations), first!.detail, {
    hint: refusalHint(door, first!),
    violations,
    details,
    ...(first!.source ? { source: first!.source } : {}),
  });
}

/**
 * The rules' verdict on the policy's command, with the path facts it needs probed now. No approval is
 * asked. `withRules`: name the rules that let it run or asked (`sbx why`).
 */
export function decideCommandOnHost(
  policy: Policy,
  host: Host,
  allowDenylisted: boolean,
  withRules = false,
): CommandDecision {
  const rules = policy.commands;
  const workspace = { host: policy.workspace.host, sandbox: policy.workspace.sandbox };
  // Relative arguments resolve where the command starts (policy.cwd, inside), seen from the host: the
  // invoking directory's place in the workspace, a start directory the caller chose (`sbx mcp`'s `cwd`,
  // the chdir run option), else the workspace root.
  const base = isWithin(policy.cwd, workspace.sandbox)
    ? posix.join(workspace.host, posix.relative(workspace.sandbox, policy.cwd))
    : workspace.host;
  // Only derivePolicy sets `shell`, and only from a shell string it turned into `command` itself.
  const command: CommandLine =
    policy.shell !== undefined ? { kind: 'shell', script: policy.shell } : { kind: 'argv', argv: policy.command };
  // Outside the workspace, the sandbox's private /tmp and HOME and the profile's read-only binds may be named.
  const guarded = { ...workspace, roots: rootsOf(policy.mounts) };
  // What `$NAME` and `~` yield in the string: the command's environment, which the policy fixes.
  const values = { vars: policy.env.vars, secrets: policy.env.secrets };
  const network = policy.network.kind;
  return decideCommand({
    rules,
    command,
    mode: policy.mode,
    network,
    allowDenylisted,
    workspace: guarded,
    base,
    paths: probePaths(pathsToCheck(command, rules, policy.mode, guarded, base, values)),
    values,
    ...(withRules ? { withRules } : {}),
    ...(gitRemotesNeeded(command, rules, network)
      ? { gitRemotes: readGitRemoteFacts(base, workspace.host, host) }
      : {}),
  });
}

/**
 * Returns when the command may run; throws the refusal (exit 126) otherwise. Every approval answer,
 * remembered or given, is in the ledger before anything runs: a crash after the answer keeps it.
 */
export async function admitCommand(input: GateInput): Promise<void> {
  const { policy, host } = input;
  const decision = decideCommandOnHost(policy, host, input.allowDenylisted);
  if (decision.verdict === 'deny') throw refusal(decision.violations, input.door);
  await approve(input, decision);
  // Named once the command may run, and before it starts: it would otherwise hang without a word.
  for (const use of decision.needsNetwork ?? []) input.onNotice?.(networkNotice(input.door, use));
}

/** Commands named in a hint: enough to choose from, bounded for a profile that allows hundreds. */
const ALLOWED_SHOWN = 40;

/**
 * The fix when nobody can approve: first what the caller can run instead (a model can act on that),
 * then who could approve, then the profile key that allows it for good.
 */
function approvalHint(input: GateInput): string {
  const names = Object.keys(input.policy.commands.allow).sort();
  const shown = names.slice(0, ALLOWED_SHOWN).join(' ') + (names.length > ALLOWED_SHOWN ? ' ...' : '');
  const instead = names.length > 0 ? `use a command this profile runs without asking (${shown}), or ` : '';
  return `${instead}${spell(input.door, 'askSomeone')}; to allow it for good, add it to the profile's commands.allow`;
}

/**
 * What an approval is for: each command of a shell string that needed one, as the rules read it (its
 * words, whatever the spacing or quoting around them, whatever else the string runs), else the argv
 * given. `uname -a` answered "always" runs unasked in `uname -a | head` too; `uname -s` is another
 * command (docs/DESIGN.md, "Approvals").
 */
function approvedCommands(policy: Policy, decision: CommandDecision): string[][] {
  const asked = (decision.commands ?? []).filter((c) => c.decision.verdict === 'ask').map((c) => c.argv);
  return asked.length > 0 ? asked : [[...policy.command]];
}

/** Returns when an approval was needed and given (or none was needed); throws the refusal otherwise. */
async function approve(input: GateInput, decision: CommandDecision): Promise<void> {
  if (decision.verdict !== 'ask') return;
  const { policy, host } = input;
  const { detail } = decision;
  const { fingerprintOf, lookupDecision, openApprovalStore, recordDecision, stateHomeOf } = await import(
    './approval-store.js'
  );
  const profile = policy.profile.name;
  const commands = approvedCommands(policy, decision).map((argv) => ({
    argv,
    fingerprint: fingerprintOf(profile, argv),
  }));
  /** One ledger record per command the answer is for. */
  const record = (
    decision: Extract<AuditRecord, { type: 'approval' }>['decision'],
    by: Extract<AuditRecord, { type: 'approval' }>['by'],
  ) => {
    if (!input.audit) return;
    for (const { argv, fingerprint } of commands)
      appendAuditRecordOrWarn(
        input.audit.file,
        {
          v: 1,
          time: new Date().toISOString(),
          type: 'approval',
          sessionId: input.sessionId,
          profile,
          argv: redactArgv(argv, input.secrets),
          fingerprint,
          decision,
          by,
        },
        input.onNotice,
      );
  };
  // Every question comes from `commands.default: ask` (commands/command-rules.ts): that line is the rule behind a denial.
  const source = { key: 'commands.default' };
  const denied = (why: string, hint: string) =>
    new SbxError('APPROVAL_DENIED', `${detail}: ${why}`, {
      hint,
      source,
      violations: [{ phase: 'preflight', kind: 'command', rule: 'approval', detail: `${detail}; ${why}`, source }],
    });

  const store = openApprovalStore({
    stateHome: stateHomeOf(host.env, host.home),
    uid: host.uid,
    workspace: policy.workspace.host,
  });
  const now = Date.now();
  const remembered = commands.map((c) => lookupDecision(store, profile, c.fingerprint, now));
  const refused = commands.find((_, i) => remembered[i] === 'deny');
  if (refused) {
    record('deny', 'stored');
    throw denied(
      'denied earlier for this profile (remembered for 10 minutes)',
      `change the command, wait for the denial to expire, or forget it: sbx approvals revoke ${refused.fingerprint.slice(0, 12)}`,
    );
  }
  if (remembered.every((r) => r === 'allow')) {
    record('always', 'stored');
    return;
  }
  const answer = input.approve ? await ask(input.approve, { argv: policy.command, profile, reason: detail }) : 'nobody';
  if (typeof answer === 'object') {
    record('refused', 'user');
    const hint = "an approver approves with 'once' or 'always' (all else refuses)";
    throw denied(`${badAnswer(answer)}, which refuses`, hint);
  }
  if (answer === 'nobody') {
    record('refused', input.approve ? 'no-tty' : 'policy');
    throw denied(
      input.approve
        ? 'needs approval, and there is no terminal to ask on'
        : `needs approval, and ${spell(input.door, 'approvalsOff')}`,
      approvalHint(input),
    );
  }
  record(answer, 'user');
  // Each command as the ledger has it (secrets redacted): what `sbx approvals list` shows.
  if (answer === 'always' || answer === 'deny')
    for (const { argv, fingerprint } of commands)
      await recordDecision(store, profile, fingerprint, answer, now, redactArgv(argv, input.secrets));
  if (answer === 'deny')
    throw denied(
      'denied by the user',
      "the denial is remembered for 10 minutes (`sbx approvals revoke` forgets it); to allow it for good, add it to the profile's commands.allow",
    );
  if (answer === 'deny-once')
    throw denied(
      'denied by the user, this time only',
      "nothing was remembered: the next run asks again; to allow it for good, add it to the profile's commands.allow",
    );
}
