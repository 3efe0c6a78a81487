// What a backend produces: exactly what will be spawned. `sbx explain` prints it; `run` spawns it.

/** An extra descriptor for the launcher, numbered from 3 in array order. */
export type ExtraFd =
  /** Data the launcher reads (bwrap --args, --seccomp): written to a pipe, then closed. */
  | { purpose: 'args' | 'seccomp'; data: Uint8Array }
  /** A pipe the launcher writes its status to (bwrap --json-status-fd). */
  | { purpose: 'status' }
  /**
   * A mount source, pinned: the descriptor the runtime opened when it checked `source` (host/pins.ts).
   * Never opened again by path: a run whose pin is missing fails.
   */
  | { purpose: 'bind'; source: string };

export interface Launch {
  file: string;
  args: string[];
  /** The launcher's own environment, exactly (nothing is inherited). */
  env: Record<string, string>;
  fds: ExtraFd[];
}

/** Per-run facts a backend needs besides the policy. */
export interface Session {
  id: string;
  /** Host directory owned by this run (removed at exit). */
  dir: string;
  /** An empty, read-only file in `dir`: the source of file masks. */
  emptyFile: string;
  /**
   * Values of the policy's `env.secrets`, by variable name, and the placeholders of its `credentials`
   * (random per run, so never in the Policy either). They travel with the rest of the environment on
   * a descriptor (never argv, never the Policy); explain passes placeholders.
   */
  secretEnv?: Record<string, string>;
  /**
   * The egress proxy's ports on the host's 127.0.0.1, when it listens there rather than on the session
   * directory's sockets (a backend without a network namespace: `Backend.egressOn`). Absent in a
   * planned session (`sbx explain`), which shows placeholders.
   */
  egressPorts?: { http: number; socks: number };
}

/** Where the runtime writes the content of the policy's `ordinal`-th `file` mount, for the backend to bind. */
export function dataFilePath(session: Session, ordinal: number): string {
  return `${session.dir}/file-${ordinal}`;
}

/** The host directory a `session-dir` mount shows: the session directory, or its `subdir`. */
export function sessionDirSource(session: Session, mount: { subdir?: string }): string {
  return mount.subdir === undefined ? session.dir : `${session.dir}/${mount.subdir}`;
}

/**
 * A signal sbx passed on because its user or caller asked: `user`, a SIGINT/SIGTERM/SIGHUP/SIGQUIT sent
 * to sbx (forwarded, or a terminal's ^C that reached the command directly); `caller`, the library's
 * AbortSignal (SIGTERM). The timeout's SIGTERM is not one: it is the policy's.
 */
export interface Interrupt {
  by: 'user' | 'caller';
  signal: number;
}
