// `sbx audit -- CMD` (cli/audit-command.ts): the git-state audit around a command sbx does not
// sandbox, as an export's container run is. CMD here writes the host tree directly, as a container
// with the workspace bound would: the control shows the same plant makes the host's next `git status`
// write the marker; through `sbx audit` it is quarantined, said, and the exit status is CMD's.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbxRaw,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
let n = 0;

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  t = makeTestHost('gitauditcmd');
});
afterAll(() => t?.cleanup());

function repo(): string {
  const dir = join(t.root, `repo-${++n}`);
  mkdirSync(dir);
  spawnSync('git', ['init', '-q', dir], { env: t.env });
  return dir;
}

/** Whether the host's `git status` in `dir` writes `marker`. */
function statusRuns(dir: string, marker: string): boolean {
  rmSync(marker, { force: true });
  spawnSync('git', ['status'], { cwd: dir, env: t.env });
  return existsSync(marker);
}

describe.skipIf(SKIP_INTEGRATION)('sbx audit -- CMD', () => {
  const plant = (marker: string) =>
    `git init -q node_modules/x && git -C node_modules/x config core.fsmonitor 'touch ${marker}; false'; exit 3`;

  it('a nested repository given a fsmonitor by CMD is quarantined and said; the exit status is CMD’s', async () => {
    const marker = join(t.root, 'marker');
    const control = repo();
    expect((await runHost(['sh', '-c', plant(marker)], { env: t.env, cwd: control })).code).toBe(3);
    expect(statusRuns(join(control, 'node_modules/x'), marker)).toBe(true);
    const audited = repo();
    const r = await runSbxRaw(['audit', '--', 'sh', '-c', plant(marker)], { env: t.env, cwd: audited });
    expect(r.code).toBe(3);
    expect(r.err).toMatch(
      new RegExp(
        `^sbx: git-state \\(git\\.audit\\): ${audited}/node_modules/x/\\.git: new git dir that names programs: core\\.fsmonitor=`,
        'm',
      ),
    );
    expect(statusRuns(join(audited, 'node_modules/x'), marker)).toBe(false);
  });

  it('a tree it cannot audit whole: 125, named', async () => {
    const dir = repo();
    const deep = 'i=0; d=.; while [ $i -lt 300 ]; do d=$d/d; i=$((i+1)); done; mkdir -p $d';
    const r = await runSbxRaw(['audit', '--writable', dir, '--', 'sh', '-c', deep], { env: t.env, cwd: dir });
    expect(r.code).toBe(125);
    expect(r.err).toContain(': deeper than 256 directories or 4000 bytes: not audited');
  });
});
