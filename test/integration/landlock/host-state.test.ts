// Host-global state under --backend landlock, which builds no IPC namespace and shows the host's /proc
// and /sys (issue 30). Each probe beside an unsandboxed control:
// - SysV IPC: a segment, queue or semaphore set created inside would outlive the run on the host (a
//   1 GiB segment did). The backend's seccomp rules refuse every SysV call with ENOSYS (seen failing
//   before them: "shm ok", the segment still in /proc/sysvipc/shm after the run). Control: the same
//   probe unsandboxed creates it, and the test removes it (ipcrm).
// - POSIX message queues and shared memory: mq_open and shm_open (/dev/shm) are refused too.
// - Kernel state, as root and as a normal user: writing /proc/sys/vm/stat_interval (its own value
//   back), opening /proc/sys/kernel/core_pattern, /proc/sysrq-trigger and a /sys file for writing
//   (opened only, never written: sysrq-trigger can reboot the machine) fail with EACCES; the control
//   (root only: a normal user is refused by the files' modes anyway) opens them.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { IS_ROOT, makeTestHost, runHost, runSbx, SKIP_INTEGRATION, type TestHost } from '../../helpers/sbx-cli.js';
import { REPO_ROOT } from '../../helpers/paths.js';

const HELPER = join(REPO_ROOT, 'dist', 'sbx-landlock');
const PROBE_SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'host-state-probe.c');
/** SysV keys of this test process only: never a stranger's object. */
const KEY = 0x50000000 + process.pid * 16; // pid_max is at most 2^22: below 0x54000000, no two test processes share one
const keyHex = (key: number) => `0x${key.toString(16).padStart(8, '0')}`;
/** A /sys file root may open for writing (opened only, never written), the first this kernel has. */
const SYS_FILE = ['/sys/kernel/mm/transparent_hugepage/enabled', '/sys/kernel/mm/ksm/run', '/sys/power/state'].find(
  (f) => existsSync(f),
);
const SYSRQ = '/proc/sysrq-trigger';

