// The library door (`import { run, compile } from 'sbx-sandbox'`) and the pipeline the CLI uses:
// profile → policy → launch → exec → outcome.
import { createHash } from 'node:crypto';
import { mkdirSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileBwrap } from './backend/bwrap.js';
import type { Launch, Session } from './backend/launch.js';
import { ExitCode, isSbxError, SbxError, type RunFacts } from './errors.js';
import type { LimitPlan, PlannedLimit } from './limits/plan.js';
import type { PreparedLimits } from './runtime/cgroup/apply.js';
import type { EgressProxy } from './runtime/network/index.js';
import {
  derivePolicy,
  pathsToProbe,
  requestedWorkspace,
  rootOnlyScanRoots,
  sbxOwnDirs,
  sensitiveScanRoots,
  type RunRequest,
} from './policy/derive.js';
import { isWithin } from './policy/sensitive.js';
import type { Host } from './policy/host.js';
import type { Policy } from './policy/types.js';
import { shellArgv } from './policy/command-line.js';
import type { Violation } from './policy/violation.js';
import type { CapturedText, Outcome } from './report/outcome.js';
import { redactArgv } from './report/ledger.js';
import { openAuditTrail, type AuditTrail, type RunContext } from './runtime/audit-trail.js';
import { isCredentialName } from './policy/env.js';
import { loadProfile, type ProfileSearch, type ProfileSource, type ResolvedProfile } from './profile/load.js';
import { trustStoreFile } from './profile/trust-store.js';
import type { Variables } from './profile/variables.js';
import { checkCommand } from './runtime/command.js';
import { gateCommand, judgeCommand, type Approver } from './runtime/command-gate.js';
import type { CommandDecision } from './preflight/command-rules.js';
import { execLaunch, type ExecResult, type Interrupt, type StdioMode } from './runtime/exec.js';
import { probeBwrap, probeNsjail, scanRootOnly, type BwrapInfo } from './runtime/host.js';
import { openPins, type Pins } from './runtime/pins.js';
import { newSessionId, openSession, sessionBase, writeFileMounts } from './runtime/session.js';
import { loadSensitiveRules, scanMountedTrees } from './runtime/sensitive-scan.js';
import { userDirs } from './runtime/user-dirs.js';
import { VERSION } from './version.js';
import { hostSeccompArch } from './seccomp/index.js';

export { SbxError, ExitCode } from './errors.js';
export type { Policy, Mount } from './policy/types.js';
export type { Violation } from './policy/violation.js';
export type { Outcome } from './report/outcome.js';
export type { Launch } from './backend/launch.js';
export type { RunRequest } from './policy/derive.js';
export type { ApprovalAnswer, ApprovalRequest, Approver } from './runtime/command-gate.js';
export type { RunFacts } from './errors.js';
export type { CommandDecision } from './preflight/command-rules.js';
export { VERSION } from './version.js';
export { appendAuditRecord, readAuditRecords, ledgerPath, type AuditRecord } from './report/ledger.js';

export type BackendChoice = 'bwrap' | 'nsjail' | 'landlock' | 'auto';

export interface CompileOptions extends RunRequest {
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
   * Ends the sandbox (SIGTERM to the command, as on Ctrl-C): the outcome says `interruptedBy: 'caller'`
   * and has no violation. Already aborted, or aborted before the command starts: nothing runs, and
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
}

/** sbx's own CLI only (src/cli/run.ts): a check on the derived policy before anything is created or asked. */
export interface RunHooks {
  /** Throwing refuses the run (e.g. a --report-file the sandbox could write). */
  checkPolicy?: (policy: Policy) => void;
}

/** What run() learns as it goes: every refusal carries it (SbxError.run). */
type KnownFacts = Omit<RunFacts, 'durationMs'>;

export const DEFAULT_CAPTURE_LIMIT_BYTES = 16 * 1024;

