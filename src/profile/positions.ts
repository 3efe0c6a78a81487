// Where each key and list item of a resolved profile was written, and the source a refusal names: the
// profile line of its rule, the flag that stood in for it, or sbx's default. Pure. parse.ts records a
// file's positions, merge.ts carries them through `extends`, load.ts caches them with the profile, and
// the pipeline locates every violation and refusal with them (docs/ARCHITECTURE.md, "Where a rule was
// written"). Positions stay out of the Policy: its hash names the sandbox, not where its rules sit.
import type { Violation, ViolationSource } from '../policy/violation.js';

/** Where a profile file came from: named by path, a project's `.sbx/profiles`, the user's config dir, or sbx's own. */
export type ProfileSource = 'path' | 'project' | 'user' | 'builtin';

export interface KeyPosition {
  /** The profile file as found (load.ts: a built-in under sbx's profiles/, a project's under .sbx/profiles/). */
  file: string;
  line: number;
  col: number;
}

/** Key path (`commands.deny[2]`, `limits.memory`) → where the key (or the list item) was written. */
export type KeyPositions = Record<string, KeyPosition>;

/** What a run locates its rules with: the profile's positions, and the keys a flag of this run set instead. */
export interface RuleSources {
  positions: KeyPositions;
  /** Key path → the flag (or library option) that set it for this run, e.g. `limits.memory` → `--memory`. */
  flags: Readonly<Record<string, string>>;
}

/** `commands.allow.git.block[1]` → `commands.allow.git.block`; a top-level key → ''. */
export function parentKey(key: string): string {
  const at = Math.max(key.lastIndexOf('.'), key.lastIndexOf('['));
  return at <= 0 ? '' : key.slice(0, at);
}

/**
 * The profile key of a violation's rule id, when the rule is one a profile key sets: `limits.memory`
 * and `commands.deny` are key paths already; a path guard is `commands.paths`; an offline refusal is
 * the `network` key (`none`, written or by default). A signal or a malformed destination has none.
 */
export function ruleKey(rule: string): string | undefined {
  if (rule === 'commands.offline') return 'network';
  if (rule === 'approval') return 'commands.default';
  if (rule === 'network.private') return 'network.allow_private';
  if (rule.startsWith('paths.')) return 'commands.paths';
  if (rule === 'network.invalid') return undefined;
  if (/^(limits|commands|network|seccomp)(\.|$)/.test(rule)) return rule;
  return undefined;
}

/**
 * A `where` of a message as a source: a flag (`--bind`) is one, a key path (`writable_roots[2]`,
 * `workspace`) is located later; a phrase ("the git worktree's shared git directory") is none.
 */
export function keySource(where: string): ViolationSource | undefined {
  if (/^--[a-z-]+$/.test(where)) return { key: where, origin: 'flag' };
  if (/^[a-z_]+(\.[A-Za-z0-9_.+-]+|\[\d+\])*$/.test(where)) return { key: where };
  return undefined;
}

/**
 * The source of a rule: the flag that set its key for this run, else the line of the key or of the
 * nearest enclosing key written (`network.allow` added by nothing but `network: {...}` points at
 * `network`), else sbx's default. A source already decided (a flag, a line) is kept.
 */
export function locateSource(source: ViolationSource, sources: RuleSources): ViolationSource {
  if (source.origin !== undefined || source.file !== undefined) return source;
  const flag = sources.flags[source.key];
  if (flag !== undefined) return { key: flag, origin: 'flag' };
  for (let key = source.key; key !== ''; key = parentKey(key)) {
    const at = sources.positions[key];
    if (at) return { key: source.key, file: at.file, line: at.line, col: at.col, origin: 'profile' };
  }
  return { key: source.key, origin: 'default' };
}

/** The violation with its source located; one whose rule no profile key sets is returned as is. */
export function locateViolation(v: Violation, sources: RuleSources): Violation {
  const key = v.source?.key ?? ruleKey(v.rule);
  if (key === undefined) return v;
  return { ...v, source: locateSource(v.source ?? { key }, sources) };
}
