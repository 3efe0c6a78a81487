// Git repositories under the landlock backend: the agent cycle works, and what bwrap keeps read-only
// (hooks, .git/config) is put back after the run and reported (native/sbx-guard.c). Each plant is
// shown to survive without sbx (the control: the same script unsandboxed), then to be gone after
// `sbx run --backend landlock`, with a git-state violation naming the path. Workspace secrets are
// refused by name, or exposed and listed with --expose-workspace-secrets. Runs as root and as a
// normal user.
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readReport } from '../../helpers/report.js';
import {
  makeTestHost,
  runHost,
  runSbx,
  SBX_BIN,
  SKIP_INTEGRATION,
  startSbx,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { REPO_ROOT } from '../../helpers/paths.js';

const HELPER = join(REPO_ROOT, 'dist', 'sbx-landlock');
const GIT_ID = ['-c', 'user.name=agent', '-c', 'user.email=agent@example.invalid'];

let t: TestHost;
let repos = 0;

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  if (!existsSync(HELPER)) throw new Error(`${HELPER} is missing: run npm run build (with a C compiler) first`);
  t = makeTestHost('llgit');
});
afterAll(() => t?.cleanup());

function git(repo: string, ...args: string[]): { code: number | null; out: string } {
  const r = spawnSync('git', [...GIT_ID, ...args], { cwd: repo, env: t.env, encoding: 'utf8' });
  return { code: r.status, out: r.stdout };
}

/** A fresh repository with one commit, under the test host's root. */
function freshRepo(): string {
  const repo = join(t.root, `repo-${++repos}`);
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  writeFileSync(join(repo, 'a.txt'), 'one\n');
  git(repo, 'add', 'a.txt');
  git(repo, 'commit', '-qm', 'init');
  return repo;
}

const opts = (cwd: string) => ({ env: t.env, cwd });

/** The plant unsandboxed in one repository (the control), then under sbx in another: [control, sandboxed, run]. */
async function plant(script: string, extra: string[] = []) {
  const [control, sandboxed] = [freshRepo(), freshRepo()];
  expect((await runHost(['sh', '-c', script], opts(control))).code).toBe(0);
  const file = join(t.root, `report-${repos}.json`);
  const r = await runSbx(
    ['--backend', 'landlock', '--report-file', file, ...extra, '--', 'sh', '-c', script],
    opts(sandboxed),
  );
  return { control, sandboxed, r, report: readReport(file) };
}

function gitStateDetails(report: ReturnType<typeof readReport>): string[] {
  return report.violations.filter((v) => v.kind === 'git-state').map((v) => v.detail);
}

