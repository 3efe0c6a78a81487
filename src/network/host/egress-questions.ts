// The proxy's questions (docs/DESIGN.md, "Asking at the proxy"): a destination no allow entry matched
// is put to the run's asker, outside the sandbox, while the connection waits. One question per
// host and port: connections to a destination already asked about wait for the same answer, and the
// answer holds for the rest of the run. Bounded (docs/SECURITY.md, "Asking instead of failing"): a
// question unanswered within its timeout is a denial, at most MAX_PENDING_QUESTIONS wait at once and
// MAX_QUESTIONS_PER_RUN are asked per run; past either, a destination is refused unasked.
import {
  MAX_PENDING_QUESTIONS,
  MAX_QUESTIONS_PER_RUN,
  type NetworkAnswer,
  type NetworkAsker,
  type NetworkRequest,
} from '../network-asks.js';

/** What became of a question: allowed, or refused and why (the violation's detail says it). */
export type Settled = { allowed: true } | { allowed: false; why: string };

/** An answer as the ledger records it: who gave it (`timeout`: nobody, in time). */
export type QuestionOutcome =
  | { decision: NetworkAnswer; by: 'user' }
  | { decision: 'refused'; by: 'user' | 'timeout'; why: string };

export interface QuestionsInit {
  ask: NetworkAsker;
  timeoutMs: number;
  /** Every answer, as it arrives (the audit ledger); called before the answer takes effect. */
  record(request: NetworkRequest, outcome: QuestionOutcome): void;
  /** An `always`: written to the user's approvals store. A failure is told, and this run still allows it. */
  remember(request: NetworkRequest): Promise<void>;
  /** One line for the caller (a remembered answer that could not be written). */
  notice(line: string): void;
}

export interface EgressQuestions {
  /** Asks about `host` (normal form) and `port`, or returns the answer this run already has. Never rejects. */
  settle(host: string, port: number): Promise<Settled>;
  /** The run is over: every pending question is refused and its asker told (its signal fires). */
  close(): void;
}

function answerOf(value: unknown): NetworkAnswer | undefined {
  return value === 'once' || value === 'always' || value === 'deny' ? value : undefined;
}

function shown(value: unknown): string {
  return (typeof value === 'string' ? JSON.stringify(value) : String(value)).slice(0, 40);
}

export function egressQuestions(init: QuestionsInit): EgressQuestions {
  const answered = new Map<string, Settled>();
  const pending = new Map<string, Promise<Settled>>();
  const live = new Set<AbortController>();
  let asked = 0;
  let closed = false;

  /** The asker's answer, or a refusal when it fails, answers nonsense, or runs out of time. */
  async function askOnce(request: NetworkRequest): Promise<Settled> {
    const controller = new AbortController();
    live.add(controller);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), init.timeoutMs);
    });
    const ended = new Promise<'closed'>((resolve) =>
      controller.signal.addEventListener('abort', () => resolve('closed')),
    );
    let given: unknown;
    try {
      given = await Promise.race([
        Promise.resolve()
          .then(() => init.ask({ ...request }, { signal: controller.signal }))
          .catch((error: unknown) => ({ failed: error })),
        expired,
        ended,
      ]);
    } finally {
      clearTimeout(timer);
      live.delete(controller);
      controller.abort();
    }
    if (given === 'closed') return { allowed: false, why: 'the run ended before an answer came' };
    if (given === 'timeout') {
      const why = `asked, and no answer came within ${Math.round(init.timeoutMs / 1000)} s (denied)`;
      init.record(request, { decision: 'refused', by: 'timeout', why });
      return { allowed: false, why };
    }
    const answer = answerOf(given);
    if (!answer) {
      const failed = typeof given === 'object' && given !== null && 'failed' in given;
      const cause = failed ? (given as { failed: unknown }).failed : undefined;
      const why = failed
        ? `the asker failed (${(cause instanceof Error ? cause.message : String(cause)).slice(0, 80)}), which denies`
        : `the asker answered ${shown(given)}, which denies (only 'once' and 'always' allow)`;
      init.record(request, { decision: 'refused', by: 'user', why });
      return { allowed: false, why };
    }
    init.record(request, { decision: answer, by: 'user' });
    if (answer === 'deny') return { allowed: false, why: 'asked, and denied for this run' };
    if (answer === 'always')
      await init.remember(request).catch((error: unknown) => {
        const why = error instanceof Error ? error.message : String(error);
        init.notice(
          `sbx: could not remember ${request.host}:${request.port} for later runs (${why}); allowed for this run`,
        );
      });
    return { allowed: true };
  }

  return {
    settle(host, port) {
      const key = `${host} ${port}`;
      const known = answered.get(key) ?? pending.get(key);
      if (known) return Promise.resolve(known);
      if (closed) return Promise.resolve({ allowed: false, why: 'the run ended' });
      if (pending.size >= MAX_PENDING_QUESTIONS)
        return Promise.resolve({
          allowed: false,
          why: `not asked: ${MAX_PENDING_QUESTIONS} questions already wait for an answer`,
        });
      if (asked >= MAX_QUESTIONS_PER_RUN)
        return Promise.resolve({
          allowed: false,
          why: `not asked: this run has asked ${MAX_QUESTIONS_PER_RUN} questions already`,
        });
      asked++;
      const question = askOnce({ host, port }).then((settled) => {
        pending.delete(key);
        if (!closed) answered.set(key, settled);
        return settled;
      });
      pending.set(key, question);
      return question;
    },
    close() {
      closed = true;
      for (const controller of live) controller.abort();
    },
  };
}
