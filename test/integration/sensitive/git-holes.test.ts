// Git state outside .git/hooks and .git/config that the host's next git command acts on (real bwrap
// via bin/sbx.js): a config.worktree (present, or absent while extensions.worktreeConfig is on) and a
// linked worktree's `.git` file. Each plant points git at a hook that only touches a marker in the
// test's temp dir; the same script run unsandboxed (the control) makes the host's next commit run
// it, under sbx the plant fails and the host commit runs nothing. Runs as root and as a normal user.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readReport } from '../../helpers/report.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

const GIT_ID = ['-c', 'user.name=host', '-c', 'user.email=host@example.invalid'];

let t: TestHost;
let n = 0;

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  t = makeTestHost('githoles');
});
afterAll(() => t?.cleanup());

function git(cwd: string, ...args: string[]): { code: number | null; out: string } {
  const r = spawnSync('git', [...GIT_ID, ...args], { cwd, env: t.env, encoding: 'utf8' });
  return { code: r.status, out: r.stdout };
}

/** A repository with one commit, under the test's root. */
function freshRepo(name = `repo-${++n}`): string {
  const repo = join(t.root, name);
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'commit', '-q', '--allow-empty', '-m', 'init');
  return repo;
}

/** A hooks directory whose pre-commit touches `marker`; returns that directory. */
function evilHooks(marker: string): string {
  const dir = join(t.root, `evil-hooks-${++n}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'pre-commit'), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
  return dir;
}

/** Whether the host's next commit in `repo` runs a planted hook (the marker appears). */
function hostCommitRuns(repo: string, marker: string): boolean {
  rmSync(marker, { force: true });
  git(repo, 'commit', '-q', '--allow-empty', '-m', 'host');
  return existsSync(marker);
}

const opts = (cwd: string) => ({ env: t.env, cwd });

describe.skipIf(SKIP_INTEGRATION)('git state beyond hooks and config (real bwrap via bin/sbx.js)', () => {
  it.each([
    ['present', true],
    ['absent', false],
  ])(
    'a %s config.worktree (extensions.worktreeConfig on) cannot be given a hooksPath; control: it can',
    async (_, present) => {
      const marker = join(t.root, `ran-${++n}`);
      const script = `git config --worktree core.hooksPath ${evilHooks(marker)}`;
      const [control, sandboxed] = [freshRepo(), freshRepo()];
      for (const repo of [control, sandboxed]) {
        git(repo, 'config', 'extensions.worktreeConfig', 'true');
        if (present) git(repo, 'config', '--worktree', 'core.bare', 'false');
      }
      expect((await runHost(['sh', '-c', script], opts(control))).code).toBe(0);
      expect(hostCommitRuns(control, marker)).toBe(true);
      const r = await runSbx(['--', 'sh', '-c', script], opts(sandboxed));
      expect(r.code).not.toBe(0);
      expect(hostCommitRuns(sandboxed, marker)).toBe(false);
      // sbx made the absent file empty before the run, so that it could be held read-only.
      expect(readFileSync(join(sandboxed, '.git/config.worktree'), 'utf8')).toBe(
        present ? '[core]\n\tbare = false\n' : '',
      );
    },
  );

  it('a linked worktree whose .git file is rewritten to a planted gitdir: refused; control: the hook runs', async () => {
    const marker = join(t.root, `ran-${++n}`);
    const main = freshRepo();
    const [control, sandboxed] = [join(t.root, `wt-${++n}`), join(t.root, `wt-${++n}`)];
    for (const wt of [control, sandboxed]) expect(git(main, 'worktree', 'add', '-q', '--detach', wt).code).toBe(0);
    const script =
      `git init -q evil && printf '#!/bin/sh\\ntouch ${marker}\\n' > evil/.git/hooks/pre-commit && ` +
      'chmod +x evil/.git/hooks/pre-commit && printf "gitdir: %s/evil/.git\\n" "$PWD" > .git';
    expect((await runHost(['sh', '-c', script], opts(control))).code).toBe(0);
    expect(hostCommitRuns(control, marker)).toBe(true);
    const r = await runSbx(['--', 'sh', '-c', script], opts(sandboxed));
    expect([r.code, r.err]).toEqual([2, expect.stringMatching(/cannot create \.git: Read-only file system/)]);
    expect(readFileSync(join(sandboxed, '.git'), 'utf8')).toMatch(/^gitdir: .*\/\.git\/worktrees\//);
    expect(hostCommitRuns(sandboxed, marker)).toBe(false);
  });

  it('a created .git/commondir (a copied gitdir with a hook) is removed after the run and reported; control: it runs', async () => {
    const marker = join(t.root, `ran-${++n}`);
    const script =
      `cp -r .git evil && printf '#!/bin/sh\\ntouch ${marker}\\n' > evil/hooks/pre-commit && ` +
      'chmod +x evil/hooks/pre-commit && echo "$PWD/evil" > .git/commondir';
    const [control, sandboxed] = [freshRepo(), freshRepo()];
    expect((await runHost(['sh', '-c', script], opts(control))).code).toBe(0);
    expect(hostCommitRuns(control, marker)).toBe(true);
    const file = join(t.root, `report-${++n}.json`);
    const r = await runSbx(['--report-file', file, '--', 'sh', '-c', script], opts(sandboxed));
    expect(r.code).toBe(0);
    expect(existsSync(join(sandboxed, '.git/commondir'))).toBe(false);
    const details = readReport(file)
      .violations.filter((v) => v.kind === 'git-state')
      .map((v) => v.detail);
    // The copy it named is a new git dir with a hook: the git-state auditor disarms it too (test/integration/git/).
    expect(details).toEqual([
      `${sandboxed}/.git/commondir: added; removed`,
      expect.stringMatching(
        new RegExp(`^${sandboxed}/evil: new git dir that has hooks: pre-commit; quarantined as evil\\.sbx-quarantine-`),
      ),
    ]);
    expect(hostCommitRuns(sandboxed, marker)).toBe(false);
  });

  it('a commondir the repository already had is left alone', async () => {
    const repo = freshRepo();
    writeFileSync(join(repo, '.git/commondir'), '.\n');
    const r = await runSbx(['--', 'true'], opts(repo));
    expect(r.code).toBe(0);
    expect(readFileSync(join(repo, '.git/commondir'), 'utf8')).toBe('.\n');
  });
});

describe.skipIf(SKIP_INTEGRATION)('core.hooksPath inside the workspace (husky: .husky/_)', () => {
  for (const backend of ['bwrap', 'landlock'] as const) {
    it(`${backend}: a hook planted there does not run at the host's next commit; control: unsandboxed it does`, async () => {
      const marker = join(t.root, `husky-${backend}.marker`);
      const plant = `mkdir -p .husky/_ && printf '#!/bin/sh\\ntouch ${marker}\\n' > .husky/_/pre-commit && chmod +x .husky/_/pre-commit`;
      const [control, sandboxed] = [freshRepo(), freshRepo()];
      for (const repo of [control, sandboxed]) git(repo, 'config', 'core.hooksPath', '.husky/_');
      // .husky is absent until the plant: sbx makes the directory before the run, as husky's install would.
      expect((await runHost(['sh', '-c', plant], { env: t.env, cwd: control })).code).toBe(0);
      expect(hostCommitRuns(control, marker)).toBe(true);
      await runSbx(['--backend', backend, '--', 'sh', '-c', plant], { env: t.env, cwd: sandboxed });
      expect(hostCommitRuns(sandboxed, marker)).toBe(false);
    });
  }
});
