// Secret-looking files inside a mounted tree (a workspace, a bound project): the scan in
// runtime/sensitive-scan.ts finds them, the backend masks them so the sandboxed command reads
// nothing. Seed 000 "Sensitive File Deny List" (.env, credentials, keys, .git/config), plus the
// registry and SSH-key names of SENSITIVE_HOME_ROOTS, which also turn up copied into projects.
//
// Glob dialect (built-ins and profile additions alike): minimatch with `dot: true`, matched against
// the path relative to the tree root. As in .gitignore, a pattern without a slash matches at any
// depth (`*.pem` is `**/*.pem`), a leading `/` or `./` anchors it to the root, and a trailing `/`
// matches directories only (and symlinks, which may resolve to one). A matching directory is masked
// whole and not descended into.
import { braceExpand, makeRe, type MinimatchOptions } from 'minimatch';

export const BUILTIN_MASK_GLOBS: readonly string[] = [
  '.env',
  '.env.*',
  '**/.env',
  '**/.env.*',
  '**/credentials.json',
  '**/*secret*',
  '**/*password*',
  '**/*.pem',
  '**/*.key',
  '**/*.p12',
  '**/*.pfx',
  '**/id_rsa*',
  '**/id_ed25519*',
  '**/id_ecdsa*',
  '**/.npmrc',
  '**/.pypirc',
  '**/.netrc',
  '**/.git-credentials',
  // Remote URLs with embedded tokens (https://x-access-token:…@github.com), credential helpers.
  // Submodules keep theirs in .git/modules/<path>/config.
  '.git/config',
  '**/.git/config',
  '**/.git/modules/**/config',
];

/** Committed templates that name variables without values: never masked. */
export const BUILTIN_EXCEPT_GLOBS: readonly string[] = ['**/.env.example', '**/.env.sample', '**/.env.template', '**/.env.dist'];

// Bound read-only over themselves, not hidden: git runs hooks on the host at the next commit or
// checkout, so a hook planted by a sandboxed build is code execution outside the sandbox. Git looks
// for a submodule's hooks in its own gitdir.
export const BUILTIN_PROTECT_GLOBS: readonly string[] = ['.git/hooks', '**/.git/hooks', '**/.git/modules/**/hooks'];

// Why pruning is a list and not an analysis of the globs: the built-ins start with `**/`, so for
// every directory D some rule matches D/.env; no directory can be proven empty of matches. These
// hold git's or a tool's own data, never a user's file, and they are large: objects and LFS blobs are
// content-addressed; refs and reflogs hold commit ids under branch names (a branch called
// fix-password-reset must not be masked: git would read an empty ref); node_modules/.cache holds
// build caches named by hash. Installed packages (node_modules, a Python .venv) are skipped too:
// they are published, public files (their test keys and sample .env files are nobody's secrets), and
// they are most of a project's entries: scanning node_modules would add ~100 ms to every launch.
export const DEFAULT_SKIP_DIRS: readonly string[] = ['**/.git/objects', '**/.git/lfs', '**/.git/refs', '**/.git/logs', '**/node_modules', '**/.venv'];

export interface SensitiveRuleInput {
  /** Profile globs masked, added to the built-ins. */
  files?: readonly string[];
  /** Profile globs never masked, added to the built-in exceptions. */
  except?: readonly string[];
  /** Profile directories (globs) the scan does not enter, added to DEFAULT_SKIP_DIRS. */
  skip?: readonly string[];
}

export type SensitiveClass = 'mask' | 'protect';

