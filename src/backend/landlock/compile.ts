// Policy + Session + LandlockHost → Launch for sbx-landlock (native/sbx-landlock.c). Pure. The backend for
// hosts where no user namespace can be created (a container's default seccomp profile, a run nested in
// another sandbox): no mount namespace, so each mount of the Policy becomes a Landlock grant on the host
// path itself, and everything not granted is denied. What that cannot express is refused by name
// (LANDLOCK_GAPS); what it expresses differently is an approximation the report lists. The grants and
// refusals are worked out in assessment.ts (grants.ts, nested-grants.ts), the network in network-judge.ts,
// the backend's own seccomp rules in seccomp-rules.ts; this file writes them as the helper's configuration.
import { SbxError } from '../../errors.js';
import type { CommandLimits, RlimitResource } from '../../limits/types.js';
import type { Policy } from '../../policy/types.js';
import { assembleSeccompFilter, type SeccompArch } from '../../seccomp/index.js';
import type { Launch, Session } from '../launch.js';
import { assess } from './assessment.js';
import { deny, OTHER_BACKEND, type Refusal } from './grants.js';
import { egressOf, judgeFix, landlockGovernsTcp } from './network-judge.js';
import { landlockSeccompRules } from './seccomp-rules.js';

export interface LandlockHost {
  /** Absolute path of sbx-landlock. */
  path: string;
  stdinIsTty: boolean;
  arch: SeccompArch;
  /** The caller's ids: without a user namespace they are the command's. */
  uid: number;
  gid: number;
  /** Why the helper's network judge cannot work on this host (backend/landlock/host/landlock-probe.ts); undefined when it can. */
  judgeUnavailable?: string;
}

/** <asm-generic/resource.h>: the same numbers on x86_64 and aarch64. */
const RLIMIT_NUMBER: Record<RlimitResource, number> = {
  CPU: 0,
  FSIZE: 1,
  DATA: 2,
  CORE: 4,
  NPROC: 6,
  NOFILE: 7,
  AS: 9,
};
const RLIMIT_CORE = RLIMIT_NUMBER.CORE;

function refuse(refusals: Refusal[]): never {
  const [first, ...rest] = refusals;
  const details = [...(first!.details ?? []), ...rest.map((r) => r.message)];
  throw new SbxError('BACKEND_UNSUPPORTED', `landlock backend: ${first!.message}`, { hint: first!.hint, details });
}

