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
  | 'network'
  /** A credential's placeholder (or value) in a request to a host not listed for it (network/credential-scan.ts). */
  | 'credential'
  /** Git state a later host git would act on that the command changed, repaired after it (src/git/; landlock's guard: hooks, config, .sbx). */
  | 'git-state';

/**
 * Where the rule that produced a violation was written: a profile file's line, or the CLI flag or
 * built-in default that stands in for one. `file` is absent when no profile line applies (a flag, a
 * default); `origin` then says which.
 */
export interface ViolationSource {
  /** The profile key path, e.g. `network.allow[2]`, `limits.memory`, `commands.deny[0]`. */
  key: string;
  /** The profile file that set it (absolute, as found: profile/host/load.ts), when a profile line applies. */
  file?: string;
  line?: number;
  col?: number;
  /** Who set the rule when no profile line did: a CLI flag (`--memory`) or sbx's built-in default. */
  origin?: 'profile' | 'flag' | 'default';
}

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
  /** The profile line (or flag, or default) behind the rule. */
  source?: ViolationSource;
}
