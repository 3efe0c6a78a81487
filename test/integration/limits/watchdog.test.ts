// Memory without a cgroup, end to end through the CLI on bwrap, landlock and nsjail (where one is
// built, as for test/integration/backends): RLIMIT_DATA stops one process at the limit, the watchdog
// ends a tree whose sum passes it, and real toolchains still run.
//
// The fallback is what this host gives an unprivileged user (cgroup v1, not writable). As root the
// cgroup is writable, so sbx runs in a private mount namespace with /sys/fs/cgroup unmounted
// (`unshare -m`): the host fact sbx probes (mountinfo) then says "no cgroup filesystem", and no test
// seam is needed in sbx. Every hog is bounded: python and node stop by themselves at RLIMIT_DATA or
// are killed by the watchdog, and a safety timeout kills what is left.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Report } from '../../../src/report/report.js';
import { REPO_ROOT } from '../../helpers/paths.js';
import { findNsjail } from '../nsjail/harness.js';
import {
  IS_ROOT,
  makeTestHost,
  type Ran,
  requireIntegrationPrerequisites,
  runHost,
  SBX_BIN,
  SKIP_INTEGRATION,
  start,
  type TestHost,
} from '../../helpers/sbx-cli.js';

const SAFETY_MS = 90_000;
// Touching a GiB takes seconds on a loaded 2-core CI host.
vi.setConfig({ testTimeout: SAFETY_MS + 10_000 });
const LANDLOCK_HELPER = join(REPO_ROOT, 'dist', 'sbx-landlock');
const HAS_LANDLOCK = existsSync(LANDLOCK_HELPER);
if (!HAS_LANDLOCK)
  console.warn(`[watchdog] landlock half SKIPPED: ${LANDLOCK_HELPER} is not built (needs a C compiler)`);
const NSJAIL = findNsjail();
if ('missing' in NSJAIL) console.warn(`[watchdog] nsjail half SKIPPED: ${NSJAIL.missing}`);
const HAS = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
for (const tool of ['python3', 'g++'])
  if (!HAS(tool)) console.warn(`[watchdog] tests using ${tool} SKIPPED: not installed`);

/** One process allocating (and touching) 1GiB. */
const PY_1G = ['python3', '-c', 'b = bytearray(1 << 30); print("allocated")'];
const NODE_1G = [
  'node',
  '-e',
  'const a = []; for (let i = 0; i < 64; i++) a.push(Buffer.alloc(16 << 20, 1)); console.log("allocated")',
];
/**
 * One process growing by 8MiB until RLIMIT_DATA stops it; it rests a second at 200MiB so that the
 * watchdog's sample sees it near the limit whatever the load (the rest is the hog's, not the test's).
 */
const PY_GROWING = [
  'python3',
  '-c',
  'import time\na = []\nwhile True:\n    a.append(bytearray(b"\\1") * (8 << 20))\n    if len(a) == 25: time.sleep(1)',
];
/** Four processes of 100MiB each, alive together: each under a 256MiB RLIMIT_DATA, the sum past it. */
const TREE_400M = [
  'sh',
  '-c',
  'for i in 1 2 3 4; do python3 -c "import time; b = bytearray(100 << 20); time.sleep(20)" & done; wait; echo survived',
];
/** Two of them: 200MiB in all, under 256MiB. */
const TREE_200M = [
  'sh',
  '-c',
  'for i in 1 2; do python3 -c "import time; b = bytearray(100 << 20); time.sleep(1)" & done; wait; echo fits',
];

let t: TestHost;

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  t = makeTestHost('watchdog');
});
afterAll(() => t?.cleanup());

/** `sbx ARGV` as this user, with no writable cgroup (as root: in a mount namespace without cgroupfs). */
function sbxRaw(argv: string[], cwd = t.workspace): Promise<Ran> {
  const nsjail = 'path' in NSJAIL ? { SBX_NSJAIL: NSJAIL.path } : {};
  const opts = { env: { ...t.env, ...nsjail }, cwd, timeoutMs: SAFETY_MS };
  const started = IS_ROOT
    ? start('unshare', ['-m', 'sh', '-c', 'umount -R -l /sys/fs/cgroup && exec "$0" "$@"', SBX_BIN, ...argv], opts)
    : start(SBX_BIN, argv, opts);
  return started.done;
}

/** `sbx run ARGS` without a writable cgroup, and its report. */
async function sbx(args: string[], cwd = t.workspace): Promise<{ r: Ran; report: Report }> {
  const file = join(t.root, `report-${Math.random().toString(36).slice(2)}.json`);
  const r = await sbxRaw(['run', '--report-file', file, ...args], cwd);
  return { r, report: JSON.parse(readFileSync(file, 'utf8')) as Report };
}

const memoryOf = (report: Report) => report.limits?.find((l) => l.name === 'memory');

describe.skipIf(SKIP_INTEGRATION).each([
  ['bwrap', true],
  ['landlock', HAS_LANDLOCK],
  ['nsjail', 'path' in NSJAIL],
] as const)('--backend %s without a writable cgroup: --memory 256MiB', (backend, available) => {
  const run = (command: readonly string[]) => sbx(['--backend', backend, '--memory', '256MiB', '--', ...command]);

  it.skipIf(!available)('the plan says watchdog, approximate, enforced', async () => {
    const { r, report } = await run(['true']);
    expect(r.code).toBe(0);
    expect(memoryOf(report)).toEqual({
      name: 'memory',
      value: '256MiB',
      base: 256 * 1024 ** 2,
      mechanism: 'watchdog',
      exact: false,
      enforced: true,
      reason: expect.stringMatching(/^approximate: per-process data limit \+ tree watchdog \(/),
    });
    // Nothing said on stderr: the limit is enforced, only cpus would be "not enforced".
    expect(r.err).toBe('');
  });

  it.skipIf(!available || !HAS('python3'))('python allocating 1GiB stops at RLIMIT_DATA (MemoryError)', async () => {
    const { r, report } = await run(PY_1G);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/MemoryError/);
    expect(r.code).toBe(1);
    // One allocation past the limit fails at once: nothing sbx sees says it met the limit, so no hint
    // (Python's MemoryError says it); a growing one is hinted at, below.
    expect(r.err).not.toMatch(/^sbx: hint: memory/m);
    expect(report.violations).toEqual([]);
  });

  it.skipIf(!available || !HAS('python3'))(
    'python growing to RLIMIT_DATA (MemoryError): the summary hints at the limit, with the sampled peak',
    async () => {
      const { r, report } = await run(PY_GROWING);
      expect(r.err).toMatch(/MemoryError/);
      expect(r.code).toBe(1);
      expect(report.violations).toEqual([]);
      expect(report.peaks).toMatchObject({ memorySampledEveryMs: 100 });
      expect(r.err).toMatch(
        /^sbx: hint: memory 256MiB is approximated here: each process may hold at most 256MiB of data \(RLIMIT_DATA\), so "out of memory" or MemoryError may come from it/m,
      );
    },
  );

  it.skipIf(!available)('control: `false` fails with no memory hint (nothing came near the limit)', async () => {
    const { r, report } = await run(['false']);
    expect(r.code).toBe(1);
    expect(report.peaks?.memoryBytes ?? 0).toBeLessThan(128 * 1024 ** 2);
    expect(r.err).not.toMatch(/hint: memory/);
  });

  it.skipIf(!available)('node allocating 1GiB stops at RLIMIT_DATA (V8: heap out of memory)', async () => {
    const { r } = await run(NODE_1G);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/out of memory|Allocation failed|Array buffer allocation failed/i);
    expect(r.code).not.toBe(0);
  });

  it.skipIf(!available || !HAS('python3'))(
    'four processes of 100MiB: the watchdog ends the whole tree (137) and names the limit',
    async () => {
      const { r, report } = await run(TREE_400M);
      expect(r.out).not.toMatch(/survived/);
      expect(r.code).toBe(137);
      expect(report.violations).toEqual([
        expect.objectContaining({
          phase: 'runtime',
          kind: 'oom',
          rule: 'limits.memory',
          limit: '256MiB',
          detail: expect.stringMatching(
            /^out of memory \(approximate: per-process data limit \+ tree watchdog\): the sandbox's processes held [\d.]+MiB, past the 256MiB limit, and sbx ended them all$/,
          ),
        }),
      ]);
      expect(r.err).toMatch(/^sbx: sh was killed by the memory limit \(256MiB, watchdog; SIGKILL, exit 137\)/m);
      expect(report.peaks?.memoryBytes).toBeGreaterThan(256 * 1024 ** 2);
    },
  );

  it.skipIf(!available || !HAS('python3'))(
    'control: two processes of 100MiB fit, and the peak is reported',
    async () => {
      const { r, report } = await run(TREE_200M);
      expect(r.out).toBe('fits\n');
      expect(r.code).toBe(0);
      expect(report.violations).toEqual([]);
      expect(report.peaks?.memoryBytes).toBeGreaterThan(100 * 1024 ** 2);
      expect(report.peaks?.memoryBytes).toBeLessThan(256 * 1024 ** 2);
    },
  );

  it.skipIf(!available || !HAS('python3'))('control: outside the sandbox, the 1GiB allocation runs', async () => {
    const r = await runHost(PY_1G, { env: t.env, cwd: t.workspace, timeoutMs: SAFETY_MS });
    expect(r.out).toBe('allocated\n');
  });

  it.skipIf(!available || !HAS('python3'))('control: with --memory none the same 1GiB allocation runs', async () => {
    const { r, report } = await sbx(['--backend', backend, '--memory', 'none', '--', ...PY_1G]);
    expect(r.out).toBe('allocated\n');
    expect(r.code).toBe(0);
    expect(memoryOf(report)).toBeUndefined();
  });
});

