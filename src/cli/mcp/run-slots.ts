// How many sandboxes `sbx mcp` runs at once (`--max-runs`): a call past the cap waits, first come first
// served, for one to end, and a client's cancellation takes a waiting call out of the line. An agent
// fires tool calls in parallel; without a cap each one is a sandbox, its processes and its memory at
// once (docs/SECURITY.md "sbx mcp"). Waiting rather than refusing: a refused call would only be
// retried. One per server, made in mcpCommand: no module state.
import { SbxError } from '../../errors.js';

export const DEFAULT_MAX_RUNS = 4;
/** Far above what one agent runs usefully at once; a larger value is a typo. */
export const MAX_MAX_RUNS = 64;

export interface RunSlots {
  /**
   * Resolves with the slot's release once a slot is free (at once when one is; `onWait` is told when
   * not), or rejects with ABORTED when `signal` fires first. `release` is idempotent.
   */
  acquire(signal?: AbortSignal, onWait?: (ahead: number) => void): Promise<() => void>;
}

export function runSlots(max: number): RunSlots {
  let running = 0;
  const waiting: (() => void)[] = [];
  const releaser = () => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = waiting.shift();
      // The slot passes straight to the next in line: `running` stays as it is.
      if (next) next();
      else running--;
    };
  };
  return {
    acquire(signal, onWait) {
      if (signal?.aborted) return Promise.reject(aborted());
      if (running < max) {
        running++;
        return Promise.resolve(releaser());
      }
      return new Promise((resolve, reject) => {
        const start = () => {
          signal?.removeEventListener('abort', cancel);
          resolve(releaser());
        };
        const cancel = () => {
          const i = waiting.indexOf(start);
          if (i >= 0) waiting.splice(i, 1);
          reject(aborted());
        };
        waiting.push(start);
        signal?.addEventListener('abort', cancel, { once: true });
        onWait?.(waiting.length - 1);
      });
    },
  };
}

function aborted(): SbxError {
  return new SbxError('ABORTED', 'the call was cancelled while it waited for a free run slot: nothing ran', {
    hint: 'call again; sbx mcp --max-runs sets how many commands run at once',
  });
}

/** `--max-runs N` as given on the command line. */
export function parseMaxRuns(value: string | undefined): number {
  if (value === undefined) return DEFAULT_MAX_RUNS;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > MAX_MAX_RUNS)
    throw new SbxError('USAGE', `--max-runs ${value}: not a whole number from 1 to ${MAX_MAX_RUNS}`, {
      hint: `e.g. --max-runs ${DEFAULT_MAX_RUNS} (the default)`,
    });
  return n;
}
