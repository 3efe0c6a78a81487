// Issue 30: the profile's limits are the command's alone under --backend landlock. sbx-landlock's
// monitor judges the command's connects and restores guarded git state at the end; when it inherited
// the command's RLIMIT_CPU, a command hammering denied calls burnt the monitor's CPU until the
// kernel SIGKILLed it: the planted hook stayed and a detached descendant outlived sbx (seen failing so
// before the fix: "sbx-landlock ended before it could check the 3 guarded paths", exit 137). Here the
// same scenario for real, an allow-list network and a 1 s CPU-time limit: the command itself is killed
// by SIGXCPU (the control: the `cpu-time` violation), while the monitor survives, restores the hook and
// ends every descendant. Then the limits read directly: the command's /proc/self/limits has the
// profile's, the monitor's (its parent) has sbx's own, and only the command is in the session cgroup.
// Root and normal user alike (.ci/run runs it as sbxtest too).
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readReport } from '../../helpers/report.js';
import { makeTestHost, pidsWithArgv, runSbx, SKIP_INTEGRATION, type TestHost } from '../../helpers/sbx-cli.js';
import { REPO_ROOT } from '../../helpers/paths.js';

const HELPER = join(REPO_ROOT, 'dist', 'sbx-landlock');
const PROBE_SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'socket-probe.c');
/** A descendant the command leaves running: its argv is unique to this test process. */
const LEFTOVER = ['sleep', `4231.${process.pid}`];