describe.skipIf(SKIP_INTEGRATION || !HAS('python3'))('-p untrusted without a writable cgroup', () => {
  it("the red-team's 4GiB allocation is stopped (2GiB memory limit)", async () => {
    const { r, report } = await sbx([
      '-p',
      'untrusted',
      '--',
      'python3',
      '-c',
      'b = bytearray(4 << 30); print("allocated")',
    ]);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/MemoryError/);
    expect(r.code).toBe(1);
    expect(memoryOf(report)).toMatchObject({ value: '2GiB', mechanism: 'watchdog', exact: false, enforced: true });
  });

  it('... and spread over processes each under the limit, the watchdog ends the tree (256MiB: allocating is slow here)', async () => {
    const { r, report } = await sbx(['-p', 'untrusted', '--memory', '256MiB', '--', ...TREE_400M]);
    expect(r.out).not.toMatch(/survived/);
    expect(r.code).toBe(137);
    expect(report.violations).toEqual([
      expect.objectContaining({ kind: 'oom', rule: 'limits.memory', limit: '256MiB' }),
    ]);
  });

  it('node reserving a 4GiB WebAssembly memory (65536 pages) and allocating 500MiB runs under RLIMIT_DATA', async () => {
    const { r } = await sbx([
      '-p',
      'untrusted',
      '--',
      'node',
      '-e',
      'const m = new WebAssembly.Memory({ initial: 1, maximum: 65536 }); new Uint8Array(m.buffer)[0] = 1; ' +
        'const a = []; for (let i = 0; i < 50; i++) a.push(Buffer.alloc(10 << 20, 1)); console.log("ok", a.length)',
    ]);
    expect(r.err).toBe('');
    expect(r.out).toBe('ok 50\n');
    expect(r.code).toBe(0);
  });

  it('sbx explain says what enforces each limit here, and that a required memory would be refused', async () => {
    const r = await sbxRaw(['explain', '-p', 'untrusted', '--', 'true']);
    expect(r.code).toBe(0);
    const limits = r.out.split('\n').filter((l) => l.startsWith('limits    '));
    expect(limits[0]).toMatch(
      /^limits {4}memory 2GiB → watchdog \(approximate\): approximate: per-process data limit \+ tree watchdog, .*: RLIMIT_DATA 2GiB per process/,
    );
    expect(limits.find((l) => l.includes('cpus 2'))).toMatch(/→ none \(not enforced\)/);
    // The exact spawn: the limits wrapper's lines, then bwrap's (cli/explain.ts describeWrapper).
    const lines = r.out.split('\n');
    const at = lines.findIndex((l) => l.startsWith('# limits: what sbx spawns is this wrapper'));
    expect(at, r.out).toBeGreaterThan(0);
    expect(lines[at + 2]).toMatch(/^\/bin\/sh -c '.*' sbx-limits .*--$/);
    expect(lines[at + 3]).toMatch(/^# bubblewrap /);
    const profile = join(t.root, 'requires-memory-explain.yaml');
    writeFileSync(profile, 'extends: untrusted\nlimits:\n  required: [memory]\n');
    const refused = await sbxRaw(['explain', '-p', profile, '--', 'true']);
    expect(refused.out).toMatch(
      /^limits {4}refused: limits\.memory \(2GiB\) is required but .*: it could only be approximated/m,
    );
  });

  it('a profile that requires memory is still refused (125): an approximation is not exact', async () => {
    const profile = join(t.root, 'requires-memory.yaml');
    writeFileSync(profile, 'extends: untrusted\nlimits:\n  required: [memory]\n');
    const marker = join(t.workspace, 'ran-required');
    const { r, report } = await sbx(['-p', profile, '--', 'touch', marker]);
    expect(r.code).toBe(125);
    expect(r.err).toMatch(
      /limits\.memory \(2GiB\) is required but .*: it could only be approximated \(per-process data limit \+ tree watchdog\)/,
    );
    expect(report.error?.code).toBe('LIMIT_UNENFORCEABLE');
    expect(existsSync(marker)).toBe(false);
  });
});

