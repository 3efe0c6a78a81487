// What a run produced, as the library returns it.
import type { Violation } from '../policy/violation.js';

export interface Outcome {
  sessionId: string;
  profile: { name: string; file: string; hash: string };
  backend: 'bwrap' | 'nsjail';
  command: string[];
  /** The status to exit with: the command's code, or 128+N when it was killed by signal N. */
  exitCode: number;
  /** Who chose exitCode: the command, or sbx (the timeout ended it: 124). */
  setBy: 'child' | 'sbx';
  /** Each configured limit and the mechanism that enforced it. */
  limits?: { name: string; value: string; mechanism: string; exact: boolean }[];
  /** Resource peaks read from the session cgroup, when there was one. */
  peaks?: { memoryBytes?: number; pids?: number };
  /** Filtered network: what went through the proxy (host, port, bytes), and refusals beyond the kept ones. */
  network?: { connections: { host: string; port: number; count: number; bytesIn: number; bytesOut: number }[]; violationsDropped: number };
  /** Set when the command was killed by a signal. */
  signal?: string;
  durationMs: number;
  violations: Violation[];
  /** Names (never values) of the environment variables kept out of the sandbox. */
  droppedEnv: string[];
  stdout?: Buffer;
  stderr?: Buffer;
}
