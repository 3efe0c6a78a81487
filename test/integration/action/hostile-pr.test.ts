// A hostile pull request through action.yml, then the steps a job runs after it on the host: the
// "is the tree clean" `git status` and the post step of actions/checkout, which always runs (it
// walks every submodule with `git submodule foreach --recursive` to remove its auth header). The PR
// stages a nested repository as a submodule whose config names a program (core.fsmonitor), which
// host git would run with the job's rights and token. Beside it the control: the same PR applied
// without sbx, after which the same host steps run the program.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { runAction, workflowCommands } from './harness.js';

let t: TestHost;
let marker: string;

function git(cwd: string, ...args: string[]): { code: number | null; out: string } {
  const r = spawnSync('git', args, { cwd, env: t.env, encoding: 'utf8' });
  return { code: r.status, out: r.stdout + r.stderr };
}

/** What the job runs on the host after the action: the clean-tree check and checkout's post step. */
function hostSteps(cwd: string): void {
  git(cwd, 'status', '--porcelain');
  const unset =
    "git config --local --name-only --get-regexp 'http\\.https\\:\\/\\/github\\.com\\/\\.extraheader' && " +
    "git config --local --unset-all 'http.https://github.com/.extraheader' || :";
  git(cwd, 'submodule', 'foreach', '--recursive', `sh -c "${unset}"`);
}

/** The pull request's build script: a nested repository staged as a submodule, armed. */
const prScript = () =>
  [
    'set -e',
    'mkdir sub && cd sub && git init -q && git config user.email pr@example.invalid && git config user.name PR',
    'echo s > s && git add s && git commit -qm s',
    `git config core.fsmonitor "touch ${marker}; false"`,
    'cd .. && git add sub 2>/dev/null',
  ].join('\n');

describe.skipIf(SKIP_INTEGRATION)('a hostile pull request through action.yml, then host git', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('hostile-pr');
    marker = join(t.root, 'MARKER');
    git(t.workspace, 'init', '-q');
    git(t.workspace, 'config', 'user.email', 'ci@example.invalid');
    git(t.workspace, 'config', 'user.name', 'CI');
    // What actions/checkout leaves in the checkout's config (a fake token).
    git(t.workspace, 'config', 'http.https://github.com/.extraheader', 'AUTHORIZATION: basic ZmFrZQ==');
    writeFileSync(join(t.workspace, 'build.sh'), prScript());
    git(t.workspace, 'add', 'build.sh');
    git(t.workspace, 'commit', '-qm', 'the pull request');
  });
  afterAll(() => t?.cleanup());

  it('control: the same PR without sbx, and the host steps run its program', async () => {
    const copy = join(t.root, 'control');
    cpSync(t.workspace, copy, { recursive: true });
    expect((await runHost(['sh', 'build.sh'], { env: t.env, cwd: copy })).code).toBe(0);
    hostSteps(copy);
    expect(existsSync(marker)).toBe(true);
    rmSync(marker);
  });

  it('under the action: host git runs nothing, and an annotation names the planted git dir', async () => {
    const r = await runAction(t, 'hostile', { command: 'sh build.sh' });
    expect(r.status, r.log).toBe(0);
    hostSteps(t.workspace);
    expect(existsSync(marker)).toBe(false);
    const planted = join(t.workspace, 'sub', '.git');
    expect(workflowCommands(r.log)).toContainEqual({
      name: 'error',
      properties: { title: 'sbx: git.audit' },
      data: expect.stringContaining(`git-state: ${planted}: new git dir that names programs: core.fsmonitor=`),
    });
    expect(r.summary).toContain('git-state');
  });
});
