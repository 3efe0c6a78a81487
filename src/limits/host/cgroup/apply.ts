// Applies a LimitPlan for one session: creates and configures the session cgroup(s), hands out the
// trampoline that starts the launcher inside them, reads what fired afterwards, and removes them.
// Memory no cgroup holds is watched instead (the plan's `watchdog`: limits/host/memory-watchdog.ts).
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { SbxError } from '../../../errors.js';
import type {
  CgroupController,
  CgroupPlan,
  CgroupSettings,
  CommandLimits,
  LauncherLimits,
  LimitPlan,
  Rlimit,
} from '../../plan.js';
import { CPU_PERIOD_US, cpuQuotaUs } from '../../plan.js';
import type { Violation } from '../../../policy/violation.js';
import { effectiveRlimits } from './rlimits.js';
import { shellTrampoline, systemdScopeArgv } from './trampoline.js';
import {
  hasCgroupFile,
  makeCgroup,
  parseKeyed,
  parseNumber,
  readCgroupFile,
  removeCgroup,
  writeCgroupFile,
} from './tree.js';
import { xdgRuntimeDir } from '../../../policy/user-dirs.js';
import { type MemoryWatchdog, memoryWatchdog } from '../memory-watchdog.js';

export { sweepStaleCgroups } from './sweep.js';

export interface LaunchCommand {
  file: string;
  args: string[];
  /** The launcher's environment, when known: lets the systemd path tell whether XDG_RUNTIME_DIR must be lent and taken back. */
  env?: Readonly<Record<string, string>>;
}

export interface CollectedLimits {
  violations: Violation[];
  peaks: { memoryBytes?: number; memorySampledEveryMs?: number; pids?: number };
}

export interface PreparedLimits {
  /** Wrap the sandbox launcher so that it starts inside the cgroup and under the rlimits: race-free, the untrusted command never runs outside. */
  wrap: LimitsWrapper['wrap'];
  /**
   * Start the memory watchdog on the launcher's pid, when the plan has one: backend/host/exec.ts calls it
   * once spawned and `alive` turns false the moment it reaps the launcher.
   */
  watch(launcherPid: number, alive: () => boolean): void;
  /** After the run, before cleanup: the limits that fired (oom kills, refused forks, the watchdog) and resource peaks. */
  collect(): Promise<CollectedLimits>;
  /** Kill whatever is left in the session cgroup(s) and remove them. Idempotent. */
  cleanup(): Promise<void>;
  /** The session cgroup directories (none for systemd scopes and rlimit-only plans). */
  readonly cgroupDirs: readonly string[];
  /** The rlimits the trampoline sets, after clamping to sbx's own hard limits. */
  readonly rlimits: readonly Rlimit[];
  /** What the launcher applies to the command alone (PrepareOptions.launcher); empty without it. */
  readonly command: CommandLimits;
}

export interface PrepareOptions {
  /** A fake cgroupfs root (tests): cgroup paths in the plan already point into it; also used for /proc/self/limits. */
  root?: string;
  /** PATH (to find systemd-run) and XDG_RUNTIME_DIR. Default: process.env (the pipeline passes its context's). */
  env?: Readonly<NodeJS.ProcessEnv>;
  /** Whose /run/user directory a user manager's scope lends when XDG_RUNTIME_DIR is unset. Default: ours. */
  uid?: number;
  /**
   * What the backend's launcher applies to the command alone (Backend.commandLimits): left out of the
   * wrapper, so the launcher's own supervising process keeps sbx's limits. A systemd scope
   * holds the launcher whole: its cgroup cannot be left to the launcher.
   */
  launcher?: LauncherLimits;
}

