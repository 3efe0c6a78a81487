// The bwrap unit: its launcher probed (host/host-probe.ts), the Policy compiled (compile.ts, loaded
// with the launch path: bwrap is the default), its status read (status.ts, by backend/host/exec.ts) and a
// failed setup diagnosed. No gaps: bwrap is what the others are measured against.
import { SbxError } from '../../../errors.js';
import { type BwrapInfo, probeBwrap } from '../../../host/host-probe.js';
import { hostSeccompArch } from '../../../seccomp/index.js';
import { type Backend, type LauncherBase, lastWords, OWN_NAMESPACE, ranResult } from '../../host/unit.js';
import { compileBwrap, expandArgsFd, expandPinnedFds } from '../compile.js';

export interface BwrapLauncher extends LauncherBase {
  backend: 'bwrap';
  bwrap: BwrapInfo;
}

export const bwrap: Backend<BwrapLauncher, 'status-fd'> = {
  name: 'bwrap',
  needsUserNamespaces: true,
  egressOn: 'session-dir',
  supervision: 'status-fd',
  // sbx's wrapper applies every limit to bwrap itself (docs/SECURITY.md "Landlock: the
  // command's limits, SysV IPC and kernel state"): bwrap's outer monitor and its pid 1 only wait and
  // reap, and --die-with-parent and the pid namespace end the whole sandbox with either, so a limit
  // that kills one fails closed, with nothing of the host left to restore. bwrap has no way to set an
  // rlimit on the command alone.
  commandLimits: null,
  async probe(ctx) {
    const info = probeBwrap(ctx.env, ctx.cacheDir, ctx.exposed);
    return { backend: 'bwrap', path: info.path, version: info.version, bwrap: info, chosenBy: ctx.choice };
  },
  async compile(policy, session, launcher, host, hostArch) {
    const { features } = launcher.bwrap;
    const arch = hostSeccompArch(hostArch);
    return compileBwrap(policy, session, { path: launcher.path, features, stdinIsTty: host.stdinIsTty, arch });
  },
  execOptions: () => ({}),
  async read(result, host, launcher) {
    // A commondir the command created is the git-state auditor's (pipeline/git-audit-stage.ts).
    if (result.kind === 'ran') {
      // The network judge's denials, on its own descriptor under transparent capture (compile.ts).
      if (!result.status.includes('"denied')) return ranResult(result);
      const { judgeViolations } = await import('../../shared/judge-status.js');
      return { ...ranResult(result), observed: judgeViolations(result.status) };
    }
    // The diagnosis loads only when bwrap failed: a successful launch never pays for it.
    const [{ diagnoseUserNamespaces }, { describeCause, isNamespaceFailure }] = await Promise.all([
      import('../../../doctor/host/host-facts.js'),
      import('../../../doctor/host-diagnosis.js'),
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
    const judged = launch.fds.filter((f) => f.purpose === 'status').length > 1;
    const filter = !seccomp
      ? ''
      : judged
        ? ' and passes the seccomp filter on fd 5 to the network judge, which installs it for the command; ' +
          "the judge's denials come on fd 6"
        : ' and passes the seccomp filter on fd 5 (--seccomp 5)';
    const lines = [
      `# ${launcher.version}. sbx passes the options on fd 4 (--args 4), reads bwrap's JSON status on fd 3${filter}. ` +
        `Inline, runnable as is${seccomp ? ' but without the filter' : ''}:`,
      '# (paths where sbx passes the pinned descriptors listed above)',
      quote([launch.file, ...inline]),
    ];
    return { ...OWN_NAMESPACE, seccompAdded: [], lines };
  },
};