export function compileLandlock(policy: Policy, session: Session, host: LandlockHost): Launch {
  const command = policy.command;
  if (command.length === 0 || command[0] === '') {
    throw new SbxError('USAGE', 'no command given', { hint: 'sbx run [options] -- COMMAND [ARGS...]' });
  }
  const g = assess(policy, session);
  const asRoot = host.uid === 0 && policy.identity.hostRoot;
  if (!asRoot && (policy.identity.uid !== host.uid || policy.identity.gid !== host.gid)) {
    deny(
      g,
      'identity',
      `the policy runs the command as ${policy.identity.uid}:${policy.identity.gid}, ` +
        `the caller is ${host.uid}:${host.gid}: mapping ids needs a user namespace`,
      `remove user: root from the profile, ${OTHER_BACKEND}`,
    );
  }
  if (policy.network.kind === 'filtered' && host.judgeUnavailable !== undefined) {
    deny(
      g,
      'network.kind',
      `an allow-list network needs the helper's network judge, which cannot work here: ${host.judgeUnavailable}`,
      `${judgeFix(host.judgeUnavailable)}, ${OTHER_BACKEND}`,
    );
  }
  if (g.refusals.length > 0) refuse(g.refusals);
  const egress = egressOf(policy, session);
  const vars: Record<string, string> = { ...policy.env.vars, ...session.secretEnv, ...egress.env };
  if (g.path !== undefined) vars.PATH = g.path;
  const tmp = g.private.get('/tmp');
  const home = policy.env.vars.HOME === undefined ? undefined : g.private.get(policy.env.vars.HOME);
  // XDG_RUNTIME_DIR too, unless the policy passes one: an sbx nested inside keeps its session
  // directories there (host/session.ts sessionBase), where bwrap's nested sbx uses its private /tmp.
  if (tmp) {
    vars.TMPDIR = tmp;
    vars.XDG_RUNTIME_DIR ??= tmp;
  }
  if (home) vars.HOME = home;
  const cwd = g.private.get(policy.cwd) ?? policy.cwd;
  // Never empty: the backend's own rules are in it whatever the preset.
  const seccomp = assembleSeccompFilter([...policy.seccomp.rules, ...landlockSeccompRules(policy)], host.arch);
  const firstPinFd = 6;
  const pins = [...new Set(g.pinned)];
  const records = [
    ...pins.map((source, i) => `pin=${firstPinFd + i}:${source}`),
    ...[...g.private.values()].map((dir) => `mkdir=${dir}`),
    ...g.ro.map((p) => `ro=${p}`),
    ...g.rw.map((p) => `rw=${p}`),
    ...g.dev.map((p) => `dev=${p}`),
    ...g.except.map((p) => `except=${p}`),
    ...g.guards.map((p) => `guard=${p}`),
    // TCP is denied unless the policy shares the host's network (Landlock's network rules, ABI 4).
    ...(landlockGovernsTcp(policy) ? [] : ['net=host']),
    ...(policy.network.kind === 'filtered' ? ['net=filtered', ...egress.ports.map((p) => `connect=${p}`)] : []),
    ...(egress.capture !== undefined ? [`capture=${egress.capture}`] : []),
    `rlimit=${RLIMIT_CORE}:0:0`,
    // Without a TTY the command gets its own session: it cannot push input into sbx's terminal (CVE-2017-5226).
    ...(host.stdinIsTty ? [] : ['setsid=1']),
    'seccomp=1',
    ...Object.keys(vars)
      .sort()
      .map((name) => `env=${name}=${vars[name]!}`),
    `cwd=${cwd}`,
    ...command.map((a) => `arg=${a}`),
  ];
  const data = new TextEncoder().encode(records.map((r) => r + '\0').join(''));
  return {
    file: host.path,
    args: [],
    env: {},
    // fd 3 the configuration, fd 4 the filter, fd 5 its status, then the pinned bind sources.
    fds: [
      { purpose: 'args', data },
      { purpose: 'seccomp', data: seccomp },
      { purpose: 'status' },
      ...pins.map((source) => ({ purpose: 'bind' as const, source })),
    ],
  };
}

/**
 * The launch with this run's limits in the helper's configuration (backend.ts commandLimits):
 * the rlimits before `rlimit=4:0:0` (a plan's own CORE cannot undo it), the cgroups first of all. The
 * helper's child applies them, so its monitor keeps sbx's own limits and stays in sbx's cgroup.
 */
export function withLandlockCommandLimits(launch: Launch, limits: CommandLimits): Launch {
  const [config, ...rest] = launch.fds;
  if (config?.purpose !== 'args') return launch;
  const records = new TextDecoder().decode(config.data).split('\0').slice(0, -1);
  const core = records.indexOf(`rlimit=${RLIMIT_CORE}:0:0`);
  const rlimits = limits.rlimits
    .map((r) => `rlimit=${RLIMIT_NUMBER[r.resource]}:${r.soft}:${r.hard}`)
    .filter((r) => !records.includes(r));
  const cgroups = limits.cgroupProcs.map((p) => `cgroup=${p}`);
  const at = core < 0 ? records.length : core;
  const out = [...cgroups, ...records.slice(0, at), ...rlimits, ...records.slice(at)];
  const data = new TextEncoder().encode(out.map((r) => r + '\0').join(''));
  return { ...launch, fds: [{ purpose: 'args', data }, ...rest] };
}

/** The launch as a reviewer reads it: the helper, then its configuration, one record a line (explain, golden files). */
export function expandLandlockLaunch(launch: Launch): string[] {
  const first = launch.fds[0];
  const records = first?.purpose === 'args' ? new TextDecoder().decode(first.data).split('\0').slice(0, -1) : [];
  const seccomp = launch.fds[1];
  const bytes = seccomp?.purpose === 'seccomp' ? seccomp.data.length : 0;
  const shown = records.map((r) => (/[\x00-\x1f\x7f]/.test(r) ? JSON.stringify(r) : r));
  return [launch.file, '# fd 3:', ...shown, `# fd 4: seccomp BPF, ${bytes / 8} instructions`];
}
