// The TypeScript sources a benchmark drives directly (bench/proxy.mjs, bench/credentials.mjs), bundled
// by esbuild into `dir` and imported: the same code the build ships, without going through dist/.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** `exports`: lines of `export { ... } from './src/...ts'`, resolved from the repository's root. */
export async function importSources(exports, dir) {
  const { build } = await import('esbuild');
  const outfile = join(dir, 'sources.mjs');
  await build({
    stdin: { contents: exports.join('\n'), resolveDir: root, loader: 'ts' },
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
  });
  return import(outfile);
}
