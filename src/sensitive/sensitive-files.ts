// Secret-looking files inside a mounted tree (a workspace, a bound project): the scan in
// sensitive/host/sensitive-scan.ts finds them, the backend masks them so the sandboxed command reads
// nothing (.env, credentials, keys), or shows a view without credentials (.git/config). The names
// include the registry and SSH-key files of SENSITIVE_HOME_ROOTS, which also turn up copied into
// projects. The classes (credential names, name hints, git config) are explained in
// sensitive-globs.ts.
//
// Glob dialect (built-ins and profile additions alike): minimatch with `dot: true`, matched against
// the path relative to the tree root. As in .gitignore, a pattern without a slash matches at any
// depth (`*.pem` is `**/*.pem`), a leading `/` or `./` anchors it to the root, and a trailing `/`
// matches directories only (and symlinks, which may resolve to one). A matching directory is masked
// whole and not descended into.
import { braceExpand, makeRe, type MinimatchOptions } from 'minimatch';
import {
  sensitiveRulesFrom,
  type MatcherData,
  type RegExpData,
  type RuleSetData,
  type SensitiveRuleData,
  type SensitiveRules,
} from './sensitive-matcher.js';

export type { SensitiveClass, SensitiveRules } from './sensitive-matcher.js';
import {
  BUILTIN_EXCEPT_GLOBS,
  BUILTIN_GIT_CONFIG_GLOBS,
  BUILTIN_HINT_GLOBS,
  BUILTIN_MASK_GLOBS,
  BUILTIN_PROTECT_GLOBS,
  DEFAULT_SKIP_DIRS,
  SOURCE_EXTENSIONS,
} from './sensitive-globs.js';

export interface SensitiveRuleInput {
  /** Profile globs masked (as credential names are, whatever the file holds), added to the built-ins. */
  files?: readonly string[];
  /** Profile globs never masked, added to the built-in exceptions (`sensitive.except`). */
  except?: readonly string[];
  /** This run's globs never masked (`--unmask`, the library's `unmask`): sensitive.except for one run. */
  unmask?: readonly string[];
  /** Profile directories (globs) the scan does not enter, added to DEFAULT_SKIP_DIRS. */
  skip?: readonly string[];
}

// nocomment/nonegate: `#x` and `!x` are file names here, never comments or negations.
const GLOB_OPTIONS: MinimatchOptions = { dot: true, nocomment: true, nonegate: true };

interface NormalisedGlob {
  glob: string;
  dirOnly: boolean;
}

function normaliseGlob(pattern: string): NormalisedGlob {
  const dirOnly = pattern.endsWith('/');
  const anchored = pattern.startsWith('/') || pattern.startsWith('./');
  const glob = pattern.replace(/^(?:\.?\/)+/, '').replace(/\/+$/, '');
  if (glob === '') throw new RangeError(`sensitive-file glob ${JSON.stringify(pattern)} names no path`);
  return { glob: anchored || glob.includes('/') ? glob : `**/${glob}`, dirOnly };
}

function compileGlob(glob: string): RegExp {
  const re = makeRe(glob, GLOB_OPTIONS);
  if (re === false) throw new RangeError(`sensitive-file glob ${JSON.stringify(glob)} is not a valid pattern`);
  return re;
}

/**
 * The globs of a list compiled into as few RegExps as possible: one alternation per set of flags
 * (each compiled source is anchored ^…$). minimatch adds the `u` flag for POSIX classes, and a source
 * written for one flag set may not parse under another (`\-` is an error with `u`).
 */
function unionOf(globs: readonly string[]): RegExpData[] {
  const sourcesByFlags = new Map<string, string[]>();
  for (const glob of new Set(globs)) {
    const re = compileGlob(glob);
    sourcesByFlags.set(re.flags, [...(sourcesByFlags.get(re.flags) ?? []), re.source]);
  }
  return [...sourcesByFlags].map(([flags, sources]) => ({ source: sources.join('|'), flags }));
}

/**
 * Most globs are `**` + `/` + one segment: those match a path exactly when its basename matches the
 * segment, and testing the segment against the basename costs a fraction of testing the compiled
 * `**` prefix (a lazy scan) against the whole path.
 */
