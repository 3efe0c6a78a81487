// Human units for resource limits: parse what a profile says, format what a report shows. Pure.
//
// Sizes: a number, optional spaces, then an optional unit, case-insensitive.
//   KiB MiB GiB TiB PiB (also Ki, Mi, …)  ×1024ⁿ, binary
//   kB  MB  GB  TB  PB                    ×1000ⁿ, SI
//   K   M   G   T   P (letter alone)      ×1024ⁿ — what systemd (MemoryMax=1G), docker (-m 1g), ulimit
//                                         and `head -c 1M` mean by it, so a value copied from them keeps
//                                         its meaning
//   B or no unit                          bytes (must be a whole number)
//   "b" is bytes too: nobody limits memory in bits, and rejecting "512mb" would only annoy.
// Durations: one or more <number><unit> in descending order without repeats (1h30m, 2m30s, 500ms), units
//   d h m s ms, lower case only ("10M" could be minutes or months or megabytes; refused, not guessed). A
//   plain number is seconds.
// Counts: a whole number. CPUs: a positive decimal (0.5 = half of one CPU's time).
import { SbxError } from '../errors.js';
import { keySource } from '../profile/positions.js';

const KIB = 1024;
export const MIB = KIB ** 2;
export const GIB = KIB ** 3;
const TIB = KIB ** 4;
export const PIB = KIB ** 5;

const SIZE_UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  k: KIB,
  ki: KIB,
  kib: KIB,
  kb: 1e3,
  m: MIB,
  mi: MIB,
  mib: MIB,
  mb: 1e6,
  g: GIB,
  gi: GIB,
  gib: GIB,
  gb: 1e9,
  t: TIB,
  ti: TIB,
  tib: TIB,
  tb: 1e12,
  p: PIB,
  pi: PIB,
  pib: PIB,
  pb: 1e15,
};

const SECOND = 1000;
const DURATION_UNITS: readonly (readonly [string, number])[] = [
  ['d', 86_400 * SECOND],
  ['h', 3_600 * SECOND],
  ['m', 60 * SECOND],
  ['s', SECOND],
  ['ms', 1],
];

export interface Bounds {
  min: number;
  max: number;
}

export interface Example {
  /** Shown after "use e.g.", e.g. `512MiB or 2GiB`. */
  example: string;
}

const SIZE_HINT =
  'sizes are a number and a unit: KiB MiB GiB TiB (×1024), kB MB GB TB (×1000), K M G T alone mean KiB MiB GiB TiB, no unit = bytes';
const DURATION_HINT =
  'durations are <number><unit> pieces, largest first, units d h m s ms in lower case (e.g. 1h30m, 45s, 500ms); a plain number is seconds';

/** How a value appears in a message: strings quoted with control characters escaped, numbers as is. */
export function showValue(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

function invalid(key: string, value: unknown, what: string, example: string, hint: string): SbxError {
  const source = keySource(key);
  return new SbxError('LIMIT_INVALID', `${key}: ${showValue(value)} ${what}; use e.g. ${example}`, {
    hint,
    ...(source ? { source } : {}),
  });
}

function checkBounds(
  n: number,
  key: string,
  value: unknown,
  bounds: Bounds,
  format: (n: number) => string,
  example: string,
  hint: string,
): number {
  if (n < bounds.min) throw invalid(key, value, `is below the minimum of ${format(bounds.min)}`, example, hint);
  if (n > bounds.max) throw invalid(key, value, `is above the maximum of ${format(bounds.max)}`, example, hint);
  return n;
}

/** A size in bytes. */
export function parseSize(value: string | number, key: string, bounds: Bounds & Partial<Example>): number {
  const example = bounds.example ?? '512MiB or 2GiB';
  let bytes: number;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw invalid(key, value, 'is not a whole number of bytes', example, SIZE_HINT);
    bytes = value;
  } else {
    const m = /^(\d+(?:\.\d+)?|\.\d+)\s*([a-z]*)$/i.exec(value.trim());
    const unit = m ? SIZE_UNITS[m[2]!.toLowerCase()] : undefined;
    if (!m || unit === undefined) {
      const negative = /^\s*-/.test(value);
      throw invalid(
        key,
        value,
        negative ? 'is negative: a size must be positive' : 'is not a size',
        example,
        SIZE_HINT,
      );
    }
    const exact = Number(m[1]) * unit;
    if (unit === 1 && !Number.isInteger(exact))
      throw invalid(key, value, 'is not a whole number of bytes', example, SIZE_HINT);
    bytes = Math.floor(exact);
    if (!Number.isSafeInteger(bytes))
      throw invalid(key, value, `is above the maximum of ${formatSize(bounds.max)}`, example, SIZE_HINT);
  }
  return checkBounds(bytes, key, value, bounds, formatSize, example, SIZE_HINT);
}

