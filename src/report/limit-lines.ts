// What the limits did to a run, in words: the summary's verdict when a limit ended or broke the
// command, hints when a failure may come from a limit that was close, and the notice that a limit
// asked for is not enforced on this host. Pure: everything comes from the report.
import { formatSize } from '../limits/units.js';
import type { Report } from './report.js';

type ReportedLimit = NonNullable<Report['limits']>[number];

const RAISE = {
  memory: 'raise it with --memory SIZE (or --memory none)',
  pids: 'raise it with --pids N (or --pids none)',
};

const LIFT_AS = 'lift it with --address-space none';

/** At or above this share of a limit, a failure may well come from it. */
const NEAR_LIMIT = 0.9;
/**
 * Under the watchdog, at or above this share of the limit a failure may come from RLIMIT_DATA: the peak
 * is sampled (it may miss the top), and one process's data near the limit means the tree held as much.
 */
const NEAR_SAMPLED = 0.5;
/**
 * How a failed allocation ends a process, when it does not report it in its own words: abort() after
 * std::bad_alloc, glibc's malloc checks or V8's "heap out of memory" (SIGABRT; SIGTRAP on V8 builds
 * that trap), a failed allocation dereferenced (SIGSEGV), a page a full tmpfs or memfd cannot back
 * (SIGBUS), an OOM killer (SIGKILL). A shell passes a child's on as 128+N.
 */
const ALLOCATION_SIGNALS = { SIGTRAP: 5, SIGABRT: 6, SIGBUS: 7, SIGKILL: 9, SIGSEGV: 11 } as const;
/** Violation kinds that are a limit firing: the verdict names them, no hint is needed. */
const LIMIT_KINDS = new Set(['timeout', 'oom', 'pids', 'cpu-time', 'file-size']);

function limitOf(report: Report, name: string): ReportedLimit | undefined {
  return report.limits?.find((l) => l.name === name);
}

/** `2GiB, cgroup-v1`: the value and what enforced it, from the report (or the violation alone). */
function how(report: Report, name: string, fallback: string | undefined): string {
  const l = limitOf(report, name);
  return [l?.value ?? fallback, l?.mechanism].filter(Boolean).join(', ');
}

/**
 * The summary's verb phrase when a limit fired: `was killed by the memory limit (2GiB, cgroup-v1;
 * exit 137)`. Undefined when none did, so the caller says `exited N` or `was killed by SIGNAL`.
 */
export function limitVerdict(report: Report): string | undefined {
  const fired = (kind: string) => report.violations.find((v) => v.phase === 'runtime' && v.kind === kind);
  const exit = `exit ${report.exitCode}`;
  const timeout = fired('timeout');
  if (timeout) {
    const value = limitOf(report, 'timeout')?.value ?? timeout.limit ?? '';
    return `timed out: the ${value} timeout ended the sandbox (${exit})`;
  }
  const oom = fired('oom');
  if (oom) {
    const memory = how(report, 'memory', oom.limit);
    return report.signal
      ? `was killed by the memory limit (${memory}; ${report.signal}, ${exit})`
      : `exited ${report.exitCode} after the memory limit (${memory}) killed a process`;
  }
  for (const [kind, signal] of [
    ['cpu-time', 'SIGXCPU'],
    ['file-size', 'SIGXFSZ'],
  ] as const) {
    const v = fired(kind);
    if (v && report.signal === signal) {
      return `was killed by the ${kind} limit (${how(report, kind, v.limit)}; ${signal}, ${exit})`;
    }
  }
  const pids = fired('pids');
  if (pids) {
    const limit = limitOf(report, 'pids');
    const tasks = `the ${limit?.value ?? pids.limit ?? ''}-task limit${limit ? ` (${limit.mechanism})` : ''}`;
    return report.signal
      ? `was killed by ${report.signal} (${exit}) after exceeding ${tasks}`
      : `exited ${report.exitCode} after exceeding ${tasks}`;
  }
  return undefined;
}

