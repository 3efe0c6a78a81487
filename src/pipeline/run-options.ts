// What a caller asks of a run (the library's options, which the CLI builds too) and what compile()
// returns. The defaults are applied once, where the pipeline starts (pipeline/context-stage.ts), never in
// the stage that reads them.
import type { RunRequest } from '../policy/derive/request.js';
import type { Lifted } from '../report/outcome.js';
import type { Policy } from '../policy/types.js';
import type { ProfileSource } from '../profile/positions.js';
import type { Approver } from '../commands/host/command-gate.js';
import type { SignalSource, StdioFrom, StdioMode } from '../backend/host/exec.js';
import type { Launch } from '../backend/launch.js';
import type { CommandDecision } from '../commands/command-rules.js';
import type { BackendChoice, Launcher } from '../backend/host/registry.js';
import type { Door } from '../advice.js';
import type { NetworkAsker, NetworkRequest } from '../network/network-asks.js';

export interface CompileOptions extends RunRequest {
  /**
   * Globs (relative to each mounted tree, as in the profile's sensitive.except) of files shown though a
   * sensitive-file rule would mask them, for this run only (`--unmask`). The report lists what they let in.
   */
  unmask?: string[];
  /** Profile name or path. Default: `default`. */
  profile?: string;
  /** The launcher; overrides the profile's `backend`. auto: bwrap when installed, else nsjail. Default: bwrap. */
  backend?: BackendChoice;
  /** Working directory (default: process.cwd()). Also the default workspace. */
  cwd?: string;
  /** The environment to filter for the child (default: process.env). Never passed through wholesale. */
  hostEnv?: Record<string, string | undefined>;
  /** Whether stdin is a terminal (default: detected; `capture` runs never are). */
  tty?: boolean;
  /**
   * sha256 chain hashes of project profiles trusted for this call only (CI), besides the user's pins
   * (`sbx trust`) and SBX_TRUST_PROFILE in hostEnv. A project profile trusted by none is refused.
   */
  trustProfiles?: string[];
  /** Called once the profile is resolved and trusted, before anything runs (the CLI reports a shadowed built-in). */
  onProfile?: (profile: ProfileInfo) => void;
}

/** Which profile a run uses and where it came from. */
export interface ProfileInfo {
  name: string;
  file: string;
  source: ProfileSource;
  /** sha256 over every file of its chain: what `sbx trust` pins and --trust-profile names. */
  hash: string;
  /** The built-in profile of the same name this project or user profile hides. */
  shadows?: string;
}

export interface RunOptions extends CompileOptions {
  /** inherit (default): the child uses this process's stdio. capture: collected into the outcome. ignore: /dev/null. */
  stdio?: StdioMode;
  /** stdin bytes for capture mode. */
  input?: Uint8Array | string;
  /**
   * Ends the sandbox (SIGTERM to the command, as on Ctrl-C, then after a 2 s grace SIGKILL to the whole
   * sandbox, as the timeout does): the outcome says `interruptedBy: 'caller'` and has no violation. Already aborted, or aborted before the command starts: nothing runs, and
   * run() rejects with SbxError ABORTED.
   */
  signal?: AbortSignal;
  /** CLI only: pass SIGINT/SIGTERM/SIGHUP received by this process to the command. */
  forwardSignals?: boolean;
  /** Name resolution for the egress proxy (default: the system resolver). For tests and pinned DNS. */
  resolve?: (host: string) => Promise<string[]>;
  /** Capture mode: bytes of each stream kept in `outcome.captured`, after scrubbing. Default: 16 KiB. */
  captureLimitBytes?: number;
  /**
   * Append a record of this run (and of every approval answer) to this JSONL audit ledger. Default:
   * none; the CLI passes $XDG_STATE_HOME/sbx/audit.jsonl. A ledger that cannot be written is a
   * warning on stderr, never a failed run.
   */
  audit?: { file: string };
  /**
   * Asked when the profile's command rules say `default: ask` and no rule allows the command.
   * Without it such a command is refused (APPROVAL_DENIED). The CLI asks on the terminal. Only the
   * answers 'once' and 'always' approve; anything else (a throw included) refuses.
   */
  approve?: Approver;
  /**
   * Asked, while the command runs, whether it may reach a host and port the profile's `network.allow`
   * does not match (under an allow-list network only; a `network.deny` hit or a private address is
   * refused unasked). The connection waits for the answer: 'once' allows it for the rest of the run,
   * 'always' too and remembers it for later runs of this profile in the user's approvals store,
   * 'deny' (and anything else, a throw included) refuses it for the rest of the run. Each answer goes
   * to the audit ledger. Without it such a destination is refused, as ever. The CLI asks on the
   * terminal with `--capture`; `sbx mcp` through MCP elicitation.
   */
  onNetworkRequest?: NetworkAsker;
  /** How long a question of onNetworkRequest may stay unanswered before it counts as a denial. Default: 120000 (2 minutes). */
  networkRequestTimeoutMs?: number;
  /**
   * Told, before the command starts, of a failure sbx foresees but does not refuse, or a risk it
   * warns of: one line each (a package manager's install in a sandbox without network will fail or
   * hang; a terminal no filter guards, pipeline/terminal.ts). The CLI prints them on stderr; without
   * it they are not shown (warnings are in the report too).
   */
  onNotice?: (line: string) => void;
}

/** How the doors drive the pipeline; not options a library caller sets. */
export interface RunHooks {
  /** sbx's CLI: a check on the derived policy before anything is created or asked; throwing refuses the run (e.g. a --report-file the sandbox could write). */
  checkPolicy?: (policy: Policy) => void;
  /** The library: keep host walks warm between runs of this process (host/warm-cache.ts). */
  warm?: boolean;
  /** Which door the run came through; its hints name that door's flags or options (advice.ts). Default: library. */
  door?: Door;
  /** `sbx mcp`'s `start`: told when the sandbox is about to be spawned, everything judged and set up. */
  onLaunch?: (sessionId: string) => void;
  /** The warm server's runs (cli/warm/warm-run.ts): where forwarded signals come from, instead of this process. */
  signals?: SignalSource;
  /** The warm server's runs: the caller's stdio, sent by the caller (backend/host/exec.ts StdioFrom). */
  stdioFrom?: StdioFrom;
}

export const DEFAULT_CAPTURE_LIMIT_BYTES = 16 * 1024;

/** What compile() returns: the resolved policy and the exact launch, without running anything. */
export interface Compiled {
  sessionId: string;
  profile: ProfileInfo;
  policy: Policy;
  /**
   * Exactly what run() would spawn: the launcher's launch, started through the limits wrapper
   * (limits/host/cgroup/trampoline.ts: a shell, or a systemd scope, that moves itself into the run's cgroup
   * and sets its rlimits, then execs the launcher) when the policy has limits. With nothing to wrap it,
   * or limits run() would refuse, the launcher's launch alone.
   */
  launch: Launch;
  /** When `launch` is wrapped: the launcher's own launch (what `sbx explain` expands), its file and args the tail of `launch`'s. */
  launcherLaunch?: Launch;
  launcher: Launcher;
  /** What the command rules say of this command (an `ask` is put to the user only by run()). */
  commandDecision: CommandDecision;
  /** What this run lets in that sbx keeps out by default, and who asked for it. */
  lifted: Lifted;
  /**
   * Under an allow list, the destinations you answered `always` for this profile in earlier runs
   * (your approvals store): a run lets them in too. Empty for another network.
   */
  remembered: NetworkRequest[];
}

export type { Lifted };
