#!/usr/bin/env node
// Time of the sensitive-file scan that runs before every launch, on a generated 100k-file tree: a
// source tree, a node_modules of small packages, a .git with loose objects (skipped) and a few
// hundred secret-looking names. The source files are tracked in a real git index (written by git,
// the secret-looking names ignored), so the figures include reading the index the scan consults for
// every candidate in a work tree. The scan is bundled from src/ in memory with esbuild, so no build
// is needed. A benchmark, not a test: it prints figures and never fails on a time.
//   node bench/sensitive-scan.mjs [--runs 10] [--files 100000]
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const flag = (name, fallback) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : fallback);
const runs = flag('--runs', 10);
const totalFiles = flag('--files', 100_000);

const bundled = await build({
  stdin: {
    contents:
      "export * from './src/sensitive/sensitive-files.ts'; export * from './src/sensitive/host/sensitive-scan.ts';",
    resolveDir: root,
    loader: 'ts',
  },
  bundle: true,
  write: false,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
});
const code = bundled.outputFiles[0].text;
const { compileSensitiveRules, scanSensitiveFiles } = await import(
  `data:text/javascript;base64,${Buffer.from(code).toString('base64')}`
);

const work = mkdtempSync(join(tmpdir(), 'sbx-bench-scan-'));
const tree = join(work, 'tree');
let files = 0;
function file(rel) {
  writeFileSync(join(tree, rel), '');
  files++;
}
function dir(rel) {
  mkdirSync(join(tree, rel), { recursive: true });
}

// Shares of the tree: 20% node_modules and 15% .git objects (both skipped by default), the rest
// (65%) source files, which are all examined: a large monorepo.
const SENSITIVE = [
  '.env',
  '.env.local',
  'server.key',
  'cert.pem',
  'client_secret.txt',
  'credentials.json',
  'id_rsa',
  '.npmrc',
  'db-password.txt',
];
const modulesTarget = Math.floor(totalFiles * 0.2);
const objectsTarget = Math.floor(totalFiles * 0.15);
for (let p = 0; files < modulesTarget; p++) {
  const pkg = `node_modules/pkg-${p}`;
  dir(`${pkg}/lib/internal`);
  dir(`${pkg}/dist`);
  file(`${pkg}/package.json`);
  file(`${pkg}/README.md`);
  for (let i = 0; i < 12; i++) file(`${pkg}/lib/module-${i}.js`);
  for (let i = 0; i < 12; i++) file(`${pkg}/lib/internal/helper-${i}.js`);
  for (let i = 0; i < 14; i++) file(`${pkg}/dist/index-${i}.cjs`);
  if (p % 50 === 0) file(`${pkg}/dist/${SENSITIVE[p % SENSITIVE.length]}`);
}
dir('.git/hooks');
file('.git/config');
file('.git/HEAD');
for (let i = 0; files < modulesTarget + objectsTarget; i++) {
  const fan = (i % 256).toString(16).padStart(2, '0');
  if (i < 256) dir(`.git/objects/${fan}`);
  file(`.git/objects/${fan}/${i.toString(16).padStart(38, '0')}`);
}
for (let d = 0; files < totalFiles; d++) {
  const sub = `src/area-${d % 40}/feature-${d}`;
  dir(sub);
  // Some names pass the cheap basename check (they contain "config") and then fail the full rules.
  for (let i = 0; i < 20 && files < totalFiles; i++)
    file(`${sub}/${i % 5 === 0 ? 'test' : i % 7 === 0 ? 'app.config' : 'file'}-${i}.ts`);
  if (d % 10 === 0 && files < totalFiles) file(`${sub}/${SENSITIVE[d % SENSITIVE.length]}`);
}

// The index git would have: every source file tracked, the secret-looking names ignored. Written
// through a separate git directory (the tree's .git is a stand-in with loose objects), then copied.
writeFileSync(join(tree, '.gitignore'), SENSITIVE.join('\n') + '\n');
const gitDir = join(work, 'git');
const git = (...args) => {
  const r = spawnSync('git', ['--git-dir', gitDir, '--work-tree', tree, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
};
git('init', '-q');
git('add', 'src', '.gitignore');
copyFileSync(join(gitDir, 'index'), join(tree, '.git', 'index'));
const indexBytes = statSync(join(tree, '.git', 'index')).size;

// The floor: the same walk (readdir with d_type, same directories skipped) doing nothing per entry.
function bareWalk(rules) {
  const pending = [''];
  while (pending.length > 0) {
    const rel = pending.pop();
    for (const entry of readdirSync(rel === '' ? tree : `${tree}/${rel}`, { withFileTypes: true })) {
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory() && !rules.canPrune(child)) pending.push(child);
    }
  }
}

/** Median and p95 of `runs` timed calls, after one untimed call that warms the dentry cache and the JIT. */
function measure(fn) {
  fn();
  const times = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    fn();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.ceil(q * times.length) - 1)].toFixed(1);
  return `median ${at(0.5)} ms   p95 ${at(0.95)} ms`;
}

const rules = compileSensitiveRules();
const result = scanSensitiveFiles(tree, rules);
const scanFigures = measure(() => scanSensitiveFiles(tree, rules));
const floorFigures = measure(() => bareWalk(rules));
rmSync(work, { recursive: true, force: true });

const indexMb = (indexBytes / 1e6).toFixed(1);
console.log(
  `sensitive-file scan, ${files} files (${result.scanned} entries examined; .git/objects and node_modules skipped; ` +
    `git index ${indexMb} MB), ${runs} runs`,
);
console.log(
  `  scanSensitiveFiles   ${scanFigures}   masks ${result.masks.length}   protect ${result.protect.length}   truncated ${result.truncated}`,
);
console.log(`  bare readdir walk    ${floorFigures}`);