let t: TestHost;
let probe: string;

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  for (const file of [HELPER, join(REPO_ROOT, 'dist', 'cli.js')]) {
    if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build (with a C compiler) first`);
  }
  if (spawnSync('gcc', ['--version'], { stdio: 'ignore' }).error)
    throw new Error('gcc is required (apt-get install gcc libc6-dev)');
  for (const tool of ['ipcs', 'ipcrm'])
    if (spawnSync(tool, ['--version'], { stdio: 'ignore' }).error) throw new Error(`${tool} is required (util-linux)`);
  t = makeTestHost('landlock-host-state');
  probe = join(t.workspace, 'host-state-probe');
  execFileSync('gcc', ['-O1', '-Wall', '-Werror', '-o', probe, PROBE_SOURCE, '-lrt']);
});

/** Whatever a probe left, this test's keys and names only. */
function removeOurs(): void {
  for (const [flag, offset] of [
    ['-M', 0],
    ['-Q', 1],
    ['-S', 2],
  ] as const) {
    for (let i = 0; i < 3; i++) spawnSync('ipcrm', [flag, keyHex(KEY + i * 4 + offset)], { stdio: 'ignore' });
  }
  spawnSync('sh', ['-c', `rm -f /dev/shm/sbx-test-${process.pid}-* /dev/mqueue/sbx-test-${process.pid}-*`]);
}
afterEach(removeOurs);
afterAll(() => {
  removeOurs();
  t?.cleanup();
});

const opts = () => ({ env: t.env, cwd: t.workspace });

async function inside(...args: string[]): Promise<string> {
  const r = await runSbx(['--backend', 'landlock', '--', ...args], opts());
  expect(r.err).not.toMatch(/could not confine/);
  return r.out;
}

async function host(...args: string[]): Promise<string> {
  return (await runHost(args, opts())).out;
}

/** Whether /proc/sysvipc/FILE lists KEY: what outlives a run on the host. */
function listed(file: 'shm' | 'msg' | 'sem', key: number): boolean {
  const rows = readFileSync(`/proc/sysvipc/${file}`, 'utf8').trim().split('\n').slice(1);
  return rows.some((row) => Number(row.trim().split(/\s+/)[0]) === key);
}

describe.skipIf(SKIP_INTEGRATION)(
  'SysV IPC and POSIX IPC under --backend landlock: refused, nothing outlives the run',
  () => {
    it.each([
      ['shm', 'shmget', 0],
      ['msg', 'msgget', 1],
      ['sem', 'semget', 2],
    ] as const)('%s: control, unsandboxed the object is created and stays on the host', async (kind, _call, offset) => {
      const key = KEY + offset;
      expect(await host(probe, kind, String(key))).toMatch(new RegExp(`^${kind} ok \\d+\\n$`));
      expect(listed(kind, key)).toBe(true);
    });

    it.each([
      ['shm', 'shmget', 0],
      ['msg', 'msgget', 1],
      ['sem', 'semget', 2],
    ] as const)('%s: inside, %s fails with ENOSYS and nothing is left on the host', async (kind, call, offset) => {
      const key = KEY + 4 + offset;
      expect(await inside('./host-state-probe', kind, String(key))).toBe(`${kind} ${call}:ENOSYS\n`);
      expect(listed(kind, key)).toBe(false);
    });

    it("a stranger's segment cannot be attached by its id (control: unsandboxed it can)", async () => {
      const created = await host(probe, 'shm', String(KEY + 8));
      const id = /^shm ok (\d+)$/m.exec(created)?.[1];
      expect(id, created).toBeDefined();
      expect(await host(probe, 'shmat', id!)).toBe(`shmat ok ${id}\n`);
      expect(await inside('./host-state-probe', 'shmat', id!)).toBe('shmat shmat:ENOSYS\n');
    });

    it('POSIX message queues and shared memory: refused inside (control: unsandboxed they are created)', async () => {
      const name = `sbx-test-${process.pid}`;
      expect(await inside('./host-state-probe', 'mq', `/${name}-in`)).toBe('mq mq_open:ENOSYS\n');
      expect(await inside('./host-state-probe', 'shm-open', `${name}-in`)).toBe('shm-open shm_open:EACCES\n');
      expect(existsSync(`/dev/shm/${name}-in`)).toBe(false);
      expect(await host(probe, 'shm-open', `${name}-host`)).toBe('shm-open ok 0\n');
      expect(existsSync(`/dev/shm/${name}-host`)).toBe(true);
      expect(await host(probe, 'mq', `/${name}-host`)).toBe('mq ok 0\n');
      expect(await host(probe, 'mq-unlink', `/${name}-host`)).toBe('mq-unlink ok 0\n');
    });
  },
);

describe.skipIf(SKIP_INTEGRATION)('kernel state under --backend landlock: never writable', () => {
  it('/proc/sys/vm/stat_interval: its own value written back fails inside with EACCES', async () => {
    const script =
      'v=$(cat /proc/sys/vm/stat_interval) && { echo "$v" > /proc/sys/vm/stat_interval; } 2>/dev/null && echo wrote || echo refused';
    expect(await inside('sh', '-c', script)).toBe('refused\n');
  });

  it.skipIf(!IS_ROOT)('control (root): unsandboxed the same write succeeds', async () => {
    const script = 'v=$(cat /proc/sys/vm/stat_interval) && { echo "$v" > /proc/sys/vm/stat_interval; } && echo wrote';
    expect(await host('sh', '-c', script)).toBe('wrote\n');
  });

  it('/proc/sys/kernel/core_pattern: open(O_WRONLY) fails inside with EACCES (nothing written)', async () => {
    expect(await inside('./host-state-probe', 'open-wronly', '/proc/sys/kernel/core_pattern')).toBe(
      'open-wronly open:EACCES\n',
    );
  });

  it.skipIf(!IS_ROOT)(
    'control (root): unsandboxed open(O_WRONLY) of /proc/sys/kernel/core_pattern succeeds',
    async () => {
      expect(await host(probe, 'open-wronly', '/proc/sys/kernel/core_pattern')).toBe('open-wronly ok 0\n');
    },
  );

  it.skipIf(!SYS_FILE)(
    `${SYS_FILE ?? 'a /sys file (skipped: no candidate here)'}: open(O_WRONLY) fails inside with EACCES (nothing written); control (root) unsandboxed`,
    async () => {
      expect(await inside('./host-state-probe', 'open-wronly', SYS_FILE!)).toBe('open-wronly open:EACCES\n');
      if (IS_ROOT) expect(await host(probe, 'open-wronly', SYS_FILE!)).toBe('open-wronly ok 0\n');
    },
  );

  it.skipIf(!existsSync(SYSRQ))(
    `${SYSRQ}${existsSync(SYSRQ) ? '' : ' (skipped: this kernel has none)'}: open(O_WRONLY) fails inside with EACCES (nothing written); control (root) unsandboxed`,
    async () => {
      expect(await inside('./host-state-probe', 'open-wronly', SYSRQ)).toBe('open-wronly open:EACCES\n');
      if (IS_ROOT) expect(await host(probe, 'open-wronly', SYSRQ)).toBe('open-wronly ok 0\n');
    },
  );
});