/** The launcher binary a run uses. */
export type Launcher =
  | { backend: 'bwrap'; path: string; version: string; bwrap: BwrapInfo; chosenBy: BackendChoice }
  | { backend: 'nsjail'; path: string; version: string; chosenBy: BackendChoice }
  | { backend: 'landlock'; path: string; version: string; chosenBy: BackendChoice };

export interface Compiled {
  sessionId: string;
  profile: ProfileInfo;
  policy: Policy;
  launch: Launch;
  launcher: Launcher;
  /** What the command rules say of this command (an `ask` is put to the user only by run()). */
  commandDecision: CommandDecision;
}

function packageRoot(): string {
  // dist/api.js and src/api.ts both sit one level below the package root.
  return join(dirname(fileURLToPath(import.meta.url)), '..');
}

/** The landlock backend's helper, built from native/sbx-landlock.c by scripts/build.mjs. */
export function landlockHelperPath(): string {
  return join(packageRoot(), 'dist', 'sbx-landlock');
}

function cleanEnv(env: Record<string, string | undefined>): Record<string, string> {
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
    throw new SbxError(
      'USAGE',
      `--trust-profile / SBX_TRUST_PROFILE: "${bad}" is not a sha256 (64 lowercase hex digits)`,
      {
        hint: 'use the chain hash `sbx trust NAME` or `sbx profiles show NAME` prints',
      },
    );
  }
  return all;
}

/** Where profiles are found, cached and trusted. `trustProfiles`: chain hashes trusted for this invocation (CI). */
export function profileSearch(
  cwd: string,
  env: Record<string, string | undefined>,
  trustProfiles: readonly string[] = [],
): ProfileSearch {
  const dirs = userDirs(env);
  return {
    cwd,
    configHome: dirs.configHome,
    builtinDir: join(packageRoot(), 'profiles'),
    ...(env.SBX_NO_CACHE ? {} : { cacheDir: join(dirs.cacheHome, 'sbx') }),
    trust: { storeFile: trustStoreFile(dirs.stateHome), hashes: trustedHashes(trustProfiles, env) },
  };
}

interface Prepared {
  resolved: ResolvedProfile;
  policy: Policy;
  host: Host;
  launcher: Launcher;
  sessionId: string;
}

/**
 * The launcher asked for (flag, then profile, then bwrap). Fails closed: a named backend that is
 * missing is an error, never a silent switch; only `auto` falls back: from bwrap to nsjail when bwrap
 * is missing, and to landlock when neither is installed or no user namespace can be created here
 * (a container's seccomp profile, an outer sandbox).
 */
async function probeLauncher(
  choice: BackendChoice,
  env: Record<string, string | undefined>,
  cacheDir: string | undefined,
  uid: number,
): Promise<Launcher> {
  if (choice === 'nsjail') return { backend: 'nsjail', ...probeNsjail(env), chosenBy: choice };
  // The landlock probe loads only for landlock and auto runs that need it.
  const landlock = async () => {
    const { probeLandlock } = await import('./runtime/landlock-probe.js');
    return { backend: 'landlock' as const, ...probeLandlock(landlockHelperPath()), chosenBy: choice };
  };
  if (choice === 'landlock') return landlock();
  let bwrap: BwrapInfo;
  try {
    bwrap = probeBwrap(env, cacheDir);
  } catch (error) {
    if (choice !== 'auto' || !isSbxError(error)) throw error;
    try {
      return { backend: 'nsjail', ...probeNsjail(env), chosenBy: choice };
    } catch {
      try {
        return await landlock();
      } catch {
        const message = `--backend auto: neither bubblewrap, nsjail nor landlock is usable (bwrap: ${error.message})`;
        throw new SbxError(error.code, message, { ...(error.hint ? { hint: error.hint } : {}) });
      }
    }
  }
  const { userNamespacesBlocked } = choice === 'auto' ? await import('./runtime/landlock-probe.js') : {};
  if (userNamespacesBlocked?.(uid, bwrap.path, env)) return landlock();
  return { backend: 'bwrap', path: bwrap.path, version: bwrap.version, bwrap, chosenBy: choice };
}

