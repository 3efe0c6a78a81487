// Real git work inside the sandbox (issue 24), end to end through bin/sbx.js, real bwrap and real git:
// a commit with the identity of the user's ~/.gitconfig (whose credential helper and sshCommand stay
// out, read-only), a push to a local bare repository and a file:// remote offline (an https one still
// refused), a run from a subdirectory and from a `git worktree` checkout (the commit lands in the main
// repository's history), and hostile `.git` files that point a worktree anywhere else: refused.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
/** A repository with one commit, under the test root (outside HOME). */
let repo: string;
let bare: string;

const GITCONFIG = [
  '[user]',
  '\tname = Ada Sandbox',
  '\temail = ada@example.invalid',
  '[alias]',
  '\tco = checkout',
  '[credential]',
  '\thelper = store --file /nonexistent/creds',
  '[core]',
  '\tsshCommand = ssh -i /nonexistent/key',
  '[init]',
  '\tdefaultBranch = main',
  '',
].join('\n');

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: t.env, encoding: 'utf8' }).trim();
}

describe.skipIf(SKIP_INTEGRATION)('real git work inside the sandbox', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('git');
    writeFileSync(join(t.home, '.gitconfig'), GITCONFIG);
    mkdirSync(join(t.configHome, 'git'), { recursive: true });
    writeFileSync(join(t.configHome, 'git', 'config'), '[alias]\n\txdg = log\n[gpg]\n\tprogram = /nonexistent/gpg\n');
    repo = join(t.root, 'repo');
    mkdirSync(join(repo, 'sub'), { recursive: true });
    writeFileSync(join(repo, 'package.json'), '{"name":"fixture"}\n');
    writeFileSync(join(repo, 'sub', 'file.txt'), 'x\n');
    git(repo, 'init', '-q');
    git(repo, 'add', '.');
    git(repo, 'commit', '-qm', 'first');
    bare = join(t.root, 'bare.git');
    git(t.root, 'init', '-q', '--bare', bare);
    git(repo, 'remote', 'add', 'local', bare);
    git(repo, 'remote', 'add', 'furl', `file://${bare}`);
    git(repo, 'remote', 'add', 'web', 'https://example.invalid/r.git');
  });
  afterAll(() => t?.cleanup());

  it('the .git directory cannot be moved aside to plant a new hooks directory (control: it can outside)', async () => {
    // The read-only .git/hooks is a mount point; without .git itself pinned, `mv .git .gitold` would
    // carry it away and leave room for a .git/hooks that the host's next git command runs.
    const plant = 'mv .git .gitold; mkdir -p .git/hooks && echo "#!/bin/sh" > .git/hooks/post-checkout';
    const control = join(t.root, 'control-repo');
    mkdirSync(control);
    git(control, 'init', '-q');
    const outside = await runHost(['sh', '-c', plant], { env: t.env, cwd: control });
    expect(outside.code, outside.err).toBe(0);
    expect(existsSync(join(control, '.git', 'hooks', 'post-checkout'))).toBe(true);
    const r = await runSbx(['--', 'sh', '-c', plant], { env: t.env, cwd: repo });
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/busy/i);
    expect(existsSync(join(repo, '.git', 'hooks', 'post-checkout'))).toBe(false);
    expect(existsSync(join(repo, '.gitold'))).toBe(false);
    expect(git(repo, 'log', '-1', '--format=%s')).toBeTruthy();
  });

  describe("the user's global git config", () => {
    it('control: outside, the global config has the credential helper and sshCommand', async () => {
      const r = await runHost(['git', 'config', '--global', '--list'], { env: t.env, cwd: repo });
      expect(r.code, r.err).toBe(0);
      expect(r.out).toContain('credential.helper=store');
      expect(r.out).toContain('core.sshcommand=ssh -i');
    });

    it('inside, git commit works with that identity', async () => {
      const r = await runSbx(
        ['--', 'sh', '-c', 'git commit -q --allow-empty -m inside && git log -1 --format="%an <%ae>|%cn <%ce>"'],
        { env: t.env, cwd: repo },
      );
      expect(r.code, r.err).toBe(0);
      expect(r.out.trim()).toBe('Ada Sandbox <ada@example.invalid>|Ada Sandbox <ada@example.invalid>');
      expect(git(repo, 'log', '-1', '--format=%s %an')).toBe('inside Ada Sandbox');
    });

    it('shows the aliases of both global files, not the helper, sshCommand or gpg.program', async () => {
      const r = await runSbx(['--', 'git', 'config', '--global', '--list'], { env: t.env, cwd: repo });
      expect(r.code, r.err).toBe(0);
      const inside = await runSbx(['--', 'git', 'config', '--list', '--show-origin'], { env: t.env, cwd: repo });
      expect(inside.code, inside.err).toBe(0);
      expect(r.out).toContain('user.name=Ada Sandbox');
      expect(r.out).toContain('alias.co=checkout');
      expect(inside.out).toContain('alias.xdg=log');
      // The system file (/etc/gitconfig, bound with /etc) is the machine's, not the user's: left out.
      const userLines = inside.out
        .split('\n')
        .filter((l) => !l.startsWith('file:/etc/'))
        .join('\n');
      for (const out of [r.out, userLines]) {
        expect(out).not.toMatch(/credential|sshcommand|gpg\.program|nonexistent/i);
      }
    });

    it('the view is read-only', async () => {
      const r = await runSbx(
        ['--', 'sh', '-c', 'git config --global credential.helper evil; echo "[core]" >> "$HOME/.gitconfig"; exit 0'],
        { env: t.env, cwd: repo },
      );
      expect(r.code, r.err).toBe(0);
      expect(r.err).toMatch(/could not lock config file|Read-only file system|Permission denied/);
      expect(readFileSync(join(t.home, '.gitconfig'), 'utf8')).toBe(GITCONFIG);
    });

    it('git.global_config: false turns it off', async () => {
      const profile = join(t.root, 'no-global.yaml');
      writeFileSync(profile, 'extends: default\ngit:\n  global_config: false\n');
      const r = await runSbx(['-p', profile, '--', 'sh', '-c', 'git config --global --list; ls -a "$HOME"'], {
        env: t.env,
        cwd: repo,
      });
      expect(r.out).not.toContain('Ada Sandbox');
      expect(r.out).not.toContain('.gitconfig');
    });
  });

  describe('git push offline', () => {
    it('pushes to a local bare repository and to a file:// remote', async () => {
      const r = await runSbx(
        ['--bind', bare, '--', 'sh', '-c', 'git push -q local HEAD:refs/heads/a && git push -q furl HEAD:refs/heads/b'],
        { env: t.env, cwd: repo },
      );
      expect(r.code, r.err).toBe(0);
      const head = git(repo, 'rev-parse', 'HEAD');
      expect(git(bare, 'rev-parse', 'a', 'b').split('\n')).toEqual([head, head]);
    });

    it('a path named on the command line is local too', async () => {
      const r = await runSbx(['--bind', bare, '--', 'git', 'push', '-q', bare, 'HEAD:refs/heads/c'], {
        env: t.env,
        cwd: repo,
      });
      expect(r.code, r.err).toBe(0);
      expect(git(bare, 'rev-parse', 'c')).toBe(git(repo, 'rev-parse', 'HEAD'));
    });

    it('still refuses a push to an https remote, before anything runs', async () => {
      for (const args of [
        ['git', 'push', 'web', 'HEAD'],
        ['git', 'push', 'https://example.invalid/r.git', 'HEAD'],
      ]) {
        const r = await runSbx(['--report-fd', '3', '--', ...args], {
          env: t.env,
          cwd: repo,
          extraStdio: { 3: 'pipe' },
        });
        expect(r.code, r.err).toBe(126);
        const report = JSON.parse(r.extra[3]!.toString()) as { violations: { rule: string }[] };
        expect(report.violations.map((v) => v.rule)).toContain('commands.offline');
      }
    });
  });

  describe('the workspace is the project, not the current directory', () => {
    it('from a subdirectory, git and package.json work, and sbx says where the workspace is', async () => {
      const cwd = join(repo, 'sub');
      const r = await runSbx(['--', 'sh', '-c', 'pwd; git status --porcelain; cat ../package.json'], {
        env: t.env,
        cwd,
      });
      expect(r.code, r.err).toBe(0);
      expect(r.out).toBe(`${cwd}\n{"name":"fixture"}\n`);
      const notes = r.err.split('\n').filter((l) => l.startsWith('sbx: workspace:'));
      expect(notes).toEqual([`sbx: workspace: ${repo} (the git top level above the current directory)`]);
    });

    it('control: with --workspace naming the subdirectory, git finds no repository', async () => {
      const cwd = join(repo, 'sub');
      const r = await runSbx(['-w', cwd, '--', 'git', 'status'], { env: t.env, cwd });
      expect(r.code).toBe(128);
      expect(r.err).toContain('not a git repository');
      expect(r.err).not.toContain('sbx: workspace:');
    });

    it('a commit in a git worktree lands in the main repository, with its hooks and config protected', async () => {
      const wt = join(t.root, 'wt');
      git(repo, 'worktree', 'add', '-q', '-b', 'feature', wt);
      const base = git(repo, 'rev-parse', 'HEAD');
      const hook = join(repo, '.git', 'hooks', 'post-commit');
      const r = await runSbx(
        [
          '--',
          'sh',
          '-c',
          `git commit -q --allow-empty -m from-worktree && echo committed; echo evil > ${hook}; echo "[core]" >> ${join(repo, '.git', 'config')}; exit 0`,
        ],
        { env: t.env, cwd: wt },
      );
      expect(r.code, r.err).toBe(0);
      expect(r.out).toBe('committed\n');
      expect(git(repo, 'log', '--format=%s', `${base}..feature`)).toBe('from-worktree');
      expect(existsSync(hook)).toBe(false);
      expect(readFileSync(join(repo, '.git', 'config'), 'utf8')).not.toContain('[core]\n[core]');
    });

    it("refuses a .git file that names another worktree's git directory (no back-link)", async () => {
      const other = join(t.root, 'wt2');
      git(repo, 'worktree', 'add', '-q', '-b', 'other', other);
      const evil = join(t.root, 'evil');
      mkdirSync(evil);
      writeFileSync(join(evil, '.git'), `gitdir: ${join(repo, '.git', 'worktrees', 'wt2')}\n`);
      const mark = join(evil, 'ran');
      const r = await runSbx(['--', 'touch', mark], { env: t.env, cwd: evil });
      expect(r.code, r.err).toBe(125);
      expect(r.err).toContain('does not name this worktree back');
      expect(existsSync(mark)).toBe(false);
    });

    it('refuses a forged worktree entry whose common dir is HOME', async () => {
      const forged = join(t.root, 'forged', 'worktrees', 'w');
      mkdirSync(forged, { recursive: true });
      const evil = join(t.root, 'evil2');
      mkdirSync(evil);
      writeFileSync(join(evil, '.git'), `gitdir: ${forged}\n`);
      writeFileSync(join(forged, 'commondir'), `${t.home}\n`);
      writeFileSync(join(forged, 'gitdir'), `${join(evil, '.git')}\n`);
      const r = await runSbx(['--', 'true'], { env: t.env, cwd: evil });
      expect(r.code, r.err).toBe(125);
      expect(r.err).toContain('is not a worktree entry of');
    });

    it('a .git file naming a directory that is no worktree binds nothing', async () => {
      const secret = join(t.root, 'secret-dir');
      mkdirSync(secret);
      writeFileSync(join(secret, 'key'), 'SECRET\n');
      const evil = join(t.root, 'evil3');
      mkdirSync(evil);
      writeFileSync(join(evil, '.git'), `gitdir: ${secret}\n`);
      const r = await runSbx(['--', 'sh', '-c', `cat ${join(secret, 'key')}`], { env: t.env, cwd: evil });
      expect(r.code).not.toBe(0);
      expect(r.out).not.toContain('SECRET');
    });
  });
});
