// Profile `limits:` values (strings and numbers as a user writes them) → `Limits` in base units. Pure.
// The bounds refuse what cannot be meant: a sandbox with 100 bytes of memory or a 30-year timeout is
// a typo, and finding out at run time (bwrap dying at start, a Node timer overflowing) is worse.
import { SbxError } from '../errors.js';
import type { LimitName, Limits } from './types.js';
import { MIB, parseCount, parseCpus, parseDuration, parseSize, PIB, showValue } from './units.js';

/** What a profile may write under `limits:`. Keys are snake_case like the rest of the profile. */
export interface LimitsInput {
  memory?: string | number;
  pids?: string | number;
  cpus?: string | number;
  timeout?: string | number;
  cpu_time?: string | number;
  file_size?: string | number;
  nofile?: string | number;
  /** Limit names (`memory`, `cpu_time` or `cpu-time`, …) that must be enforced exactly, or the run is refused. */
  required?: readonly string[];
}

/** The profile key of each limit, for messages. */
export const LIMIT_KEYS: Readonly<Record<LimitName, keyof LimitsInput>> = {
  memory: 'memory',
  pids: 'pids',
  cpus: 'cpus',
  timeout: 'timeout',
  'cpu-time': 'cpu_time',
  'file-size': 'file_size',
  nofile: 'nofile',
};

const DAY_MS = 86_400_000;

/**
 * Accepted ranges. Memory below 1MiB cannot start a dynamic loader. pids counts bwrap's own monitor
 * and the sandbox's init beside the command (a pid namespace needs all three), nofile needs room for
 * bwrap's setup descriptors and stdio. 24 days is the longest Node timer (2³¹-1 ms) can wait.
 */
export const LIMIT_BOUNDS = {
  memory: { min: MIB, max: PIB, example: '512MiB or 2GiB' },
  pids: { min: 4, max: 4_194_304, example: '256' },
  cpus: { min: 0.01, max: 1024, example: '2 or 0.5' },
  timeout: { min: 1, max: 24 * DAY_MS, example: '30s, 10m or 1h30m' },
  'cpu-time': { min: 1000, max: 24 * DAY_MS, example: '60s or 10m' },
  'file-size': { min: 1024, max: PIB, example: '64MiB or 1GiB' },
  nofile: { min: 16, max: 1_048_576, example: '1024' },
} as const;

/** Every limit name, in report order. */
export const LIMIT_NAMES: readonly LimitName[] = ['memory', 'pids', 'cpus', 'timeout', 'cpu-time', 'file-size', 'nofile'];

function isLimitName(name: string): name is LimitName {
  return (LIMIT_NAMES as readonly string[]).includes(name);
}

/** Parse a profile's `limits:` block. `prefix` is the key path used in messages. */
export function parseLimits(input: LimitsInput, prefix = 'limits'): Limits {
  const key = (name: LimitName) => `${prefix}.${LIMIT_KEYS[name]}`;
  const out: Limits = { required: [] };
  if (input.memory !== undefined) out.memoryBytes = parseSize(input.memory, key('memory'), LIMIT_BOUNDS.memory);
  if (input.pids !== undefined) out.pids = parseCount(input.pids, key('pids'), LIMIT_BOUNDS.pids);
  if (input.cpus !== undefined) out.cpus = parseCpus(input.cpus, key('cpus'), LIMIT_BOUNDS.cpus);
  if (input.timeout !== undefined) out.timeoutMs = parseDuration(input.timeout, key('timeout'), LIMIT_BOUNDS.timeout);
  if (input.cpu_time !== undefined) {
    const ms = parseDuration(input.cpu_time, key('cpu-time'), LIMIT_BOUNDS['cpu-time']);
    // RLIMIT_CPU counts whole seconds; rounding either way would silently move the limit.
    if (ms % 1000 !== 0) {
      throw new SbxError('LIMIT_INVALID', `${key('cpu-time')}: ${showValue(input.cpu_time)} is not a whole number of seconds; use e.g. 60s or 10m`, {
        hint: 'the kernel counts CPU time limits (RLIMIT_CPU) in whole seconds',
      });
    }
    out.cpuTimeSec = ms / 1000;
  }
  if (input.file_size !== undefined) out.fileSizeBytes = parseSize(input.file_size, key('file-size'), LIMIT_BOUNDS['file-size']);
  if (input.nofile !== undefined) out.nofile = parseCount(input.nofile, key('nofile'), LIMIT_BOUNDS.nofile);

  for (const [i, raw] of (input.required ?? []).entries()) {
    const name = raw.replace(/_/g, '-');
    if (!isLimitName(name)) {
      throw new SbxError('LIMIT_INVALID', `${prefix}.required[${i}]: ${showValue(raw)} is not a limit; use one of ${LIMIT_NAMES.map((n) => LIMIT_KEYS[n]).join(', ')}`, {
        hint: 'list the limits that must be enforced exactly, e.g. required: [memory, pids]',
      });
    }
    if (limitValue(out, name) === undefined) {
      throw new SbxError('LIMIT_INVALID', `${prefix}.required[${i}]: ${showValue(raw)} is required but ${key(name)} is not set`, {
        hint: `set ${key(name)} or remove it from ${prefix}.required`,
      });
    }
    if (!out.required.includes(name)) out.required.push(name);
  }
  return out;
}

/** The configured value of one limit in its base unit (bytes, count, CPUs, ms, seconds). */
export function limitValue(limits: Limits, name: LimitName): number | undefined {
  switch (name) {
    case 'memory':
      return limits.memoryBytes;
    case 'pids':
      return limits.pids;
    case 'cpus':
      return limits.cpus;
    case 'timeout':
      return limits.timeoutMs;
    case 'cpu-time':
      return limits.cpuTimeSec;
    case 'file-size':
      return limits.fileSizeBytes;
    case 'nofile':
      return limits.nofile;
  }
}
