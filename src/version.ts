// Kept equal to package.json's version by test/unit/version.test.ts.
export const VERSION = '0.1.0';
