// A Violation is every refusal and every enforced limit that fired. Plain data: it goes to the
// human summary, the JSON report and the audit ledger unchanged. Imports nothing.

export type ViolationPhase = 'preflight' | 'runtime';

export type ViolationKind =
  | 'policy' // a profile or CLI request refused by a rule (danger without --danger, reserved env, ...)
  | 'command' // command rules
  | 'path' // path guards
  | 'env' // environment rules
  | 'timeout'
  | 'oom'
  | 'pids'
  | 'cpu-time'
  | 'file-size'
  | 'seccomp'
  | 'signal'
  | 'network';

export interface Violation {
  phase: ViolationPhase;
  kind: ViolationKind;
  /** Stable rule id, e.g. `limits.memory`, `env.reserved`, `network.deny`. */
  rule: string;
  /** One line for humans. Never contains a secret value. */
  detail: string;
  /** The limit that fired, as configured (e.g. `512MiB`), when the violation is a limit. */
  limit?: string;
  /** Network violations: the destination refused. */
  host?: string;
  port?: number;
}
