// `sbx mcp --max-runs` (src/cli/mcp/run-slots.ts): at most N runs hold a slot, the rest wait first come
// first served, a cancelled waiter leaves the line without taking a slot, and the flag's value is checked.
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_RUNS, parseMaxRuns, runSlots } from '../../../src/cli/mcp/run-slots.js';

/** Whether the promise has settled by the time the microtasks queued so far have run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('runSlots', () => {
  it('gives out N slots at once; the next waits until one is released, in the order asked', async () => {
    const slots = runSlots(2);
    const a = await slots.acquire();
    const b = await slots.acquire();
    const told: number[] = [];
    const c = slots.acquire(undefined, (ahead) => told.push(ahead));
    const d = slots.acquire(undefined, (ahead) => told.push(ahead));
    expect(told).toEqual([0, 1]);
    expect(await settled(c)).toBe(false);
    a();
    a(); // a second release of the same slot frees nothing more
    expect(await settled(c)).toBe(true);
    expect(await settled(d)).toBe(false);
    b();
    expect(await settled(d)).toBe(true);
    (await c)();
    (await d)();
    // All free again: two at once, without waiting.
    const e = slots.acquire();
    const f = slots.acquire();
    expect([await settled(e), await settled(f)]).toEqual([true, true]);
  });

  it('a waiter whose signal fires is taken out of the line with ABORTED; the slot goes to the next', async () => {
    const slots = runSlots(1);
    const held = await slots.acquire();
    const cancel = new AbortController();
    const cancelled = slots.acquire(cancel.signal);
    const next = slots.acquire();
    cancel.abort();
    await expect(cancelled).rejects.toMatchObject({ code: 'ABORTED' });
    held();
    expect(await settled(next)).toBe(true);
  });

  it('an already aborted signal is refused without taking a slot', async () => {
    const slots = runSlots(1);
    await expect(slots.acquire(AbortSignal.abort())).rejects.toMatchObject({ code: 'ABORTED' });
    expect(await settled(slots.acquire())).toBe(true);
  });
});

describe('parseMaxRuns', () => {
  it.each([
    [undefined, DEFAULT_MAX_RUNS],
    ['1', 1],
    ['64', 64],
  ])('%s → %i', (value, n) => {
    expect(parseMaxRuns(value)).toBe(n);
  });

  it.each(['0', '65', '-1', '2.5', 'four', ''])('%j is a usage error', (value) => {
    expect(() => parseMaxRuns(value)).toThrow(expect.objectContaining({ code: 'USAGE' }));
  });
});