/** A duration in milliseconds. */
export function parseDuration(value: string | number, key: string, bounds: Bounds & Partial<Example>): number {
  const example = bounds.example ?? '30s, 10m or 1h30m';
  let ms: number;
  if (typeof value === 'number' || /^\s*\d+(?:\.\d+)?\s*$/.test(value)) {
    const seconds = Number(value);
    if (!Number.isFinite(seconds) || seconds < 0)
      throw invalid(key, value, 'is not a duration', example, DURATION_HINT);
    ms = Math.round(seconds * SECOND);
  } else {
    const text = value.trim();
    const piece = /(\d+(?:\.\d+)?)(ms|d|h|m|s)/y;
    ms = 0;
    let last = -1;
    let at = 0;
    while (at < text.length) {
      piece.lastIndex = at;
      const m = piece.exec(text);
      const rank = m ? DURATION_UNITS.findIndex(([u]) => u === m[2]) : -1;
      if (!m || rank <= last) {
        const what = /^-/.test(text)
          ? 'is negative: a duration must be positive'
          : m
            ? 'has its units out of order (largest first, each once)'
            : 'is not a duration';
        throw invalid(key, value, what, example, DURATION_HINT);
      }
      ms += Number(m[1]) * DURATION_UNITS[rank]![1];
      last = rank;
      at = piece.lastIndex;
    }
    if (at === 0) throw invalid(key, value, 'is not a duration', example, DURATION_HINT);
    ms = Math.round(ms);
  }
  return checkBounds(ms, key, value, bounds, formatDuration, example, DURATION_HINT);
}

/** A whole positive count (processes, descriptors). */
export function parseCount(value: string | number, key: string, bounds: Bounds & Partial<Example>): number {
  const example = bounds.example ?? String(bounds.min * 16);
  const hint = `a whole number from ${bounds.min} to ${bounds.max}`;
  const n = typeof value === 'number' ? value : /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n)) {
    const negative = typeof value === 'number' ? value < 0 : /^\s*-/.test(value);
    throw invalid(
      key,
      value,
      negative ? 'is negative: a count must be positive' : 'is not a whole number',
      example,
      hint,
    );
  }
  return checkBounds(n, key, value, bounds, String, example, hint);
}

/** A CPU share: 1 = one CPU's worth of time per period, 0.5 = half of one. */
export function parseCpus(value: string | number, key: string, bounds: Bounds & Partial<Example>): number {
  const example = bounds.example ?? '2 or 0.5';
  const hint = `a number of CPUs from ${formatCpus(bounds.min)} to ${formatCpus(bounds.max)}, fractions allowed (0.5 = half a CPU)`;
  const n = typeof value === 'number' ? value : /^\s*(\d+(?:\.\d+)?|\.\d+)\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isFinite(n)) {
    const negative = typeof value === 'number' ? value < 0 : /^\s*-/.test(value);
    throw invalid(
      key,
      value,
      negative ? 'is negative: CPUs must be positive' : 'is not a number of CPUs',
      example,
      hint,
    );
  }
  return checkBounds(n, key, value, bounds, formatCpus, example, hint);
}

const DISPLAY_SIZES: readonly (readonly [string, number])[] = [
  ['PiB', PIB],
  ['TiB', TIB],
  ['GiB', GIB],
  ['MiB', MIB],
  ['KiB', KIB],
];

/** Bytes for humans, in binary units: exact when the value is a whole number of them (`512MiB`), else two decimals at most (`95.37MiB`). */
export function formatSize(bytes: number): string {
  for (const [name, unit] of DISPLAY_SIZES) {
    if (bytes >= unit) return `${trimDecimals(bytes / unit)}${name}`;
  }
  return `${bytes}B`;
}

/** Milliseconds as the largest-first pieces the parser accepts: `1h30m`, `45s`, `500ms`, `0s`. */
export function formatDuration(ms: number): string {
  let rest = Math.round(ms);
  let out = '';
  for (const [name, unit] of DURATION_UNITS) {
    const n = Math.floor(rest / unit);
    if (n > 0) out += `${n}${name}`;
    rest -= n * unit;
  }
  return out || '0s';
}

export function formatCpus(cpus: number): string {
  return trimDecimals(cpus);
}

function trimDecimals(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(2).replace(/\.?0+$/, '');
}
