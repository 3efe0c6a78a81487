// Stage 1, the run context: the caller's options with every default applied, and every ambient fact
// the run depends on (the invoking environment, cwd, who runs sbx, whether stdin is a terminal, the
// architecture, the node binary, sbx's own directories, where profiles are found), read here once and
// frozen. No later stage reads process.env, process.cwd(), process.stdin, process.execPath,
// process.arch or process.getuid (test/unit/pipeline/ambient.test.ts): a stage that could would let two
// stages of one run disagree (the limits once probed with process.env but applied with `hostEnv`).
import type { Policy } from '../policy/types.js';
import type { UserDirs } from '../policy/user-dirs.js';
import type { Door } from '../advice.js';
import type { SignalSource, StdioFrom } from '../backend/host/exec.js';
import type { ProfileSearch } from '../profile/host/load.js';
import { profileSearch } from '../profile/host/profile-search.js';
import { userDirs } from '../host/invoking-user.js';
import { DEFAULT_CAPTURE_LIMIT_BYTES, type RunHooks, type RunOptions } from './run-options.js';
import { DEFAULT_QUESTION_TIMEOUT_MS } from '../network/network-asks.js';

/** The options the context turns into facts: no stage reads them raw. */
type FactOptions = 'hostEnv' | 'cwd' | 'tty' | 'trustProfiles';

/** RunOptions as the stages read them: each default applied here and nowhere else (RunOptions' doc comments name them). */
export type RunSettings = Omit<RunOptions, FactOptions> &
  Required<
    Pick<
      RunOptions,
      | 'profile'
      | 'allowDenylistedCommands'
      | 'stdio'
      | 'captureLimitBytes'
      | 'forwardSignals'
      | 'networkRequestTimeoutMs'
    >
  >;

export interface RunContext {
  /** The caller's options, defaulted. */
  readonly options: Readonly<RunSettings>;
  /** Which door the run came through: its hints name that door's flags or options (advice.ts). */
  readonly door: Door;
  /** Keep host walks warm between runs (the library: host/warm-cache.ts). */
  readonly warm: boolean;
  /** sbx's CLI: a check on the derived policy before anything is created or asked (RunHooks.checkPolicy). */
  readonly checkPolicy: ((policy: Policy) => void) | undefined;
  /** RunHooks.onLaunch. */
  readonly onLaunch: ((sessionId: string) => void) | undefined;
  /** RunHooks.signals and RunHooks.stdioFrom: a warm server's caller stands in for this process. */
  readonly signals: SignalSource | undefined;
  readonly stdioFrom: StdioFrom | undefined;
  /** The run's id from its first stage: every record, refusal and report of the run carries it. */
  readonly sessionId: string;
  /** The invoking environment, defined values only: the one every stage filters, probes and applies with. */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly uid: number;
  readonly gid: number;
  /** HOME and the XDG directories, validated (policy/user-dirs.ts). */
  readonly dirs: Readonly<UserDirs>;
  /** Whether stdin is a terminal (`capture` runs never are): the backends decide the session by it. */
  readonly tty: boolean;
  /** Node's `process.arch`: the seccomp filter's architecture. */
  readonly arch: NodeJS.Architecture;
  /** The node binary running sbx: the egress bridge runs it, and its directory is host state. */
  readonly execPath: string;
  /** Where profiles are found, cached and trusted. */
  readonly search: Readonly<ProfileSearch>;
}

/** The defaults of RunOptions, applied once; the options a stage never reads raw are left out. */
export function runSettings(options: RunOptions): RunSettings {
  const { hostEnv: _env, cwd: _cwd, tty: _tty, trustProfiles: _trust, ...rest } = options;
  return {
    ...rest,
    profile: options.profile ?? 'default',
    allowDenylistedCommands: options.allowDenylistedCommands ?? false,
    stdio: options.stdio ?? 'inherit',
    captureLimitBytes: options.captureLimitBytes ?? DEFAULT_CAPTURE_LIMIT_BYTES,
    forwardSignals: options.forwardSignals ?? false,
    networkRequestTimeoutMs: options.networkRequestTimeoutMs ?? DEFAULT_QUESTION_TIMEOUT_MS,
  };
}

function definedOnly(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

/**
 * The one place a run reads its process: the ambient facts, each defaulted from the caller's option
 * when it gave one (`hostEnv`, `cwd`, `tty`). Throws USAGE for a malformed trusted hash. `options`:
 * the settings of `requested` when the caller needed them first (run.ts opens the ledger with them).
 */
export function runContext(
  requested: RunOptions,
  hooks: RunHooks,
  sessionId: string,
  options: RunSettings = runSettings(requested),
): RunContext {
  const env = Object.freeze(definedOnly(requested.hostEnv ?? process.env));
  const cwd = requested.cwd ?? process.cwd();
  const dirs = Object.freeze(userDirs(env));
  return Object.freeze({
    options: Object.freeze(options),
    door: hooks.door ?? 'library',
    warm: hooks.warm ?? false,
    checkPolicy: hooks.checkPolicy,
    onLaunch: hooks.onLaunch,
    signals: hooks.signals,
    stdioFrom: hooks.stdioFrom,
    sessionId,
    env,
    cwd,
    uid: process.getuid?.() ?? 0,
    gid: process.getgid?.() ?? 0,
    dirs,
    // A captured run's stdin is a pipe whatever this process's is.
    tty: options.stdio === 'capture' ? false : (requested.tty ?? Boolean(process.stdin.isTTY)),
    arch: process.arch,
    execPath: process.execPath,
    search: Object.freeze(
      profileSearch(cwd, env, process.getuid?.() ?? 0, {
        trustProfiles: requested.trustProfiles ?? [],
        dirs,
        ...(requested.workspace !== undefined ? { workspace: requested.workspace } : {}),
      }),
    ),
  });
}
