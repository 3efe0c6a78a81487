// Limits + host facts → LimitPlan: for every limit, the mechanism that will enforce it and why. Pure.
// The plan is plain JSON: the runtime applies it (limits/host/cgroup/apply.ts), the report says which
// mechanism enforced each limit, `sbx doctor` prints it.
//
// Order of preference: a cgroup (v2 we can write, a systemd scope, v1 we can write) enforces memory,
// pids and cpus exactly for the whole sandbox. Without one, pids falls back to RLIMIT_NPROC, which
// only approximates it (it counts the whole uid); memory is approximated by RLIMIT_DATA per process
// and sbx's watchdog over the session's process tree; cpus is not enforced, and the plan
// says so (`enforced: false`) for the report and stderr. A limit listed in `required` is refused
// rather than approximated or dropped: fail closed where the profile asks for it
// (docs/DESIGN.md, "Limits").
import { posix } from 'node:path';
import { SbxError } from '../errors.js';
import { LIMIT_KEYS, LIMIT_NAMES, limitValue } from './parse-limits.js';
import type {
  CgroupController,
  CgroupPlan,
  CgroupSettings,
  HostLimitFacts,
  LimitName,
  LimitPlan,
  Limits,
  Mechanism,
  PlannedLimit,
  Rlimit,
} from './types.js';
import { formatCpus, formatDuration, formatSize } from './units.js';

// Every type of the plan, for callers that import the planner (types.ts exports nothing else).
export type * from './types.js';

/** Period for cpu.max / cpu.cfs_period_us: the kernel default, fine-grained enough for interactive work. */
export const CPU_PERIOD_US = 100_000;
/** The kernel refuses a quota under 1ms. */
const CPU_MIN_QUOTA_US = 1_000;

/** cpus → microseconds of CPU time per CPU_PERIOD_US. */
export function cpuQuotaUs(cpus: number): number {
  return Math.max(CPU_MIN_QUOTA_US, Math.round(cpus * CPU_PERIOD_US));
}

/**
 * Where a v2 session cgroup goes: beside our own cgroup, in its parent. Not inside it: cgroup v2's
 * "no internal processes" rule (cgroup-v2.rst) forbids enabling controllers for children of a cgroup
 * that has processes, and ours has at least sbx. Moving sbx itself into a leaf (what nsjail does)
 * would change the caller's process, which the library API must not. At the root of a hierarchy or
 * of a cgroup namespace there is no parent we may use, so the session goes below it.
 */
export function v2SessionParent(mount: string, ownPath: string): string {
  const own = posix.normalize(`/${ownPath}`).replace(/(.)\/$/, '$1');
  const parent = posix.dirname(own);
  return own === '/' || parent === '/' ? mount : posix.join(mount, parent);
}

const CGROUP_LIMITS: readonly (readonly ['memory' | 'pids' | 'cpus', CgroupController])[] = [
  ['memory', 'memory'],
  ['pids', 'pids'],
  ['cpus', 'cpu'],
];

type Backend = { plan: Exclude<CgroupPlan, { kind: 'none' }>; covers: CgroupController[] };

function backends(host: HostLimitFacts, wanted: CgroupController[], settings: CgroupSettings): Backend[] {
  const out: Backend[] = [];
  const cg = host.cgroup;
  if (cg.kind === 'v2' && cg.writable) {
    const covers = wanted.filter((c) => cg.controllers.includes(c));
    out.push({
      plan: {
        kind: 'cgroup-v2',
        parent: v2SessionParent(cg.mount, cg.ownPath),
        controllers: covers,
        settings: pick(settings, covers),
      },
      covers,
    });
  }
  // systemd only places scopes on the unified hierarchy; on v1 it does not delegate to users at all.
  if (cg.kind === 'v2' && host.systemdRun) {
    out.push({
      plan: { kind: 'systemd-scope', manager: host.uid === 0 ? 'system' : 'user', settings },
      covers: wanted,
    });
  }
  // v1: below our own cgroup in each hierarchy (facts.controllers), not at its root, so whatever bounds
  // sbx (a container, a CI job's cgroup) keeps bounding the sandbox; v1 has no internal-process rule.
  if (cg.kind === 'v1' && cg.writable) {
    const covers = wanted.filter((c) => cg.controllers[c] !== null);
    const parents = Object.fromEntries(covers.map((c) => [c, cg.controllers[c]!]));
    out.push({ plan: { kind: 'cgroup-v1', parents, settings: pick(settings, covers) }, covers });
  }
  return out.filter((b) => b.covers.length > 0);
}

