// The backends sbx can launch with, each behind one interface: find and check its launcher (probe),
// compile a Policy into a Launch, read how the launch ended, and say what it enforces differently
// from bwrap (gaps). Nothing outside this registry asks which backend a run uses. The compilers are
// the pure modules under src/backend/; nsjail's and landlock's load only for runs that use them.
import { join } from 'node:path';
import { compileBwrap, expandArgsFd, expandPinnedFds } from '../backend/bwrap.js';
import type { Launch, Session } from '../backend/launch.js';
import { isSbxError, SbxError } from '../errors.js';
import type { Host } from '../policy/host.js';
import type { Policy } from '../policy/types.js';
import type { Violation } from '../policy/violation.js';
import { locateCommand } from '../runtime/command.js';
import type { ExecOptions, ExecResult } from '../runtime/exec.js';
import { type BwrapInfo, probeBwrap, probeNsjail } from '../runtime/host-probe.js';
import { hostSeccompArch } from '../seccomp/index.js';
import type { EndingFacts } from '../report/ending.js';
import { packageRoot } from '../package-root.js';

export type BackendName = 'bwrap' | 'nsjail' | 'landlock';
export type BackendChoice = BackendName | 'auto';

/** The launcher binary a run uses. */
export type Launcher =
  | { backend: 'bwrap'; path: string; version: string; bwrap: BwrapInfo; chosenBy: BackendChoice }
  | { backend: 'nsjail'; path: string; version: string; chosenBy: BackendChoice }
  | { backend: 'landlock'; path: string; version: string; chosenBy: BackendChoice };

export interface ProbeContext {
  env: Record<string, string | undefined>;
  /** sbx's cache directory (probe results keyed by the launcher binary), when caching is on. */
  cacheDir: string | undefined;
  uid: number;
  choice: BackendChoice;
}

/** What a launch that ran tells: everything the ending needs but what the policy says. */
export type LaunchResult = Pick<EndingFacts, 'status' | 'timedOut' | 'interrupts'> & {
  durationMs: number;
  /** Violations only the launcher knows of (nsjail's log: its time limit, a seccomp kill). */
  observed: Violation[];
  stdout?: Buffer;
  stderr?: Buffer;
  streamBytes?: { stdout: number; stderr: number };
};

export interface Backend {
  name: BackendName;
  /** It creates user namespaces: where the host forbids them, `--backend auto` passes it by. */
  needsUserNamespaces: boolean;
  /**
   * Where the egress proxy listens (pipeline/egress.ts): `session-dir`, on sockets the bridge inside the
   * sandbox's network namespace reaches; `loopback`, on the host's 127.0.0.1, where the launcher itself
   * connects the command (sbx-landlock's network judge) and host ports need no relay.
   */
  egressOn: 'session-dir' | 'loopback';
  /** Finds the launcher and checks that it can work; throws SbxError (125) when not. */
  probe(ctx: ProbeContext): Promise<Launcher>;
  /** Policy → the exact launch; `arch` is the run context's (the seccomp filter's architecture). */
  compile(policy: Policy, session: Session, launcher: Launcher, host: Host, arch: NodeJS.Architecture): Promise<Launch>;
  /** How the runtime spawns and supervises it (runtime/exec.ts). */
  execOptions(session: Session): Pick<ExecOptions, 'supervision' | 'fdDir'>;
  /** How the launch ended; a sandbox that was never built is thrown as its SbxError. */
  read(result: ExecResult, host: Host, launcher: Launcher): Promise<LaunchResult>;
  /** What it refuses or enforces differently from bwrap for this policy, one line each (explain). */
  gaps(policy: Policy): Promise<string[]>;
  /** What a run of this policy gets approximately (the report lists them); none for bwrap. */
  approximations(policy: Policy): Promise<string[]>;
  /** Paths the policy masks that it leaves readable (landlock with --expose-workspace-secrets); none for bwrap. */
  exposed(policy: Policy): Promise<string[]>;
  /** The launch as a reviewer reads it (explain --json `argv`). */
  expand(launch: Launch): Promise<string[]>;
  /** What `sbx explain` prints of this backend: how it holds network none, the seccomp rules it adds, the launch. */
  describe(
    policy: Policy,
    launch: Launch,
    launcher: Launcher,
    quote: (argv: string[]) => string,
  ): Promise<BackendDescription>;
}

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