/**
 * sbx's own directories that do not exist yet but lie in a tree the sandbox will mount: created now
 * (private, they are sbx's), so that they are masked or read-only inside instead of creatable by the
 * sandbox (a planted ~/.config/sbx/profiles/default.yaml would be the next run's policy).
 */
function createOwnDirs(dirs: string[], mountedTrees: string[], pins: Pins, paths: Host['paths']): void {
  for (const dir of dirs) {
    if (paths[dir]?.exists || !mountedTrees.some((tree) => isWithin(dir, tree))) continue;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (cause) {
      const message = `cannot create ${dir}, which the sandbox could otherwise create: ${(cause as Error).message}`;
      throw new SbxError('SESSION_DIR', message, { cause, hint: `create it yourself: mkdir -m 700 -p ${dir}` });
    }
    paths[dir] = pins.probe(dir);
  }
}

async function prepare(
  options: CompileOptions,
  pins: Pins,
  known: KnownFacts = { sessionId: newSessionId(), profile: null },
): Promise<Prepared> {
  const hostEnv = cleanEnv(options.hostEnv ?? process.env);
  const cwd = options.cwd ?? process.cwd();
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  const search = profileSearch(cwd, hostEnv, options.trustProfiles);
  const home = userDirs(hostEnv).home;
  const resolved = await loadProfile(options.profile ?? 'default', search, VERSION);
  known.profile = describeProfile(resolved);
  options.onProfile?.(known.profile);
  const choice = options.backend ?? resolved.profile.backend ?? 'bwrap';
  const launcher = await probeLauncher(choice, hostEnv, search.cacheDir, uid);
  known.backend = launcher.backend;

  const sessionId = known.sessionId;
  const baseVars = { home, cwd, session: sessionId };
  const workspace = requestedWorkspace(resolved.profile, options, baseVars);
  // Every path is pinned as it is probed: the checks run on the descriptor that will be mounted.
  const wsFact = pins.probe(workspace);
  const vars: Variables = { ...baseVars, workspace: wsFact.exists ? wsFact.real : workspace };
  const toProbe = pathsToProbe(resolved.profile, options, vars, hostEnv);
  const paths: Host['paths'] = Object.fromEntries(toProbe.map((p) => [p, pins.probe(p)]));
  // Every mounted tree is walked for secret-looking files (.env, *.pem, .git/config, ...) to mask.
  const scanRoots = sensitiveScanRoots(resolved.profile, options, vars).flatMap((path) => {
    const f = paths[path];
    return f?.exists && f.type === 'dir' ? [f.real] : [];
  });
  const own = sbxOwnDirs(vars, hostEnv);
  const mounted =
    resolved.profile.mode === 'danger' ? ['/'] : [...sensitiveScanRoots(resolved.profile, options, vars), ...scanRoots];
  createOwnDirs([own.config, own.state, own.cache], mounted, pins, paths);
  const sensitiveFiles =
    scanRoots.length > 0
      ? scanMountedTrees(scanRoots, await loadSensitiveRules(resolved.profile.sensitive ?? {}, search.cacheDir), {
          // The tree that will be mounted, not whatever the path holds by the time it is walked.
          walkVia: (root) => {
            const fd = pins.fdOf(root);
            return fd === undefined ? undefined : `/proc/self/fd/${fd}`;
          },
        })
      : { masks: [], protect: [], views: [] };
  // sbx's session directories hold every run's mask source (`empty`, bound by path) and egress
  // sockets: hidden wherever a bind would show them, so no sandbox can swap another run's files.
  const sessions = pins.probe(sessionBase(hostEnv, uid));
  const sessionMask = sessions.exists && sessions.type === 'dir' ? [{ path: sessions.real, dir: true }] : [];
  const sandboxKeepsRoot = uid === 0 && resolved.profile.user !== 'root' && resolved.profile.mode !== 'danger';
  const host: Host = {
    uid,
    gid,
    home,
    cwd,
    stdinIsTty: options.tty ?? Boolean(process.stdin.isTTY),
    env: hostEnv,
    paths,
    rootOnly: sandboxKeepsRoot ? scanRootOnly(rootOnlyScanRoots(resolved.profile, vars)) : [],
    sensitiveFiles: {
      masks: [...sensitiveFiles.masks, ...sessionMask],
      protect: sensitiveFiles.protect,
      views: sensitiveFiles.views,
    },
    bridge: { node: realpathSync(process.execPath), script: join(packageRoot(), 'dist', 'bridge.cjs') },
  };
  const policy = derivePolicy({
    profileName: resolved.name,
    profileHash: resolved.hash,
    profile: resolved.profile,
    request: options,
    host,
    vars,
  });
  // The mount sources nothing probed (git hooks the scan found, the egress bridge's files): pinned
  // now, and refused if they no longer resolve to themselves.
  for (const m of policy.mounts) {
    if (m.kind === 'bind' && pins.fdOf(m.source) === undefined) pins.pinExact(m.source, m.reason);
  }
  return { resolved, policy, host, launcher, sessionId };
}

