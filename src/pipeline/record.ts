// What a run has learnt so far, stage by stage: each stage returns what it learnt and run.ts appends
// it here. Append-only: an entry is frozen, and a fact is learnt once (a second value for it is a bug,
// not an update). Every refusal carries the facts (SbxError.run), so `sbx log --session` and the
// caller see which profile, backend and policy a refused run had reached.
import type { RunFacts } from '../errors.js';

/** What run() learns as it goes: every refusal carries it (SbxError.run). */
export type KnownFacts = Omit<RunFacts, 'durationMs'>;

/** One stage's contribution. */
export type Learnt = Partial<Omit<KnownFacts, 'sessionId'>>;

export class RunRecord {
  readonly sessionId: string;
  readonly #entries: Readonly<Learnt>[] = [];

  constructor(sessionId: string) {
    this.sessionId = sessionId;
  }

  append(learnt: Learnt): void {
    const again = Object.keys(learnt).find((key) => this.#entries.some((e) => key in e));
    if (again !== undefined) throw new Error(`run record: ${again} was learnt twice`);
    this.#entries.push(Object.freeze({ ...learnt }));
  }

  /** The facts learnt so far, in the order the stages learnt them. */
  known(): KnownFacts {
    return Object.assign({ sessionId: this.sessionId, profile: null }, ...this.#entries);
  }
}