/** Session ids become directory and unit names: nothing that could climb out of the parent. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$/;

export function sessionCgroupName(sessionId: string): string {
  return `sbx-${sessionId}`;
}

function findOnPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir.startsWith('/') && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

function configureV2(dir: string, s: CgroupSettings): void {
  if (s.memoryBytes !== undefined) {
    writeCgroupFile(dir, 'memory.max', String(s.memoryBytes));
    // Swap would let the sandbox hold its limit again in swap; without swap accounting the file is absent.
    if (hasCgroupFile(dir, 'memory.swap.max')) writeCgroupFile(dir, 'memory.swap.max', '0');
    // One OOM kill ends the whole sandbox: a build tree with one compiler shot is harder to read than a stop.
    if (hasCgroupFile(dir, 'memory.oom.group')) writeCgroupFile(dir, 'memory.oom.group', '1');
  }
  if (s.pids !== undefined) writeCgroupFile(dir, 'pids.max', String(s.pids));
  if (s.cpus !== undefined) writeCgroupFile(dir, 'cpu.max', `${cpuQuotaUs(s.cpus)} ${CPU_PERIOD_US}`);
}

function configureV1(controller: CgroupController, dir: string, s: CgroupSettings): void {
  if (controller === 'memory' && s.memoryBytes !== undefined) {
    writeCgroupFile(dir, 'memory.limit_in_bytes', String(s.memoryBytes));
    // memsw (memory+swap) must be set after, and not below, the memory limit; present only with swapaccount=1.
    if (hasCgroupFile(dir, 'memory.memsw.limit_in_bytes'))
      writeCgroupFile(dir, 'memory.memsw.limit_in_bytes', String(s.memoryBytes));
  }
  if (controller === 'pids' && s.pids !== undefined) writeCgroupFile(dir, 'pids.max', String(s.pids));
  if (controller === 'cpu' && s.cpus !== undefined) {
    writeCgroupFile(dir, 'cpu.cfs_period_us', String(CPU_PERIOD_US));
    writeCgroupFile(dir, 'cpu.cfs_quota_us', String(cpuQuotaUs(s.cpus)));
  }
}

/** Enable missing controllers for the parent's children, one at a time so an error names the one refused. */
function enableControllers(parent: string, controllers: readonly CgroupController[]): void {
  const enabled = (readCgroupFile(parent, 'cgroup.subtree_control') ?? '').split(/\s+/);
  for (const c of controllers) if (!enabled.includes(c)) writeCgroupFile(parent, 'cgroup.subtree_control', `+${c}`);
}

/**
 * The session's cgroup directories, as createCgroups makes them: one under the v2 parent, or one per
 * v1 controller in the order of `parents` (collectFrom relies on that order). None for a systemd scope
 * or an rlimit-only plan. Pure: compile() shows them without creating anything.
 */
function sessionCgroupDirs(cgroup: CgroupPlan, name: string): { dir: string; controller?: CgroupController }[] {
  if (cgroup.kind === 'cgroup-v2') return [{ dir: join(cgroup.parent, name) }];
  if (cgroup.kind !== 'cgroup-v1') return [];
  return (Object.entries(cgroup.parents) as [CgroupController, string][]).map(([controller, parent]) => ({
    dir: join(parent, name),
    controller,
  }));
}

/** Create and configure the session cgroup(s), pushing each directory to `created` as soon as it exists. */
function createCgroups(cgroup: CgroupPlan, name: string, fake: boolean, created: string[]): void {
  // Errors name the directory being worked on: fs messages name only the file, and not always that.
  const step = (dir: string, fn: () => void) => {
    try {
      fn();
    } catch (e) {
      throw new Error(`${dir}: ${(e as Error).message}`, { cause: e });
    }
  };
  if (cgroup.kind !== 'cgroup-v2' && cgroup.kind !== 'cgroup-v1') return;
  if (cgroup.kind === 'cgroup-v2') step(cgroup.parent, () => enableControllers(cgroup.parent, cgroup.controllers));
  for (const { dir, controller } of sessionCgroupDirs(cgroup, name)) {
    step(dir, () => makeCgroup(dir, fake));
    created.push(dir);
    step(dir, () => (controller ? configureV1(controller, dir, cgroup.settings) : configureV2(dir, cgroup.settings)));
  }
}

function limitDisplay(plan: LimitPlan, name: 'memory' | 'pids'): string {
  return plan.limits.find((l) => l.name === name)?.display ?? '';
}

/**
 * What fired, from the session cgroup's event counters. A systemd scope has none to read: its cgroup
 * goes with the last process, before sbx could look (the plan's notes say so).
 */