function describeProfile(resolved: ResolvedProfile): ProfileInfo {
  return {
    name: resolved.name,
    file: resolved.location.file,
    source: resolved.location.source,
    hash: resolved.hash,
    ...(resolved.shadows ? { shadows: resolved.shadows } : {}),
  };
}

function plannedSession(env: Record<string, string | undefined>, uid: number, id: string): Session {
  const dir = join(sessionBase(env, uid), `${id}.${process.pid}`);
  return { id, dir, emptyFile: join(dir, 'empty') };
}

/** The policy compiled for the chosen launcher. nsjail does not search PATH: it gets the command's path inside. */
async function compileLaunch(p: Prepared, session: Session): Promise<Launch> {
  const arch = hostSeccompArch(process.arch);
  if (p.launcher.backend === 'bwrap') {
    return compileBwrap(p.policy, session, {
      path: p.launcher.path,
      features: p.launcher.bwrap.features,
      stdinIsTty: p.host.stdinIsTty,
      arch,
    });
  }
  if (p.launcher.backend === 'landlock') {
    const { compileLandlock } = await import('./backend/landlock.js');
    const { uid, gid, stdinIsTty } = p.host;
    return compileLandlock(p.policy, session, { path: p.launcher.path, stdinIsTty, arch, uid, gid });
  }
  const execPath = checkCommand(p.policy);
  // The nsjail compiler (and its status reader) load only for nsjail runs: bwrap launches skip them.
  const { compileNsjail } = await import('./backend/nsjail.js');
  return compileNsjail(p.policy, session, {
    path: p.launcher.path,
    stdinIsTty: p.host.stdinIsTty,
    arch,
    uid: p.host.uid,
    execPath,
  });
}

/** What the landlock backend enforces differently (the report lists it); its module loads for landlock runs only. */
async function landlockApproximationsOf(policy: Policy): Promise<string[]> {
  return (await import('./backend/landlock.js')).landlockApproximations(policy);
}

/** Resolve and compile without running: the policy and the exact launcher argv. */
export async function compile(options: CompileOptions): Promise<Compiled> {
  options = (await import('./api-options.js')).checkCompileOptions(options);
  const pins = openPins();
  try {
    return await compilePinned(options, pins);
  } finally {
    pins.close();
  }
}

async function compilePinned(options: CompileOptions, pins: Pins): Promise<Compiled> {
  const p = await prepare(options, pins);
  const hostEnv = options.hostEnv ?? process.env;
  const launch = await compileLaunch(p, plannedSession(hostEnv, p.host.uid, p.sessionId));
  const commandDecision = judgeCommand(p.policy, p.host, options.allowDenylistedCommands ?? false);
  return {
    sessionId: p.sessionId,
    profile: describeProfile(p.resolved),
    policy: p.policy,
    launch,
    launcher: p.launcher,
    commandDecision,
  };
}

