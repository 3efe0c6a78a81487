// One environment per run for its limits: the cgroup facts are probed (stage 6), stale cgroups swept
// and the plan applied (stage 9) with the run context's environment and uid. They once split: probed
// with process.env, applied with the caller's hostEnv, so a library caller's XDG_RUNTIME_DIR and PATH
// (which decide whether a systemd scope is used, and which manager) met this process's.
import { describe, expect, it, vi } from 'vitest';
import { parseLimits } from '../../../src/limits/parse-limits.js';
import type { HostLimitFacts } from '../../../src/limits/plan.js';
import type { Policy } from '../../../src/policy/types.js';
import { runContext } from '../../../src/pipeline/context-stage.js';
import { compileRunLaunch } from '../../../src/pipeline/launch-stage.js';
import { type PlannedLimits, planRunLimits } from '../../../src/pipeline/limits-stage.js';
import { CleanupStack } from '../../../src/pipeline/cleanup.js';

const FACTS: HostLimitFacts = { uid: 0, cgroup: { kind: 'none' }, systemdRun: false };
const probed = vi.hoisted(() => [] as unknown[]);
vi.mock('../../../src/limits/host/cgroup/probe.js', async (original) => ({
  ...(await original<typeof import('../../../src/limits/host/cgroup/probe.js')>()),
  probeCgroupFacts: (opts: unknown) => {
    probed.push(opts);
    return FACTS;
  },
}));

/** The caller's environment, unlike this process's in the two variables the cgroup side reads. */
const HOST_ENV = { HOME: '/home/ctx', PATH: '/ctx/bin:/usr/bin', XDG_RUNTIME_DIR: '/run/ctx' };
const POLICY = { limits: parseLimits({ pids: 64 }) } as unknown as Policy;

describe('limits: one environment per run', () => {
  it("stage 6 probes with the context's environment and uid, not this process's", async () => {
    expect(process.env.XDG_RUNTIME_DIR).not.toBe(HOST_ENV.XDG_RUNTIME_DIR);
    const ctx = runContext({ hostEnv: HOST_ENV }, {}, 's-1');
    probed.length = 0;
    const planned = await planRunLimits({ ctx, policy: POLICY });
    expect(planned).toBeDefined();
    expect(probed).toEqual([{ env: ctx.env, uid: ctx.uid }]);
    // Control: a policy without limits probes nothing.
    probed.length = 0;
    expect(await planRunLimits({ ctx, policy: { limits: {} } as unknown as Policy })).toBeUndefined();
    expect(probed).toEqual([]);
  });

  it('stage 9 sweeps and applies with the same environment and uid the plan was probed with', async () => {
    const ctx = runContext({ hostEnv: HOST_ENV }, {}, 's-1');
    probed.length = 0;
    const planned = (await planRunLimits({ ctx, policy: POLICY })) as PlannedLimits;
    const sweeps: unknown[] = [];
    const prepares: unknown[] = [];
    const apply = {
      ...planned.apply,
      sweepStaleCgroups: async (opts: unknown) => {
        sweeps.push(opts);
        return 0;
      },
      prepareLimits: async (_plan: unknown, _session: unknown, opts: unknown) => {
        prepares.push(opts);
        return { cleanup: () => {}, wrap: () => ({ file: '/bin/sh', args: ['-c', 'wrapped'] }) };
      },
    } as unknown as PlannedLimits['apply'];
    const arches: unknown[] = [];
    const backend = {
      compile: async (_p: unknown, _s: unknown, _h: unknown, arch: unknown) => {
        arches.push(arch);
        return { file: '/usr/bin/bwrap', args: ['--'], env: {}, fds: [] };
      },
    };
    const cleanup = new CleanupStack();
    const launched = await compileRunLaunch({
      ctx,
      backend: backend as never,
      derived: { policy: POLICY, host: {} as never, plan: {} as never, hash: 'h' },
      session: { id: 's-1', dir: '/nonexistent' } as never,
      planned: { plan: planned.plan, apply },
      cleanup,
    });
    await cleanup.unwind();
    expect(launched.launch).toMatchObject({ file: '/bin/sh', args: ['-c', 'wrapped'] });
    const host = { env: ctx.env, uid: ctx.uid };
    expect(probed).toEqual([host]);
    expect(sweeps).toEqual([host]);
    expect(prepares).toEqual([host]);
    // The seccomp architecture is the context's too.
    expect(arches).toEqual([ctx.arch]);
  });
});