function pick(settings: CgroupSettings, covers: CgroupController[]): CgroupSettings {
  const out: CgroupSettings = {};
  if (covers.includes('memory') && settings.memoryBytes !== undefined) out.memoryBytes = settings.memoryBytes;
  if (covers.includes('pids') && settings.pids !== undefined) out.pids = settings.pids;
  if (covers.includes('cpu') && settings.cpus !== undefined) out.cpus = settings.cpus;
  return out;
}

/** Why no cgroup enforces `controller` on this host (for notes and errors). */
function cgroupGap(host: HostLimitFacts, controller: CgroupController): string {
  const cg = host.cgroup;
  switch (cg.kind) {
    case 'none':
      return 'no cgroup filesystem is mounted';
    case 'v2':
      if (!cg.writable)
        return `cgroup v2 is not writable by uid ${host.uid} at ${v2SessionParent(cg.mount, cg.ownPath)} and no systemd manager is reachable`;
      return `the ${controller} controller is not enabled for ${v2SessionParent(cg.mount, cg.ownPath)}`;
    case 'v1':
      if (cg.controllers[controller] === null) return `the cgroup v1 ${controller} controller is not mounted`;
      return `cgroup v1 is not writable by uid ${host.uid}`;
  }
}

/** One line telling the user how to get a cgroup for `controller`. */
function cgroupFix(host: HostLimitFacts, controller: CgroupController): string {
  const cg = host.cgroup;
  switch (cg.kind) {
    case 'none':
      return 'mount cgroup2 (mount -t cgroup2 none /sys/fs/cgroup), or run on a host with systemd';
    case 'v2':
      if (!cg.writable)
        return 'run as root, or start sbx in a delegated cgroup (systemd-run --user --scope -p Delegate=yes sbx …), or install systemd with a user manager (loginctl enable-linger)';
      return `enable it as root: echo +${controller} > ${v2SessionParent(cg.mount, cg.ownPath)}/cgroup.subtree_control`;
    case 'v1':
      if (cg.controllers[controller] === null)
        return `mount it as root: mkdir -p /sys/fs/cgroup/${controller} && mount -t cgroup -o ${controller} cgroup /sys/fs/cgroup/${controller}`;
      return 'run as root (cgroup v1 cannot be delegated safely), or boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1) and systemd';
  }
}

const CGROUP_NOTES: Record<Exclude<CgroupPlan['kind'], 'none'>, Record<CgroupController, string>> = {
  'cgroup-v2': {
    memory: 'memory.max, swap included (memory.swap.max=0); an OOM kill ends the whole sandbox (memory.oom.group)',
    pids: 'pids.max: every task in the sandbox, threads included',
    cpu: `cpu.max: CPU bandwidth per ${CPU_PERIOD_US / 1000}ms period`,
  },
  'systemd-scope': {
    // The scope's cgroup is gone when the run ends, and its counters with it.
    memory: 'MemoryMax= and MemorySwapMax=0 on a transient systemd scope; an OOM kill shows only as SIGKILL',
    pids: 'TasksMax= on a transient systemd scope; refused forks are not counted',
    cpu: 'CPUQuota= on a transient systemd scope',
  },
  'cgroup-v1': {
    memory: 'memory.limit_in_bytes, and memory.memsw.limit_in_bytes where swap accounting is on',
    pids: 'pids.max: every task in the sandbox, threads included',
    cpu: `cpu.cfs_quota_us per ${CPU_PERIOD_US / 1000}ms cpu.cfs_period_us`,
  },
};

function display(name: LimitName, value: number): string {
  switch (name) {
    case 'memory':
    case 'file-size':
    case 'address-space':
      return formatSize(value);
    case 'timeout':
      return formatDuration(value);
    case 'cpu-time':
      return formatDuration(value * 1000);
    case 'cpus':
      return formatCpus(value);
    case 'pids':
    case 'nofile':
      return String(value);
  }
}

/** How often the memory watchdog sums the tree's memory: a burst between two polls is capped per process by RLIMIT_DATA. */
export const WATCHDOG_INTERVAL_MS = 100;
/**
 * How often it polls near the limit (above half of it, or after growing by an eighth of it in one
 * interval): a burst of processes each under RLIMIT_DATA must then outlive 10ms, not 100ms, to pass
 * unseen, and the cost of a poll (a few /proc reads per process and descriptor) is paid only then.
 */
