// `-p untrusted` end to end through the CLI, as whoever runs the suite: real programs run unharmed
// under its default limits, and the limits say what enforced them.
//
// Which half runs is decided by what this host gives the invoking user, not by a skip: with a cgroup
// (root on this cgroup v1 host) a memory hog is killed and the summary names the memory limit; without
// one (the unprivileged user here) memory is approximated (RLIMIT_DATA + the tree watchdog: its own
// tests are in watchdog.test.ts), the report says so, and a profile that requires it is refused
// before anything runs. Both halves run WebAssembly under the profile's
// 2GiB memory limit, which an RLIMIT_AS stand-in used to break; its control sets RLIMIT_AS on purpose
// (`--address-space`) and sees the same program fail.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLimits } from '../../../src/limits/parse-limits.js';
import { planLimits } from '../../../src/limits/plan.js';
import type { Report } from '../../../src/report/report.js';
import { probeCgroupFacts } from '../../../src/limits/host/cgroup/probe.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  type Ran,
  type TestHost,
} from '../../helpers/sbx-cli.js';

/** Reserves 4GiB of address space (65536 pages of 64KiB) and touches one page: what V8/WebAssembly users do. */
const WASM = [
  'node',
  '-e',
  'const m = new WebAssembly.Memory({ initial: 1, maximum: 65536 }); new Uint8Array(m.buffer)[0] = 1; console.log("wasm ok")',
];
/** Grows by 16MiB of touched memory until something stops it. */
const HOG = ['node', '-e', 'const a = []; for (;;) a.push(Buffer.alloc(16 << 20, 1))'];
const UNTRUSTED_LIMITS = {
  memory: '2GiB',
  pids: 512,
  cpus: 2,
  timeout: '30m',
  cpu_time: '20m',
  file_size: '1GiB',
  nofile: 4096,
};
const SAFETY_MS = 60_000;

const uid = process.getuid!();
const plan = planLimits(parseLimits(UNTRUSTED_LIMITS), probeCgroupFacts());
const memory = plan.limits.find((l) => l.name === 'memory')!;
const HAS_MEMORY_CGROUP = memory.exact;
console.warn(
  `[untrusted limits] uid ${uid}: memory is ${HAS_MEMORY_CGROUP ? `enforced by ${memory.mechanism}` : 'approximated'} here; running that half`,
);

let t: TestHost;

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  t = makeTestHost('untrusted-limits');
  writeFileSync(join(t.root, 'requires-memory.yaml'), 'extends: untrusted\nlimits:\n  required: [memory]\n');
});
afterAll(() => t?.cleanup());

async function sbx(args: string[], env = t.env): Promise<{ r: Ran; report: Report }> {
  const file = join(t.root, `report-${Math.random().toString(36).slice(2)}.json`);
  const r = await runSbx(['--report-file', file, ...args], { env, cwd: t.workspace, timeoutMs: SAFETY_MS });
  return { r, report: JSON.parse(readFileSync(file, 'utf8')) as Report };
}

const reported = (report: Report, name: string) => report.limits?.find((l) => l.name === name);

describe.skipIf(SKIP_INTEGRATION)('-p untrusted runs real programs unharmed', () => {
  it('WebAssembly reserving 4GiB of address space runs under the 2GiB memory limit', async () => {
    const { r, report } = await sbx(['-p', 'untrusted', '--', ...WASM]);
    expect(r.err).not.toMatch(/Out of memory|could not allocate/);
    expect(r.out).toBe('wasm ok\n');
    expect(r.code).toBe(0);
    expect(report.limits?.map((l) => l.name)).toEqual([
      'memory',
      'pids',
      'cpus',
      'timeout',
      'cpu-time',
      'file-size',
      'nofile',
    ]);
    expect(reported(report, 'memory')).toMatchObject({
      value: '2GiB',
      base: 2 * 1024 ** 3,
      mechanism: memory.mechanism,
      exact: HAS_MEMORY_CGROUP,
      enforced: true,
    });
  });

  it('control: the same program outside the sandbox', async () => {
    const r = await runHost(WASM, { env: t.env, cwd: t.workspace });
    expect(r.out).toBe('wasm ok\n');
  });

  it('control: with RLIMIT_AS asked for by name, the same program fails, and the summary points at it', async () => {
    const { r, report } = await sbx(['-p', 'untrusted', '--address-space', '2GiB', '--', ...WASM]);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/RangeError: WebAssembly\.Memory\(\): could not allocate memory/);
    expect(r.code).toBe(1);
    expect(reported(report, 'address-space')).toMatchObject({
      value: '2GiB',
      mechanism: 'rlimit',
      exact: true,
      enforced: true,
    });
    expect(r.err).toMatch(
      /^sbx: hint: address_space 2GiB \(RLIMIT_AS\) was set: "out of memory" from V8, WebAssembly or the JVM may come from it; lift it with --address-space none$/m,
    );
  });

  it("--memory none lifts the profile's memory limit", async () => {
    const { r, report } = await sbx(['-p', 'untrusted', '--memory', 'none', '--', 'true']);
    expect(r.code).toBe(0);
    expect(reported(report, 'memory')).toBeUndefined();
    expect(reported(report, 'pids')).toMatchObject({ value: '512' });
    expect(r.err).not.toMatch(/memory limit/);
  });

  it('--memory none against a profile that requires memory is a usage error, and nothing runs', async () => {
    const marker = join(t.workspace, 'ran-lifted');
    const { r, report } = await sbx([
      '-p',
      join(t.root, 'requires-memory.yaml'),
      '--memory',
      'none',
      '--',
      'touch',
      marker,
    ]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--memory none: the profile lists memory in limits\.required, so its limit cannot be lifted/);
    expect(report.error?.code).toBe('USAGE');
    expect(existsSync(marker)).toBe(false);
  });
});

