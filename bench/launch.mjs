#!/usr/bin/env node
// Launch overhead, measured in one run: first the table of issue 15 (each figure with its goal),
// then the extra rows (an allow-list network, seccomp off, limits, the bwrap argv invoked directly,
// nsjail when installed, and with --peers firejail and srt). Like with like: every row, CLI and
// library, runs without NODE_EXTRA_CA_CERTS (sbx's bin takes it out of Node's start-up anyway; the
// other rows would otherwise pay tens of ms to parse the bundle). A benchmark, not a test: it prints
// figures and never fails on a time.
//   npm run bench [-- --runs 40] [-- --peers]
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { standaloneBwrap } from './standalone-bwrap.mjs';
import { startWarmServer } from './warm-server.mjs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const runs = Number(argv[argv.indexOf('--runs') + 1]) || 40;
const peers = argv.includes('--peers');
const sbx = join(root, 'bin', 'sbx.js');

const work = mkdtempSync(join(tmpdir(), 'sbx-bench-'));
// The bin starts the Node.js recorded at install (node-path), else `node` from PATH: the one running
// this bench comes first, so without a record every row uses it.
const env = { ...process.env, SBX_BENCH: '1', PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` };
delete env.NODE_EXTRA_CA_CERTS;

function which(name) {
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

const standalone = standaloneBwrap(sbx, work, env);
const bwrap = standalone.file;
const bwrapArgs = standalone.args;
const { filterFile, withFilter } = standalone;
const seccompFd = standalone.seccomp;

// The profiles named by path live outside the workspace: one inside it is the repository's to
// rewrite, and sbx uses it only once pinned (docs/SECURITY.md, the -p PATH row).
const profiles = mkdtempSync(join(tmpdir(), 'sbx-bench-profiles-'));
writeFileSync(join(profiles, 'allow.yaml'), 'extends: default\nnetwork:\n  allow: [registry.npmjs.org]\n');
// What seccomp and limits cost per run: the default profile without its filter, and with the
// untrusted profile's limits (cgroup set-up, trampoline, collection and removal).
writeFileSync(join(profiles, 'noseccomp.yaml'), 'extends: default\nseccomp: off\n');
const limitFlags = [
  '--memory',
  '2GiB',
  '--pids',
  '512',
  '--cpus',
  '2',
  '--timeout',
  '30m',
  '--cpu-time',
  '20m',
  '--file-size',
  '1GiB',
  '--nofile',
  '4096',
];
const idealScript = join(work, 'ideal.cjs');
writeFileSync(
  idealScript,
  `const fs = require('fs'); const stdio = ['inherit', 'inherit', 'inherit'];` +
    (seccompFd ? `stdio.push('ignore', 'ignore', fs.openSync(${JSON.stringify(filterFile)}, 'r'));` : '') +
    `const r = require('child_process').spawnSync(${JSON.stringify(bwrap)}, ${JSON.stringify(bwrapArgs)}, { stdio, env: {} }); process.exitCode = r.status ?? 137;`,
);

// `sbx run --warm`: served by a warm server, started here for the bench's user and stopped at the end.
const warm = await startWarmServer(root, env);
const rows = [
  { id: 'sbx', what: 'sbx run -- true (CLI, default profile)', cmd: [sbx, 'run', '--', 'true'] },
  ...(warm
    ? [
        {
          id: 'sbx-warm',
          what: 'sbx run --warm -- true (served by the warm server)',
          cmd: [sbx, 'run', '--warm', '--', 'true'],
        },
      ]
    : []),
  {
    id: 'node+bwrap',
    what: 'node script that spawnSyncs that bwrap argv (ideal Node launcher)',
    cmd: [process.execPath, idealScript],
  },
  { id: 'sbx-version', what: 'sbx --version', cmd: [sbx, '--version'] },
  { id: 'node', what: 'node -e 0', cmd: [process.execPath, '-e', '0'] },
  {
    id: 'sbx-allow',
    what: 'sbx run with an allow-list network (proxy + in-sandbox bridge)',
    cmd: [sbx, 'run', '-p', join(profiles, 'allow.yaml'), '--', 'true'],
  },
  {
    id: 'sbx-noseccomp',
    what: 'sbx run with seccomp: off',
    cmd: [sbx, 'run', '-p', join(profiles, 'noseccomp.yaml'), '--', 'true'],
  },
  {
    id: 'sbx-limits',
    what: "sbx run with untrusted's seven limits as flags",
    cmd: [sbx, 'run', ...limitFlags, '--', 'true'],
  },
  {
    id: 'bwrap',
    what: 'the same bwrap argv (and seccomp filter), invoked directly',
    cmd: [bwrap, ...bwrapArgs],
    filter: true,
  },
];
// The nsjail backend, when one is installed (nsjail on PATH or SBX_NSJAIL).
if (process.env.SBX_NSJAIL || which('nsjail'))
  rows.push({
    id: 'sbx-nsjail',
    what: 'sbx run --backend nsjail -- true',
    cmd: [sbx, 'run', '--backend', 'nsjail', '--', 'true'],
  });
if (peers) {
  const firejail = which('firejail');
  if (firejail)
    rows.push({
      id: 'firejail',
      what: 'firejail --quiet --noprofile true',
      cmd: [firejail, '--quiet', '--noprofile', 'true'],
    });
  const srt = which('srt');
  if (srt) rows.push({ id: 'srt', what: "Anthropic's srt true", cmd: [srt, 'true'] });
  if (!firejail && !srt) console.log('note: --peers: neither firejail nor srt is installed');
}

function time(cmd, filter = false) {
  const stdio = filter ? withFilter(['ignore', 'ignore', 'pipe']) : ['ignore', 'ignore', 'pipe'];
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd[0], cmd.slice(1), { cwd: work, env, stdio });
  if (typeof stdio[5] === 'number') closeSync(stdio[5]);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd.join(' ')} failed (${r.status}): ${r.stderr}`);
  return ms;
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { median: q(0.5), p95: q(0.95), min: s[0] };
};