/** A fresh project directory inside the test host, used as the workspace. */
function project(name: string, files: Record<string, string>): string {
  const dir = join(t.root, name);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe.skipIf(SKIP_INTEGRATION)('real toolchains pass under -p untrusted with the approximated 2GiB', () => {
  const untrusted = (dir: string, command: string, extra: string[] = []) =>
    sbx(['-p', 'untrusted', '--workspace', dir, ...extra, '--', 'sh', '-c', command], dir);

  it("a vitest suite (this repository's vitest, read-only)", async () => {
    const dir = project('vitest-project', {
      'package.json': '{ "name": "p", "type": "module", "private": true }\n',
      'sum.test.js':
        "import { expect, it } from 'vitest';\n" +
        "it('adds', () => expect(1 + 2).toBe(3));\n" +
        "it('allocates 200MiB', () => expect(Buffer.alloc(200 << 20, 1).length).toBe(200 << 20));\n",
    });
    const modules = join(REPO_ROOT, 'node_modules');
    const { r, report } = await untrusted(
      dir,
      `ln -s ${modules} node_modules && NO_COLOR=1 node ${modules}/vitest/vitest.mjs run --reporter=dot`,
      ['--ro-bind', modules],
    );
    expect(r.out + r.err).toMatch(/Tests\s+2 passed/);
    expect(r.code).toBe(0);
    expect(memoryOf(report)).toMatchObject({ mechanism: 'watchdog' });
    expect(report.violations).toEqual([]);
  });

  it('npm ci of a small project (a local tarball: the sandbox has no network)', async () => {
    const dir = project('npm-project', {
      'dep/package.json': '{ "name": "dep", "version": "1.0.0", "main": "index.js" }\n',
      'dep/index.js': 'module.exports = 42;\n',
    });
    const pack = spawnSync('npm', ['pack', '--silent', './dep'], { cwd: dir, encoding: 'utf8', env: t.env });
    expect(pack.status, pack.stderr).toBe(0);
    writeFileSync(
      join(dir, 'package.json'),
      '{ "name": "p", "version": "1.0.0", "dependencies": { "dep": "file:dep-1.0.0.tgz" } }\n',
    );
    const install = spawnSync(
      'npm',
      ['install', '--offline', '--no-audit', '--no-fund', '--cache', join(t.root, 'npm-cache')],
      {
        cwd: dir,
        encoding: 'utf8',
        env: t.env,
      },
    );
    expect(install.status, install.stderr).toBe(0);
    const { r, report } = await untrusted(
      dir,
      'rm -rf node_modules && npm ci --offline --no-audit --no-fund --cache ./.npm-cache && node -p "require(\'dep\')"',
    );
    expect(r.out).toMatch(/42\n$/);
    expect(r.code).toBe(0);
    expect(report.violations).toEqual([]);
  });

  it.skipIf(!HAS('g++'))('a C++ build (g++ -O2, two translation units)', async () => {
    const dir = project('cpp-project', {
      'lib.cpp':
        '#include <map>\n#include <string>\nstd::map<std::string,int> table() { return {{"a", 1}, {"b", 2}}; }\n',
      'main.cpp':
        '#include <iostream>\n#include <map>\n#include <string>\nstd::map<std::string,int> table();\n' +
        'int main() { std::cout << table().size() << "\\n"; }\n',
    });
    const { r, report } = await untrusted(dir, 'g++ -O2 -o app main.cpp lib.cpp && ./app');
    expect(r.err).toBe('');
    expect(r.out).toBe('2\n');
    expect(r.code).toBe(0);
    expect(report.violations).toEqual([]);
  });

  it.skipIf(!HAS('python3'))('a Python test suite (python3 -m unittest)', async () => {
    const dir = project('py-project', {
      'test_calc.py':
        'import unittest\n\nclass Calc(unittest.TestCase):\n' +
        '    def test_add(self):\n        self.assertEqual(1 + 2, 3)\n' +
        '    def test_big(self):\n        self.assertEqual(len(bytearray(300 << 20)), 300 << 20)\n',
    });
    const { r, report } = await untrusted(dir, 'python3 -m unittest -q 2>&1');
    expect(r.out).toMatch(/Ran 2 tests/);
    expect(r.out).toMatch(/\nOK\n/);
    expect(r.code).toBe(0);
    expect(report.violations).toEqual([]);
  });
});
