// Fitting thousands of sensitive-file masks into bubblewrap's argument limit (issue 18): which masks
// sensitive/mask-collapse.ts turns into whole-directory masks, and that the budget sensitive/host/mask-fit.ts
// fits them into leaves room for the rest of every built-in profile's launch.
import { describe, expect, it } from 'vitest';
import { BWRAP_MAX_ARGS, compileBwrap, compileMask, expandArgsFd } from '../../../src/backend/bwrap/compile.js';
import { collapseMasks, type MaskEntry, maskArgs } from '../../../src/sensitive/mask-collapse.js';
import { MASK_BUDGET_ARGS } from '../../../src/sensitive/host/mask-fit.js';
import { sbxErrorOf } from '../../helpers/errors.js';
import {
  builtinProfileNames,
  FIXTURE_BWRAP,
  FIXTURE_SESSION,
  hostFixtureNames,
  runPipeline,
} from '../../helpers/hosts.js';

/** bwrap's cost: 3 for a file mask, 8 for a directory's (--perms, --size, --tmpfs, --remount-ro, 2 each). */
const argsOf = (dir: boolean) => (dir ? 8 : 3);
const file = (path: string): MaskEntry => ({ path, dir: false });
const files = (dir: string, n: number, name = (i: number) => `.env.${i}`) =>
  Array.from({ length: n }, (_, i) => file(`${dir}/${name(i)}`));

describe('collapseMasks', () => {
  it('leaves masks within the budget as they are, even where a directory holds nothing else', () => {
    const masks = [file('/ws/.env'), ...files('/ws/fixtures', 10)];
    expect(collapseMasks(masks, ['/ws/fixtures'], 100, argsOf)).toEqual(masks);
  });

  it('3,500 masked files in one directory that holds nothing else: one directory mask', () => {
    const masks = [file('/ws/.env'), ...files('/ws/fixtures', 3500)];
    expect(maskArgs(masks, argsOf)).toBe(10_503);
    const out = collapseMasks(masks, ['/ws/fixtures'], 8000, argsOf);
    expect(out).toEqual([file('/ws/.env'), { path: '/ws/fixtures', dir: true }]);
    expect(maskArgs(out, argsOf)).toBe(11);
  });

  it('past the budget, every full directory that saves arguments; a directory mask never replaces a cheaper file mask', () => {
    // /ws/envs/dK/eI/.env: each eI holds one masked file (3 arguments, cheaper than a directory's 8),
    // each dK holds five such directories (15 arguments: worth collapsing), and envs holds the dK.
    const masks: MaskEntry[] = [];
    const full = ['/ws/envs'];
    for (let k = 0; k < 4; k++) {
      full.push(`/ws/envs/d${k}`);
      for (let i = 0; i < 5; i++) {
        full.push(`/ws/envs/d${k}/e${i}`);
        masks.push(file(`/ws/envs/d${k}/e${i}/.env`));
      }
    }
    expect(maskArgs(masks, argsOf)).toBe(60);
    // Within the budget: nothing changes.
    expect(collapseMasks(masks, full, 60, argsOf)).toEqual(masks);
    // Past it: not just enough to fit (60 → 46 would leave 10 mounts), but envs itself, which then
    // stands for everything below it (no mask inside a mask): one mount.
    expect(collapseMasks(masks, full, 46, argsOf)).toEqual([{ path: '/ws/envs', dir: true }]);
    // A full directory whose one file mask is cheaper than a directory mask stays a file mask.
    const single = collapseMasks([file('/ws/one/.env')], ['/ws/one'], 0, argsOf);
    expect(single).toEqual([file('/ws/one/.env')]);
  });

  it('keeps every mask outside the full directories, tracked stand-ins included', () => {
    const tracked: MaskEntry = { path: '/ws/config/app.secret.yaml', dir: false, tracked: true };
    const masks = [file('/ws/.env'), tracked, { path: '/ws/certs', dir: true }, ...files('/ws/fixtures', 100)];
    const out = collapseMasks(masks, ['/ws/fixtures'], 50, argsOf);
    expect(out).toEqual([
      file('/ws/.env'),
      { path: '/ws/certs', dir: true },
      tracked,
      { path: '/ws/fixtures', dir: true },
    ]);
    expect(maskArgs(out, argsOf)).toBe(3 + 3 + 8 + 8);
  });

  it('past every full directory the total may still exceed the budget: the backend refuses by its count', () => {
    // Secret-looking files beside files the sandbox may read: no directory holds only masked ones.
    const masks = files('/ws/pkgs', 3000, (i) => `p${i}/.env`);
    const out = collapseMasks(masks, [], 8000, argsOf);
    expect(out).toEqual(masks);
    expect(maskArgs(out, argsOf)).toBe(9000);
  });
});

describe('the mask budget (sensitive/host/mask-fit.ts) against the whole launch', () => {
  it('a mask costs bwrap 3 arguments for a file, 8 for a directory (6 without --size)', () => {
    expect(compileMask('file', '/p/.env', '/s/empty', true)).toEqual(['--ro-bind', '/s/empty', '/p/.env']);
    expect(compileMask('dir', '/p/d', '/s/empty', true)).toHaveLength(8);
    expect(compileMask('dir', '/p/d', '/s/empty', false)).toHaveLength(6);
  });

  it('masks filling the budget still launch under every built-in profile on every fixture host', async () => {
    const n = Math.floor(MASK_BUDGET_ARGS / 3);
    for (const profile of builtinProfileNames()) {
      for (const hostName of hostFixtureNames()) {
        const { policy } = await runPipeline(profile, hostName);
        const masks = Array.from({ length: n }, (_, i) => ({
          kind: 'mask' as const,
          target: `${policy.cwd}/fixtures/.env.${i}`,
          what: 'file' as const,
          reason: 'sensitive file',
          role: 'secret' as const,
        }));
        const full = { ...policy, mounts: [...policy.mounts, ...masks] };
        const launch = compileBwrap(full, FIXTURE_SESSION, FIXTURE_BWRAP);
        // bwrap counts its argv after argv[0] (`--args 4 -- CMD...`) and every argument on fd 4.
        const rest = expandArgsFd(launch).length + 2 - n * 3;
        expect(rest, `${profile} on ${hostName}: the rest of the launch`).toBeLessThan(
          BWRAP_MAX_ARGS - MASK_BUDGET_ARGS,
        );
      }
    }
  });

  it("past the limit, the refusal counts each mask's real arguments and names the fixes", async () => {
    const { policy } = await runPipeline('default', 'alice');
    const dirs = Array.from({ length: 1300 }, (_, i) => ({
      kind: 'mask' as const,
      target: `/home/alice/proj/d${i}`,
      what: 'dir' as const,
      reason: 'sensitive file',
      role: 'secret' as const,
    }));
    const tooMany = { ...policy, mounts: [...policy.mounts.slice(0, -1), ...dirs, policy.mounts.at(-1)!] };
    const error = sbxErrorOf(() => compileBwrap(tooMany, FIXTURE_SESSION, FIXTURE_BWRAP));
    expect(error.code).toBe('LAUNCH_TOO_LARGE');
    expect(error.exitCode).toBe(125);
    expect(error.message).toMatch(/^the sandbox needs \d+ bwrap arguments, more than bubblewrap's limit of 9000 \(/);
    expect(error.message).toContain(`(${1300 + 2} masked paths, ${1300 * 8 + 3 + 8} arguments;`);
    expect(error.hint).toContain('sensitive.except');
    expect(error.hint).toContain('split the tree');
  });
});
