// Stage 1, the run context: the caller's options with every default applied, and every ambient fact
// the run depends on (the invoking environment, cwd, who runs sbx, whether stdin is a terminal, the
// architecture, the node binary, sbx's own directories, where profiles are found), read here once and
// frozen. No later stage reads process.env, process.cwd(), process.stdin, process.execPath,
// process.arch or process.getuid (test/unit/pipeline/ambient.test.ts): a stage that could would let two
// stages of one run disagree (the limits once probed with process.env but applied with `hostEnv`).
import { realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SbxError } from '../errors.js';
import type { Policy } from '../policy/types.js';
import type { UserDirs } from '../policy/user-dirs.js';
import type { Door } from '../advice.js';
import type { ProfileSearch } from '../profile/host/load.js';
import { isCi } from '../profile/host/trust.js';
import { trustStoreFile } from '../profile/host/trust-store.js';
import { userDirs } from '../host/invoking-user.js';
import { detectProjectRoot } from '../workspace/host/project-root-probe.js';
import { isWithin } from '../path-within.js';
import { packageRoot } from '../package-root.js';
import { DEFAULT_CAPTURE_LIMIT_BYTES, type RunHooks, type RunOptions } from './run-options.js';

/** The options the context turns into facts: no stage reads them raw. */
type FactOptions = 'hostEnv' | 'cwd' | 'tty' | 'trustProfiles';

/** RunOptions as the stages read them: each default applied here and nowhere else (RunOptions' doc comments name them). */
export type RunSettings = Omit<RunOptions, FactOptions> &
  Required<Pick<RunOptions, 'profile' | 'allowDenylistedCommands' | 'stdio' | 'captureLimitBytes' | 'forwardSignals'>>;

export interface RunContext {
  /** The caller's options, defaulted. */
  readonly options: Readonly<RunSettings>;
  /** Which door the run came through: its hints name that door's flags or options (advice.ts). */
  readonly door: Door;
  /** Keep host walks warm between runs (the library: host/warm-cache.ts). */
  readonly warm: boolean;
  /** sbx's CLI: a check on the derived policy before anything is created or asked (RunHooks.checkPolicy). */
  readonly checkPolicy: ((policy: Policy) => void) | undefined;
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
  };
}

function definedOnly(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

/** Chain hashes named for one invocation: each a full sha256 (a prefix could be ground to collide). */
function trustedHashes(given: readonly string[], env: Record<string, string | undefined>): string[] {
  const fromEnv = (env.SBX_TRUST_PROFILE ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  const all = [...given, ...fromEnv];
  const bad = all.find((h) => !/^[0-9a-f]{64}$/.test(h));
  if (bad !== undefined) {
    const message = `--trust-profile / SBX_TRUST_PROFILE: "${bad}" is not a sha256 (64 lowercase hex digits)`;
    throw new SbxError('USAGE', message, {
      hint: 'use the chain hash `sbx trust NAME` or `sbx profiles show NAME` prints',
    });
  }
  return all;
}

function realOrUndefined(path: string | undefined): string | undefined {
  if (path === undefined || path === '') return undefined;
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The trees whose profile files are pinned like a project's (TrustContext.exposed): the cwd and its
 * project's top level (where an earlier plain `sbx run` from here wrote), the workspace asked for,
 * and in GitHub Actions the checkout. A tree that holds HOME is left out: no run may write it whole
 * (host-state/host-state.ts), and a file below it in a tree some run did write is the workspace's case.
 */
function exposedTrees(
  cwd: string,
  env: Record<string, string | undefined>,
  home: string,
  workspace: string | undefined,
): string[] {
  const real = realOrUndefined(cwd);
  const root = real ? detectProjectRoot(real, home, process.getuid?.() ?? 0)?.path : undefined;
  const checkout = env.GITHUB_ACTIONS === 'true' ? realOrUndefined(env.GITHUB_WORKSPACE) : undefined;
  const asked = workspace === undefined ? undefined : realOrUndefined(resolve(cwd, workspace));
  const realHome = realOrUndefined(home) ?? home;
  const trees = [real, root, asked].filter((t): t is string => t !== undefined && !isWithin(realHome, t));
  // The checkout is the pull request's even when HOME lies inside it (HOME=$GITHUB_WORKSPACE).
  return [...new Set([...trees, ...(checkout ? [checkout] : [])])];
}

/**
 * Where profiles are found, cached and trusted. `trustProfiles`: chain hashes trusted for this
 * invocation (CI); `workspace`: the one asked for, whose profile files need a pin.
 */
export function profileSearch(
  cwd: string,
  env: Record<string, string | undefined>,
  trustProfiles: readonly string[] = [],
  dirs: UserDirs = userDirs(env),
  workspace?: string,
): ProfileSearch {
  return {
    cwd,
    configHome: dirs.configHome,
    builtinDir: join(packageRoot(), 'profiles'),
    ...(env.SBX_NO_CACHE ? {} : { cacheDir: join(dirs.cacheHome, 'sbx') }),
    trust: {
      storeFile: trustStoreFile(dirs.stateHome),
      hashes: trustedHashes(trustProfiles, env),
      ci: isCi(env),
      exposed: exposedTrees(cwd, env, dirs.home, workspace),
    },
  };
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
    search: Object.freeze(profileSearch(cwd, env, requested.trustProfiles, dirs, requested.workspace)),
  });
}