/** bwrap and nsjail: `network: none` is a network namespace of its own. */
const OWN_NAMESPACE = 'none (own namespace, loopback only)';
const FILTERED_OWN_NAMESPACE = 'own namespace';

/** The landlock backend's helper, built from native/sbx-landlock.c by scripts/build.mjs. */
export function landlockHelperPath(): string {
  return join(packageRoot(), 'dist', 'sbx-landlock');
}

function capturedOf(result: ExecResult): Pick<LaunchResult, 'stdout' | 'stderr' | 'streamBytes'> {
  if (result.kind === 'setup-failed' || !result.stdout) return {};
  return {
    stdout: result.stdout,
    stderr: result.stderr!,
    ...(result.streamBytes ? { streamBytes: result.streamBytes } : {}),
  };
}

/** The common case: the launcher reported the command's status (bwrap's and sbx-landlock's status fd). */
function ranResult(result: Extract<ExecResult, { kind: 'ran' }>): LaunchResult {
  const { code: status, timedOut, durationMs, interrupts } = result;
  return { status, timedOut, durationMs, interrupts, observed: [], ...capturedOf(result) };
}

/** The launcher's last line of complaint, or where to find it. */
function lastWords(result: Extract<ExecResult, { kind: 'setup-failed' }>): string {
  return result.stderr ? `: ${result.stderr.toString().trim().split('\n').pop()}` : '; its message is above';
}

function withChoice(launcher: Launcher, choice: BackendChoice): Launcher {
  return { ...launcher, chosenBy: choice };
}

const bwrap: Backend = {
  name: 'bwrap',
  needsUserNamespaces: true,
  egressOn: 'session-dir',
  async probe(ctx) {
    const info = probeBwrap(ctx.env, ctx.cacheDir);
    return { backend: 'bwrap', path: info.path, version: info.version, bwrap: info, chosenBy: ctx.choice };
  },
  async compile(policy, session, launcher, host, hostArch) {
    if (launcher.backend !== 'bwrap') throw new Error('bwrap backend given another launcher');
    const { features } = launcher.bwrap;
    const arch = hostSeccompArch(hostArch);
    return compileBwrap(policy, session, { path: launcher.path, features, stdinIsTty: host.stdinIsTty, arch });
  },
  execOptions: () => ({ supervision: 'status-fd' }),
  async read(result, host, launcher) {
    if (result.kind === 'ran') {
      const { removeCreatedCommondirs } = await import('../runtime/git-commondir.js');
      // The run's start, 50 ms early: the kernel stamps ctime from a clock up to a tick (≤ 10 ms)
      // behind; bwrap's own setup takes longer than that before the command can write anything.
      const started = Date.now() - result.durationMs - 50;
      return { ...ranResult(result), observed: removeCreatedCommondirs(host.sensitiveFiles.views, started) };
    }
    if (result.kind === 'supervised') throw new Error('bwrap does not supervise');
    // The diagnosis loads only when bwrap failed: a successful launch never pays for it.
    const [{ diagnoseUserNamespaces }, { describeCause, isNamespaceFailure }] = await Promise.all([
      import('../runtime/host-facts.js'),
      import('../doctor/host-diagnosis.js'),
    ]);
    const namespaces = isNamespaceFailure(result.stderr?.toString());
    const [cause] = namespaces ? diagnoseUserNamespaces({ uid: host.uid, bwrap: launcher.path, env: host.env }) : [];
    const message = `bwrap could not build the sandbox (exit ${result.code ?? result.signal})${lastWords(result)}`;
    throw new SbxError('SANDBOX_SETUP', message, {
      hint: cause ? describeCause(cause) : 'run `sbx doctor`, and `sbx explain -- CMD` to see the exact bwrap command',
    });
  },
  gaps: async () => [],
  approximations: async () => [],
  exposed: async () => [],
  expand: async (launch) => expandArgsFd(launch),
  async describe(_policy, launch, launcher, quote) {
    const seccomp = launch.fds.some((f) => f.purpose === 'seccomp');
    // The inline form runs as is from a shell: it leaves out the descriptors only sbx provides.
    const argv = expandPinnedFds(expandArgsFd(launch), launch);
    const sbxOnly = ['--json-status-fd', '--seccomp'];
    const inline = argv.filter((a, i) => !sbxOnly.includes(a) && !sbxOnly.includes(argv[i - 1] ?? ''));
    const filter = seccomp ? ' and passes the seccomp filter on fd 5 (--seccomp 5)' : '';
    const lines = [
      `# ${launcher.version}. sbx passes the options on fd 4 (--args 4), reads bwrap's JSON status on fd 3${filter}. ` +
        `Inline, runnable as is${seccomp ? ' but without the filter' : ''}:`,
      '# (paths where sbx passes the pinned descriptors listed above)',
      quote([launch.file, ...inline]),
    ];
    return { networkNone: OWN_NAMESPACE, networkFilteredWhere: FILTERED_OWN_NAMESPACE, seccompAdded: [], lines };
  },
};

