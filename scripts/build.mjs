// Bundles the CLI and the library with esbuild (one ESM graph, lazy chunks for what a plain run does
// not need), then emits type declarations with tsc.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { copyFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
await build({
  entryPoints: { cli: 'src/cli/main.ts', api: 'src/api.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Chunks stay beside cli.js/api.js: code that finds profiles/ relative to its own file relies on it.
  chunkNames: '[name]-[hash]',
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
  // Some bundled CommonJS dependencies call require(); give the ESM output one. Without a static
  // import of node:module where Node has process.getBuiltinModule (20.16+, 22.3+): that import costs
  // every launch a few ms.
  banner: {
    js: "const require = (globalThis.process.getBuiltinModule ? process.getBuiltinModule('node:module') : await import('node:module')).createRequire(import.meta.url);",
  },
});
// The egress bridge runs inside the sandbox as a plain script (no bundle, no dependencies).
copyFileSync('src/runtime/network/bridge.cjs', 'dist/bridge.cjs');
// The landlock backend's launcher (native/sbx-landlock.c): built when a C compiler exists. Without
// one the backend reports itself unavailable (runtime/host.ts probeLandlock), the others still work.
const cc = process.env.CC || 'cc';
if (spawnSync(cc, ['--version'], { stdio: 'ignore' }).status === 0) {
  execFileSync(cc, ['-O2', '-Wall', '-Werror', '-o', 'dist/sbx-landlock', 'native/sbx-landlock.c'], {
    stdio: 'inherit',
  });
} else {
  console.warn(`build: no C compiler (${cc}): dist/sbx-landlock not built, --backend landlock will be unavailable`);
}
execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });
