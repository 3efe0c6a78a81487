// The proxy's questions (src/network/host/egress-questions.ts): one question per host and port,
// shared by connections that arrive while it waits; the answer holds for the run; a timeout, a throw
// or an answer off the list denies; the caps refuse unasked; close() ends what waits.
import { describe, expect, it } from 'vitest';
import { egressQuestions, type QuestionOutcome } from '../../../../src/network/host/egress-questions.js';
import {
  MAX_PENDING_QUESTIONS,
  MAX_QUESTIONS_PER_RUN,
  type NetworkAnswer,
  type NetworkRequest,
} from '../../../../src/network/network-asks.js';

/** An asker whose questions the test answers by hand. */
function handAsker() {
  const waiting: { request: NetworkRequest; answer: (a: unknown) => void; signal: AbortSignal }[] = [];
  const ask = (request: NetworkRequest, { signal }: { signal: AbortSignal }) =>
    new Promise<NetworkAnswer>((resolve) => waiting.push({ request, answer: resolve as (a: unknown) => void, signal }));
  return { ask, waiting };
}

function board(ask: Parameters<typeof egressQuestions>[0]['ask'], timeoutMs = 60_000) {
  const records: [NetworkRequest, QuestionOutcome][] = [];
  const remembered: NetworkRequest[] = [];
  const notices: string[] = [];
  const questions = egressQuestions({
    ask,
    timeoutMs,
    record: (r, o) => records.push([r, o]),
    remember: async (r) => {
      remembered.push(r);
    },
    notice: (line) => notices.push(line),
  });
  return { questions, records, remembered, notices };
}

describe('egressQuestions', () => {
  it('asks once for concurrent connections to one host:port, and the answer holds for the run', async () => {
    const hand = handAsker();
    const b = board(hand.ask);
    const first = b.questions.settle('a.test', 443);
    const second = b.questions.settle('a.test', 443);
    await Promise.resolve();
    expect(hand.waiting.map((w) => w.request)).toEqual([{ host: 'a.test', port: 443 }]);
    hand.waiting[0]!.answer('once');
    expect(await first).toEqual({ allowed: true });
    expect(await second).toEqual({ allowed: true });
    expect(await b.questions.settle('a.test', 443)).toEqual({ allowed: true });
    expect(hand.waiting).toHaveLength(1);
    expect(b.records).toEqual([
      [
        { host: 'a.test', port: 443 },
        { decision: 'once', by: 'user' },
      ],
    ]);
    expect(b.remembered).toEqual([]);
  });

  it('another port of the same host is another question; one waiting does not hold up the other', async () => {
    const hand = handAsker();
    const b = board(hand.ask);
    const p443 = b.questions.settle('a.test', 443);
    const p80 = b.questions.settle('a.test', 80);
    await Promise.resolve();
    expect(hand.waiting).toHaveLength(2);
    hand.waiting[1]!.answer('deny');
    expect(await p80).toEqual({ allowed: false, why: 'asked, and denied for this run' });
    hand.waiting[0]!.answer('always');
    expect(await p443).toEqual({ allowed: true });
    expect(b.remembered).toEqual([{ host: 'a.test', port: 443 }]);
    // A denial holds for the run too: not asked again.
    expect((await b.questions.settle('a.test', 80)).allowed).toBe(false);
    expect(hand.waiting).toHaveLength(2);
  });

  it('a throw, a non-answer and an answer off the list deny, and are recorded as refused', async () => {
    for (const [given, pattern] of [
      [() => Promise.reject(new Error('boom')), /the asker failed \(boom\)/],
      [() => 'yes', /answered "yes"/],
      [() => undefined, /answered undefined/],
    ] as const) {
      const b = board(given as never);
      const settled = await b.questions.settle('a.test', 443);
      expect(settled.allowed).toBe(false);
      expect(!settled.allowed && settled.why).toMatch(pattern);
      expect(b.records[0]?.[1]).toMatchObject({ decision: 'refused', by: 'user' });
    }
  });

  it('a question unanswered within its timeout denies, says so, and tells the asker to stop', async () => {
    const hand = handAsker();
    const b = board(hand.ask, 20);
    const settled = await b.questions.settle('slow.test', 443);
    expect(settled).toEqual({ allowed: false, why: 'asked, and no answer came within 0 s (denied)' });
    expect(hand.waiting[0]!.signal.aborted).toBe(true);
    expect(b.records[0]?.[1]).toMatchObject({ decision: 'refused', by: 'timeout' });
    // A late answer changes nothing.
    hand.waiting[0]!.answer('once');
    expect((await b.questions.settle('slow.test', 443)).allowed).toBe(false);
  });

  it(`refuses unasked past ${MAX_PENDING_QUESTIONS} questions waiting at once`, async () => {
    const hand = handAsker();
    const b = board(hand.ask);
    const waiting = Array.from({ length: MAX_PENDING_QUESTIONS }, (_, i) => b.questions.settle(`h${i}.test`, 443));
    const over = await b.questions.settle('over.test', 443);
    expect(over).toEqual({ allowed: false, why: expect.stringMatching(/not asked: .* wait for an answer/) });
    expect(hand.waiting).toHaveLength(MAX_PENDING_QUESTIONS);
    for (const w of hand.waiting) w.answer('deny');
    await Promise.all(waiting);
    // Once answered, room again: over.test was never remembered as answered.
    const later = b.questions.settle('over.test', 443);
    await Promise.resolve();
    expect(hand.waiting).toHaveLength(MAX_PENDING_QUESTIONS + 1);
    hand.waiting.at(-1)!.answer('once');
    expect(await later).toEqual({ allowed: true });
  });

  it(`asks at most ${MAX_QUESTIONS_PER_RUN} questions per run`, async () => {
    const b = board(() => 'deny');
    for (let i = 0; i < MAX_QUESTIONS_PER_RUN; i++) await b.questions.settle(`h${i}.test`, 443);
    const over = await b.questions.settle('over.test', 443);
    expect(over).toEqual({ allowed: false, why: expect.stringMatching(/has asked 20 questions already/) });
    expect(b.records).toHaveLength(MAX_QUESTIONS_PER_RUN);
  });

  it('close() refuses what waits, tells the asker, and asks nothing more', async () => {
    const hand = handAsker();
    const b = board(hand.ask);
    const waiting = b.questions.settle('a.test', 443);
    await Promise.resolve();
    b.questions.close();
    expect(await waiting).toEqual({ allowed: false, why: 'the run ended before an answer came' });
    expect(hand.waiting[0]!.signal.aborted).toBe(true);
    expect(await b.questions.settle('b.test', 443)).toEqual({ allowed: false, why: 'the run ended' });
    expect(b.records).toEqual([]);
  });

  it('an always that cannot be remembered still allows this run, and says so', async () => {
    const notices: string[] = [];
    const questions = egressQuestions({
      ask: () => 'always',
      timeoutMs: 60_000,
      record: () => undefined,
      remember: () => Promise.reject(new Error('store locked')),
      notice: (line) => notices.push(line),
    });
    expect(await questions.settle('a.test', 443)).toEqual({ allowed: true });
    expect(notices).toEqual(['sbx: could not remember a.test:443 for later runs (store locked); allowed for this run']);
  });
});
