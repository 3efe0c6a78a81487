// The nsjail unit: its launcher probed (host/host-probe.ts), the Policy compiled (compile.ts) and
// nsjail's log read (status.ts), both loaded only for runs that use nsjail; its gaps (gaps.ts) named.
import { locateCommand } from '../../../commands/host/command.js';
import { probeNsjail } from '../../../host/host-probe.js';
import { hostSeccompArch } from '../../../seccomp/index.js';
import { type Backend, type LauncherBase, OWN_NAMESPACE, supervisedResult } from '../../host/unit.js';

export interface NsjailLauncher extends LauncherBase {
  backend: 'nsjail';
}

export const nsjail: Backend<NsjailLauncher, 'supervisor'> = {
  name: 'nsjail',
  needsUserNamespaces: true,
  egressOn: 'session-dir',
  // nsjail (-Mo) supervises the command from outside its namespaces: signals go to nsjail, its log says what became of the command.
  supervision: 'supervisor',
  // nsjail sets CPU, FSIZE and NOFILE on the command itself from the policy (compile.ts compileRlimits):
  // sbx's wrapper leaves them off nsjail's supervising parent, which they would only put under the
  // command's limits (a small nofile could starve nsjail's own setup). AS and NPROC stay on the
  // wrapper: nsjail hands them down as `hard`, and NPROC counts the whole uid anyway. The session
  // cgroup holds nsjail too: a kill there ends the whole jail with it, nothing of the host is left to restore.
  commandLimits: {
    applies: { rlimits: ['CPU', 'FSIZE', 'NOFILE'], cgroup: false },
    into: async (launch) => launch,
  },
  async probe(ctx) {
    return { backend: 'nsjail', ...probeNsjail(ctx.env, ctx.exposed), chosenBy: ctx.choice };
  },
  async compile(policy, session, launcher, host, hostArch) {
    // nsjail does not search PATH: it gets the command's path inside.
    const execPath = locateCommand(policy);
    const { compileNsjail } = await import('../compile.js');
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
  execOptions: (session) => ({ fdDir: session.dir }),
  async read(result) {
    const { nsjailSetupError, parseNsjailStatus } = await import('../status.js');
    const status = parseNsjailStatus({ code: result.code, signal: result.signal }, result.log);
    if (!status.started) throw nsjailSetupError(status);
    // sbx's own timeout ended nsjail (SIGTERM): its log shows the signal, the run is a timeout all the same.
    const timedOut = result.timedOut || status.timedOut;
    const observed = status.violations.filter((v) => v.kind !== 'timeout');
    // Under transparent capture the network judge's denials follow nsjail's log (compile.ts: its own descriptor).
    if (result.log.includes('"denied')) {
      const { judgeViolations } = await import('../../shared/judge-status.js');
      observed.push(...judgeViolations(result.log));
    }
    return supervisedResult(result, { status: status.code, timedOut, observed });
  },
  gaps: async (policy) => (await import('../compile.js')).describeNsjailGaps(policy),
  approximations: async () => [],
  exposed: async () => [],
  expand: async (launch) => (await import('../compile.js')).expandNsjailLaunch(launch),
  async describe(_policy, launch, launcher, quote) {
    const expanded = (await import('../compile.js')).expandNsjailLaunch(launch);
    const config = expanded.findIndex((a) => a.startsWith('# fd '));
    const lines = [
      `# ${launcher.version} at ${launcher.path}. sbx reads its log on fd 3 and passes the environment as a config on fd 4:`,
      quote(config < 0 ? expanded : expanded.slice(0, config)),
      ...(config < 0 ? [] : expanded.slice(config)),
    ];
    return { ...OWN_NAMESPACE, seccompAdded: [], lines };
  },
};