describe.skipIf(SKIP_INTEGRATION)('a git repository under --backend landlock', () => {
  it('the agent cycle works, and the host history shows exactly that commit', async () => {
    const repo = freshRepo();
    const cycle = `echo two >> a.txt && git add a.txt && git ${GIT_ID.join(' ')} commit -qm agent-change && git log --format=%s`;
    const file = join(t.root, 'cycle.json');
    const r = await runSbx(['--backend', 'landlock', '--report-file', file, '--', 'sh', '-c', cycle], opts(repo));
    expect([r.code, r.out]).toEqual([0, 'agent-change\ninit\n']);
    expect(git(repo, 'log', '--format=%s').out).toBe('agent-change\ninit\n');
    expect(git(repo, 'show', '--format=', '--name-only', 'HEAD').out).toBe('a.txt\n');
    expect(gitStateDetails(readReport(file))).toEqual([]);
  });

  it('a planted hook is removed and reported; the next host commit does not run it. Control: it does', async () => {
    const marker = join(t.root, `hook-ran-${repos + 2}`);
    const script = `printf '#!/bin/sh\\ntouch ${marker}\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`;
    const { control, sandboxed, r, report } = await plant(script);
    expect(r.code).toBe(0);
    git(control, 'commit', '-q', '--allow-empty', '-m', 'host');
    expect(existsSync(marker)).toBe(true);
    expect(existsSync(join(sandboxed, '.git/hooks/pre-commit'))).toBe(false);
    expect(gitStateDetails(report)).toEqual([`${sandboxed}/.git/hooks/pre-commit: added; removed`]);
    expect(r.err).toContain(`git-state (landlock.guard): ${sandboxed}/.git/hooks/pre-commit: added; removed`);
    rmSync(marker);
    git(sandboxed, 'commit', '-q', '--allow-empty', '-m', 'host');
    expect(existsSync(marker)).toBe(false);
  });

  it('core.hooksPath set in .git/config is reverted and reported; control: it stays', async () => {
    const { control, sandboxed, report } = await plant('git config core.hooksPath /tmp/sbx-evil-hooks');
    expect(git(control, 'config', 'core.hooksPath').out).toBe('/tmp/sbx-evil-hooks\n');
    expect(git(sandboxed, 'config', 'core.hooksPath').code).toBe(1);
    expect(gitStateDetails(report)).toEqual([`${sandboxed}/.git/config: changed; restored`]);
  });

  it('mv .git .gitold && mkdir -p .git/hooks: the real .git comes back, the impostor is quarantined', async () => {
    const script = 'mv .git .gitold && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit';
    const { control, sandboxed, report } = await plant(script);
    expect(readFileSync(join(control, '.git/hooks/pre-commit'), 'utf8')).toBe('evil\n');
    expect(git(sandboxed, 'log', '--format=%s').out).toBe('init\n');
    expect(existsSync(join(sandboxed, '.gitold'))).toBe(false);
    expect(existsSync(join(sandboxed, '.git/hooks/pre-commit'))).toBe(false);
    const quarantined = readdirSync(sandboxed).filter((n) => n.startsWith('.sbx-quarantine-'));
    expect(quarantined).toHaveLength(1);
    expect(readFileSync(join(sandboxed, quarantined[0]!, 'hooks/pre-commit'), 'utf8')).toBe('evil\n');
    expect(gitStateDetails(report)).toEqual([
      `${sandboxed}/.git: replaced; the sandbox's entry was moved to ${sandboxed}/${quarantined[0]}`,
      `${sandboxed}/.git: renamed to ${sandboxed}/.gitold; moved back`,
    ]);
  });

  it('a hooks directory replaced by a symlink is put back as the real directory', async () => {
    const script = 'mkdir evil && echo evil > evil/pre-commit && rm -rf .git/hooks && ln -s ../evil .git/hooks';
    const { control, sandboxed, report } = await plant(script);
    expect(lstatSync(join(control, '.git/hooks')).isSymbolicLink()).toBe(true);
    expect(lstatSync(join(sandboxed, '.git/hooks')).isDirectory()).toBe(true);
    expect(existsSync(join(sandboxed, '.git/hooks/pre-commit'))).toBe(false);
    expect(readdirSync(join(sandboxed, '.git/hooks')).length).toBeGreaterThan(0);
    expect(gitStateDetails(report)[0]).toMatch(/\/\.git\/hooks: replaced; the sandbox's entry was moved to /);
  });

  it('a hook file replaced by a symlink to a host file is replaced, never written through', async () => {
    const target = join(t.root, `host-file-${repos + 2}`);
    writeFileSync(target, 'host\n');
    const { sandboxed, report } = await plant(`ln -sf ${target} .git/hooks/pre-push.sample`);
    expect(readFileSync(target, 'utf8')).toBe('host\n');
    expect(lstatSync(join(sandboxed, '.git/hooks/pre-push.sample')).isFile()).toBe(true);
    expect(gitStateDetails(report)).toEqual([`${sandboxed}/.git/hooks/pre-push.sample: replaced; restored`]);
  });

  it('a hook planted behind chmod 0 (the hooks directory, .git) is still removed, the modes put back', async () => {
    const { control, sandboxed, report } = await plant('echo evil > .git/hooks/pre-commit && chmod 0 .git/hooks .git');
    expect(lstatSync(join(control, '.git')).mode & 0o777).toBe(0);
    chmodSync(join(control, '.git'), 0o755);
    chmodSync(join(control, '.git/hooks'), 0o755);
    expect(existsSync(join(control, '.git/hooks/pre-commit'))).toBe(true);
    expect(lstatSync(join(sandboxed, '.git')).mode & 0o777).toBe(0o755);
    expect(existsSync(join(sandboxed, '.git/hooks/pre-commit'))).toBe(false);
    expect(gitStateDetails(report)).toEqual([
      `${sandboxed}/.git: mode changed; restored`,
      `${sandboxed}/.git/hooks: mode changed; restored`,
      `${sandboxed}/.git/hooks/pre-commit: added; removed`,
    ]);
  });

  it('a repository without a hooks directory: sbx makes an empty one first, and what the command puts there is removed', async () => {
    const [control, sandboxed] = [freshRepo(), freshRepo()];
    for (const repo of [control, sandboxed]) rmSync(join(repo, '.git/hooks'), { recursive: true });
    const script = 'mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit';
    expect((await runHost(['sh', '-c', script], opts(control))).code).toBe(0);
    expect(existsSync(join(control, '.git/hooks/pre-commit'))).toBe(true);
    const r = await runSbx(['--backend', 'landlock', '--', 'sh', '-c', script], opts(sandboxed));
    expect(r.code).toBe(0);
    expect(readdirSync(join(sandboxed, '.git/hooks'))).toEqual([]);
    expect(r.err).toMatch(/\/\.git\/hooks\/pre-commit: added/);
  });

  it('the restore waits for every descendant: a background loop re-planting a hook is ended first', async () => {
    const script =
      '(while :; do echo x > .git/hooks/post-commit; done) & until [ -e .git/hooks/post-commit ]; do :; done; exit 0';
    const repo = freshRepo();
    const r = await runSbx(['--backend', 'landlock', '--', 'sh', '-c', script], opts(repo));
    expect(r.code).toBe(0);
    expect(existsSync(join(repo, '.git/hooks/post-commit'))).toBe(false);
    expect(r.err).toContain(`${repo}/.git/hooks/post-commit: added; removed`);
  });

  it('a command that ignores the timeout is killed by the helper, which still restores', async () => {
    const repo = freshRepo();
    const script = 'trap "" TERM; echo x > .git/hooks/pre-commit; while :; do :; done';
    const r = await runSbx(['--backend', 'landlock', '--timeout', '1s', '--', 'sh', '-c', script], opts(repo));
    expect(r.code).toBe(124);
    expect(existsSync(join(repo, '.git/hooks/pre-commit'))).toBe(false);
    expect(r.err).toContain(`${repo}/.git/hooks/pre-commit: added; removed`);
  });
});

describe.skipIf(SKIP_INTEGRATION)('what the sandbox can do to the restore itself', () => {
  it("prlimit64 on another process (sbx-landlock's monitor) is EPERM; control: unsandboxed it works", async () => {
    const control = await runHost(
      ['sh', '-c', 'sleep 5 & prlimit --pid $! --nofile=4:4; echo "rc=$?"; kill $!'],
      opts(t.root),
    );
    expect(control.out).toBe('rc=0\n');
    const repo = freshRepo();
    const script = 'echo x > .git/hooks/pre-commit; prlimit --pid $PPID --nofile=4:4 2>/dev/null; echo "rc=$?"';
    const r = await runSbx(['--backend', 'landlock', '--', 'sh', '-c', script], opts(repo));
    expect([r.code, r.out]).toEqual([0, 'rc=1\n']);
    expect(existsSync(join(repo, '.git/hooks/pre-commit'))).toBe(false);
  });

  it('a second run on the same repository waits for the first to restore, and never snapshots its plant', async () => {
    const repo = freshRepo();
    const plantAndWait = 'echo x > .git/hooks/pre-commit; touch started; sleep 2';
    const first = runSbx(['--backend', 'landlock', '--', 'sh', '-c', plantAndWait], opts(repo));
    for (let i = 0; i < 100 && !existsSync(join(repo, 'started')); i++) await new Promise((ok) => setTimeout(ok, 50));
    const second = await runSbx(
      ['--backend', 'landlock', '--', 'sh', '-c', 'test -e .git/hooks/pre-commit && echo planted || echo absent'],
      opts(repo),
    );
    expect(second.err).toContain('sbx-landlock: waiting for another sbx run guarding the git state in');
    // It ran after the first one's restore: the plant is not there, and not put back after.
    expect(second.out).toBe('absent\n');
    expect((await first).code).toBe(0);
    expect(existsSync(join(repo, '.git/hooks/pre-commit'))).toBe(false);
  });

  it('a run in a linked worktree and one in the main checkout share the common git dir: the second waits (locked by identity, not by path)', async () => {
    const main = freshRepo();
    const wt = `${main}-wt`;
    expect(git(main, 'worktree', 'add', '-q', '--detach', wt).code).toBe(0);
    // The first run plants a hook in the common dir through the worktree's grant, then holds until released.
    const plantAndHold = 'echo x > "$(git rev-parse --git-common-dir)/hooks/pre-commit"; echo planted; read _';
    const first = startSbx(['--backend', 'landlock', '--', 'sh', '-c', plantAndHold], { ...opts(wt), stdin: 'pipe' });
    await first.line(/^planted$/);
    const second = startSbx(
      ['--backend', 'landlock', '--', 'sh', '-c', 'test -e .git/hooks/pre-commit && echo planted || echo absent'],
      opts(main),
    );
    // It says it waits, on the common dir: only then is the first one released. (Locked by path, it
    // ran at once, saw the plant and ended: that is the failure this shows.)
    const waiting = `sbx-landlock: waiting for another sbx run guarding the git state in ${main}/.git`;
    const waited = await Promise.race([
      new Promise<true>((resolve) => {
        let err = '';
        second.child.stderr!.on('data', (c: Buffer) => {
          err += c.toString();
          if (err.includes(waiting)) resolve(true);
        });
      }),
      second.done.then((r) => `ended without waiting: ${r.out}${r.err}`),
    ]);
    expect(waited).toBe(true);
    first.stdin!.end('\n');
    expect((await first.done).code).toBe(0);
    // It snapshotted after the first one's restore: the plant is not there, and not put back after.
    expect((await second.done).out).toBe('absent\n');
    expect(existsSync(join(main, '.git/hooks/pre-commit'))).toBe(false);
  });

  it('a guarded hook with another hard link is refused before anything runs', async () => {
    const repo = freshRepo();
    const outside = join(t.root, `outside-hook-${repos}`);
    writeFileSync(outside, '#!/bin/sh\n', { mode: 0o755 });
    linkSync(outside, join(repo, '.git/hooks/pre-commit'));
    const r = await runSbx(
      ['--backend', 'landlock', '--', 'sh', '-c', 'echo evil > .git/hooks/pre-commit'],
      opts(repo),
    );
    expect(r.code).toBe(125);
    expect(r.err).toContain('pre-commit has 2 hard links');
    expect(readFileSync(outside, 'utf8')).toBe('#!/bin/sh\n');
  });

  it('sbx killed mid-run (SIGKILL): the monitor still ends the command and restores every path', async () => {
    const repo = freshRepo();
    const script =
      'echo x > .git/hooks/pre-commit; echo y > .git/hooks/post-commit; git config core.fsmonitor true; sleep 30';
    const child = spawn(SBX_BIN, ['run', '--backend', 'landlock', '--', 'sh', '-c', script], {
      cwd: repo,
      env: t.env,
      stdio: 'ignore',
    });
    const planted = () =>
      existsSync(join(repo, '.git/hooks/post-commit')) && git(repo, 'config', 'core.fsmonitor').out !== '';
    for (let i = 0; i < 200 && !planted(); i++) await new Promise((ok) => setTimeout(ok, 50));
    expect(planted()).toBe(true);
    child.kill('SIGKILL');
    const restored = () =>
      !existsSync(join(repo, '.git/hooks/pre-commit')) && !existsSync(join(repo, '.git/hooks/post-commit'));
    for (let i = 0; i < 200 && !restored(); i++) await new Promise((ok) => setTimeout(ok, 50));
    expect(restored()).toBe(true);
    expect(git(repo, 'config', 'core.fsmonitor').out).toBe('');
  });
});

describe.skipIf(SKIP_INTEGRATION)('workspace secrets under --backend landlock', () => {
  it('are refused, each named; with --expose-workspace-secrets the run goes on and the report lists them', async () => {
    const repo = freshRepo();
    writeFileSync(join(repo, '.env'), 'TOKEN=workspace-secret\n');
    writeFileSync(join(repo, 'server.pem'), '-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n');
    const refused = await runSbx(['--backend', 'landlock', '--', 'cat', '.env'], opts(repo));
    expect(refused.code).toBe(125);
    expect(refused.out).toBe('');
    expect(refused.err).toContain('2 secrets would be readable by the command');
    expect(refused.err).toContain(`exposed: ${repo}/.env (sensitive file)`);
    expect(refused.err).toContain(`exposed: ${repo}/server.pem (sensitive file)`);
    const file = join(t.root, 'exposed.json');
    const args = ['--backend', 'landlock', '--expose-workspace-secrets', '--report-file', file, '--', 'cat', '.env'];
    const ran = await runSbx(args, opts(repo));
    expect([ran.code, ran.out]).toEqual([0, 'TOKEN=workspace-secret\n']);
    const report = readReport(file);
    expect(report.masked?.paths ?? []).not.toContain(`${repo}/.env`);
    expect(report.unmasked?.paths).toEqual(
      expect.arrayContaining([
        { path: `${repo}/.env`, by: 'exposed' },
        { path: `${repo}/server.pem`, by: 'exposed' },
      ]),
    );
    expect(ran.err).toContain(`sbx: readable by the command (--expose-workspace-secrets): "${repo}/.env"`);
    const exposed = report.approximations!.find((a) => a.startsWith('mounts.mask.exposed:'));
    expect(exposed).toContain(`${repo}/.env (sensitive file)`);
  });
});

describe.skipIf(SKIP_INTEGRATION)('-p untrusted under --backend landlock', () => {
  it('runs, its hostname an approximation', async () => {
    const file = join(t.root, 'untrusted.json');
    const r = await runSbx(
      ['--backend', 'landlock', '-p', 'untrusted', '--report-file', file, '--', 'sh', '-c', 'echo ok'],
      opts(t.workspace),
    );
    expect([r.code, r.out]).toEqual([0, 'ok\n']);
    expect(readReport(file).approximations!.find((a) => a.startsWith('hostname:'))).toMatch(/: untrusted$/);
  });
});

describe.skipIf(SKIP_INTEGRATION)('sbx inside sbx (landlock), in a git repository', () => {
  it('the inner `sbx run --backend auto` runs (landlock), and its planted hook is gone afterwards', async () => {
    const repo = freshRepo();
    const inner = `${SBX_BIN} run --backend auto -- sh -c 'echo x > .git/hooks/pre-commit; git log --format=%s'`;
    // The sbx checkout is shown read-only, as an installed sbx would be.
    const args = ['--backend', 'landlock', '--ro-bind', REPO_ROOT, '--', 'sh', '-c', inner];
    const r = await runSbx(args, opts(repo));
    expect([r.code, r.out]).toEqual([0, 'init\n']);
    expect(r.err).toContain('--backend auto chose landlock');
    expect(r.err).toContain(`${repo}/.git/hooks/pre-commit: added; removed`);
    expect(existsSync(join(repo, '.git/hooks/pre-commit'))).toBe(false);
  });
});

// Git state beyond hooks and .git/config (each with its control): an absent `.git/commondir`, a
// config.worktree sbx makes empty first, and a linked worktree's `.git` file are all guarded.
describe.skipIf(SKIP_INTEGRATION)('more git state under --backend landlock', () => {
  const hook = (marker: string, dir: string) =>
    `printf '#!/bin/sh\\ntouch ${marker}\\n' > ${dir}/pre-commit && chmod +x ${dir}/pre-commit`;
  const hostCommitRuns = (repo: string, marker: string) => {
    rmSync(marker, { force: true });
    git(repo, 'commit', '-q', '--allow-empty', '-m', 'host');
    return existsSync(marker);
  };
  const sandboxedRun = async (script: string, cwd: string) => {
    const file = join(t.root, `report-${++repos}.json`);
    const r = await runSbx(['--backend', 'landlock', '--report-file', file, '--', 'sh', '-c', script], opts(cwd));
    return { r, report: readReport(file) };
  };

  it('a created .git/commondir (pointing at a copied gitdir with a hook) is removed and reported; control: it runs', async () => {
    const marker = join(t.root, `ran-${repos + 3}`);
    const script = `cp -r .git evil && ${hook(marker, 'evil/hooks')} && echo "$PWD/evil" > .git/commondir`;
    const { control, sandboxed, r, report } = await plant(script);
    expect(r.code).toBe(0);
    expect(hostCommitRuns(control, marker)).toBe(true);
    expect(existsSync(join(sandboxed, '.git/commondir'))).toBe(false);
    // The helper removes the commondir; the git-state auditor then disarms the copy it named.
    expect(gitStateDetails(report)).toEqual([
      `${sandboxed}/.git/commondir: added; removed`,
      expect.stringMatching(
        new RegExp(`^${sandboxed}/evil: new git dir that has hooks: pre-commit; quarantined as evil\\.sbx-quarantine-`),
      ),
    ]);
    expect(hostCommitRuns(sandboxed, marker)).toBe(false);
  });

  it('an absent config.worktree (extensions.worktreeConfig on) is made empty first; a hooksPath put there is reverted', async () => {
    const marker = join(t.root, `ran-${++repos}`);
    const [control, sandboxed] = [freshRepo(), freshRepo()];
    for (const repo of [control, sandboxed]) git(repo, 'config', 'extensions.worktreeConfig', 'true');
    const script = `mkdir evil && ${hook(marker, 'evil')} && git config --worktree core.hooksPath "$PWD/evil"`;
    expect((await runHost(['sh', '-c', script], opts(control))).code).toBe(0);
    expect(hostCommitRuns(control, marker)).toBe(true);
    const { r, report } = await sandboxedRun(script, sandboxed);
    expect(r.code).toBe(0);
    expect(readFileSync(join(sandboxed, '.git/config.worktree'), 'utf8')).toBe('');
    expect(gitStateDetails(report)).toEqual([`${sandboxed}/.git/config.worktree: changed; restored`]);
    expect(hostCommitRuns(sandboxed, marker)).toBe(false);
  });

  it("a linked worktree's .git file rewritten to a planted gitdir is restored and reported; control: the hook runs", async () => {
    const marker = join(t.root, `ran-${++repos}`);
    const main = freshRepo();
    const [control, sandboxed] = [join(t.root, `wt-${++repos}`), join(t.root, `wt-${++repos}`)];
    for (const wt of [control, sandboxed]) expect(git(main, 'worktree', 'add', '-q', '--detach', wt).code).toBe(0);
    const original = readFileSync(join(sandboxed, '.git'), 'utf8');
    const script = `git init -q evil && ${hook(marker, 'evil/.git/hooks')} && printf "gitdir: %s/evil/.git\\n" "$PWD" > .git`;
    expect((await runHost(['sh', '-c', script], opts(control))).code).toBe(0);
    expect(hostCommitRuns(control, marker)).toBe(true);
    const { r, report } = await sandboxedRun(script, sandboxed);
    expect(r.code).toBe(0);
    expect(readFileSync(join(sandboxed, '.git'), 'utf8')).toBe(original);
    // The helper restores the .git file; the git-state auditor then disarms the git dir it pointed at.
    expect(gitStateDetails(report)).toEqual([
      `${sandboxed}/.git: changed; restored`,
      expect.stringMatching(
        new RegExp(
          `^${sandboxed}/evil/\\.git: new git dir that has hooks: pre-commit; quarantined as \\.git\\.sbx-quarantine-`,
        ),
      ),
    ]);
    expect(hostCommitRuns(sandboxed, marker)).toBe(false);
  });
});