export const WATCHDOG_FAST_INTERVAL_MS = 10;
/** What a memory limit without a cgroup is, in the plan's note and the watchdog's violation. */
export const MEMORY_APPROXIMATION = 'approximate: per-process data limit + tree watchdog';
const AS_NOTE =
  'RLIMIT_AS: virtual address space per process, not memory used; ' +
  'V8, WebAssembly, the JVM and Go reserve far more than they use and fail below it';

/** Decide, per limit, what enforces it. Throws LIMIT_UNENFORCEABLE for a required limit it can only approximate. */
export function planLimits(limits: Limits, host: HostLimitFacts): LimitPlan {
  const chosen = chooseCgroup(limits, host);
  const rlimits: Rlimit[] = [{ resource: 'CORE', soft: 0, hard: 0 }];
  const planned: PlannedLimit[] = [];
  for (const name of LIMIT_NAMES) {
    const value = limitValue(limits, name);
    if (value === undefined) continue;
    const base = { name, value, display: display(name, value), required: limits.required.includes(name) };
    const controller = controllerOf(name);
    if (controller && chosen?.covers.includes(controller)) {
      planned.push(exactly(base, chosen.plan.kind, CGROUP_NOTES[chosen.plan.kind][controller]));
      continue;
    }
    const decision = planWithoutCgroup(base, host);
    planned.push(decision.planned);
    if (decision.rlimit) rlimits.push(decision.rlimit);
  }
  refuseUnenforceable(planned, host);
  const watched = planned.find((l) => l.mechanism === 'watchdog');
  const nproc = planned.find((l) => l.name === 'pids' && l.mechanism === 'rlimit');
  return {
    limits: planned,
    cgroup: chosen?.plan ?? { kind: 'none' },
    rlimits,
    ...(limits.timeoutMs !== undefined ? { timeoutMs: limits.timeoutMs } : {}),
    ...(watched
      ? {
          watchdog: {
            memoryBytes: watched.value,
            intervalMs: WATCHDOG_INTERVAL_MS,
            fastIntervalMs: WATCHDOG_FAST_INTERVAL_MS,
            ...(nproc ? { tasks: nproc.value } : {}),
          },
        }
      : {}),
  };
}

/** The first backend (in preference order) that covers every cgroup limit; else the one covering most. */
function chooseCgroup(limits: Limits, host: HostLimitFacts): Backend | undefined {
  const settings: CgroupSettings = {};
  if (limits.memoryBytes !== undefined) settings.memoryBytes = limits.memoryBytes;
  if (limits.pids !== undefined) settings.pids = limits.pids;
  if (limits.cpus !== undefined) settings.cpus = limits.cpus;
  const wanted = CGROUP_LIMITS.filter(([name]) => limitValue(limits, name) !== undefined).map(([, c]) => c);
  const options = backends(host, wanted, settings);
  return (
    options.find((b) => b.covers.length === wanted.length) ??
    [...options].sort((a, b) => b.covers.length - a.covers.length)[0]
  );
}

/** The cgroup controller that enforces a limit exactly, if one does. */
function controllerOf(name: LimitName): CgroupController | undefined {
  return CGROUP_LIMITS.find(([n]) => n === name)?.[1];
}

type LimitBase = Pick<PlannedLimit, 'name' | 'value' | 'display' | 'required'>;

function exactly(base: LimitBase, mechanism: Mechanism, note: string): PlannedLimit {
  return { ...base, mechanism, exact: true, enforced: true, note };
}

