// What the limits stopped, through action.yml as a runner runs it (harness.ts), with real bwrap: a
// fork bomb held at the task limit, a file past file_size, a connection with no network (counted by the
// sandbox's own network namespace), a connection the egress proxy refused each become an annotation and
// a row of the step summary, so the maintainer does not read a clean summary.
// As root the task limit is a cgroup's (pids.events counts refused forks); as an unprivileged user,
// as on a hosted runner, it is RLIMIT_NPROC, which counts nothing: sbx's watchdog sees the tree there.
// Beside each, the control: the same command unsandboxed is not stopped.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { runAction, workflowCommands } from './harness.js';

let t: TestHost;

/**
 * Forks up to 600 sleepers and, like a real fork bomb, keeps trying for 4 s, counting the forks
 * refused (EAGAIN) instead of dying on the first one. The pressure is what the watchdog sees: under
 * RLIMIT_NPROC the uid's other processes come and go (the test runner's, in CI), and a bomb that gave
 * up after one pass would leave the uid below its limit again between two polls, which a loaded
 * machine spaces by up to four times a poll's own cost (src/limits/host/memory-watchdog.ts).
 */
const FORK_BOMB = `python3 -c '
import os, time
kids, refused = [], 0
until = time.monotonic() + 4
while time.monotonic() < until:
    if len(kids) >= 600:
        time.sleep(0.01)
        continue
    try:
        pid = os.fork()
    except BlockingIOError:
        refused += 1
        continue
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    kids.append(pid)
print("refused", refused)
for pid in kids:
    os.waitpid(pid, 0)
'`;

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  t = makeTestHost('action-blocked');
  // A profile of the user's (not the checkout's): untrusted with a small file-size limit.
  const profiles = join(t.configHome, 'sbx', 'profiles');
  mkdirSync(profiles, { recursive: true, mode: 0o700 });
  writeFileSync(join(profiles, 'small-files.yaml'), 'extends: untrusted\nlimits:\n  file_size: 1MiB\n', {
    mode: 0o600,
  });
});
afterAll(() => t?.cleanup());

const titles = (log: string) => workflowCommands(log).map((c) => c.properties.title);

describe.skipIf(SKIP_INTEGRATION)('what the limits stopped, in the annotations and the step summary', () => {
  it('a fork bomb held at the task limit', async () => {
    const control = spawnSync('sh', ['-c', FORK_BOMB], { encoding: 'utf8', timeout: 30_000 });
    expect(control.stdout).toContain('refused 0');
    const r = await runAction(t, 'fork-bomb', { command: FORK_BOMB });
    expect(r.status, r.log).toBe(0);
    expect(r.log).toMatch(/refused [1-9]/);
    expect(titles(r.log)).toEqual(['sbx: limits.pids']);
    expect(r.summary).toMatch(/^\| runtime \| pids \| limits\.pids \| process limit reached/m);
  }, 60_000);

  it('a file written past file_size', async () => {
    const write = 'echo writing; head -c 2097152 /dev/zero > big';
    const control = spawnSync('sh', ['-c', write], { cwd: t.root, encoding: 'utf8' });
    expect(control.status).toBe(0);
    // SIGXFSZ is seen in the command's status; a child killed by it whose shell goes on is not
    // (README, Limits: nothing records a signal a process's parent reaps).
    const r = await runAction(t, 'file-size', { command: write, profile: 'small-files' });
    expect(r.status, r.log).toBe(153);
    expect(titles(r.log)).toEqual(['sbx: limits.file_size']);
    // The summary's cells escape all but a plain set: `_` is a character reference there.
    expect(r.summary).toMatch(
      /^\| runtime \| file-size \| limits\.file&#95;size \| the command was killed by SIGXFSZ \|/m,
    );
  }, 60_000);

  it('a connection with no network: the kernel found no route, the namespace counted it', async () => {
    const dial =
      'python3 -c "import socket; socket.create_connection((\'192.0.2.1\', 80), 2)" 2>/dev/null; echo "python:$?"';
    const r = await runAction(t, 'no-route', { command: dial });
    expect(r.status, r.log).toBe(0);
    expect(r.log).toContain('python:1');
    expect(workflowCommands(r.log)).toEqual([
      {
        name: 'error',
        properties: { title: 'sbx: network' },
        data: expect.stringMatching(/^runtime network: 1 attempt to reach an address outside the sandbox .*no route/),
      },
    ]);
    expect(r.summary).toContain('found no route: the sandbox has no network (network: none)');
  }, 60_000);

  it('a connection the egress proxy refused', async () => {
    const dial = 'curl -sS -o /dev/null https://denied.example.net/ ; echo "curl:$?"';
    const r = await runAction(t, 'connect', { command: dial, 'allow-domains': 'registry.example.com' });
    expect(r.status, r.log).toBe(0);
    expect(r.log).toMatch(/curl:[1-9]/);
    expect(titles(r.log)).toEqual(['sbx: network.allow']);
    expect(r.summary).toContain('denied.example.net:443 is not in network.allow');
  }, 60_000);
});
