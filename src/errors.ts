// The error catalogue and exit codes. Imports nothing but a type: every layer may throw these.
import type { Violation, ViolationSource } from './policy/violation.js';

/** sbx's own exit codes. The child's code passes through untouched; these never mean "the child said so". */
export const ExitCode = {
  /**
   * `sbx why` only: a target it was asked about is not allowed (a path hidden or absent, a host denied,
   * a command denied or needing approval). It runs no command, so no child's status can mean this.
   */
  NOT_ALLOWED: 1,
  /** Bad command line (unknown flag, missing `--`, bad value). */
  USAGE: 2,
  /** The sandboxed command ran longer than its wall-clock timeout. */
  TIMEOUT: 124,
  /** The profile is invalid or the sandbox could not be built (no bwrap, userns off, bind source missing). */
  SETUP: 125,
  /** Refused by policy, or the command exists but is not executable. */
  DENIED: 126,
  /** The command was not found inside the sandbox. */
  NOT_FOUND: 127,
  /**
   * Library: the caller's AbortSignal fired before the command started, so nothing ran. 128+SIGTERM,
   * the status an abort during the run gives (the command gets SIGTERM); the outcome's setBy says sbx.
   */
  ABORTED: 143,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** Every error code sbx can raise, with its exit code. Codes are permanent: add, never rename. */
export const ErrorCatalogue = {
  USAGE: ExitCode.USAGE,
  PROFILE_NOT_FOUND: ExitCode.SETUP,
  PROFILE_PARSE: ExitCode.SETUP,
  PROFILE_INVALID: ExitCode.SETUP,
  PROFILE_CYCLE: ExitCode.SETUP,
  PROFILE_VARIABLE: ExitCode.SETUP,
  DANGER_NOT_ALLOWED: ExitCode.DENIED,
  ENV_RESERVED: ExitCode.DENIED,
  BIND_SOURCE_MISSING: ExitCode.SETUP,
  BIND_TARGET_INVALID: ExitCode.SETUP,
  WORKSPACE_INVALID: ExitCode.SETUP,
  BWRAP_MISSING: ExitCode.SETUP,
  NSJAIL_MISSING: ExitCode.SETUP,
  LANDLOCK_UNAVAILABLE: ExitCode.SETUP,
  USERNS_DISABLED: ExitCode.SETUP,
  SESSION_DIR: ExitCode.SETUP,
  SANDBOX_SETUP: ExitCode.SETUP,
  BACKEND_UNSUPPORTED: ExitCode.SETUP,
  COMMAND_NOT_FOUND: ExitCode.NOT_FOUND,
  COMMAND_NOT_EXECUTABLE: ExitCode.DENIED,
  REPORT_FD: ExitCode.USAGE,
  REPORT_FILE: ExitCode.USAGE,
  LIMIT_INVALID: ExitCode.SETUP,
  LIMIT_UNENFORCEABLE: ExitCode.SETUP,
  SECCOMP_INVALID: ExitCode.SETUP,
  SECCOMP_UNSUPPORTED_ARCH: ExitCode.SETUP,
  TIMEOUT: ExitCode.TIMEOUT,
  COMMAND_DENIED: ExitCode.DENIED,
  PATH_ESCAPE: ExitCode.DENIED,
  SHELL_SYNTAX: ExitCode.DENIED,
  APPROVAL_DENIED: ExitCode.DENIED,
  SECRET_UNAVAILABLE: ExitCode.SETUP,
  SECRET_STORE_UNSAFE: ExitCode.SETUP,
  SENSITIVE_SCAN_LIMIT: ExitCode.SETUP,
  AUDIT_FILE: ExitCode.USAGE,
  HOST_SETUP: ExitCode.SETUP,
  /** Library: an option of run()/compile() has the wrong type, an unknown key or a bad value. */
  OPTIONS_INVALID: ExitCode.USAGE,
  ABORTED: ExitCode.ABORTED,
  PROFILE_UNTRUSTED: ExitCode.SETUP,
  PROFILE_UNSAFE: ExitCode.SETUP,
  PROFILE_TOO_LARGE: ExitCode.SETUP,
  TRUST_STORE: ExitCode.SETUP,
  HOME_INVALID: ExitCode.SETUP,
  BIND_SOURCE_CHANGED: ExitCode.SETUP,
  UNIX_SOCKET_INVALID: ExitCode.SETUP,
  LAUNCH_TOO_LARGE: ExitCode.SETUP,
  /** A writable bind (the workspace too) overlaps HOME, sbx's own state or a file the host runs later. */
  HOST_STATE_WRITABLE: ExitCode.SETUP,
  /** A `.git` file claims a worktree whose shared git directory does not name it back (or is not a git directory). */
  GIT_WORKTREE_INVALID: ExitCode.SETUP,
  /** `ssh_agent` with no agent to filter: no SSH_AUTH_SOCK, or the agent does not answer. */
  SSH_AGENT_UNAVAILABLE: ExitCode.SETUP,
  /** An `ssh_agent.keys` entry names no key of the agent, or (a comment) several. */
  SSH_AGENT_KEY: ExitCode.SETUP,

  /** A `network.publish` port is already bound on the host's 127.0.0.1 (or on all its addresses). */
  PORT_IN_USE: ExitCode.SETUP,
  /**
   * sbx broke one of its own invariants (a bug, never the user's doing): the run is refused rather than
   * built on a guess. The hint asks for a report.
   */
  INTERNAL: ExitCode.SETUP,
  /** `sbx proxy` was given no allow-list to serve: the profile's network is none or host, and no --allow-domain. */
  PROXY_NO_ALLOW_LIST: ExitCode.USAGE,
  /** A `credentials` entry's source gave no usable value: an unset variable, an unsafe file, a failing command. */
  CREDENTIAL_UNAVAILABLE: ExitCode.SETUP,
  /** A credential's value would be in the sandbox anyway (its environment, the command line): the placeholder would protect nothing. */
  CREDENTIAL_EXPOSED: ExitCode.SETUP,
} as const satisfies Record<string, ExitCodeValue>;
export type ErrorCode = keyof typeof ErrorCatalogue;

export interface SourceLocation {
  file: string;
  line: number;
  col: number;
}

/** What was known of a run when sbx refused it or failed: the refusal report carries it. */
export interface RunFacts {
  sessionId: string;
  /** null: the profile itself failed to resolve. */
  profile: {
    name: string;
    file: string;
    hash: string;
    source: 'path' | 'project' | 'user' | 'builtin';
    shadows?: string;
  } | null;
  /** Set once a policy was derived. */
  policyHash?: string;
  backend?: 'bwrap' | 'nsjail' | 'landlock';
  /** The command as reported: secrets typed in it redacted, once the run knew them. */
  command?: string[];
  durationMs: number;
}

export interface SbxErrorInit {
  /** How to fix it: one line naming a flag, key or command. */
  hint?: string;
  location?: SourceLocation;
  /** Further lines (e.g. every schema issue after the first). */
  details?: string[];
  /** The rules that refused the run (command, path, approval refusals): for the report and the ledger. */
  violations?: Violation[];
  /** The profile key (or flag) whose rule refused the run: `writable_roots[2]`, `mode`, `--bind`. */
  source?: ViolationSource;
  cause?: unknown;
}

/** A failure of sbx itself (never of the sandboxed command), with a user-facing message and a stable exit code. */
export class SbxError extends Error {
  readonly code: ErrorCode;
  readonly exitCode: ExitCodeValue;
  readonly hint: string | undefined;
  readonly location: SourceLocation | undefined;
  readonly details: string[];
  readonly violations: Violation[];
  /** The rule behind a refusal; run() fills in its profile file and line once it knows them (profile/positions.ts). */
  source: ViolationSource | undefined;
  /** Set by run() (src/api.ts) on every SbxError it rejects with: the session, profile and policy known so far. */
  run: RunFacts | undefined;

  constructor(code: ErrorCode, message: string, init: SbxErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'SbxError';
    this.code = code;
    this.exitCode = ErrorCatalogue[code];
    this.hint = init.hint;
    this.location = init.location;
    this.details = init.details ?? [];
    this.violations = init.violations ?? [];
    this.source = init.source;
    this.run = undefined;
  }
}

export function isSbxError(value: unknown): value is SbxError {
  return value instanceof SbxError;
}
