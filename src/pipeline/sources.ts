// Where this run's rules were written: the resolved profile's positions, and the keys a flag (or
// library option) of this run set instead. Every violation and refusal is located with them at the
// edge, once (profile/positions.ts): the pure stages name key paths, never files or lines.
import type { SbxError } from '../errors.js';
import { LIMIT_KEYS, LIMIT_NAMES, limitFlag } from '../limits/parse-limits.js';
import type { Violation } from '../policy/violation.js';
import type { WhyAnswer, WhyRule } from '../policy/why.js';
import { locateSource, locateViolation, type KeyPositions, type RuleSources } from '../profile/positions.js';
import type { CompileOptions } from './run-options.js';

/** The profile keys this request overrides, and the flag that did. `--allow-domain` only when no profile line lists the allow-list. */
export function ruleSourcesOf(options: CompileOptions, positions: KeyPositions): RuleSources {
  const flags: Record<string, string> = {};
  for (const name of LIMIT_NAMES)
    if (options.limits?.[LIMIT_KEYS[name]] !== undefined) flags[`limits.${LIMIT_KEYS[name]}`] = limitFlag(name);
  if (options.network !== undefined) flags.network = '--network';
  if (options.workspace !== undefined) flags.workspace = '--workspace';
  if (options.tmpSize !== undefined) flags['tmp.size'] = '--tmp-size';
  if (options.allowDomains?.length && positions['network.allow'] === undefined)
    flags['network.allow'] = '--allow-domain';
  return { positions, flags };
}

export function locateViolations(violations: readonly Violation[], sources: RuleSources): Violation[] {
  return violations.map((v) => locateViolation(v, sources));
}

/** A refusal with its rule's file and line (and those of each violation it carries), in place. */
export function locateError(error: SbxError, sources: RuleSources): void {
  if (error.source) error.source = locateSource(error.source, sources);
  error.violations.splice(0, error.violations.length, ...locateViolations(error.violations, sources));
}

/** `sbx why`'s answer with every rule's line located, as a refusal's would be. */
export function locateAnswer(answer: WhyAnswer, sources: RuleSources): WhyAnswer {
  const at = <R extends WhyRule>(r: R): R => (r.source ? { ...r, source: locateSource(r.source, sources) } : r);
  if (answer.kind === 'command') return { ...answer, rules: answer.rules.map(at) };
  return { ...at(answer), also: answer.also.map(at) };
}
