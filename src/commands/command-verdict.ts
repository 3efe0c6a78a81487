// What the command rules come to (docs/DESIGN.md, "Command rules"): allow, ask with the reason, or deny
// with every violation, per command of a shell string too; and the findings each judge of the rules
// (command-rules.ts, shell-units.ts) adds to while it reads a command. Pure.
import type { Violation } from '../policy/violation.js';
import type { Redirect } from './shell-words.js';

export type Verdict =
  | { verdict: 'allow' }
  | { verdict: 'ask'; detail: string }
  | { verdict: 'deny'; violations: Violation[] };

/** The verdict on one command of a shell string (`sbx explain --shell` shows each). */
export interface CommandVerdict {
  argv: string[];
  redirects: Redirect[];
  decision: Verdict;
}

/**
 * A command that will reach for the network when the sandbox has none, and is not refused for it (a
 * package manager may find what it needs in a cache): the run is told why it will fail or hang.
 */
export interface NetworkUse {
  /** As the user would say it: `npm install`. */
  command: string;
  /** The hosts it needs, for an allow-list (`--allow-domain`, `allowDomains`). */
  domains: readonly string[];
}

/**
 * The verdict; for a shell string judged command by command, each command's own verdict too. `rules`,
 * when the caller asked for it (`sbx why`): the key paths of the rules that let its commands run or
 * asked about them (`commands.allow.make`, `commands.default`), in the order met; a refusal's rules
 * are its violations' sources.
 */
export type CommandDecision = Verdict & { commands?: CommandVerdict[]; needsNetwork?: NetworkUse[]; rules?: string[] };

/** What the judges found in one command, or in all of them: refusals, questions, network needs. */
export interface Verdicts {
  violations: Violation[];
  asks: string[];
  network: NetworkUse[];
  /** The key paths of the rules that let a command run or asked about it (CommandDecision `rules`). */
  decidedBy?: string[];
}

/** A rule that let a command run or asked about it: `sbx why` names its line. */
export function decidedBy(out: Verdicts, key: string): void {
  out.decidedBy ??= [];
  out.decidedBy.push(key);
}

/** `key`: the profile key path of the very entry that refused (`commands.deny[2]`), when the rule id does not say it. */
export function refuse(out: Verdicts, rule: string, detail: string, key?: string): void {
  out.violations.push({ phase: 'preflight', kind: 'command', rule, detail, ...(key ? { source: { key } } : {}) });
}

/** The verdict the findings come to: any refusal denies, else any question asks. */
export function verdictOf(out: Verdicts): Verdict {
  if (out.violations.length > 0) return { verdict: 'deny', violations: out.violations };
  if (out.asks.length > 0) return { verdict: 'ask', detail: out.asks.join('; ') };
  return { verdict: 'allow' };
}