const nsjail: Backend = {
  name: 'nsjail',
  needsUserNamespaces: true,
  egressOn: 'session-dir',
  async probe(ctx) {
    return { backend: 'nsjail', ...probeNsjail(ctx.env), chosenBy: ctx.choice };
  },
  async compile(policy, session, launcher, host, hostArch) {
    // nsjail does not search PATH: it gets the command's path inside.
    const execPath = locateCommand(policy);
    const { compileNsjail } = await import('../backend/nsjail.js');
    const arch = hostSeccompArch(hostArch);
    return compileNsjail(policy, session, {
      path: launcher.path,
      stdinIsTty: host.stdinIsTty,
      arch,
      uid: host.uid,
      execPath,
    });
  },
  // nsjail open()s /proc/self/fd/N, which fails on node's socketpair pipes: data goes in files.
  execOptions: (session) => ({ supervision: 'supervisor', fdDir: session.dir }),
  async read(result) {
    if (result.kind !== 'supervised') throw new Error('nsjail runs supervised');
    const { nsjailSetupError, parseNsjailStatus } = await import('../backend/nsjail-status.js');
    const status = parseNsjailStatus({ code: result.code, signal: result.signal }, result.log);
    if (!status.started) throw nsjailSetupError(status);
    // sbx's own timeout ended nsjail (SIGTERM): its log shows the signal, the run is a timeout all the same.
    const timedOut = result.timedOut || status.timedOut;
    return {
      status: status.code,
      timedOut,
      durationMs: result.durationMs,
      interrupts: result.interrupts,
      observed: status.violations.filter((v) => v.kind !== 'timeout'),
      ...capturedOf(result),
    };
  },
  gaps: async (policy) => (await import('../backend/nsjail.js')).describeNsjailGaps(policy),
  approximations: async () => [],
  exposed: async () => [],
  expand: async (launch) => (await import('../backend/nsjail.js')).expandNsjailLaunch(launch),
  async describe(_policy, launch, launcher, quote) {
    const expanded = (await import('../backend/nsjail.js')).expandNsjailLaunch(launch);
    const config = expanded.findIndex((a) => a.startsWith('# fd '));
    const lines = [
      `# ${launcher.version} at ${launcher.path}. sbx reads its log on fd 3 and passes the environment as a config on fd 4:`,
      quote(config < 0 ? expanded : expanded.slice(0, config)),
      ...(config < 0 ? [] : expanded.slice(config)),
    ];
    return { networkNone: OWN_NAMESPACE, networkFilteredWhere: FILTERED_OWN_NAMESPACE, seccompAdded: [], lines };
  },
};

