// The compiled sensitive-file rules kept in sbx's cache directory: compiling the globs (and loading
// minimatch to do it, sensitive/sensitive-files.ts) costs a launch more than the scan of a small tree.
// The key covers the built-in lists, the profile's additions and the sbx build. The cache lives in a
// sensitive root (never visible in a sandbox); a file that does not revive is recompiled.
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SbxError } from '../../errors.js';
import { readGuarded } from '../../host/guarded-read.js';
import { BUILD, VERSION } from '../../version.js';
import type { SensitiveRuleInput } from '../sensitive-files.js';
import {
  BUILTIN_EXCEPT_GLOBS,
  BUILTIN_GIT_CONFIG_GLOBS,
  BUILTIN_HINT_GLOBS,
  BUILTIN_MASK_GLOBS,
  BUILTIN_PROTECT_GLOBS,
  DEFAULT_SKIP_DIRS,
  SOURCE_EXTENSIONS,
} from '../sensitive-globs.js';
import { type SensitiveRuleData, type SensitiveRules, sensitiveRulesFrom } from '../sensitive-matcher.js';

/** The compiled rules of the largest profile are tens of KiB. */
const MAX_RULES_CACHE_BYTES = 4 * 1024 * 1024;

/** The compiled rules for this input, from `cacheDir` when a run compiled them before. */
export async function loadSensitiveRules(
  input: SensitiveRuleInput,
  cacheDir: string | undefined,
): Promise<SensitiveRules> {
  const key = createHash('sha256')
    .update(
      JSON.stringify([
        BUILD,
        VERSION,
        BUILTIN_MASK_GLOBS,
        BUILTIN_HINT_GLOBS,
        BUILTIN_GIT_CONFIG_GLOBS,
        SOURCE_EXTENSIONS,
        BUILTIN_EXCEPT_GLOBS,
        BUILTIN_PROTECT_GLOBS,
        DEFAULT_SKIP_DIRS,
        input.files ?? [],
        input.except ?? [],
        input.unmask ?? [],
        input.skip ?? [],
      ]),
    )
    .digest('hex')
    .slice(0, 32);
  const file = cacheDir ? join(cacheDir, `sensitive-rules-${key}.json`) : undefined;
  if (file) {
    try {
      // sbx's own cache, but read as any file a process could have planted: bounded, and only when
      // it and every parent are the user's (or root's) and not writable by others.
      const uid = process.getuid?.() ?? 0;
      const guard = { what: 'sensitive rules cache', maxBytes: MAX_RULES_CACHE_BYTES, checkOwner: true, uid };
      return sensitiveRulesFrom(JSON.parse(readGuarded(file, guard).text) as SensitiveRuleData);
    } catch {
      // not cached yet, foreign, corrupt or unreadable: compile
    }
  }
  const { compileSensitiveRuleData } = await import('../sensitive-files.js');
  let data: SensitiveRuleData;
  try {
    data = compileSensitiveRuleData(input);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw new SbxError('PROFILE_INVALID', `sensitive: ${error.message}`, {
      hint: 'write minimatch globs relative to the mounted tree, e.g. "*.sqlite" or "secrets/"',
    });
  }
  if (file) {
    try {
      mkdirSync(cacheDir!, { recursive: true, mode: 0o700 });
      writeFileSync(`${file}.${process.pid}`, JSON.stringify(data), { mode: 0o600 });
      renameSync(`${file}.${process.pid}`, file);
    } catch {
      // the cache is optional
    }
  }
  return sensitiveRulesFrom(data);
}
