// The landlock unit: sbx's own helper (native/sbx-landlock.c, built into dist/) probed
// (backend/landlock/host/landlock-probe.ts), the Policy compiled (compile.ts), its status read (shared/judge-status.ts: the
// network judge's denials; guard.ts: what it restored), all loaded only for runs that use landlock.
import { join } from 'node:path';
import { SbxError } from '../../../errors.js';
import { packageRoot } from '../../../package-root.js';
import { hostSeccompArch } from '../../../seccomp/index.js';
import { type Backend, type LauncherBase, lastWords, ranResult } from '../../host/unit.js';

export interface LandlockLauncher extends LauncherBase {
  backend: 'landlock';
}

/** The landlock backend's helper, built from native/sbx-landlock.c by scripts/build.mjs. */
export function landlockHelperPath(): string {
  return join(packageRoot(), 'dist', 'sbx-landlock');
}

export const landlock: Backend<LandlockLauncher, 'status-fd'> = {
  name: 'landlock',
  needsUserNamespaces: false,
  egressOn: 'loopback',
  supervision: 'status-fd',
  // Every limit is the command's alone. The monitor judges connects and restores guarded
  // state: a CPU-time limit it inherited killed it while the command hammered denied connects, and
  // then nothing was restored and the command's descendants outlived sbx; the session cgroup's
  // memory.oom.group kill would do the same. So sbx's wrapper sets none of them on the helper: its
  // child sets the rlimits just before exec and moves into the session cgroup before it is confined.
  commandLimits: {
    applies: { rlimits: ['CPU', 'FSIZE', 'DATA', 'CORE', 'NPROC', 'NOFILE', 'AS'], cgroup: true },
    into: async (launch, limits) => (await import('../compile.js')).withLandlockCommandLimits(launch, limits),
  },
  async probe(ctx) {
    const { probeLandlock } = await import('./landlock-probe.js');
    return { backend: 'landlock', ...probeLandlock(landlockHelperPath()), chosenBy: ctx.choice };
  },
  async compile(policy, session, launcher, host, hostArch) {
    const { compileLandlock } = await import('../compile.js');
    const { uid, gid, stdinIsTty } = host;
    const arch = hostSeccompArch(hostArch);
    // Only an allow-list network needs the judge, so only such a run pays for trying it.
    const { probeNetworkJudge } = await import('./landlock-probe.js');
    const unavailable = policy.network.kind === 'filtered' ? probeNetworkJudge(launcher.path) : undefined;
    const judge = unavailable === undefined ? {} : { judgeUnavailable: unavailable };
    return compileLandlock(policy, session, { path: launcher.path, stdinIsTty, arch, uid, gid, ...judge });
  },
  // SIGTERM, never SIGKILL: the helper then ends the command itself and restores what it guards.
  execOptions: () => ({ launcherKill: 'SIGTERM' }),
  async read(result) {
    if (result.kind === 'ran') {
      const [{ judgeViolations }, { guardViolations }] = await Promise.all([
        import('../../shared/judge-status.js'),
        import('../guard.js'),
      ]);
      const observed = [...judgeViolations(result.status), ...guardViolations(result.status)];
      return { ...ranResult(result), observed };
    }
    const message = `sbx-landlock could not confine the command (exit ${result.code ?? result.signal})${lastWords(result)}`;
    throw new SbxError('SANDBOX_SETUP', message, {
      hint: 'see its configuration with `sbx explain --backend landlock -- CMD`; where user namespaces work, use bwrap',
    });
  },
  gaps: async (policy) => (await import('../assessment.js')).describeLandlockGaps(policy),
  approximations: async (policy) => (await import('../assessment.js')).landlockApproximations(policy),
  exposed: async (policy) => (await import('../assessment.js')).landlockExposed(policy),
  expand: async (launch) => (await import('../compile.js')).expandLandlockLaunch(launch),
  async describe(policy, launch, launcher) {
    const { expandLandlockLaunch } = await import('../compile.js');
    const { landlockJudgedCalls, LANDLOCK_NETWORK_FILTERED } = await import('../network-judge.js');
    const { landlockSeccompRules, LANDLOCK_NETWORK_NONE } = await import('../seccomp-rules.js');
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