function compileMatcher(globs: readonly string[]): MatcherData {
  const isBasenameGlob = (g: string) => /^\*\*\/[^/]+$/.test(g);
  return {
    basename: unionOf(globs.filter(isBasenameGlob).map((g) => g.slice(3))),
    path: unionOf(globs.filter((g) => !isBasenameGlob(g))),
  };
}

/** Separate matchers for rules that match any entry and rules that match directories only. */
function compileRuleSet(patterns: readonly string[]): RuleSetData {
  const normalised = patterns.map(normaliseGlob);
  return {
    any: compileMatcher(normalised.filter((n) => !n.dirOnly).map((n) => n.glob)),
    dirOnly: compileMatcher(normalised.filter((n) => n.dirOnly).map((n) => n.glob)),
  };
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A substring that every match of the glob's last segment contains, or undefined when there is none
 * to be sure of (a final `**`, a segment of wildcards only, or extglob and escape syntax, which this
 * does not parse). Sound because minimatch matches segment by segment: a path's last segment
 * matches the pattern's last segment, or that one is a globstar.
 */
function requiredLiteral(expandedGlob: string): string | undefined {
  const last = expandedGlob.slice(expandedGlob.lastIndexOf('/') + 1);
  if (last === '**' || /[\\(){}|]/.test(last)) return undefined;
  const withoutClasses = last.replace(/\[[^\]]*\]/g, '*');
  if (/[[\]]/.test(withoutClasses)) return undefined; // `[]a]`, `[[:alpha:]]`: not parsed here
  const runs = withoutClasses.split(/[*?]/).sort((a, b) => b.length - a.length);
  return runs[0] || undefined;
}

/**
 * An unanchored RegExp of the literal each glob's last segment requires: a name (or a path whose
 * last segment, or an ancestor's, matched) that contains none of them cannot match. Undefined when
 * some glob has no such literal, and then no filtering is possible. One literal search per entry is
 * twice as fast as testing the compiled segment globs, and it is the bulk of the scan's own cost.
 */
function literalFilter(patterns: readonly string[]): RegExpData | null {
  const literals = new Set<string>();
  for (const pattern of patterns) {
    for (const expanded of braceExpand(normaliseGlob(pattern).glob, GLOB_OPTIONS)) {
      const literal = requiredLiteral(expanded);
      if (literal === undefined) return null;
      literals.add(literal);
    }
  }
  return { source: [...literals].map(escapeRegExp).join('|'), flags: '' };
}

/**
 * The rules as plain data (RegExp sources): what the runtime caches, so a launch whose rules are
 * cached never loads minimatch. Throws RangeError for a glob that names nothing or does not parse.
 */
export function compileSensitiveRuleData(input: SensitiveRuleInput = {}): SensitiveRuleData {
  const maskPatterns = [...BUILTIN_MASK_GLOBS, ...(input.files ?? [])];
  // A skip directory prunes itself and everything below it.
  const skipPatterns = [...DEFAULT_SKIP_DIRS, ...(input.skip ?? [])];
  return {
    mask: compileRuleSet(maskPatterns),
    hint: compileRuleSet(BUILTIN_HINT_GLOBS),
    gitConfig: compileRuleSet(BUILTIN_GIT_CONFIG_GLOBS),
    source: { source: `\\.(?:${SOURCE_EXTENSIONS.join('|')})$`, flags: 'i' },
    except: compileRuleSet(BUILTIN_EXCEPT_GLOBS),
    exceptProfile: compileRuleSet(input.except ?? []),
    unmask: compileRuleSet(input.unmask ?? []),
    protect: compileRuleSet(BUILTIN_PROTECT_GLOBS),
    skip: unionOf(skipPatterns.map((p) => normaliseGlob(p).glob).flatMap((g) => [g, `${g}/**`])),
    skipLiterals: literalFilter(skipPatterns),
    names: literalFilter([
      ...maskPatterns,
      ...BUILTIN_HINT_GLOBS,
      ...BUILTIN_GIT_CONFIG_GLOBS,
      ...BUILTIN_PROTECT_GLOBS,
    ]),
  };
}

export function compileSensitiveRules(input: SensitiveRuleInput = {}): SensitiveRules {
  return sensitiveRulesFrom(compileSensitiveRuleData(input));
}