/** What the launcher says became of the command: its status, or the SbxError for a sandbox that was never built. */
interface Ran {
  code: number;
  timedOut: boolean;
  durationMs: number;
  /** Violations only the launcher knows of (nsjail's log: its time limit, a seccomp kill). */
  violations: Violation[];
  /** Signals sbx passed on for its user or caller (ExecResult): a status of 128+N for one of them is theirs. */
  interrupts: Interrupt[];
  stdout?: Buffer;
  stderr?: Buffer;
  streamBytes?: { stdout: number; stderr: number };
}

async function interpret(
  result: ExecResult,
  uid: number,
  launcher: Launcher,
  env: Record<string, string | undefined>,
): Promise<Ran> {
  const bwrap = launcher.path;
  const captured =
    result.kind !== 'setup-failed' && result.stdout
      ? {
          stdout: result.stdout,
          stderr: result.stderr!,
          ...(result.streamBytes ? { streamBytes: result.streamBytes } : {}),
        }
      : {};
  if (result.kind === 'ran')
    return {
      code: result.code,
      timedOut: result.timedOut,
      durationMs: result.durationMs,
      violations: [],
      interrupts: result.interrupts,
      ...captured,
    };
  if (result.kind === 'supervised') {
    const { nsjailSetupError, parseNsjailStatus } = await import('./backend/nsjail-status.js');
    const status = parseNsjailStatus({ code: result.code, signal: result.signal }, result.log);
    if (!status.started) throw nsjailSetupError(status);
    // sbx's own timeout ended nsjail (SIGTERM): its log shows the signal, the run is a timeout all the same.
    const timedOut = result.timedOut || status.timedOut;
    const code = timedOut ? ExitCode.TIMEOUT : status.code;
    return {
      code,
      timedOut,
      durationMs: result.durationMs,
      violations: status.violations.filter((v) => v.kind !== 'timeout'),
      interrupts: result.interrupts,
      ...captured,
    };
  }
  if (launcher.backend === 'landlock') {
    const said = result.stderr ? `: ${result.stderr.toString().trim().split('\n').pop()}` : '; its message is above';
    const message = `sbx-landlock could not confine the command (exit ${result.code ?? result.signal})${said}`;
    throw new SbxError('SANDBOX_SETUP', message, {
      hint: 'see its configuration with `sbx explain --backend landlock -- CMD`; where user namespaces work, use bwrap',
    });
  }
  // The diagnosis loads only when bwrap failed: a successful launch never pays for it.
  const [{ diagnoseUserNamespaces }, { describeCause, isNamespaceFailure }] = await Promise.all([
    import('./runtime/host-facts.js'),
    import('./policy/host-diagnosis.js'),
  ]);
  const [cause] = isNamespaceFailure(result.stderr?.toString()) ? diagnoseUserNamespaces({ uid, bwrap, env }) : [];
  throw new SbxError(
    'SANDBOX_SETUP',
    `bwrap could not build the sandbox (exit ${result.code ?? result.signal})${result.stderr ? `: ${result.stderr.toString().trim().split('\n').pop()}` : '; its message is above'}`,
    {
      hint: cause ? describeCause(cause) : 'run `sbx doctor`, and `sbx explain -- CMD` to see the exact bwrap command',
    },
  );
}

const SIGNAL_NAMES: Record<number, string> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  3: 'SIGQUIT',
  4: 'SIGILL',
  6: 'SIGABRT',
  8: 'SIGFPE',
  9: 'SIGKILL',
  11: 'SIGSEGV',
  13: 'SIGPIPE',
  14: 'SIGALRM',
  15: 'SIGTERM',
  24: 'SIGXCPU',
  25: 'SIGXFSZ',
  31: 'SIGSYS',
};

