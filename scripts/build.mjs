// Bundles sbx with esbuild, then emits type declarations with tsc. Three ESM builds, all in dist/
// (code that finds profiles/ relative to its own file relies on every output sitting there):
//  - the library, api.js and its lazy chunks;
//  - the CLI's core, cli.js: one file holding everything a plain `sbx run` executes. Node 20 pays
//    about 0.5 ms per ES module it resolves and links: the same code in ~20 chunks loaded 10 ms slower;
//  - the CLI's lazy modules (cli.*.js: commander, the YAML parser and schema, explain, nsjail, limits,
//    the egress proxy, ...), loaded by import() when a command needs them. What they share with the
//    core they import from cli.js, so each module exists once per process (one SbxError class).
// And version.js and compile-cache.js: small files bin/sbx.js loads before (or instead of) the CLI.
// `--no-types` leaves out the library's type declarations (tsc): the GitHub Action builds a commit
// that has no dist/ with it (action.yml), running only the CLI.
import { build } from 'esbuild';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const CORE_ENTRY = 'src/cli/main.ts';

/** src/version.ts BUILD: a hash of every source file and the locked dependencies, so caches of derived data follow the code. */
function buildId() {
  const hash = createHash('sha256');
  const files = readdirSync('src', { recursive: true }).filter((f) => /\.(ts|cjs)$/.test(f));
  for (const file of files.sort())
    hash
      .update(`${file}\0`)
      .update(readFileSync(join('src', file)))
      .update('\0');
  if (existsSync('package-lock.json')) hash.update(readFileSync('package-lock.json'));
  return hash.digest('hex').slice(0, 16);
}

const BUILD_ID = buildId();

const common = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  outdir: 'dist',
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
  define: { __SBX_BUILD__: JSON.stringify(BUILD_ID) },
};
// The CLI's files are minified: smaller files compile faster (a launch loads cli.js whole: 1.5 ms of
// its 13). The library stays as written, for its callers' stack traces.
const cli = { ...common, minify: true };
// Some bundled CommonJS dependencies call require(); give the ESM output one. Without a static
// import of node:module where Node has process.getBuiltinModule (20.16+, 22.3+): that import costs
// every launch a few ms. The core bundles no CommonJS and goes without.
const requireBanner = {
  js: "const require = (globalThis.process.getBuiltinModule ? process.getBuiltinModule('node:module') : await import('node:module')).createRequire(import.meta.url);",
};

/** Resolves through esbuild, skipping this plugin's own onResolve (pluginData marks the nested call). */
async function resolveWith(b, args) {
  const { path, resolveDir, importer, kind } = args;
  const r = await b.resolve(path, { resolveDir, importer, kind, pluginData: { nested: true } });
  if (r.errors.length > 0) throw new Error(`${importer}: cannot resolve ${path}`);
  return r.path;
}

/** The modules the core entry reaches by static imports: what cli.js holds. */
async function coreModules() {
  const dynamicOut = {
    name: 'dynamic-imports-out',
    setup(b) {
      b.onResolve({ filter: /.*/ }, (a) =>
        a.kind === 'dynamic-import' ? { path: a.path, external: true } : undefined,
      );
    },
  };
  const r = await build({ ...cli, entryPoints: [CORE_ENTRY], write: false, metafile: true, plugins: [dynamicOut] });
  return Object.keys(r.metafile.inputs).map((f) => resolve(f));
}

/** The value exports of one module (types are erased), each under a name unique across the core. */
async function exportsOf(file) {
  const othersOut = {
    name: 'others-out',
    setup(b) {
      b.onResolve({ filter: /.*/ }, (a) => (a.kind === 'entry-point' ? undefined : { path: a.path, external: true }));
    },
  };
  const r = await build({ ...common, entryPoints: [file], write: false, metafile: true, plugins: [othersOut] });
  const prefix = relative('src', file)
    .replace(/\.ts$/, '')
    .replace(/[^A-Za-z0-9]/g, '_');
  return Object.values(r.metafile.outputs)[0].exports.map((name) => ({ name, as: `${prefix}$${name}` }));
}

/** A lazy module's output name: cli.<its path under src, dotted> (cli.profile.parse.js), or cli.<package>. */
function lazyName(path) {
  const local = relative('src', path);
  if (local.startsWith('..')) return `cli.${/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)[1].replace('/', '.')}`;
  return `cli.${local.replace(/\.ts$/, '').replaceAll('/', '.')}`;
}

rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });

