// What a run produced, as the library returns it.
import type { ProfileSource } from '../profile/positions.js';
import type { Violation } from '../policy/violation.js';

/** A captured stream as an agent may see it: bounded, scrubbed, with what was cut and redacted. */
export interface CapturedText {
  text: string;
  droppedBytes: number;
  /** Scrubbing rules that fired and how often (never the values). */
  redactions: { rule: string; count: number }[];
}

export interface Outcome {
  sessionId: string;
  /** source: builtin, user, project or path; shadows: the built-in of the same name it hides. */
  profile: { name: string; file: string; hash: string; source: ProfileSource; shadows?: string };
  backend: 'bwrap' | 'nsjail' | 'landlock';
  /** What the backend enforced differently from bwrap (landlock: no namespaces), one line each; absent when nothing. */
  approximations?: string[];
  /** What this run leaves open that the caller should know (TIOCSTI into their terminal), "topic: detail"; absent when nothing. */
  warnings?: string[];
  /** sha256 (16 hex) of the resolved Policy: two runs with the same hash had the same sandbox. */
  policyHash: string;
  command: string[];
  /** The status to exit with: the command's code, or 128+N when it was killed by signal N. */
  exitCode: number;
  /** Who chose exitCode: the command, or sbx (the timeout ended it: 124). */
  setBy: 'child' | 'sbx';
  /**
   * Each configured limit: `value` as written (`2GiB`), `base` in base units (bytes, tasks, CPUs, ms for
   * timeout, s for cpu-time), the mechanism that enforced it, whether exactly, whether at all, and
   * (when not exact) the reason no cgroup could.
   */
  limits?: {
    name: string;
    value: string;
    base: number;
    mechanism: string;
    exact: boolean;
    enforced: boolean;
    reason?: string;
  }[];
  /**
   * Resource peaks read from the session cgroup, when there was one; memory under the watchdog: the
   * highest sum it polled, every `memorySampledEveryMs` (faster near the limit), so approximate.
   */
  peaks?: { memoryBytes?: number; memorySampledEveryMs?: number; pids?: number };
  /** Filtered network: what went through the proxy (host, port, bytes), and refusals beyond the kept ones. */
  network?: {
    connections: { host: string; port: number; count: number; bytesIn: number; bytesOut: number }[];
    violationsDropped: number;
  };
  /** Set when the command was killed by a signal. */
  signal?: string;
  /**
   * Who sent that signal, when it was not the policy's: `user`, a signal sbx received (Ctrl-C, a kill
   * of sbx, forwarded); `caller`, the library's AbortSignal. Such an ending is no violation.
   */
  interruptedBy?: 'user' | 'caller';
  durationMs: number;
  violations: Violation[];
  /** Names (never values) of the environment variables kept out of the sandbox. */
  droppedEnv: string[];
  /** Names of the secrets injected from the profile's `secrets` (never values). */
  secrets: string[];
  /** Paths inside the sandbox hidden as sensitive files (.env, *.pem, .git/config, ...). */
  masked: string[];
  /** What this run let in that sbx keeps out by default, and who asked (empty lists: nothing). */
  lifted?: Lifted;
  /** Capture mode: the raw streams (up to 64 MiB each). */
  stdout?: Buffer;
  stderr?: Buffer;
  /** Capture mode: each stream bounded (captureLimitBytes) and scrubbed of secrets: what the JSON report carries. */
  captured?: { stdout: CapturedText; stderr: CapturedText };
}

/**
 * What a run lets in that sbx keeps out by default, and who asked for it. `unmasked`: host paths a
 * sensitive-file rule matched that the sandbox sees as they are, let in by the profile's
 * sensitive.except, the run's `unmask` (request), or their content (a certificate or public key).
 * `allowPrivate`: non-public addresses the egress proxy may dial, from network.allow_private or
 * the run's `allowPrivate`.
 */
export interface Lifted {
  /** `exposed`: a backend that cannot mask it (landlock), with the run's --expose-workspace-secrets. */
  unmasked: { path: string; by: 'profile' | 'request' | 'content' | 'exposed'; what?: 'certificate' | 'public key' }[];
  allowPrivate: { address: string; by: 'profile' | 'request' }[];
}