/** Signals that are limits firing (rlimits deliver them), not plain kills. */
const SIGNAL_VIOLATIONS: Record<string, Pick<Violation, 'kind' | 'rule'>> = {
  SIGXCPU: { kind: 'cpu-time', rule: 'limits.cpu_time' },
  SIGXFSZ: { kind: 'file-size', rule: 'limits.file_size' },
  SIGSYS: { kind: 'seccomp', rule: 'seccomp' },
};

function hasLimits(limits: Policy['limits']): boolean {
  return Object.entries(limits).some(([key, value]) => key !== 'required' && value !== undefined);
}

/** A planned limit as the report shows it: what was asked, what enforced it, and why not exactly. */
function reportedLimit(l: PlannedLimit): NonNullable<Outcome['limits']>[number] {
  const { name, display: value, value: base, mechanism, exact, enforced, gap } = l;
  return { name, value, base, mechanism, exact, enforced, ...(gap ? { reason: gap } : {}) };
}

function policyHash(policy: Policy): string {
  return createHash('sha256').update(JSON.stringify(policy)).digest('hex').slice(0, 16);
}

/** Values the captured output must not show: injected secrets and every credential-named variable of the invoking environment. */
function scrubValues(host: Host, secretEnv: Record<string, string>): string[] {
  return [
    ...Object.values(secretEnv),
    ...Object.entries(host.env)
      .filter(([name]) => isCredentialName(name))
      .map(([, value]) => value),
  ];
}

/** Capture mode only: the scrubber's patterns are not loaded for a plain run. */
async function captureView(
  buf: Buffer,
  totalBytes: number,
  limitBytes: number,
  secrets: string[],
): Promise<CapturedText> {
  const { scrubCapture } = await import('./report/scrub.js');
  const { text, droppedBytes, hits } = scrubCapture(buf, limitBytes, { secrets }, totalBytes);
  return { text, droppedBytes, redactions: hits };
}

/**
 * Run a command in the sandbox. Rejects with SbxError when sbx itself fails (bad options, bad profile,
 * no sandbox, a refusal, an abort before the start); the error's `run` names the session.
 */
export async function run(options: RunOptions): Promise<Outcome> {
  return runUnchecked((await import('./api-options.js')).checkRunOptions(options));
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (!signal?.aborted) return;
  throw new SbxError('ABORTED', 'the run was aborted (options.signal) before the command started: nothing ran', {
    hint: 'the AbortSignal passed to run() had fired; call run() again with a signal that has not',
    cause: signal.reason,
  });
}

/**
 * run() without the option check: for sbx's own CLI, whose options come from its typed parser
 * (src/cli/options.ts) and which cannot afford zod on every launch. Library callers use run().
 */
export async function runUnchecked(options: RunOptions, hooks: RunHooks = {}): Promise<Outcome> {
  const started = performance.now();
  const known: KnownFacts = { sessionId: newSessionId(), profile: null };
  const trail = options.audit ? openAuditTrail(options.audit.file, options.profile ?? 'default') : undefined;
  // The pinned mount sources live as long as the run, whatever ends it.
  const pins = openPins();
  try {
    throwIfAborted(options.signal);
    const outcome = await runPrepared(options, trail, pins, known, hooks);
    trail?.ran(outcome);
    return outcome;
  } catch (error) {
    if (isSbxError(error)) {
      error.run ??= { ...known, durationMs: performance.now() - started };
      // Refusals are the records an auditor looks for first.
      trail?.refused(error, options.shell !== undefined ? shellArgv(options.shell) : (options.command ?? []));
    }
    throw error;
  } finally {
    pins.close();
  }
}

