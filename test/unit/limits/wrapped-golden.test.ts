// Golden wrapped launch: what really spawns for a profile with limits (untrusted) on a fixture host and
// fixture cgroup facts, through the same planning compile() and run() use (planLimits, then
// planLimitsWrapper: nothing created). The launcher's own argv stays in <profile>.<host>.bwrap.argv; this
// file holds the wrapper in front of it, one argument a line with why it is there.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Launch } from '../../../src/backend/launch.js';
import type { HostLimitFacts } from '../../../src/limits/plan.js';
import { planLimits } from '../../../src/limits/plan.js';
import { planLimitsWrapper } from '../../../src/limits/host/cgroup/apply.js';
import { SHELL, TRAMPOLINE_NAME } from '../../../src/limits/host/cgroup/trampoline.js';
import { expectGoldenText } from '../../helpers/golden.js';
import { FIXTURE_SESSION, runPipeline } from '../../helpers/hosts.js';
import { GOLDEN_DIR } from '../../helpers/paths.js';
import { makeTempDir } from '../../helpers/tmp.js';

/** Each fixture host's cgroup facts: alice a delegated v2 subtree (systemd's user manager), root v1 as root. */
const LIMIT_FACTS: Record<'alice' | 'root', HostLimitFacts> = {
  alice: {
    uid: 1000,
    cgroup: {
      kind: 'v2',
      mount: '/sys/fs/cgroup',
      ownPath: '/user.slice/user-1000.slice/user@1000.service/app.slice/run-u7.scope',
      writable: true,
      controllers: ['memory', 'pids', 'cpu'],
    },
    systemdRun: false,
  },
  root: {
    uid: 0,
    cgroup: {
      kind: 'v1',
      controllers: {
        memory: '/sys/fs/cgroup/memory/user.slice',
        pids: '/sys/fs/cgroup/pids/user.slice',
        cpu: '/sys/fs/cgroup/cpu,cpuacct/user.slice',
      },
      writable: true,
    },
    systemdRun: false,
  },
};

function token(t: string): string {
  return t === '' || /[\s#"'\\]/.test(t) ? JSON.stringify(t) : t;
}

/** Why each argument of the shell trampoline is there. */
function reasonOf(arg: string, i: number): string {
  if (i === 0) return "sbx's trampoline, spawned in place of the launcher: node cannot spawn into a cgroup";
  if (i === 1) return 'the script is the next argument';
  if (i === 2)
    return 'move into each cgroup listed, set the rlimits (soft before hard), exec the launcher; 125 if any step fails';
  if (i === 3) return '$0: what ps shows for the instant before the exec';
  if (arg === '--') return "end of the cgroup list: the launcher's argv follows";
  return 'the session cgroup (limits written by sbx before the spawn): writing 0 moves the writer itself';
}

/** The wrapped launch as a reviewer reads it: the wrapper one argument a line with its reason, then the launcher. */
function wrappedGoldenText(wrapped: Launch, inner: Launch, innerGolden: string): string {
  const wrapper = [wrapped.file, ...wrapped.args.slice(0, wrapped.args.length - inner.args.length - 1)];
  const lines = wrapper.map((arg, i) => `${token(arg).padEnd(60)} # ${reasonOf(arg, i)}`);
  const launcher = [inner.file, ...inner.args].map(token).join(' ');
  return [...lines, `${launcher.padEnd(60)} # the launcher, exactly as in ${innerGolden}`].join('\n') + '\n';
}

describe.each(['alice', 'root'] as const)('untrusted × %s, wrapped for its limits', (host) => {
  it('the wrapper and the launcher behind it match the golden file', async () => {
    const { policy, launch } = await runPipeline('untrusted', host);
    const plan = planLimits(policy.limits, LIMIT_FACTS[host]);
    // An empty root: no /proc/self/limits to clamp to, no tasks to count: the plan's rlimits as they are.
    const wrapper = planLimitsWrapper(plan, FIXTURE_SESSION.id, { root: makeTempDir('sbx-noproc-'), env: {} });
    const wrapped: Launch = { ...launch, ...wrapper.wrap(launch) };
    expect(wrapped.file).toBe(SHELL);
    expect(wrapped.args[2]).toBe(TRAMPOLINE_NAME);
    // The launcher's file and args close the wrapped argv unchanged; its descriptors and environment are untouched.
    expect(wrapped.args.slice(-launch.args.length - 1)).toEqual([launch.file, ...launch.args]);
    expect(wrapped.fds).toBe(launch.fds);
    expect(wrapped.env).toBe(launch.env);
    const golden = `untrusted.${host}.bwrap.argv`;
    expectGoldenText(
      join(GOLDEN_DIR, `untrusted.${host}.bwrap.wrapped.argv`),
      wrappedGoldenText(wrapped, launch, golden),
    );
  });
});
