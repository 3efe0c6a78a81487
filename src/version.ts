// Kept equal to package.json's version by test/integration/package/install.test.ts (`sbx --version`
// of the packed package).
export const VERSION = '0.1.0';

declare const __SBX_BUILD__: string | undefined;
/**
 * What identifies this build beyond its version: scripts/build.mjs sets it to a hash of the sources
 * and the lockfile, so caches of derived data (profile/host/load.ts) go stale with any change to the code
 * that derives it. Run from source (tests), it is `source`.
 */
export const BUILD = typeof __SBX_BUILD__ === 'string' ? __SBX_BUILD__ : 'source';
