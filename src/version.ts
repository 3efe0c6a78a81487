// Kept equal to package.json's version by test/integration/package/install.test.ts (`sbx --version`
// of the packed package).
export const VERSION = '0.1.0';
