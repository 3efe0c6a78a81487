// The gaps every exporter starts with (export/export-gaps.ts exportGaps): the git-state audit `sbx run`
// does on the host is not done by an engine, and the gap names `sbx audit`, which does it.
import { describe, expect, it } from 'vitest';
import { exportGaps } from '../../../src/export/export-gaps.js';
import { WITH_CREDENTIALS } from '../../helpers/credentials.js';
import { runPipeline } from '../../helpers/hosts.js';

describe('exportGaps', () => {
  it('a policy with a writable bind: the git-state audit is a weaker point, pointing at sbx audit', async () => {
    const { policy } = await runPipeline('default', 'alice');
    expect(exportGaps(policy).items).toEqual([
      {
        key: 'git-state',
        effect: 'weaker',
        detail: expect.stringContaining('`sbx audit --writable DIR -- <engine run>`'),
      },
    ]);
  });

  it('credentials: refused by name, for every engine (the values go in at sbx run time only)', async () => {
    const { policy } = await runPipeline('default', 'alice', WITH_CREDENTIALS);
    const gaps = exportGaps(policy);
    expect(gaps.items[0]).toEqual({
      key: 'credentials',
      effect: 'refused',
      detail: expect.stringContaining('GITHUB_TOKEN'),
    });
    for (const target of ['docker', 'oci', 'k8s'] as const)
      expect(() => gaps.refuseIfAny(target, 'hint')).toThrow(`${target} export: credentials: GITHUB_TOKEN`);
  });

  it('nothing writable: no git-state gap', async () => {
    const { policy } = await runPipeline('default', 'alice');
    const readOnly = { ...policy, mounts: policy.mounts.filter((m) => !(m.kind === 'bind' && m.access === 'rw')) };
    expect(exportGaps(readOnly).items).toEqual([]);
  });
});
