// The global git config view (git/git-global-config.ts) is an allow-list: identity, git-subcommand
// aliases and settings that run nothing pass; credential helpers, programs, host files, includes and
// URL userinfo do not, and neither does any key nobody listed. git itself reads the result back.
import { describe, expect, it } from 'vitest';
import { sanitizeGlobalGitConfig } from '../../../src/git/git-global-config.js';
import { gitConfigList } from '../../helpers/git-config-list.js';

const CONFIG = [
  '[user]',
  '\tname = Ada Lovelace',
  '\temail = ada@example.invalid',
  '\tsigningkey = ABCDEF',
  '[alias]',
  '\tst = status -sb',
  '\tlg = log --oneline',
  '\tleak = "!curl -H \'Authorization: token ghp_ALIAS\' https://x"',
  '[credential]',
  '\thelper = store --file /home/ada/.git-credentials',
  '[credential "https://github.com"]',
  '\thelper = !gh auth git-credential',
  '[core]',
  '\tautocrlf = input',
  '\tsshCommand = ssh -i ~/.ssh/deploy',
  '\tfsmonitor = /usr/local/bin/watchman-hook',
  '\thooksPath = ~/.githooks',
  '\tpager = less -R',
  '\teditor = vim',
  '\texcludesFile = ~/.gitignore_global',
  '[include]',
  '\tpath = ~/.gitconfig.local',
  '[includeIf "gitdir:~/work/"]',
  '\tpath = ~/.gitconfig.work',
  '[init]',
  '\tdefaultBranch = main',
  '\ttemplateDir = ~/.git-templates',
  '[pull]',
  '\trebase = true',
  '[push]',
  '\tdefault = current',
  '[merge]',
  '\tconflictStyle = zdiff3',
  '\ttool = meld',
  '[merge "ours"]',
  '\tdriver = true',
  '[diff]',
  '\texternal = difft',
  '\talgorithm = histogram',
  '[diff "lfs"]',
  '\ttextconv = cat',
  '[color]',
  '\tui = auto',
  '[color "diff"]',
  '\tmeta = yellow bold',
  '[url "git@github.com:"]',
  '\tinsteadOf = https://github.com/',
  '[url "https://ghp_URLTOKEN@github.com/"]',
  '\tinsteadOf = gh:',
  '[url "https://mirror.invalid/"]',
  '\tinsteadOf = "https://user:ghp_VALUE@github.com/"',
  '[http]',
  '\textraHeader = Authorization: Basic ghp_HTTP',
  '[gpg]',
  '\tprogram = gpg2',
  '[commit]',
  '\tgpgSign = true',
  '\tverbose = true',
  '[filter "lfs"]',
  '\tclean = git-lfs clean -- %f',
  '[pager]',
  '\tbranch = false',
  '\tlog = diff-so-fancy | less',
  '[sendemail]',
  '\tsmtpPass = hunter2',
  '[safe]',
  '\tdirectory = *',
  '[core "weird"]',
  '\tautocrlf = true',
  '[constructor]',
  '\tname = x',
  '',
].join('\n');

describe('sanitizeGlobalGitConfig', () => {
  const view = sanitizeGlobalGitConfig(CONFIG, '/home/ada/.gitconfig');

  it('keeps identity, subcommand aliases and settings that run nothing, as git reads them', () => {
    expect(gitConfigList(view.text)).toEqual([
      'user.name=Ada Lovelace',
      'user.email=ada@example.invalid',
      'alias.st=status -sb',
      'alias.lg=log --oneline',
      'core.autocrlf=input',
      'init.defaultbranch=main',
      'pull.rebase=true',
      'push.default=current',
      'merge.conflictstyle=zdiff3',
      'diff.algorithm=histogram',
      'color.ui=auto',
      'color.diff.meta=yellow bold',
      'url.git@github.com:.insteadof=https://github.com/',
      'url.https://mirror.invalid/.insteadof=https://github.com/',
      'commit.verbose=true',
      'pager.branch=false',
    ]);
  });

  it('leaves no credential, program, host file or include in the text', () => {
    for (const secret of [
      'ghp_',
      'hunter2',
      'store',
      'ssh -i',
      'watchman',
      'githooks',
      'less',
      'vim',
      'gitignore_global',
    ]) {
      expect(view.text, secret).not.toContain(secret);
    }
    for (const gone of [
      'include',
      'includeif',
      'credential',
      'gpg',
      'filter',
      'http',
      'sendemail',
      'safe',
      'constructor',
      'difft',
      'meld',
      'signingkey',
      'gpgsign',
    ]) {
      expect(view.text.toLowerCase(), gone).not.toMatch(new RegExp(`^\\s*\\[?${gone}\\b`, 'm'));
    }
  });

  it('names what it removed by key, never by value', () => {
    expect(view.removed).toEqual(
      expect.arrayContaining([
        'credential',
        'core.sshcommand',
        'core.fsmonitor',
        'core.hookspath',
        'include',
        'alias.leak',
      ]),
    );
    expect(view.removed.join(' ')).not.toMatch(/ghp_|hunter2/);
  });

  it('says where it came from in its first line, and writes no empty sections', () => {
    expect(view.text.split('\n')[0]).toContain('/home/ada/.gitconfig');
    expect(
      sanitizeGlobalGitConfig('[credential]\n\thelper = store\n[gpg]\n\tprogram = x\n', 'f')
        .text.split('\n')
        .filter(Boolean),
    ).toHaveLength(1);
  });

  it('drops a line git would refuse, continuation lines included', () => {
    const out = sanitizeGlobalGitConfig('[user]\n\tname = "Ada\n\temail = a@b\n[core]\n\tbad key = 1\n', 'f');
    expect(gitConfigList(out.text)).toEqual(['user.email=a@b']);
  });
});