describe.skipIf(SKIP_INTEGRATION || HAS_MEMORY_CGROUP)(
  `without a cgroup for uid ${uid}: memory is approximated, cpus not enforced, and said so`,
  () => {
    it('stderr says what is not enforced in one line (once per host), the report marks memory approximate', async () => {
      // A state dir of its own: the notice is said once per host (report/host/notices.ts), and earlier
      // tests of this file already ran -p untrusted.
      const state = join(t.root, 'state-notice');
      const env = { ...t.env, XDG_STATE_HOME: state };
      const again = async () => (await sbx(['-p', 'untrusted', '--', 'true'], env)).r;
      const { r, report } = await sbx(['-p', 'untrusted', '--', 'true'], env);
      expect(r.code).toBe(0);
      const notEnforced = plan.limits.filter((l) => !l.enforced);
      expect(notEnforced.map((l) => l.name)).toEqual(['cpus']);
      expect(r.err).toBe(`sbx: cpus limit 2 not enforced: ${notEnforced[0]!.gap} (see sbx doctor)\n`);
      expect(reported(report, 'memory')).toEqual({
        name: 'memory',
        value: '2GiB',
        base: 2 * 1024 ** 3,
        mechanism: 'watchdog',
        exact: false,
        enforced: true,
        reason: memory.gap,
      });
      expect(memory.gap).toMatch(/^approximate: per-process data limit \+ tree watchdog \(/);
      // Said once per host: the next run is silent, the report still marks it.
      expect((await again()).err).toBe('');
      // RLIMIT_DATA stands in per process, never RLIMIT_AS: the command's address space is unlimited
      // (unless sbx's already was).
      const limits = await sbx(['-p', 'untrusted', '--', 'cat', '/proc/self/limits']);
      const own = readFileSync('/proc/self/limits', 'utf8').match(/^Max address space\s+(\S+)/m)![1];
      expect(limits.r.out).toMatch(new RegExp(`^Max address space\\s+${own}\\s`, 'm'));
      expect(limits.r.out).toMatch(new RegExp(`^Max data size\\s+${2 * 1024 ** 3}\\s+${2 * 1024 ** 3}\\s`, 'm'));
    });

    it('a profile with limits.required: [memory] is refused (125) and nothing runs', async () => {
      const marker = join(t.workspace, 'ran-required');
      const { r, report } = await sbx(['-p', join(t.root, 'requires-memory.yaml'), '--', 'touch', marker]);
      expect(r.code).toBe(125);
      expect(r.err).toContain(
        `limits.memory (2GiB) is required but ${memory.gap.replace(/^.*\((.*)\)$/, '$1')}: it could only be approximated (per-process data limit + tree watchdog)`,
      );
      expect(report).toMatchObject({ exitCode: 125, setBy: 'sbx', error: { code: 'LIMIT_UNENFORCEABLE' } });
      expect(existsSync(marker)).toBe(false);
    });
  },
);

describe.skipIf(SKIP_INTEGRATION || !HAS_MEMORY_CGROUP)(
  `with a cgroup for uid ${uid}: the memory limit holds and is named`,
  () => {
    it('a memory hog is killed, and the summary names the memory limit and its mechanism', async () => {
      const { r, report } = await sbx(['-p', 'untrusted', '--memory', '128MiB', '--', ...HOG]);
      expect(r.code).toBe(137);
      expect(report.violations).toEqual([
        expect.objectContaining({ phase: 'runtime', kind: 'oom', rule: 'limits.memory', limit: '128MiB' }),
      ]);
      expect(r.err).toMatch(
        new RegExp(
          `^sbx: node was killed by the memory limit \\(128MiB, ${memory.mechanism}; SIGKILL, exit 137\\) \\[profile untrusted, `,
          'm',
        ),
      );
      expect(report.peaks?.memoryBytes).toBeLessThanOrEqual(128 * 1024 ** 2);
    });

    it('control: a program that fits runs, and no limit is reported as not enforced', async () => {
      const { r, report } = await sbx([
        '-p',
        'untrusted',
        '--memory',
        '128MiB',
        '--',
        'node',
        '-e',
        'Buffer.alloc(32 << 20, 1); console.log("fits")',
      ]);
      expect(r.out).toBe('fits\n');
      expect(r.code).toBe(0);
      expect(report.violations).toEqual([]);
      expect(r.err).not.toMatch(/memory limit .* not enforced/);
    });

    it('a profile with limits.required: [memory] runs', async () => {
      const { r, report } = await sbx(['-p', join(t.root, 'requires-memory.yaml'), '--', 'true']);
      expect(r.code).toBe(0);
      expect(reported(report, 'memory')).toMatchObject({ mechanism: memory.mechanism, exact: true, enforced: true });
    });
  },
);