/**
 * Whether a failed run under the watchdog may have met RLIMIT_DATA: only with evidence (a sampled peak
 * near the limit, or an end a failed allocation causes), never for any failure (`false` is not one).
 * A single allocation past the limit that fails at once and is reported as an ordinary error (Python's
 * MemoryError, exit 1) leaves no trace sbx can see: the program's own message names it.
 */
function mayBeDataLimit(report: Report, memory: ReportedLimit): boolean {
  const peak = report.peaks?.memoryBytes;
  if (peak !== undefined && peak >= NEAR_SAMPLED * memory.base) return true;
  const signals = Object.entries(ALLOCATION_SIGNALS);
  return signals.some(([name, n]) => report.signal === name || report.exitCode === 128 + n);
}

/** Lines (without the `sbx: hint: ` prefix) for a failed run that no limit visibly ended, but one may have. */
export function limitHints(report: Report): string[] {
  if (report.exitCode === 0 || report.violations.some((v) => LIMIT_KINDS.has(v.kind))) return [];
  const hints: string[] = [];
  const memory = limitOf(report, 'memory');
  if (memory?.mechanism === 'systemd-scope' && report.signal === 'SIGKILL') {
    // The scope's cgroup, and its OOM counter, is gone by the time sbx could read it.
    const scope = `SIGKILL under a systemd scope with a ${memory.value} memory limit`;
    hints.push(`${scope} is most likely that limit; ${RAISE.memory}`);
  }
  if (memory?.mechanism === 'watchdog' && mayBeDataLimit(report, memory)) {
    // RLIMIT_DATA fails the allocation itself (ENOMEM): the program reports it in its own words.
    const data = `memory ${memory.value} is approximated here: each process may hold at most ${memory.value} of data (RLIMIT_DATA)`;
    hints.push(`${data}, so "out of memory" or MemoryError may come from it; ${RAISE.memory}`);
  }
  const memoryPeak = report.peaks?.memoryBytes;
  if (memory?.enforced && memoryPeak !== undefined && memoryPeak >= NEAR_LIMIT * memory.base) {
    const sampled = report.peaks?.memorySampledEveryMs;
    const how = sampled === undefined ? memory.mechanism : `${memory.mechanism}, sampled every ${sampled}ms`;
    const peak = `memory peaked at ${formatSize(memoryPeak)} of the ${memory.value} limit (${how})`;
    hints.push(`${peak}: the failure may come from it; ${RAISE.memory}`);
  }
  const pids = limitOf(report, 'pids');
  const pidsPeak = report.peaks?.pids;
  if (pids?.enforced && pidsPeak !== undefined && pidsPeak >= NEAR_LIMIT * pids.base) {
    const peak = `${pidsPeak} tasks ran at the peak, of the ${pids.value}-task limit (${pids.mechanism})`;
    hints.push(`${peak}: the failure may come from it; ${RAISE.pids}`);
  }
  const addressSpace = limitOf(report, 'address-space');
  if (addressSpace) {
    const set = `address_space ${addressSpace.value} (RLIMIT_AS) was set`;
    hints.push(`${set}: "out of memory" from V8, WebAssembly or the JVM may come from it; ${LIFT_AS}`);
  }
  return hints;
}

/**
 * One line per reason: limits the profile asked for that nothing enforces on this host (the run went
 * on without them). `memory limit 2GiB and cpus limit 2 not enforced: cgroup v1 is not writable by
 * uid 1000 (see sbx doctor)`.
 */
export function limitNotices(report: Report): string[] {
  const byReason = new Map<string, string[]>();
  for (const l of report.limits ?? []) {
    if (l.enforced) continue;
    const reason = l.reason ?? 'no mechanism on this host';
    byReason.set(reason, [...(byReason.get(reason) ?? []), `${l.name} limit ${l.value}`]);
  }
  return [...byReason].map(([reason, names]) => `${names.join(' and ')} not enforced: ${reason} (see sbx doctor)`);
}