export interface SensitiveRules {
  /**
   * What to do with `relPath` (relative to the tree root, `/`-separated, no leading `./`). `isDir` is
   * true for directories and for symlinks (they may resolve to one). Masking beats protection: a
   * masked hooks directory is already out of reach.
   */
  classify(relPath: string, isDir: boolean): SensitiveClass | undefined;
  /** Whether the walk may skip everything below `relDir` (a skip directory or inside one). */
  canPrune(relDir: string): boolean;
  /**
   * Cheap pre-check on a basename: false means `classify` returns undefined for every path ending in
   * `name`, so the walk need not build the path. True for every name when a rule ends in `**`.
   */
  mayMatchName(name: string): boolean;
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
function unionOf(globs: readonly string[]): RegExp[] {
  const sourcesByFlags = new Map<string, string[]>();
  for (const glob of new Set(globs)) {
    const re = compileGlob(glob);
    sourcesByFlags.set(re.flags, [...(sourcesByFlags.get(re.flags) ?? []), re.source]);
  }
  return [...sourcesByFlags].map(([flags, sources]) => new RegExp(sources.join('|'), flags));
}

const testsAny = (union: readonly RegExp[], text: string) => union.some((re) => re.test(text));

/**
 * A list of globs split by how they are tested. Most are `**` + `/` + one segment: those match a path
 * exactly when its basename matches the segment, and testing the segment against the basename costs
 * a fraction of testing the compiled `**` prefix (a lazy scan) against the whole path.
 */
interface GlobMatcher {
  basename: RegExp[];
  path: RegExp[];
}

function compileMatcher(globs: readonly string[]): GlobMatcher {
  const isBasenameGlob = (g: string) => /^\*\*\/[^/]+$/.test(g);
  return {
    basename: unionOf(globs.filter(isBasenameGlob).map((g) => g.slice(3))),
    path: unionOf(globs.filter((g) => !isBasenameGlob(g))),
  };
}

const matches = (m: GlobMatcher, relPath: string, name: string) => testsAny(m.basename, name) || testsAny(m.path, relPath);

interface RuleSet {
  any: GlobMatcher;
  dirOnly: GlobMatcher;
}

/** Separate matchers for rules that match any entry and rules that match directories only. */
function compileRuleSet(patterns: readonly string[]): RuleSet {
  const normalised = patterns.map(normaliseGlob);
  return {
    any: compileMatcher(normalised.filter((n) => !n.dirOnly).map((n) => n.glob)),
    dirOnly: compileMatcher(normalised.filter((n) => n.dirOnly).map((n) => n.glob)),
  };
}

function matchesRuleSet(set: RuleSet, relPath: string, isDir: boolean): boolean {
  const name = relPath.slice(relPath.lastIndexOf('/') + 1);
  return matches(set.any, relPath, name) || (isDir && matches(set.dirOnly, relPath, name));
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
function literalFilter(patterns: readonly string[]): RegExp | undefined {
  const literals = new Set<string>();
  for (const pattern of patterns) {
    for (const expanded of braceExpand(normaliseGlob(pattern).glob, GLOB_OPTIONS)) {
      const literal = requiredLiteral(expanded);
      if (literal === undefined) return undefined;
      literals.add(literal);
    }
  }
  return new RegExp([...literals].map(escapeRegExp).join('|'));
}

export function compileSensitiveRules(input: SensitiveRuleInput = {}): SensitiveRules {
  const maskPatterns = [...BUILTIN_MASK_GLOBS, ...(input.files ?? [])];
  const mask = compileRuleSet(maskPatterns);
  const except = compileRuleSet([...BUILTIN_EXCEPT_GLOBS, ...(input.except ?? [])]);
  const protect = compileRuleSet(BUILTIN_PROTECT_GLOBS);
  // A skip directory prunes itself and everything below it.
  const skipPatterns = [...DEFAULT_SKIP_DIRS, ...(input.skip ?? [])];
  const skip = unionOf(skipPatterns.map((p) => normaliseGlob(p).glob).flatMap((g) => [g, `${g}/**`]));
  const skipLiterals = literalFilter(skipPatterns);
  const names = literalFilter([...maskPatterns, ...BUILTIN_PROTECT_GLOBS]);

  return {
    classify(relPath, isDir) {
      if (matchesRuleSet(mask, relPath, isDir) && !matchesRuleSet(except, relPath, isDir)) return 'mask';
      if (matchesRuleSet(protect, relPath, isDir)) return 'protect';
      return undefined;
    },
    canPrune: (relDir) => (skipLiterals?.test(relDir) ?? true) && testsAny(skip, relDir),
    mayMatchName: (name) => names?.test(name) ?? true,
  };
}
