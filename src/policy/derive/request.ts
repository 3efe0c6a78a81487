// The request: what the caller adds to the profile. CompileOptions extends it (pipeline/run-options.ts),
// so both doors (CLI flags, library options) reach the probe plan and derivePolicy as this one shape.
import type { LimitOverrides } from '../../limits/parse-limits.js';
import type { Credentials } from '../../profile/schema-credentials.js';

/** What the caller asks for on top of the profile (CLI flags or library options). */
export interface RunRequest {
  /** The command and its arguments; may be empty (or absent) when `shell` is given. */
  command?: string[];
  /**
   * A shell string to run instead (`--shell`), with the system shell: under `shell_syntax:
   * restricted` each of its commands is judged by the command rules, not the shell.
   */
  shell?: string;
  workspace?: string;
  /**
   * The directory the command starts in: an absolute host path inside the workspace. Unlike the
   * caller's cwd it resolves nothing of the profile (relative paths and `${cwd}` stay where the cwd
   * puts them), so a caller (`sbx mcp`) can move the command without moving the policy. Default:
   * the cwd's place in the workspace.
   */
  chdir?: string;
  binds?: { source: string; target?: string; access: 'ro' | 'rw' }[];
  /** Extra variables (`--env K=V`). */
  env?: Record<string, string>;
  /** Extra names to inherit (`--keep-env NAME`). */
  keepEnv?: string[];
  network?: 'none' | 'host';
  /** `--allow-domain`: added to the profile's allow list (and turns `none` into a filtered network). */
  allowDomains?: string[];
  /** `--allow-private`: added to the profile's network.allow_private (an allow-list network only). */
  allowPrivate?: string[];
  /** `--danger`: the only way to get mode: danger. */
  danger?: boolean;
  /** `--allow-sensitive-roots`: credential stores may be bound, and are not masked. */
  allowSensitiveRoots?: boolean;
  /**
   * `--expose-workspace-secrets`: a backend that cannot hide a secret inside a granted tree (landlock)
   * runs anyway and lists it. A run option only: a repository's profile must not be able to ask for it.
   */
  exposeWorkspaceSecrets?: boolean;
  /** `--allow-denylisted-commands`: the command rules' deny list no longer refuses. */
  allowDenylistedCommands?: boolean;
  /** `--memory`, `--pids`, ...: override the profile's limits one by one; `none` lifts one. */
  limits?: LimitOverrides;
  /** `--tmp-size`: overrides tmp.size. */
  tmpSize?: string;
  /**
   * Credentials on top of the profile's, the same shape as its `credentials` key (a name the profile
   * has too is replaced): the library's and `sbx mcp`'s start options, never a tool argument.
   */
  credentials?: Credentials;
}