function collectFrom(plan: LimitPlan, dirs: readonly string[]): CollectedLimits {
  const cg = plan.cgroup;
  const violations: Violation[] = [];
  const peaks: CollectedLimits['peaks'] = {};
  if (cg.kind !== 'cgroup-v2' && cg.kind !== 'cgroup-v1') return { violations, peaks };
  const v2 = cg.kind === 'cgroup-v2';
  // v1: createCgroups made one directory per listed controller, in the order of `parents`.
  const controllers = v2 ? [] : (Object.keys(cg.parents) as CgroupController[]);
  const memoryDir = v2 ? dirs[0] : dirs[controllers.indexOf('memory')];
  const pidsDir = v2 ? dirs[0] : dirs[controllers.indexOf('pids')];

  if (memoryDir && cg.settings.memoryBytes !== undefined) {
    // v2 memory.events counts OOM kills in the subtree; v1 reports them in memory.oom_control (Linux 4.13+).
    const kills = parseKeyed(readCgroupFile(memoryDir, v2 ? 'memory.events' : 'memory.oom_control')).oom_kill ?? 0;
    const limit = limitDisplay(plan, 'memory');
    if (kills > 0) {
      violations.push({
        phase: 'runtime',
        kind: 'oom',
        rule: 'limits.memory',
        limit,
        detail: `out of memory: the kernel killed ${kills} process${kills === 1 ? '' : 'es'} at the ${limit} limit`,
      });
    }
    const peak = parseNumber(readCgroupFile(memoryDir, v2 ? 'memory.peak' : 'memory.max_usage_in_bytes'));
    if (peak !== undefined) peaks.memoryBytes = peak;
  }
  if (pidsDir && cg.settings.pids !== undefined) {
    // pids.events "max": forks refused because pids.max was reached (the same file in v1 and v2).
    const refused = parseKeyed(readCgroupFile(pidsDir, 'pids.events')).max ?? 0;
    const limit = limitDisplay(plan, 'pids');
    if (refused > 0) {
      violations.push({
        phase: 'runtime',
        kind: 'pids',
        rule: 'limits.pids',
        limit,
        detail: `process limit reached: ${refused} fork${refused === 1 ? '' : 's'} refused at ${limit} tasks`,
      });
    }
    const peak = parseNumber(readCgroupFile(pidsDir, 'pids.peak'));
    if (peak !== undefined) peaks.pids = peak;
  }
  return { violations, peaks };
}

/** The session's cgroups, created (and on failure removed again) as the plan says. */
async function createSessionCgroups(plan: LimitPlan, name: string, fake: boolean): Promise<string[]> {
  const dirs: string[] = [];
  try {
    createCgroups(plan.cgroup, name, fake, dirs);
    return dirs;
  } catch (cause) {
    await Promise.allSettled(dirs.map((d) => removeCgroup(d, fake)));
    throw new SbxError('LIMIT_UNENFORCEABLE', `cannot set up the session cgroup ${(cause as Error).message}`, {
      cause,
      hint: 'check `sbx doctor`; remove the limits from the profile to run without them',
    });
  }
}

function requireSystemdRun(env: Record<string, string | undefined>): string {
  const systemdRun = findOnPath('systemd-run', env);
  if (systemdRun) return systemdRun;
  throw new SbxError('LIMIT_UNENFORCEABLE', 'systemd-run is not on PATH, but the limit plan needs a systemd scope', {
    hint: 'install systemd, or run as root',
  });
}

/** What starts the launcher inside the session's cgroup(s) and under the rlimits, for one session. */
export interface LimitsWrapper {
  /** The launcher's command behind the wrapper: a systemd scope, or sbx's shell trampoline. */
  wrap(launch: LaunchCommand): { file: string; args: string[] };
  /** The session cgroup directories it moves itself into (none for systemd scopes and rlimit-only plans). */
  readonly cgroupDirs: readonly string[];
  /** The rlimits the trampoline sets, after clamping to sbx's own hard limits. */
  readonly rlimits: readonly Rlimit[];
  /** What the launcher applies to the command alone, in this run's values: none unless PrepareOptions.launcher. */
  readonly command: CommandLimits;
  /** Whether `wrap` puts anything in front of the launcher: not when the launcher applies every limit itself. */
  readonly wraps: boolean;
}

/**
 * The wrapper a plan starts the launcher with, for this session. It reads (sbx's own hard limits, the
 * uid's tasks, PATH for systemd-run) and creates nothing: compile() shows it as run() would spawn it,
 * and prepareLimits() hands it out once the cgroups exist.
 */