let t: TestHost;
let probe: string;
let profile: string;
let runs = 0;

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  for (const file of [HELPER, join(REPO_ROOT, 'dist', 'cli.js')]) {
    if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build (with a C compiler) first`);
  }
  if (spawnSync('gcc', ['--version'], { stdio: 'ignore' }).error)
    throw new Error('gcc is required (apt-get install gcc libc6-dev)');
  t = makeTestHost('landlock-limits');
  probe = join(t.workspace, 'socket-probe');
  execFileSync('gcc', ['-O1', '-Wall', '-Werror', '-pthread', '-o', probe, PROBE_SOURCE]);
  // An allow list: the helper's monitor judges every connect() (seccomp user notification).
  profile = join(t.root, 'allow.yaml');
  writeFileSync(profile, 'extends: default\nnetwork:\n  allow: ["127.0.0.1"]\n', { mode: 0o600 });
});

afterEach(() => {
  // A failing run must not leave its sleeper behind for the next test (or the machine).
  for (const pid of pidsWithArgv(LEFTOVER)) process.kill(pid, 'SIGKILL');
});
afterAll(() => t?.cleanup());

/** A fresh git repository in the workspace: its hooks are guarded state under landlock. */
function freshRepo(): string {
  const repo = join(t.workspace, `repo-${++runs}`);
  mkdirSync(repo);
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], {
      cwd: repo,
      env: t.env,
    });
  git('init', '-q', '-b', 'main');
  git('commit', '-q', '--allow-empty', '-m', 'init');
  return repo;
}

/** One row of /proc/PID/limits: [soft, hard]. */
function limitRow(text: string, row: string): string[] {
  const m = new RegExp(`^${row}\\s+(\\S+)\\s+(\\S+)`, 'm').exec(text);
  if (!m) throw new Error(`no "${row}" row in:\n${text}`);
  return [m[1]!, m[2]!];
}

describe.skipIf(SKIP_INTEGRATION)('--backend landlock: the profile limits the command, never the helper', () => {
  it('a command hammering denied sockets under a 1 s CPU limit: it gets SIGXCPU, the monitor restores and ends everything', async () => {
    const repo = freshRepo();
    // Inside the workspace (the repository): nothing else of the host's is executable there.
    copyFileSync(probe, join(repo, 'socket-probe'));
    const report = join(t.root, `report-${runs}.json`);
    // Three hammers (each process has its own 1 s): the judge works for all of them, far past 2 s of CPU.
    const script =
      'printf x > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && ' +
      `${LEFTOVER.join(' ')} </dev/null >/dev/null 2>&1 & ` +
      // UDP sockets: each refused by the judge itself (a TCP connect would be captured into the proxy).
      'for i in 1 2; do ./socket-probe hammer-udp & done; exec ./socket-probe hammer-udp';
    const r = await runSbx(
      ['--backend', 'landlock', '-p', profile, '--cpu-time', '1s', '--report-file', report, '--', 'sh', '-c', script],
      // The judge serves the hammers one call at a time: each takes seconds of wall time to spend its 1 s.
      { env: t.env, cwd: repo, timeoutMs: 90_000 },
    );
    const violations = readReport(report).violations;
    // The control: the command itself is under the limit (SIGXCPU = 24 → 152, blamed on cpu-time).
    expect([r.code, r.out]).toEqual([152, '']);
    expect(violations).toContainEqual(expect.objectContaining({ kind: 'cpu-time', rule: 'limits.cpu_time' }));
    expect(violations.filter((v) => v.kind === 'network').length).toBeGreaterThan(0);
    // The monitor lived to the end: the hook is gone and reported, nothing of the command is left.
    expect(existsSync(join(repo, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(violations).toContainEqual(
      expect.objectContaining({ kind: 'git-state', detail: `${repo}/.git/hooks/pre-commit: added; removed` }),
    );
    expect(r.err).not.toMatch(/ended before it could check/);
    expect(pidsWithArgv(LEFTOVER)).toEqual([]);
  }, 120_000);

  it("the command's /proc/self/limits has the profile's limits, the monitor's (its parent) sbx's own; only the command is in the session cgroup", async () => {
    const report = join(t.root, `report-direct-${++runs}.json`);
    const script =
      'cat /proc/self/limits; echo ---; cat /proc/$PPID/limits; echo ---; cat /proc/$PPID/comm; echo ---; ' +
      'cat /proc/self/cgroup; echo ---; cat /proc/$PPID/cgroup';
    const limits = ['--cpu-time', '7s', '--nofile', '77', '--file-size', '3MiB', '--pids', '64'];
    const r = await runSbx(
      ['--backend', 'landlock', '-p', profile, ...limits, '--report-file', report, '--', 'sh', '-c', script],
      { env: t.env, cwd: t.workspace },
    );
    expect([r.code, r.err]).toEqual([0, expect.any(String)]);
    const [command, monitor, comm, commandCgroup, monitorCgroup] = r.out.split('---\n') as [
      string,
      string,
      string,
      string,
      string,
    ];
    expect(comm).toBe('sbx-landlock\n');
    // The profile's, on the command: SIGXCPU at 7 s, SIGKILL a second later (limits/plan.ts).
    expect(limitRow(command, 'Max cpu time')).toEqual(['7', '8']);
    expect(limitRow(command, 'Max open files')).toEqual(['77', '77']);
    expect(limitRow(command, 'Max file size')).toEqual([String(3 * 1024 ** 2), String(3 * 1024 ** 2)]);
    expect(limitRow(command, 'Max core file size')).toEqual(['0', '0']);
    // sbx's own on the monitor: what sbx (node, started by this test process) inherited from us.
    const own = readFileSync('/proc/self/limits', 'utf8');
    for (const row of ['Max cpu time', 'Max open files', 'Max file size', 'Max processes', 'Max address space'])
      expect(limitRow(monitor, row), row).toEqual(limitRow(own, row));
    // The session cgroup (a cgroup plan for pids, where this host has one) holds the command only.
    const session = readReport(report).sessionId;
    const pids = readReport(report).limits.find((l) => l.name === 'pids');
    expect(monitorCgroup).not.toContain(`sbx-${session}`);
    if (pids?.mechanism === 'cgroup-v1' || pids?.mechanism === 'cgroup-v2')
      expect(commandCgroup).toContain(`/sbx-${session}`);
  });
});
