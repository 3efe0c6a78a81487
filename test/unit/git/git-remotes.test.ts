// A git remote is judged by its URL (git/git-remotes.ts): a local path or file:// is not the
// network; anything not certainly local is (the offline rule then refuses, as before).
import { describe, expect, it } from 'vitest';
import type { CommandRules } from '../../../src/policy/types.js';
import { decideCommand, gitRemotesNeeded } from '../../../src/commands/command-rules.js';
import { gitReachesOnlyLocal, gitRemoteFacts, isLocalGitUrl } from '../../../src/git/git-remotes.js';

describe('isLocalGitUrl', () => {
  it.each(['/srv/bare.git', '../bare', './b', 'file:///srv/b.git', 'FILE:///x', 'dir/with:colon'])(
    '%s is local',
    (u) => {
      expect(isLocalGitUrl(u)).toBe(true);
    },
  );
  it.each([
    'https://github.com/o/r',
    'ssh://git@h/r',
    'git://h/r',
    'git@github.com:o/r.git',
    'host:repo',
    'ext::sh -c evil',
    'fd::3',
    '',
  ])('%s is not', (u) => {
    expect(isLocalGitUrl(u)).toBe(false);
  });
});

const CONFIG = [
  '[remote "local"]',
  '\turl = /srv/bare.git',
  '[remote "furl"]',
  '\turl = file:///srv/bare.git',
  '[remote "gh"]',
  '\turl = https://github.com/o/r',
  '[remote "split"]',
  '\turl = /srv/bare.git',
  '\tpushurl = https://github.com/o/r',
  '[remote "sneaky"]',
  '\turl = srv:bare',
  '[url "https://github.com/"]',
  '\tinsteadOf = srv:',
  '',
].join('\n');
const facts = gitRemoteFacts([CONFIG]);
const git = (...args: string[]) => ['git', ...args];

describe('gitReachesOnlyLocal', () => {
  it.each([
    git('push', 'local', 'main'),
    git('push', 'furl', 'HEAD:refs/heads/x'),
    git('push', '/srv/other.git'),
    git('push', '--force', '-o', 'ci.skip', 'local'),
    git('push', '--repo=/srv/b.git'),
    git('fetch', 'local'),
    git('fetch', '--depth', '1', 'local'),
    git('pull', '--rebase', 'furl', 'main'),
    git('clone', '/srv/bare.git', 'copy'),
    git('clone', '--branch', 'dev', 'file:///srv/bare.git'),
    git('ls-remote', './b'),
  ])('%j is local', (...argv) => {
    expect(gitReachesOnlyLocal(argv, argv[1]!, facts)).toBe(true);
  });
  it.each([
    git('push', 'gh', 'main'),
    git('push', 'split'),
    git('push'),
    git('fetch', '--all'),
    git('push', 'sneaky'),
    git('push', 'nosuchremote'),
    git('push', 'https://github.com/o/r'),
    git('clone', 'git@github.com:o/r'),
    git('-C', '/elsewhere', 'push', 'local'),
    git('-c', 'remote.local.url=https://x', 'push', 'local'),
    git('fetch', '--depth', '1', 'gh'),
  ])('%j is not', (...argv) => {
    const at = argv.findIndex((a, i) => i > 0 && ['push', 'fetch', 'clone', 'pull', 'ls-remote'].includes(a));
    expect(gitReachesOnlyLocal(argv, argv[at]!, facts)).toBe(false);
  });
  it('without a repository argument, every configured remote must be local', () => {
    expect(gitReachesOnlyLocal(git('push'), 'push', gitRemoteFacts(['[remote "o"]\n\turl = /srv/b\n']))).toBe(true);
    expect(gitReachesOnlyLocal(git('push'), 'push', gitRemoteFacts([]))).toBe(false);
  });
  it('applies the global config before the repository and the longest insteadOf', () => {
    const f = gitRemoteFacts([
      '[url "/srv/mirror/"]\n\tinsteadOf = https://github.com/\n',
      '[remote "o"]\n\turl = https://github.com/o/r\n',
    ]);
    expect(gitReachesOnlyLocal(git('fetch', 'o'), 'fetch', f)).toBe(true);
  });
});

describe('the offline rule with remote facts', () => {
  const rules: CommandRules = { default: 'allow', allow: {}, deny: [], paths: 'any', shellSyntax: 'full' };
  const decide = (argv: string[], withFacts: boolean) =>
    decideCommand({
      rules,
      command: { kind: 'argv', argv },
      mode: 'workspace-write',
      network: 'none',
      allowDenylisted: false,
      workspace: { host: '/w', sandbox: '/w' },
      base: '/w',
      paths: {},
      ...(withFacts ? { gitRemotes: facts } : {}),
    });

  it('lets a push to a local remote through, and still refuses one to https', () => {
    expect(decide(git('push', 'local', 'main'), true).verdict).toBe('allow');
    expect(decide(['env', 'GIT_TRACE=1', 'git', 'push', 'furl'], true).verdict).toBe('allow');
    const refused = decide(git('push', 'gh', 'main'), true);
    expect(refused.verdict === 'deny' && refused.violations.map((v) => v.rule)).toEqual(['commands.offline']);
  });
  it('without facts refuses as before', () => {
    expect(decide(git('push', 'local', 'main'), false).verdict).toBe('deny');
  });
  it('submodule and remote update stay refused', () => {
    expect(decide(git('submodule', 'update'), true).verdict).toBe('deny');
    expect(decide(git('remote', 'update'), true).verdict).toBe('deny');
  });
  it('the runtime reads remotes only for a git remote command under network none', () => {
    expect(gitRemotesNeeded({ kind: 'argv', argv: git('push') }, rules, 'none')).toBe(true);
    expect(gitRemotesNeeded({ kind: 'argv', argv: git('status') }, rules, 'none')).toBe(false);
    expect(gitRemotesNeeded({ kind: 'argv', argv: git('push') }, rules, 'host')).toBe(false);
  });
});