export function planLimitsWrapper(
  plan: LimitPlan,
  sessionId: string,
  opts: Pick<PrepareOptions, 'root' | 'env' | 'uid' | 'launcher'> = {},
): LimitsWrapper {
  if (!SESSION_ID.test(sessionId)) {
    throw new SbxError('SANDBOX_SETUP', `session id ${JSON.stringify(sessionId)} cannot name a cgroup`, {
      hint: 'session ids are letters, digits, "_", "." and "-"',
    });
  }
  const cg = plan.cgroup;
  const env = opts.env ?? process.env;
  const name = sessionCgroupName(sessionId);
  const effective = effectiveRlimits(plan, opts.root ?? '');
  const systemdRun = cg.kind === 'systemd-scope' ? requireSystemdRun(env) : undefined;
  const cgroupDirs = sessionCgroupDirs(cg, name).map((d) => d.dir);
  const procsFiles = cgroupDirs.map((d) => join(d, 'cgroup.procs'));
  // The launcher's share: what it sets on the command alone stays out of the trampoline,
  // which would otherwise hand it to the launcher's own supervising process too.
  const byLauncher = new Set(opts.launcher?.rlimits ?? []);
  const rlimits = effective.filter((r) => !byLauncher.has(r.resource));
  const command: CommandLimits = {
    rlimits: effective.filter((r) => byLauncher.has(r.resource)),
    cgroupProcs: opts.launcher?.cgroup ? procsFiles : [],
  };
  const trampolineProcs = opts.launcher?.cgroup ? [] : procsFiles;
  // Nothing left for the trampoline (landlock: the helper applies every limit): the launcher starts as is.
  const wraps = systemdRun !== undefined || trampolineProcs.length > 0 || rlimits.length > 0;
  const wrap = (launch: LaunchCommand) => {
    if (!wraps) return { file: launch.file, args: launch.args };
    if (cg.kind !== 'systemd-scope' || systemdRun === undefined) {
      const argv = shellTrampoline(trampolineProcs, rlimits);
      return { file: argv[0]!, args: [...argv.slice(1), launch.file, ...launch.args] };
    }
    // systemd-run --user finds the user manager through XDG_RUNTIME_DIR; lend it when the launcher's
    // environment lacks it and take it back in the trampoline.
    const lend = cg.manager === 'user' && launch.env?.XDG_RUNTIME_DIR === undefined;
    const runtimeDir = xdgRuntimeDir(env) ?? `/run/user/${opts.uid ?? process.getuid?.() ?? 0}`;
    const envBin = findOnPath('env', { PATH: '/usr/bin:/bin' }) ?? '/usr/bin/env';
    const scope = {
      systemdRun,
      manager: cg.manager,
      unit: `${name}.scope`,
      settings: cg.settings,
      ...(lend ? { runtimeDir: { env: envBin, value: runtimeDir } } : {}),
    };
    const argv = systemdScopeArgv(scope, rlimits);
    return { file: argv[0]!, args: [...argv.slice(1), launch.file, ...launch.args] };
  };
  return { wrap, wraps, cgroupDirs, rlimits, command };
}

export async function prepareLimits(
  plan: LimitPlan,
  session: { id: string; dir: string },
  opts: PrepareOptions = {},
): Promise<PreparedLimits> {
  const fake = opts.root !== undefined;
  // Planned before anything is created: a bad session id or a missing systemd-run leaves no cgroup behind.
  const wrapper = planLimitsWrapper(plan, session.id, opts);
  const dirs = await createSessionCgroups(plan, sessionCgroupName(session.id), fake);
  // RLIMIT_NPROC as set, the uid's tasks at launch on top: the watchdog tells a refusing limit by it.
  const nproc = [...wrapper.rlimits, ...wrapper.command.rlimits].find((r) => r.resource === 'NPROC');
  const watchdog: MemoryWatchdog | undefined = plan.watchdog
    ? memoryWatchdog({
        ...plan.watchdog,
        display: limitDisplay(plan, 'memory'),
        tasksDisplay: limitDisplay(plan, 'pids'),
        ...(nproc?.uid !== undefined ? { nproc: { soft: nproc.soft, uid: nproc.uid } } : {}),
      })
    : undefined;
  let cleaned = false;
  return {
    cgroupDirs: dirs,
    rlimits: wrapper.rlimits,
    command: wrapper.command,
    wrap: wrapper.wrap,
    watch(launcherPid, alive) {
      watchdog?.start(launcherPid, alive);
    },
    async collect() {
      const collected = collectFrom(plan, dirs);
      if (!watchdog) return collected;
      await watchdog.stop();
      const watched = watchdog.result();
      // A sampled peak says so: a process that lived between two polls is not in it.
      const peaks =
        watched.peakBytes === undefined
          ? collected.peaks
          : { ...collected.peaks, memoryBytes: watched.peakBytes, memorySampledEveryMs: plan.watchdog!.intervalMs };
      return { violations: [...collected.violations, ...watched.violations], peaks };
    },
    async cleanup() {
      await watchdog?.stop();
      if (cleaned) return;
      const results = await Promise.allSettled(dirs.map((d) => removeCgroup(d, fake)));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) {
        throw new SbxError('SANDBOX_SETUP', (failed.reason as Error).message, {
          cause: failed.reason,
          hint: 'the next sbx run sweeps it; or kill the listed processes and rmdir the cgroup as root',
        });
      }
      cleaned = true;
    },
  };
}
