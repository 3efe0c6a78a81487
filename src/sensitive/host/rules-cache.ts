// The compiled sensitive-file rules kept in sbx's cache directory: compiling the globs (and loading
// minimatch to do it, sensitive/sensitive-files.ts) costs a launch more than the scan of a small tree.
// The key covers the built-in lists, the profile's additions and the sbx build. The cache lives in a
// sensitive root (never visible in a sandbox) and is read and written as host/cache-file.ts says; a
// file that does not revive is recompiled.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { SbxError } from '../../errors.js';
import { pruneStaleCacheFiles, readCacheFile, writeCacheFile } from '../../host/cache-file.js';
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
  // The owner sbx's own cache must have: this process's uid, which no option can set.
  const file = cacheDir
    ? {
        path: join(cacheDir, `sensitive-rules-${key}.json`),
        uid: process.getuid?.() ?? 0,
        maxBytes: MAX_RULES_CACHE_BYTES,
      }
    : undefined;
  const cached = file && readCacheFile(file);
  if (cached !== undefined) {
    try {
      return sensitiveRulesFrom(JSON.parse(cached) as SensitiveRuleData);
    } catch {
      // corrupt, or not this build's shape: compile
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
  if (file && writeCacheFile(file, JSON.stringify(data)) && cacheDir)
    pruneStaleCacheFiles(cacheDir, (name) => /^sensitive-rules-[0-9a-f]{32}\.json$/.test(name), Date.now());
  return sensitiveRulesFrom(data);
}