/** How a limit no cgroup enforces is planned: by an rlimit or sbx's clock, approximated, or not at all. */
function planWithoutCgroup(base: LimitBase, host: HostLimitFacts): { planned: PlannedLimit; rlimit?: Rlimit } {
  const { name, value } = base;
  const controller = controllerOf(name);
  const gap = controller ? cgroupGap(host, controller) : '';
  const notEnforced = (note: string): { planned: PlannedLimit } => ({
    planned: { ...base, mechanism: 'none', exact: false, enforced: false, note, gap },
  });
  switch (name) {
    case 'memory': {
      // Not RLIMIT_AS: address space is not memory, and V8, WebAssembly, the JVM and Go reserve
      // gigabytes PROT_NONE they never touch. RLIMIT_DATA counts only writable private mappings (and
      // brk), so those reservations pass while one process's heap stops at the limit (ENOMEM); the
      // watchdog sums the whole tree, which RLIMIT_DATA alone would let grow N times the limit.
      const note =
        `${MEMORY_APPROXIMATION}, ${gap}: RLIMIT_DATA ${base.display} per process, and sbx ends the whole ` +
        `sandbox when its processes' memory (anonymous and shared, proportional; memfds and tmpfs files they hold; ` +
        `its own tmpfs mounts) passes ${base.display}, sampled every ${WATCHDOG_INTERVAL_MS}ms ` +
        `(${WATCHDOG_FAST_INTERVAL_MS}ms near the limit), so a shorter burst may pass unseen; page cache is not counted`;
      return {
        planned: {
          ...base,
          mechanism: 'watchdog',
          exact: false,
          enforced: true,
          gap: `${MEMORY_APPROXIMATION} (${gap})`,
          note,
        },
        rlimit: { resource: 'DATA', soft: value, hard: value },
      };
    }
    case 'pids': {
      if (host.uid === 0) return notEnforced(`not enforced, ${gap}, and RLIMIT_NPROC does not bind root`);
      const note =
        `approximate, ${gap}: RLIMIT_NPROC counts every task of uid ${host.uid}, so sbx adds the user's task ` +
        'count at launch and other processes of the user share the headroom';
      return {
        planned: { ...base, mechanism: 'rlimit', exact: false, enforced: true, gap, note },
        rlimit: { resource: 'NPROC', soft: value, hard: value, uid: host.uid },
      };
    }
    case 'cpus':
      return notEnforced(`not enforced, ${gap}; no rlimit can cap CPU bandwidth`);
    case 'timeout':
      return {
        planned: exactly(base, 'wall-clock', 'wall clock, kept by sbx: the sandbox is killed and sbx exits 124'),
      };
    case 'cpu-time':
      // soft < hard: at the soft limit the kernel sends SIGXCPU, at the hard one SIGKILL; with
      // soft == hard the first signal would already be SIGKILL and the report could not tell why.
      return {
        planned: exactly(base, 'rlimit', 'RLIMIT_CPU, per process: SIGXCPU at the limit, SIGKILL a second later'),
        rlimit: { resource: 'CPU', soft: value, hard: value + 1 },
      };
    case 'file-size':
      return {
        planned: exactly(base, 'rlimit', 'RLIMIT_FSIZE: a write past it fails with EFBIG and raises SIGXFSZ'),
        rlimit: { resource: 'FSIZE', soft: value, hard: value },
      };
    case 'nofile':
      return {
        planned: exactly(base, 'rlimit', 'RLIMIT_NOFILE: open descriptors per process'),
        rlimit: { resource: 'NOFILE', soft: value, hard: value },
      };
    case 'address-space':
      return { planned: exactly(base, 'rlimit', AS_NOTE), rlimit: { resource: 'AS', soft: value, hard: value } };
  }
}

/** A required limit the plan only approximates (or cannot enforce) refuses the run: fail closed. */
function refuseUnenforceable(planned: readonly PlannedLimit[], host: HostLimitFacts): void {
  const refused = planned.filter((l) => l.required && !l.exact);
  if (refused.length === 0) return;
  const lines = refused.map((l) => {
    const controller = controllerOf(l.name) ?? 'cpu';
    const how =
      l.mechanism === 'none'
        ? 'nothing on this host can enforce it'
        : l.mechanism === 'watchdog'
          ? `it could only be approximated (${MEMORY_APPROXIMATION.replace('approximate: ', '')})`
          : 'it could only be approximated with an rlimit';
    return {
      text: `limits.${LIMIT_KEYS[l.name]} (${l.display}) is required but ${cgroupGap(host, controller)}: ${how}`,
      fix: cgroupFix(host, controller),
    };
  });
  throw new SbxError('LIMIT_UNENFORCEABLE', lines[0]!.text, {
    hint: `${lines[0]!.fix}; or drop it from limits.required`,
    source: { key: 'limits.required' },
    details: lines.slice(1).map((l) => l.text),
  });
}

/** The plan as lines for `sbx doctor` and `--verbose`: `memory 512MiB → cgroup-v2 (memory.max, …)`. */
export function describePlan(plan: LimitPlan): string[] {
  return plan.limits.map((l) => {
    const quality = l.exact ? '' : l.enforced ? ' (approximate)' : ' (not enforced)';
    return `${l.name} ${l.display} → ${l.mechanism}${quality}${l.required ? ' [required]' : ''}: ${l.note}`;
  });
}
