// What a backend is: one typed unit per launcher (bwrap/, nsjail/, landlock/, each with its pure
// compiler, gaps and status reading beside its `backend.ts`), behind one interface. Generic in its
// launcher, so a unit's compile, read and describe receive the launcher it probed, never another's:
// backend/host/registry.ts pairs them once. Part of the shell (it names backend/host/exec.ts's results), like
// the units' backend.ts files; the compilers stay pure.
import type { CommandLimits, LauncherLimits } from '../../limits/types.js';
import type { Policy } from '../../policy/types.js';
import type { Host } from '../../policy/host.js';
import type { Violation } from '../../policy/violation.js';
import type { EndingFacts } from '../../report/ending.js';
import type { ExecOptions, ExecResult } from './exec.js';
import type { Launch, Session } from '../launch.js';

export type BackendName = 'bwrap' | 'nsjail' | 'landlock';
export type BackendChoice = BackendName | 'auto';

/** What every probed launcher says: which backend, the binary, its version, and who chose it. */
export interface LauncherBase {
  backend: BackendName;
  path: string;
  version: string;
  chosenBy: BackendChoice;
}

/** How backend/host/exec.ts supervises a launcher: which of its results a launch can end in. */
export type Supervision = NonNullable<ExecOptions['supervision']>;

/**
 * The results backend/host/exec.ts returns under a supervision: a launcher with a status descriptor either
 * reports the command (`ran`) or failed to build the sandbox; a supervising one's log says which.
 */
export type ExecResultUnder<S extends Supervision> = S extends 'supervisor'
  ? Extract<ExecResult, { kind: 'supervised' }>
  : Exclude<ExecResult, { kind: 'supervised' }>;

export interface ProbeContext {
  env: Record<string, string | undefined>;
  /** sbx's cache directory (probe results keyed by the launcher binary), when caching is on. */
  cacheDir: string | undefined;
  uid: number;
  choice: BackendChoice;
  /**
   * Trees a run or a pull request may have written (TrustContext.exposed): a launcher found on PATH
   * in one of them is refused, never run (host/host-probe.ts findOnPath).
   */
  exposed?: readonly string[];
}

/** What a launch that ran tells: everything the ending needs but what the policy says. */
export type LaunchResult = Pick<EndingFacts, 'status' | 'timedOut' | 'interrupts'> & {
  durationMs: number;
  /** Violations only the launcher knows of (nsjail's log: its time limit, a seccomp kill). */
  observed: Violation[];
  stdout?: Buffer;
  stderr?: Buffer;
  /** Capture mode: the last bytes of a stream that carried more than its head keeps (backend/host/exec.ts). */
  tails?: { stdout?: Buffer; stderr?: Buffer };
  streamBytes?: { stdout: number; stderr: number };
};

export interface BackendDescription {
  /** What `network: none` really holds under this backend. */
  networkNone: string;
  /** Where an allow-list network's sandbox side is: its own namespace, or (landlock) the host's network. */
  networkFilteredWhere: string;
  /** Syscalls its filter denies (in whole or for some arguments) beyond the policy's seccomp rules. */
  seccompAdded: string[];
  /** explain's closing lines: how sbx starts the launcher, then the launch as one can run or read it. */
  lines: string[];
}

/**
 * One backend. Properties, not methods: TypeScript checks a property's parameters strictly, so a
 * `Backend<BwrapLauncher>` is no `Backend<Launcher>` and cannot be handed another backend's launcher.
 */