// Warm-up, then interleaved rounds so drift and noise hit every row alike.
for (const row of rows) for (let i = 0; i < 3; i++) time(row.cmd, row.filter);
const samples = Object.fromEntries(rows.map((r) => [r.id, []]));
for (let i = 0; i < runs; i++) for (const row of rows) samples[row.id].push(time(row.cmd, row.filter));

function peakRssMiB(cmd) {
  if (!existsSync('/usr/bin/time')) return undefined;
  const r = spawnSync('/usr/bin/time', ['-f', '%M', ...cmd], { cwd: work, env, encoding: 'utf8' });
  const kb = Number(r.stderr.trim().split('\n').pop());
  return Number.isFinite(kb) ? kb / 1024 : undefined;
}
const median = (xs) => (xs.length === 0 ? undefined : stats(xs).median);
const rssOf = (cmd) => median(Array.from({ length: 5 }, () => peakRssMiB(cmd)).filter((x) => x !== undefined));

// The library door: per-call cost inside one Node process, against spawning the same bwrap argv
// from this same process.
const { run } = await import(join(root, 'dist', 'api.js'));
const lib = [];
const direct = [];
for (let i = 0; i < 3; i++) await run({ command: ['true'], cwd: work, stdio: 'ignore', hostEnv: env });
for (let i = 0; i < runs; i++) {
  let t0 = process.hrtime.bigint();
  await run({ command: ['true'], cwd: work, stdio: 'ignore', hostEnv: env });
  lib.push(Number(process.hrtime.bigint() - t0) / 1e6);
  const stdio = withFilter(['ignore', 'ignore', 'ignore']);
  t0 = process.hrtime.bigint();
  spawnSync(bwrap, bwrapArgs, { stdio, env: {} });
  direct.push(Number(process.hrtime.bigint() - t0) / 1e6);
  if (typeof stdio[5] === 'number') closeSync(stdio[5]);
}
const row = (id) => rows.find((r) => r.id === id).cmd;
const rss = { sbx: rssOf(row('sbx')), node: rssOf(row('node')), ...(warm ? { warm: rssOf(row('sbx-warm')) } : {}) };
if (warm) {
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${warm.pid}/status`, 'utf8'));
  rss.server = hwm ? Number(hwm[1]) / 1024 : undefined;
  warm.kill('SIGTERM');
}
rmSync(work, { recursive: true, force: true });
rmSync(profiles, { recursive: true, force: true });

const s = Object.fromEntries(rows.map((r) => [r.id, stats(samples[r.id])]));
const l = stats(lib);
const d = stats(direct);
const fmt = (x) => (x === undefined ? '-' : x.toFixed(1));
const verdict = (ok) => (ok === undefined ? '' : ok ? 'met' : 'not met');
console.log(`\n### sbx launch (${runs} interleaved launches per row, ${new Date().toISOString().slice(0, 16)}Z)`);
console.log(
  `node ${process.version}, ${spawnSync(bwrap, ['--version'], { encoding: 'utf8' }).stdout.trim()}, uid ${process.getuid()}, NODE_EXTRA_CA_CERTS unset for every row; medians\n`,
);
const ideal = s['node+bwrap'].median;
const table = [
  ['`sbx run -- true` (bin run directly)', s.sbx.median, 'ms', ideal + 10, `<= ideal Node launcher + 10 ms`],
  ...(warm
    ? [
        [
          '`sbx run --warm -- true` (the warm server)',
          s['sbx-warm'].median,
          'ms',
          ideal + 10,
          `<= ideal Node launcher + 10 ms`,
        ],
      ]
    : []),
  ['ideal Node launcher (node spawnSync of the same hardened bwrap argv)', ideal, 'ms'],
  // "About node -e 0": within 2 ms of it.
  ['`sbx --version`', s['sbx-version'].median, 'ms', s.node.median + 2, '~ `node -e 0` (+2 ms)'],
  ['`node -e 0`', s.node.median, 'ms'],
  ["library `run({command:['true']})` per call", l.median, 'ms', 1.2 * d.median, `<= 1.2 x spawnSync(bwrap)`],
  ['spawnSync(bwrap) from the same process', d.median, 'ms'],
  ['peak RSS of the CLI (`sbx run -- true`)', rss.sbx, 'MiB', 45, '<= 45 MiB'],
  ...(warm
    ? [
        ['peak RSS of `sbx run --warm -- true` (the native client)', rss.warm, 'MiB', 45, '<= 45 MiB'],
        ['peak RSS of the warm server (one per user, after every row)', rss.server, 'MiB'],
      ]
    : []),
];
console.log('| | now | goal | |');
console.log('|---|--:|---|---|');
for (const [what, value, unit, limit, goal] of table) {
  const target = limit === undefined ? '' : ` (${fmt(limit)} ${unit})`;
  const ok = limit === undefined || value === undefined ? undefined : value <= limit;
  console.log(`| ${what} | ${fmt(value)} ${unit} | ${goal ?? '—'}${target} | ${verdict(ok)} |`);
}
console.log(
  `\nsbx run over the ideal Node launcher: ${(s.sbx.median - ideal).toFixed(1)} ms; sbx --version over node -e 0: ${(s['sbx-version'].median - s.node.median).toFixed(1)} ms; run() over spawnSync: ${(l.median - d.median).toFixed(1)} ms per call (x${(l.median / d.median).toFixed(2)}); peak RSS of node -e 0: ${fmt(rss.node)} MiB`,
);

console.log('\n| row | what | median ms | p95 ms | min ms | x node -e 0 | x bwrap |');
console.log('|---|---|--:|--:|--:|--:|--:|');
for (const r of rows) {
  const x = s[r.id];
  console.log(
    `| ${r.id} | ${r.what} | ${fmt(x.median)} | ${fmt(x.p95)} | ${fmt(x.min)} | ${(x.median / s.node.median).toFixed(2)} | ${(x.median / s.bwrap.median).toFixed(2)} |`,
  );
}
console.log(
  `| lib-run | run({ command: ['true'] }) in-process | ${fmt(l.median)} | ${fmt(l.p95)} | ${fmt(l.min)} | | |`,
);
console.log(
  `| lib-bwrap | spawnSync(bwrap, same argv) in-process | ${fmt(d.median)} | ${fmt(d.p95)} | ${fmt(d.min)} | | |`,
);
console.log(
  `\nseccomp filter: ${(s.sbx.median - s['sbx-noseccomp'].median).toFixed(1)} ms per run; limits: ${(s['sbx-limits'].median - s.sbx.median).toFixed(1)} ms per run; allow-list network: ${(s['sbx-allow'].median - s.sbx.median).toFixed(1)} ms per run`,
);