await build({
  ...common,
  entryPoints: { api: 'src/api.ts' },
  splitting: true,
  chunkNames: '[name]-[hash]',
  banner: requireBanner,
});

const core = await coreModules();
const coreExports = new Map(await Promise.all(core.map(async (f) => [f, await exportsOf(f)])));
const lazyEntries = new Map();

// cli.js exports every module of the core under its unique names; its import() of anything outside
// the core becomes an import of that module's lazy output.
await build({
  ...cli,
  entryPoints: { cli: 'sbx:cli-core' },
  plugins: [
    {
      name: 'cli-core',
      setup(b) {
        b.onResolve({ filter: /^sbx:cli-core$/ }, () => ({ path: 'cli-core', namespace: 'sbx' }));
        b.onLoad({ filter: /.*/, namespace: 'sbx' }, () => ({
          resolveDir: process.cwd(),
          contents: [
            `export { main } from ${JSON.stringify(resolve(CORE_ENTRY))};`,
            ...[...coreExports].map(
              ([file, names]) =>
                `export { ${names.map((n) => `${n.name} as ${n.as}`).join(', ')} } from ${JSON.stringify(file)};`,
            ),
          ].join('\n'),
        }));
        b.onResolve({ filter: /.*/ }, async (a) => {
          if (a.kind !== 'dynamic-import' || a.pluginData?.nested) return undefined;
          const path = await resolveWith(b, a);
          if (core.includes(path)) return undefined;
          lazyEntries.set(lazyName(path), path);
          return { path: `./${lazyName(path)}.js`, external: true };
        });
      },
    },
  ],
});

// The lazy modules: a core module they import is a facade re-exporting it from cli.js.
await build({
  ...cli,
  entryPoints: Object.fromEntries(lazyEntries),
  splitting: true,
  chunkNames: 'cli.chunk-[hash]',
  banner: requireBanner,
  plugins: [
    {
      name: 'core-from-cli',
      setup(b) {
        b.onResolve({ filter: /.*/ }, async (a) => {
          if (a.kind === 'entry-point' || a.namespace === 'core' || a.pluginData?.nested) return undefined;
          const path = await resolveWith(b, a);
          return core.includes(path) ? { path, namespace: 'core' } : undefined;
        });
        b.onResolve({ filter: /^\.\/cli\.js$/, namespace: 'core' }, () => ({ path: './cli.js', external: true }));
        b.onLoad({ filter: /.*/, namespace: 'core' }, (a) => {
          const names = coreExports.get(a.path).map((n) => `${n.as} as ${n.name}`);
          return { contents: `export { ${names.join(', ')} } from './cli.js';`, resolveDir: process.cwd() };
        });
      },
    },
  ],
});

// What bin/sbx.js loads before the CLI (or instead of it, for --version), each alone.
await build({ ...cli, entryPoints: { version: 'src/version.ts', 'compile-cache': 'src/host/compile-cache.ts' } });

// The egress bridge runs inside the sandbox as a plain script (no bundle, no dependencies).
copyFileSync('src/network/host/bridge.cjs', 'dist/bridge.cjs');
// The landlock backend's launcher (native/sbx-landlock.c, its network judge sbx-landlock-net.c, its
// guard of git state sbx-guard.c): built when a C compiler exists. Without
// one the backend reports itself unavailable (src/backend/landlock/host/landlock-probe.ts probeLandlock), the others still work.
const cc = process.env.CC || 'cc';
if (spawnSync(cc, ['--version'], { stdio: 'ignore' }).status === 0) {
  execFileSync(
    cc,
    [
      '-O2',
      '-Wall',
      '-Werror',
      '-pthread',
      '-o',
      'dist/sbx-landlock',
      'native/sbx-landlock.c',
      'native/sbx-landlock-net.c',
      'native/sbx-guard.c',
    ],
    {
      stdio: 'inherit',
    },
  );
  // The native client of `sbx hook AGENT --warm` (native/sbx-warm.c): its socket's name holds the build.
  execFileSync(
    cc,
    ['-O2', '-Wall', '-Werror', `-DSBX_BUILD="${BUILD_ID}"`, '-o', 'dist/sbx-warm', 'native/sbx-warm.c'],
    { stdio: 'inherit' },
  );
} else {
  console.warn(
    `build: no C compiler (${cc}): dist/sbx-landlock and dist/sbx-warm not built, --backend landlock will be unavailable and hook --warm answers without a server`,
  );
}
if (!process.argv.includes('--no-types'))
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });
