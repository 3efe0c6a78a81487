// How a run ended, decided in one place: from the raw facts (the status the launcher reported, sbx's
// timeout, the signals sbx passed on for its user or caller, what the limits and the proxy observed)
// to the exit code, who set it, the signal and the violations. Pure: the README's exit code table is
// this module, and test/unit/report/ending.test.ts holds one case per row of it.
import type { Interrupt } from '../backend/launch.js';
import { ErrorCatalogue, type ErrorCode, ExitCode } from '../errors.js';
import type { Violation, ViolationSource } from '../policy/violation.js';
import { signalName } from '../backend/shared/signals.js';

/** What became of a command that ran, as the backend read it from its launcher. */
export interface EndingFacts {
  /** The command's status: its exit code, or 128+N when it was killed by signal N. */
  status: number;
  /** sbx's wall-clock timeout fired and ended the sandbox. */
  timedOut: boolean;
  /** Signals sbx passed on because its user (Ctrl-C, a forwarded kill) or caller (an abort) asked. */
  interrupts: readonly Interrupt[];
  /** What the limits, the egress proxy and the launcher saw: an OOM kill, the task limit, a denied dial, ... */
  observed: readonly Violation[];
  /**
   * The limits that were enforced, by name (`timeout`, `cpu-time`, `file-size`, ...), as the user wrote
   * them: a signal is a limit firing only when that limit was set.
   */
  limits: Readonly<Record<string, string>>;
  /** A seccomp filter was installed: only then is a SIGSYS the filter's. */
  seccomp: boolean;
}

export interface Ending {
  exitCode: number;
  /** Who chose exitCode: the command, or sbx (its timeout, or a refusal before anything ran). */
  setBy: 'child' | 'sbx';
  /** The signal that ended the command, when its status says one did. */
  signal?: string;
  /** The user's or the caller's own signal ended the command: their choice, not a violation. */
  interruptedBy?: Interrupt['by'];
  violations: Violation[];
}

/**
 * Signals a limit or the filter delivers, and the setting that makes them so. Without that setting the
 * same signal came from elsewhere (or the command exited 128+N itself): a plain signal, never blamed
 * on a limit that was not set.
 */
const ENFORCED_BY: Record<string, { kind: Violation['kind']; rule: string; limit?: string }> = {
  SIGXCPU: { kind: 'cpu-time', rule: 'limits.cpu_time', limit: 'cpu-time' },
  SIGXFSZ: { kind: 'file-size', rule: 'limits.file_size', limit: 'file-size' },
  SIGSYS: { kind: 'seccomp', rule: 'seccomp' },
};

/** Kinds that already explain a kill: the kernel's OOM killer and the task limit act by signal. */
const KILLING_KINDS = new Set<Violation['kind']>(['oom', 'pids']);

/** The violation a signal is, if any: undefined when the observed violations already explain it. */
function signalViolation(signal: string, facts: EndingFacts): Violation | undefined {
  const by = ENFORCED_BY[signal];
  const enforced = by && (by.limit ? facts.limits[by.limit] !== undefined : facts.seccomp);
  if (by && enforced) {
    // The launcher may have named it already (nsjail logs a seccomp kill with its syscall).
    if (facts.observed.some((v) => v.kind === by.kind)) return undefined;
    const limit = by.limit ? facts.limits[by.limit] : undefined;
    return {
      phase: 'runtime',
      kind: by.kind,
      rule: by.rule,
      detail: `the command was killed by ${signal}`,
      ...(limit ? { limit } : {}),
    };
  }
  if (facts.observed.some((v) => KILLING_KINDS.has(v.kind))) return undefined;
  return { phase: 'runtime', kind: 'signal', rule: 'signal', detail: `the command was killed by ${signal}` };
}

/** How a command that ran ended. */
export function endingOf(facts: EndingFacts): Ending {
  const signalNumber = facts.status > 128 ? facts.status - 128 : undefined;
  const signal = signalNumber === undefined ? undefined : signalName(signalNumber);
  const violations = [...facts.observed];
  if (facts.timedOut) {
    const limit = facts.limits.timeout;
    violations.push({
      phase: 'runtime',
      kind: 'timeout',
      rule: 'limits.timeout',
      detail: `the command ran past its ${limit ?? ''} timeout and the sandbox was ended`,
      ...(limit ? { limit } : {}),
    });
    return { exitCode: ExitCode.TIMEOUT, setBy: 'sbx', ...(signal ? { signal } : {}), violations };
  }
  const interrupt = signal ? facts.interrupts.find((i) => i.signal === signalNumber) : undefined;
  if (interrupt) return { exitCode: facts.status, setBy: 'child', signal, interruptedBy: interrupt.by, violations };
  const fromSignal = signal ? signalViolation(signal, facts) : undefined;
  if (fromSignal) violations.push(fromSignal);
  return { exitCode: facts.status, setBy: 'child', ...(signal ? { signal } : {}), violations };
}

/** What a refusal carries: sbx's error code, its message and the rules that refused. */
export interface Refusal {
  code: ErrorCode;
  message: string;
  violations: readonly Violation[];
  /** The rule behind it, when one profile key (or flag) is (SbxError.source). */
  source?: ViolationSource | undefined;
}

/**
 * How a run that sbx refused (or could not build) ended: the code's exit status from the catalogue,
 * set by sbx. A policy refusal that names no rule becomes one policy violation, so a report of a
 * 126 always says which rule.
 */
export function refusalEnding(refusal: Refusal): Ending {
  const exitCode = ErrorCatalogue[refusal.code];
  const unnamed = exitCode === ExitCode.DENIED && refusal.code !== 'COMMAND_NOT_EXECUTABLE';
  const violations: Violation[] =
    refusal.violations.length > 0
      ? [...refusal.violations]
      : unnamed
        ? [
            {
              phase: 'preflight',
              kind: 'policy',
              rule: refusal.code.toLowerCase(),
              detail: refusal.message,
              ...(refusal.source ? { source: refusal.source } : {}),
            },
          ]
        : [];
  return { exitCode, setBy: 'sbx', violations };
}
