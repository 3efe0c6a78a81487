// The sensitive-file rules at match time: compiled RegExps (from sensitive-files.ts, or from the
// runtime's cache of them) behind three questions the scan asks. No minimatch here: a launch whose
// rules are cached does not load it. Pure.

/** A RegExp as data (JSON-serialisable). */
export interface RegExpData {
  source: string;
  flags: string;
}

/** Globs of one kind: those tested against the basename, and those tested against the whole path. */
export interface MatcherData {
  basename: RegExpData[];
  path: RegExpData[];
}

/** Rules for any entry, and rules for directories only (a trailing `/`). */
export interface RuleSetData {
  any: MatcherData;
  dirOnly: MatcherData;
}

export interface SensitiveRuleData {
  /** Credential names and the profile's `sensitive.files`. */
  mask: RuleSetData;
  /** Name hints: mask only what is not source code (`source`). */
  hint: RuleSetData;
  /** Git config files, shown without credentials. */
  gitConfig: RuleSetData;
  /** Basenames of source code and docs (by extension). */
  source: RegExpData;
  /** The built-in exceptions (templates such as .env.example): never masked, never reported. */
  except: RuleSetData;
  /** The profile's `sensitive.except`: not masked, and reported as unmasked by the profile. */
  exceptProfile: RuleSetData;
  /** The run's own exceptions (`--unmask`, the library's `unmask`): reported as unmasked by the request. */
  unmask: RuleSetData;
  protect: RuleSetData;
  skip: RegExpData[];
  /** A literal every skip match contains, or null when none can be sure (then no pre-filter). */
  skipLiterals: RegExpData | null;
  /** A literal every matching basename contains, or null. */
  names: RegExpData | null;
}

/**
 * mask: a credential by name, hidden unless git tracks it as is. hint: a name hint, hidden only when
 * it is not source code (a directory with a hint is searched, and its files count as hinted).
 * git-config: replaced by a view without credentials. protect: bound read-only over itself.
 */
export type SensitiveClass = 'mask' | 'hint' | 'git-config' | 'protect' | 'unmasked';

/** Who let a path in that a rule would have masked: the profile's `sensitive.except`, or the run's `unmask`. */
export type UnmaskedBy = 'profile' | 'request';

export interface SensitiveRules {
  /**
   * What to do with `relPath` (relative to the tree root, `/`-separated, no leading `./`). `isDir` is
   * true for directories and for symlinks (they may resolve to one). `hinted`: the path lies in a
   * directory a hint matched, so it is hinted itself. Masking beats protection: a masked hooks
   * directory is already out of reach. A hinted file that is source code is left alone (undefined).
   * `unmasked`: a rule would mask it, but the profile's or the run's exceptions let it in
   * (`unmaskedBy` says whose); a built-in exception (.env.example) is simply undefined.
   */
  classify(relPath: string, isDir: boolean, hinted?: boolean): SensitiveClass | undefined;
  /** For a path `classify` called `unmasked`: the run's exception first, else the profile's. */
  unmaskedBy(relPath: string, isDir: boolean): UnmaskedBy;
  /** Whether the walk may skip everything below `relDir` (a skip directory or inside one). */
  canPrune(relDir: string): boolean;
  /**
   * Cheap pre-check on a basename: false means `classify` returns undefined for every path ending in
   * `name`, so the walk need not build the path. True for every name when a rule ends in `**`.
   */
  mayMatchName(name: string): boolean;
}

const revive = (list: readonly RegExpData[]) => list.map((r) => new RegExp(r.source, r.flags));
const testsAny = (union: readonly RegExp[], text: string) => union.some((re) => re.test(text));

function ruleSetMatcher(data: RuleSetData): (relPath: string, isDir: boolean) => boolean {
  const any = { basename: revive(data.any.basename), path: revive(data.any.path) };
  const dirOnly = { basename: revive(data.dirOnly.basename), path: revive(data.dirOnly.path) };
  return (relPath, isDir) => {
    const name = relPath.slice(relPath.lastIndexOf('/') + 1);
    return (
      testsAny(any.basename, name) ||
      testsAny(any.path, relPath) ||
      (isDir && (testsAny(dirOnly.basename, name) || testsAny(dirOnly.path, relPath)))
    );
  };
}

export function sensitiveRulesFrom(data: SensitiveRuleData): SensitiveRules {
  const mask = ruleSetMatcher(data.mask);
  const hint = ruleSetMatcher(data.hint);
  const gitConfig = ruleSetMatcher(data.gitConfig);
  const source = new RegExp(data.source.source, data.source.flags);
  const builtinExcept = ruleSetMatcher(data.except);
  const profileExcept = ruleSetMatcher(data.exceptProfile);
  const runUnmask = ruleSetMatcher(data.unmask);
  // Asked only of a path a rule matched (rare): the common entry costs no extra test.
  const exceptedBy = (relPath: string, isDir: boolean): 'builtin' | UnmaskedBy | undefined =>
    builtinExcept(relPath, isDir)
      ? 'builtin'
      : runUnmask(relPath, isDir)
        ? 'request'
        : profileExcept(relPath, isDir)
          ? 'profile'
          : undefined;
  const verdict = (relPath: string, isDir: boolean, cls: SensitiveClass): SensitiveClass | undefined => {
    const by = exceptedBy(relPath, isDir);
    return by === undefined ? cls : by === 'builtin' ? undefined : 'unmasked';
  };
  const protect = ruleSetMatcher(data.protect);
  const skip = revive(data.skip);
  const skipLiterals = data.skipLiterals && new RegExp(data.skipLiterals.source, data.skipLiterals.flags);
  const names = data.names && new RegExp(data.names.source, data.names.flags);
  return {
    classify(relPath, isDir, hinted = false) {
      if (mask(relPath, isDir)) return verdict(relPath, isDir, 'mask');
      if (gitConfig(relPath, isDir)) {
        const v = verdict(relPath, isDir, 'git-config');
        if (v !== undefined) return v;
      } else if (hinted || hint(relPath, isDir)) {
        // A directory is searched whatever its name; a file is hinted unless it is code or docs.
        if (isDir || !source.test(relPath.slice(relPath.lastIndexOf('/') + 1))) {
          const v = verdict(relPath, isDir, 'hint');
          if (v !== undefined) return v;
        }
      }
      if (protect(relPath, isDir)) return 'protect';
      return undefined;
    },
    unmaskedBy: (relPath, isDir) => (runUnmask(relPath, isDir) ? 'request' : 'profile'),
    canPrune: (relDir) => (skipLiterals?.test(relDir) ?? true) && testsAny(skip, relDir),
    mayMatchName: (name) => names?.test(name) ?? true,
  };
}
