#!/usr/bin/env node
// What the exec stage's way of spawning costs (issue 36, "Exec"): the same hardened bwrap argv
// (bench/standalone-bwrap.mjs) spawned from one Node process, interleaved, four ways:
//  - spawnSync, the seccomp filter opened from a file (the ideal launcher's way);
//  - spawn (asynchronous), the filter from a file, no other pipe: the event loop alone;
//  - spawn with the filter written into a pipe, as src/backend/host/exec.ts passes data descriptors;
//  - spawn with that pipe and bwrap's --json-status-fd pipe read, which the supervision needs (the
//    sandbox's pid, to pass a signal to the command: exec.ts supervise()).
// A benchmark, not a test: it prints medians and never fails on a time.
//   node bench/exec.mjs [--runs 40]
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { standaloneBwrap } from './standalone-bwrap.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const runs = Number(argv[argv.indexOf('--runs') + 1]) || 40;
const sbx = join(root, 'bin', 'sbx.js');
const work = mkdtempSync(join(homedir(), '.sbx-bench-exec-'));
const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` };
delete env.NODE_EXTRA_CA_CERTS;
const { file, args, seccomp, filterFile } = standaloneBwrap(sbx, work, env);
if (!seccomp) throw new Error('the default profile compiled no seccomp filter: nothing to pass');
const filter = readFileSync(filterFile);
// The filter goes to fd 5, as sbx passes it (--seccomp 5); the status, when read, to fd 6.
const withStatus = ['--json-status-fd', '6', ...args];

function viaSpawnSync() {
  const fd = openSync(filterFile, 'r');
  try {
    spawnSync(file, args, { stdio: ['ignore', 'ignore', 'ignore', 'ignore', 'ignore', fd], env: {} });
  } finally {
    closeSync(fd);
  }
}

/** Resolves once the child has exited and every pipe closed, as exec.ts waits. */
function waited(child) {
  return new Promise((resolve) => child.once('close', resolve));
}

async function viaSpawnFile() {
  const fd = openSync(filterFile, 'r');
  try {
    await waited(spawn(file, args, { stdio: ['ignore', 'ignore', 'ignore', 'ignore', 'ignore', fd], env: {} }));
  } finally {
    closeSync(fd);
  }
}

async function viaSpawnPipe() {
  const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'ignore', 'ignore', 'ignore', 'pipe'], env: {} });
  child.stdio[5].on('error', () => {});
  child.stdio[5].end(filter);
  await waited(child);
}

async function viaSpawnPipes() {
  const stdio = ['ignore', 'ignore', 'ignore', 'ignore', 'ignore', 'pipe', 'pipe'];
  const child = spawn(file, withStatus, { stdio, env: {} });
  child.stdio[5].on('error', () => {});
  child.stdio[5].end(filter);
  let status = '';
  child.stdio[6].setEncoding('utf8');
  child.stdio[6].on('data', (c) => {
    status += c;
  });
  await waited(child);
  if (!status.includes('child-pid')) throw new Error(`no status from bwrap: ${status}`);
}

const ways = [
  ['spawnSync, filter from a file', viaSpawnSync],
  ['spawn, filter from a file', viaSpawnFile],
  ['spawn, filter through a pipe', viaSpawnPipe],
  ['spawn, filter pipe + status pipe (what the supervision needs)', viaSpawnPipes],
];
const samples = ways.map(() => []);
for (const [, way] of ways) for (let i = 0; i < 3; i++) await way();
for (let i = 0; i < runs; i++) {
  for (const [n, [, way]] of ways.entries()) {
    const t0 = process.hrtime.bigint();
    await way();
    samples[n].push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
}
rmSync(work, { recursive: true, force: true });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(samples[0]);
console.log(
  `\n### exec: spawning the same bwrap argv (${runs} interleaved runs each, ${process.version}, uid ${process.getuid()})\n`,
);
console.log('| way | median ms | over spawnSync |');
console.log('|---|--:|--:|');
for (const [n, [what]] of ways.entries()) {
  const m = median(samples[n]);
  console.log(`| ${what} | ${m.toFixed(1)} | ${n === 0 ? '—' : `+${(m - base).toFixed(1)}`} |`);
}