async function runPrepared(
  options: RunOptions,
  trail: AuditTrail | undefined,
  pins: Pins,
  known: KnownFacts,
  hooks: RunHooks,
): Promise<Outcome> {
  const stdio = options.stdio ?? 'inherit';
  const p = await prepare({ ...options, ...(stdio === 'capture' ? { tty: false } : {}) }, pins, known);
  const hash = policyHash(p.policy);
  known.policyHash = hash;
  hooks.checkPolicy?.(p.policy);
  throwIfAborted(options.signal);
  const audit: RunContext = {
    sessionId: p.sessionId,
    profile: p.resolved.name,
    policyHash: hash,
    backend: p.launcher.backend,
    workspace: p.policy.workspace.host,
    secrets: [],
  };
  trail?.prepared(audit, p.policy);
  const hostEnv = options.hostEnv ?? process.env;
  // Secret values are read only now, and only into the session: never the Policy, argv or a message.
  const secretEnv = p.resolved.profile.secrets?.length
    ? (
        await (
          await import('./runtime/secrets.js')
        ).loadSecrets(p.resolved.profile.secrets, {
          configHome: userDirs(hostEnv).configHome,
          env: hostEnv,
          uid: p.host.uid,
          workspace: p.policy.workspace.host,
        })
      ).vars
    : {};
  audit.secrets.push(...Object.values(secretEnv));
  known.command = redactArgv(p.policy.command, audit.secrets);
  // Refused before anything is created, and before anyone is asked to approve it: a command the
  // sandbox cannot see is 127, not a setup failure.
  checkCommand(p.policy);
  // The command rules, then (under `default: ask`) an approval: before anything is created.
  await gateCommand({
    policy: p.policy,
    host: p.host,
    sessionId: p.sessionId,
    allowDenylisted: options.allowDenylistedCommands ?? false,
    ...(options.approve ? { approve: options.approve } : {}),
    ...(options.audit ? { audit: options.audit } : {}),
    secrets: audit.secrets,
  });
  // The approval may have taken a while.
  throwIfAborted(options.signal);
  // Limits are planned before anything is created: a `required` limit this host cannot enforce
  // refuses the run here.
  // The cgroup machinery loads only for runs that have limits: the plain launch path stays lean.
  const limitsModules = hasLimits(p.policy.limits)
    ? await Promise.all([
        import('./limits/plan.js'),
        import('./runtime/cgroup/probe.js'),
        import('./runtime/cgroup/apply.js'),
      ])
    : undefined;
  const plan: LimitPlan | undefined =
    limitsModules && limitsModules[0].planLimits(p.policy.limits, limitsModules[1].probeCgroupFacts());
  const session = Object.assign(openSession(hostEnv, p.host.uid, p.sessionId), { secretEnv });
  let limits: PreparedLimits | undefined;
  let proxy: EgressProxy | undefined;
  try {
    writeFileMounts(session, p.policy.mounts);
    const net = p.policy.network;
    if (net.kind === 'filtered' && net.bridge) {
      // Only allow-list runs pay for the proxy; it listens before the sandbox starts.
      const { startEgressProxy } = await import('./runtime/network/index.js');
      proxy = await startEgressProxy({
        rules: net.rules,
        socketDir: session.dir,
        ...(options.resolve ? { resolve: options.resolve } : {}),
      });
    }
    let launch = await compileLaunch(p, session);
    if (plan && limitsModules) {
      const { prepareLimits, sweepStaleCgroups } = limitsModules[2];
      await sweepStaleCgroups();
      limits = await prepareLimits(plan, session, { env: hostEnv });
      launch = { ...launch, ...limits.wrap(launch) };
    }
    const nsjail = p.launcher.backend === 'nsjail';
    // Last check: execLaunch spawns synchronously, so an abort from here on reaches the running command.
    throwIfAborted(options.signal);
    const result = await interpret(
      await execLaunch(launch, {
        stdio,
        ...(options.input !== undefined ? { input: options.input } : {}),
        forwardSignals: options.forwardSignals ?? false,
        tty: p.host.stdinIsTty,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(p.policy.limits.timeoutMs !== undefined ? { timeoutMs: p.policy.limits.timeoutMs } : {}),
        ...(nsjail ? { launcher: 'nsjail' as const, fdDir: session.dir } : {}),
        pins,
      }),
      p.host.uid,
      p.launcher,
      p.host.env,
    );
    const collected = limits ? await limits.collect() : { violations: [], peaks: {} };
    const egress = proxy?.stats();
    const limitBytes = options.captureLimitBytes ?? DEFAULT_CAPTURE_LIMIT_BYTES;
    const scrub = result.stdout ? scrubValues(p.host, secretEnv) : [];
    const captured =
      result.stdout && result.stderr
        ? {
            stdout: await captureView(
              result.stdout,
              result.streamBytes?.stdout ?? result.stdout.length,
              limitBytes,
              scrub,
            ),
            stderr: await captureView(
              result.stderr,
              result.streamBytes?.stderr ?? result.stderr.length,
              limitBytes,
              scrub,
            ),
          }
        : undefined;
    const signal = result.code > 128 ? SIGNAL_NAMES[result.code - 128] : undefined;
    const violations: Violation[] = [...collected.violations, ...(egress?.violations ?? []), ...result.violations];
    // A signal whoever runs sbx sent (Ctrl-C, a kill forwarded by the CLI, the caller's abort) ended the
    // command: their choice, not a policy violation. The same signal from elsewhere stays one.
    const interrupt =
      result.code > 128 && !result.timedOut ? result.interrupts.find((i) => i.signal === result.code - 128) : undefined;
    if (result.timedOut) {
      const limit = plan?.limits.find((l) => l.name === 'timeout')?.display;
      violations.push({
        phase: 'runtime',
        kind: 'timeout',
        rule: 'limits.timeout',
        detail: `the command ran past its ${limit ?? ''} timeout and the sandbox was ended`,
        ...(limit ? { limit } : {}),
      });
    } else if (signal && !interrupt && SIGNAL_VIOLATIONS[signal]) {
      const v = SIGNAL_VIOLATIONS[signal]!;
      const limit = plan?.limits.find((l) => `limits.${l.name.replace('-', '_')}` === v.rule)?.display;
      // nsjail's log may have named it already (a seccomp kill, with the syscall).
      if (!violations.some((known) => known.kind === v.kind))
        violations.push({
          phase: 'runtime',
          ...v,
          detail: `the command was killed by ${signal}`,
          ...(limit ? { limit } : {}),
        });
    } else if (signal && !interrupt && !violations.some((v) => v.kind === 'oom' || v.kind === 'pids')) {
      violations.push({
        phase: 'runtime',
        kind: 'signal',
        rule: 'signal',
        detail: `the command was killed by ${signal}`,
      });
    }
    return {
      sessionId: p.sessionId,
      profile: describeProfile(p.resolved),
      backend: p.launcher.backend,
      ...(p.launcher.backend === 'landlock' ? { approximations: await landlockApproximationsOf(p.policy) } : {}),
      policyHash: hash,
      // A secret typed on the command line is still a secret: reports and the ledger show a marker.
      command: redactArgv(p.policy.command, audit.secrets),
      exitCode: result.timedOut ? ExitCode.TIMEOUT : result.code,
      setBy: result.timedOut ? 'sbx' : 'child',
      ...(signal ? { signal } : {}),
      ...(interrupt ? { interruptedBy: interrupt.by } : {}),
      durationMs: result.durationMs,
      violations,
      ...(plan ? { limits: plan.limits.map(reportedLimit) } : {}),
      ...(Object.keys(collected.peaks).length > 0 ? { peaks: collected.peaks } : {}),
      ...(egress ? { network: { connections: egress.connections, violationsDropped: egress.violationsDropped } } : {}),
      droppedEnv: p.policy.env.dropped.map((d) => d.name),
      secrets: p.policy.env.secrets,
      masked: p.policy.mounts.flatMap((m) =>
        (m.kind === 'mask' || m.kind === 'file') && m.reason === 'sensitive file' ? [m.target] : [],
      ),
      ...(result.stdout ? { stdout: result.stdout, stderr: result.stderr! } : {}),
      ...(captured ? { captured } : {}),
    };
  } finally {
    await proxy?.close();
    await limits?.cleanup();
    session.close();
  }
}
