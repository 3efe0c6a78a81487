// Profile `limits:` values (strings and numbers as a user writes them, or `none`) and the command
// line's overrides → `Limits` in base units. Pure.
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
  address_space?: string | number;
  /** Limit names (`memory`, `cpu_time` or `cpu-time`, …) that must be enforced exactly, or the run is refused. */
  required?: readonly string[];
}

/** `--memory`, `--pids`, …: the same values (or `none`) from the command line, on top of the profile's. */
export type LimitOverrides = Omit<LimitsInput, 'required'>;

/** A limit's value that lifts it: in a profile (a child over its parent) or as a flag (`--memory none`). */
export const NO_LIMIT = 'none';

/** The profile key of each limit, for messages. */
export const LIMIT_KEYS: Readonly<Record<LimitName, Exclude<keyof LimitsInput, 'required'>>> = {
  memory: 'memory',
  pids: 'pids',
  cpus: 'cpus',
  timeout: 'timeout',
  'cpu-time': 'cpu_time',
  'file-size': 'file_size',
  nofile: 'nofile',
  'address-space': 'address_space',
};

/** The command-line flag of each limit: `--` and its name (`--cpu-time`, `--address-space`). */
export function limitFlag(name: LimitName): string {
  return `--${name}`;
}

const DAY_MS = 86_400_000;

/**
 * Accepted ranges. Memory below 1MiB cannot start a dynamic loader. pids counts bwrap's own monitor
 * and the sandbox's init beside the command (a pid namespace needs all three), nofile needs room for
 * bwrap's setup descriptors and stdio. 24 days is the longest Node timer (2³¹-1 ms) can wait. An
 * address space under 16MiB cannot map bwrap, a shell and their libraries.
 */
export const LIMIT_BOUNDS = {
  memory: { min: MIB, max: PIB, example: '512MiB or 2GiB' },
  pids: { min: 4, max: 4_194_304, example: '256' },
  cpus: { min: 0.01, max: 1024, example: '2 or 0.5' },
  timeout: { min: 1, max: 24 * DAY_MS, example: '30s, 10m or 1h30m' },
  'cpu-time': { min: 1000, max: 24 * DAY_MS, example: '60s or 10m' },
  'file-size': { min: 1024, max: PIB, example: '64MiB or 1GiB' },
  nofile: { min: 16, max: 1_048_576, example: '1024' },
  'address-space': { min: 16 * MIB, max: PIB, example: '16GiB' },
} as const;

/** Every limit name, in report order. */
export const LIMIT_NAMES: readonly LimitName[] = [
  'memory',
  'pids',
  'cpus',
  'timeout',
  'cpu-time',
  'file-size',
  'nofile',
  'address-space',
];

function isLimitName(name: string): name is LimitName {
  return (LIMIT_NAMES as readonly string[]).includes(name);
}

/** One value in its base unit; `key` names it in messages (`limits.memory` or `--memory`). */
function parseOne(limits: Limits, name: LimitName, raw: string | number, key: string): void {
  switch (name) {
    case 'memory':
      limits.memoryBytes = parseSize(raw, key, LIMIT_BOUNDS.memory);
      break;
    case 'pids':
      limits.pids = parseCount(raw, key, LIMIT_BOUNDS.pids);
      break;
    case 'cpus':
      limits.cpus = parseCpus(raw, key, LIMIT_BOUNDS.cpus);
      break;
    case 'timeout':
      limits.timeoutMs = parseDuration(raw, key, LIMIT_BOUNDS.timeout);
      break;
    case 'cpu-time': {
      const ms = parseDuration(raw, key, LIMIT_BOUNDS['cpu-time']);
      // RLIMIT_CPU counts whole seconds; rounding either way would silently move the limit.
      if (ms % 1000 !== 0) {
        const message = `${key}: ${showValue(raw)} is not a whole number of seconds; use e.g. 60s or 10m`;
        throw new SbxError('LIMIT_INVALID', message, {
          hint: 'the kernel counts CPU time limits (RLIMIT_CPU) in whole seconds',
        });
      }
      limits.cpuTimeSec = ms / 1000;
      break;
    }
    case 'file-size':
      limits.fileSizeBytes = parseSize(raw, key, LIMIT_BOUNDS['file-size']);
      break;
    case 'nofile':
      limits.nofile = parseCount(raw, key, LIMIT_BOUNDS.nofile);
      break;
    case 'address-space':
      limits.addressSpaceBytes = parseSize(raw, key, LIMIT_BOUNDS['address-space']);
      break;
  }
}

/**
 * A profile's `limits:` block, with the command line's overrides on top. `prefix` is the key path used
 * in messages. `none` (in either) lifts a limit; a limit listed in `required` cannot be lifted: by a
 * flag it is a usage error naming the conflict, in a profile (a child over a parent that requires it:
 * `required` lists are inherited, never shortened) a profile error.
 */
export function parseLimits(input: LimitsInput, overrides: LimitOverrides = {}, prefix = 'limits'): Limits {
  const key = (name: LimitName) => `${prefix}.${LIMIT_KEYS[name]}`;
  const out: Limits = { required: [] };
  const liftedBy = new Map<LimitName, string>();
  for (const name of LIMIT_NAMES) {
    const flag = overrides[LIMIT_KEYS[name]];
    const raw = flag ?? input[LIMIT_KEYS[name]];
    const where = flag !== undefined ? limitFlag(name) : key(name);
    if (raw === undefined) continue;
    if (raw === NO_LIMIT) liftedBy.set(name, where);
    else parseOne(out, name, raw, where);
  }

  for (const [i, raw] of (input.required ?? []).entries()) {
    const name = raw.replace(/_/g, '-');
    if (!isLimitName(name)) {
      throw new SbxError(
        'LIMIT_INVALID',
        `${prefix}.required[${i}]: ${showValue(raw)} is not a limit; use one of ${LIMIT_NAMES.map((n) => LIMIT_KEYS[n]).join(', ')}`,
        {
          hint: 'list the limits that must be enforced exactly, e.g. required: [memory, pids]',
        },
      );
    }
    const lifted = liftedBy.get(name);
    if (lifted === limitFlag(name)) {
      const example = `${lifted} ${LIMIT_BOUNDS[name].example.split(/[ ,]/)[0]}`;
      const conflict = `the profile lists ${LIMIT_KEYS[name]} in ${prefix}.required, so its limit cannot be lifted`;
      throw new SbxError('USAGE', `${lifted} none: ${conflict}`, {
        hint: `give ${lifted} a value instead (e.g. ${example}), or use a profile that does not require it`,
      });
    }
    if (limitValue(out, name) === undefined) {
      const state = `${key(name)} is ${lifted ? NO_LIMIT : 'not set'}`;
      throw new SbxError('LIMIT_INVALID', `${prefix}.required[${i}]: ${showValue(raw)} is required but ${state}`, {
        hint: lifted
          ? `give ${key(name)} a value: a limit in ${prefix}.required (inherited ones included) cannot be lifted`
          : `set ${key(name)} or remove it from ${prefix}.required`,
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
    case 'address-space':
      return limits.addressSpaceBytes;
  }
}
