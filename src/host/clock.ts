// Milliseconds on the monotonic clock. process.hrtime, not performance.now(): the first call of the
// latter loads perf_hooks, about a millisecond of every CLI launch (bench/launch.mjs).
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
