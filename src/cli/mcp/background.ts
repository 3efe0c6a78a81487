// `sbx mcp`'s background runs: the `start` tool runs a command that outlives its call (a dev server),
// answers once the sandbox is launched with a job number, and the `stop` tool ends it (SIGTERM, then
// SIGKILL after the grace) and answers with its result; the end of the server ends every one. Later
// `run` calls of the workspace reach a port the job publishes (network.publish: they join its server,
// network/host/published.ts). A job holds no run slot (it would hold it for good) and at most
// MAX_JOBS exist at once, running or ended and not yet collected by `stop`. One per server, made in
// mcpCommand: no module state.
import { SbxError } from '../../errors.js';
import type { ToolResult } from './mcp-results.js';

export const MAX_JOBS = 4;

/** How a job runs: until `signal` fires; `onLaunch` once its sandbox is about to start. */
export type JobRun = (signal: AbortSignal, onLaunch: (sessionId: string) => void) => Promise<ToolResult>;

export interface Jobs {
  /**
   * Starts `run`: resolves with the job's number and session once launched, or with the run's own
   * result when it ends before (a refusal, a command that exits at once). Throws past MAX_JOBS.
   */
  start(run: JobRun): Promise<{ job: number; session: string } | { result: ToolResult }>;
  /** Ends job `job` (if still running) and returns its result, or undefined for no such job. */
  stop(job: number): Promise<ToolResult | undefined>;
  /** Ends every job, once all their sandboxes are gone. */
  stopAll(): Promise<void>;
}

export function backgroundJobs(): Jobs {
  const jobs = new Map<number, { abort: AbortController; done: Promise<ToolResult> }>();
  let last = 0;
  return {
    async start(run) {
      if (jobs.size >= MAX_JOBS)
        throw new SbxError('USAGE', `${MAX_JOBS} background jobs already exist: nothing was started`, {
          hint: 'end one with the stop tool ({"job": N}), which also returns its output',
        });
      const abort = new AbortController();
      let launched: (session: string) => void = () => {};
      const started = new Promise<string>((resolve) => {
        launched = resolve;
      });
      const done = run(abort.signal, (session) => launched(session));
      // A job nobody stops still settles: its failure is stop's to report, never an unhandled rejection.
      done.catch(() => {});
      // Counted from now, so that starts in flight at once cannot pass the cap together.
      const job = ++last;
      jobs.set(job, { abort, done });
      const first = await Promise.race([
        started.then((session) => ({ session })),
        done.then((result) => ({ result })),
      ]).catch((error: unknown) => {
        jobs.delete(job);
        throw error;
      });
      if (!('result' in first)) return { job, session: first.session };
      jobs.delete(job);
      return first;
    },
    async stop(job) {
      const entry = jobs.get(job);
      if (!entry) return undefined;
      entry.abort.abort();
      const result = await entry.done;
      jobs.delete(job);
      // Ended as asked: a stopped server is not a failed call; a violation or sbx's error still is.
      const report = result.structuredContent as { interruptedBy?: string; violations?: unknown[]; error?: unknown };
      const stopped = report.interruptedBy === 'caller' && !report.violations?.length && !report.error;
      return stopped ? { ...result, isError: false } : result;
    },
    async stopAll() {
      for (const { abort } of jobs.values()) abort.abort();
      await Promise.all([...jobs.values()].map((j) => j.done.catch(() => {})));
      jobs.clear();
    },
  };
}