const landlock: Backend = {
  name: 'landlock',
  needsUserNamespaces: false,
  egressOn: 'loopback',
  async probe(ctx) {
    const { probeLandlock } = await import('../runtime/landlock-probe.js');
    return { backend: 'landlock', ...probeLandlock(landlockHelperPath()), chosenBy: ctx.choice };
  },
  async compile(policy, session, launcher, host, hostArch) {
    const { compileLandlock } = await import('../backend/landlock.js');
    const { uid, gid, stdinIsTty } = host;
    const arch = hostSeccompArch(hostArch);
    // Only an allow-list network needs the judge, so only such a run pays for trying it.
    const { probeNetworkJudge } = await import('../runtime/landlock-probe.js');
    const unavailable = policy.network.kind === 'filtered' ? probeNetworkJudge(launcher.path) : undefined;
    const judge = unavailable === undefined ? {} : { judgeUnavailable: unavailable };
    return compileLandlock(policy, session, { path: launcher.path, stdinIsTty, arch, uid, gid, ...judge });
  },
  // SIGTERM, never SIGKILL: the helper then ends the command itself and restores what it guards.
  execOptions: () => ({ supervision: 'status-fd', launcherKill: 'SIGTERM' }),
  async read(result) {
    if (result.kind === 'ran') {
      const [{ landlockNetworkViolations }, { guardViolations }] = await Promise.all([
        import('../backend/landlock-status.js'),
        import('../backend/landlock-guard.js'),
      ]);
      const observed = [...landlockNetworkViolations(result.status), ...guardViolations(result.status)];
      return { ...ranResult(result), observed };
    }
    if (result.kind === 'supervised') throw new Error('sbx-landlock does not supervise');
    const message = `sbx-landlock could not confine the command (exit ${result.code ?? result.signal})${lastWords(result)}`;
    throw new SbxError('SANDBOX_SETUP', message, {
      hint: 'see its configuration with `sbx explain --backend landlock -- CMD`; where user namespaces work, use bwrap',
    });
  },
  gaps: async (policy) => (await import('../backend/landlock.js')).describeLandlockGaps(policy),
  approximations: async (policy) => (await import('../backend/landlock.js')).landlockApproximations(policy),
  exposed: async (policy) => (await import('../backend/landlock.js')).landlockExposed(policy),
  expand: async (launch) => (await import('../backend/landlock.js')).expandLandlockLaunch(launch),
  async describe(policy, launch, launcher) {
    const {
      expandLandlockLaunch,
      landlockJudgedCalls,
      landlockSeccompRules,
      LANDLOCK_NETWORK_FILTERED,
      LANDLOCK_NETWORK_NONE,
    } = await import('../backend/landlock.js');
    const head = `# ${launcher.version} at ${launcher.path}. Configuration on fd 3, seccomp filter on fd 4, its status on fd 5:`;
    return {
      networkNone: LANDLOCK_NETWORK_NONE,
      networkFilteredWhere: LANDLOCK_NETWORK_FILTERED,
      seccompAdded: [
        ...new Set([...landlockSeccompRules(policy).map((r) => r.syscall), ...landlockJudgedCalls(policy)]),
      ],
      lines: [head, ...expandLandlockLaunch(launch)],
    };
  },
};

export const BACKENDS: Readonly<Record<BackendName, Backend>> = { bwrap, nsjail, landlock };

/** `--backend auto` tries them in this order. */
const AUTO_ORDER: readonly BackendName[] = ['bwrap', 'nsjail', 'landlock'];

/**
 * The launcher asked for (flag, then profile, then bwrap). Fails closed: a named backend that is
 * missing is an error, never a silent switch. Only `auto` falls back, in AUTO_ORDER, past a backend
 * that is not installed, and past those that need user namespaces where none can be created here (a
 * container's seccomp profile, an outer sandbox).
 */
export async function chooseBackend(ctx: ProbeContext): Promise<{ backend: Backend; launcher: Launcher }> {
  if (ctx.choice !== 'auto') {
    const backend = BACKENDS[ctx.choice];
    return { backend, launcher: await backend.probe(ctx) };
  }
  let first: SbxError | undefined;
  let namespacesBlocked = false;
  for (const name of AUTO_ORDER) {
    const backend = BACKENDS[name];
    if (backend.needsUserNamespaces && namespacesBlocked) continue;
    let launcher: Launcher;
    try {
      launcher = withChoice(await backend.probe(ctx), 'auto');
    } catch (error) {
      if (!isSbxError(error)) throw error;
      first ??= error;
      continue;
    }
    if (launcher.backend === 'bwrap') {
      // The check tries bwrap itself, so it runs only where bwrap is installed.
      const { userNamespacesBlocked } = await import('../runtime/landlock-probe.js');
      namespacesBlocked = userNamespacesBlocked(ctx.uid, launcher.path, ctx.env);
      if (namespacesBlocked) continue;
    }
    return { backend, launcher };
  }
  const message = `--backend auto: neither bubblewrap, nsjail nor landlock is usable (${first?.message})`;
  throw new SbxError(first?.code ?? 'BWRAP_MISSING', message, { ...(first?.hint ? { hint: first.hint } : {}) });
}

/** The backend a launcher belongs to. */
export function backendOf(launcher: Launcher): Backend {
  return BACKENDS[launcher.backend];
}