export interface Backend<L extends LauncherBase, S extends Supervision = Supervision> {
  name: L['backend'];
  /** It creates user namespaces: where the host forbids them, `--backend auto` passes it by. */
  needsUserNamespaces: boolean;
  /**
   * Where the egress proxy listens (pipeline/egress-stage.ts): `session-dir`, on sockets the bridge inside the
   * sandbox's network namespace reaches; `loopback`, on the host's 127.0.0.1, where the launcher itself
   * connects the command (sbx-landlock's network judge) and host ports need no relay.
   */
  egressOn: 'session-dir' | 'loopback';
  /** Finds the launcher and checks that it can work; throws SbxError (125) when not. */
  probe: (ctx: ProbeContext) => Promise<L>;
  /** Policy → the exact launch. */
  compile: (policy: Policy, session: Session, launcher: L, host: Host, arch: NodeJS.Architecture) => Promise<Launch>;
  /** Who reports on the command (backend/host/exec.ts): the launcher's status descriptor, or the launcher as supervisor. */
  supervision: S;
  /**
   * The limits the launcher applies to the command alone, so that its own supervising process keeps
   * sbx's (no helper of sbx's shares a limit with the command it watches), and how a launch
   * is given them; null when sbx's wrapper applies them all, to the launcher itself (bwrap).
   */
  commandLimits: CommandLimitsUnit | null;
  /** How else the runtime spawns it (backend/host/exec.ts). */
  execOptions: (session: Session) => Pick<ExecOptions, 'fdDir' | 'launcherKill'>;
  /** How the launch ended; a sandbox that was never built is thrown as its SbxError. */
  read: (result: ExecResultUnder<S>, host: Host, launcher: L) => Promise<LaunchResult>;
  /** What it refuses or enforces more weakly than bwrap for this policy, one line each (explain). */
  gaps: (policy: Policy) => Promise<string[]>;
  /** What a run of this policy gets approximately (the report lists them): its `weaker` gaps in use; none for bwrap. */
  approximations: (policy: Policy) => Promise<string[]>;
  /** Paths the policy masks that it leaves readable (landlock with --expose-workspace-secrets); none for bwrap. */
  exposed: (policy: Policy) => Promise<string[]>;
  /** The launch as a reviewer reads it (explain --json `argv`). */
  expand: (launch: Launch) => Promise<string[]>;
  /** What `sbx explain` prints of this backend: how it holds network none, the seccomp rules it adds, the launch. */
  describe: (
    policy: Policy,
    launch: Launch,
    launcher: L,
    quote: (argv: string[]) => string,
  ) => Promise<BackendDescription>;
}

/** A launcher's share of the limits (Backend.commandLimits). */
export interface CommandLimitsUnit {
  /** What it applies: the wrapper (limits/host/cgroup/apply.ts) leaves these out. */
  applies: LauncherLimits;
  /** The launch with this run's values of them in it (the wrapper's `command`). */
  into: (launch: Launch, limits: CommandLimits) => Promise<Launch>;
}

/** bwrap and nsjail: `network: none` is a network namespace of its own. */
export const OWN_NAMESPACE = {
  networkNone: 'none (own namespace, loopback only)',
  networkFilteredWhere: 'own namespace',
};

function capturedOf(result: ExecResult): Pick<LaunchResult, 'stdout' | 'stderr' | 'tails' | 'streamBytes'> {
  if (result.kind === 'setup-failed' || !result.stdout) return {};
  return {
    stdout: result.stdout,
    stderr: result.stderr!,
    ...(result.tails ? { tails: result.tails } : {}),
    ...(result.streamBytes ? { streamBytes: result.streamBytes } : {}),
  };
}

/** The common case: the launcher reported the command's status (bwrap's and sbx-landlock's status fd). */
export function ranResult(result: Extract<ExecResult, { kind: 'ran' }>): LaunchResult {
  const { code: status, timedOut, durationMs, interrupts } = result;
  return { status, timedOut, durationMs, interrupts, observed: [], ...capturedOf(result) };
}

/** A supervising launcher's (nsjail's) run: the status its log gave, with what was captured. */
export function supervisedResult(
  result: ExecResultUnder<'supervisor'>,
  ended: Pick<LaunchResult, 'status' | 'timedOut' | 'observed'>,
): LaunchResult {
  return { ...ended, durationMs: result.durationMs, interrupts: result.interrupts, ...capturedOf(result) };
}

/** The launcher's last line of complaint, or where to find it. */
export function lastWords(result: Extract<ExecResult, { kind: 'setup-failed' }>): string {
  return result.stderr ? `: ${result.stderr.toString().trim().split('\n').pop()}` : '; its message is above';
}
