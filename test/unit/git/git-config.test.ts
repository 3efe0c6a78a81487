// The .git/config view (git/git-config.ts): credentials leave, everything git needs to commit and
// fetch stays, and git itself reads the result back as the same configuration minus the credentials.
import { describe, expect, it } from 'vitest';
import { sanitizeGitConfig, stripUrlUserinfo } from '../../../src/git/git-config.js';
import { gitConfigList } from '../../helpers/git-config-list.js';

describe('stripUrlUserinfo', () => {
  it.each([
    ['https://user:ghp_TOKEN@example.invalid/x.git', 'https://example.invalid/x.git'],
    ['https://ghp_TOKEN@github.com/o/r', 'https://github.com/o/r'],
    ['http://a:b@h:8080', 'http://h:8080'],
    ['https://x-access-token:t@github.com/o/r?q=a@b', 'https://github.com/o/r?q=a@b'],
    ['https://u:p@ss@host/x', 'https://host/x'],
    ['ssh://git:pw@host/x', 'ssh://git@host/x'],
    ['git+ssh://git:pw@host/x', 'git+ssh://git@host/x'],
  ])('%s → %s', (input, output) => {
    expect(stripUrlUserinfo(input)).toBe(output);
  });

  const plain = ['https://github.com/o/r', 'git@github.com:o/r.git', 'ssh://git@host/x', '/srv/repo.git', '../sibling'];
  it.each([...plain, 'file:///srv/r', 'user@host:path@x'])('keeps %s (no credential in it)', (input) => {
    expect(stripUrlUserinfo(input)).toBeUndefined();
  });
});

describe('sanitizeGitConfig', () => {
  const config = [
    '[core]',
    '\trepositoryformatversion = 0',
    '\tbare = false',
    '[user]',
    '\tname = Ada Lovelace',
    '\temail = ada@example.invalid',
    '[remote "origin"]',
    '\turl = https://user:ghp_TOKEN@example.invalid/x.git',
    '\tfetch = +refs/heads/*:refs/remotes/origin/*',
    '[remote "mirror"]',
    '\turl = git@example.invalid:o/r.git',
    '\tpushurl = "https://ghp_PUSH@example.invalid/r" ; a comment',
    '[branch "main"]',
    '\tremote = origin',
    '\tmerge = refs/heads/main',
    '[credential]',
    '\thelper = store --file /home/u/.creds',
    '[credential "https://example.invalid"]',
    '\tusername = ada',
    '[http]',
    '\textraheader = AUTHORIZATION: basic SECRET64',
    '\tsslVerify = true',
    '[http "https://example.invalid/"]',
    '\textraHeader = Authorization: Bearer SECRET2',
    '[url "https://ghp_INSTEAD@github.com/"]',
    '\tinsteadOf = https://github.com/',
    '[url "git@github.com:"]',
    '\tpushInsteadOf = https://github.com/',
    '[github]',
    '\toauth-token = ghp_OLD',
    '[include]',
    '\tpath = ../shared.gitconfig',
    '',
  ].join('\n');

  it('keeps identity, core, refspecs, branches and ssh remotes; drops every credential', () => {
    const { text, removed } = sanitizeGitConfig(config);
    const secrets = ['ghp_TOKEN', 'ghp_PUSH', 'ghp_INSTEAD', 'ghp_OLD', 'SECRET64', 'SECRET2'];
    secrets.push('store --file', 'username');
    for (const secret of secrets) {
      expect(text, secret).not.toContain(secret);
    }
    expect(gitConfigList(text)).toEqual([
      'core.repositoryformatversion=0',
      'core.bare=false',
      'user.name=Ada Lovelace',
      'user.email=ada@example.invalid',
      'remote.origin.url=https://example.invalid/x.git',
      'remote.origin.fetch=+refs/heads/*:refs/remotes/origin/*',
      'remote.mirror.url=git@example.invalid:o/r.git',
      'remote.mirror.pushurl=https://example.invalid/r',
      'branch.main.remote=origin',
      'branch.main.merge=refs/heads/main',
      'http.sslverify=true',
      'url.git@github.com:.pushinsteadof=https://github.com/',
      'include.path=../shared.gitconfig',
    ]);
    expect(removed).toEqual([
      'remote.origin.url',
      'remote.mirror.pushurl',
      'credential',
      'credential.https://example.invalid',
      'http.extraheader',
      'http.https://example.invalid/.extraheader',
      'url.https://github.com/',
      'github.oauth-token',
    ]);
  });

  it('reads what git reads: quoting, escapes, continuations, inline keys, legacy subsections', () => {
    const tricky = [
      '; leading comment',
      '[core] editor = "vim -c \\"set tw=72\\"" # trailing',
      '\tautocrlf',
      '[alias]',
      '\tlg = log --graph \\',
      '\t\t--oneline',
      '\tsemi = "echo a;b # not a comment"',
      '\ttabbed = "a\\tb"',
      '[Remote "Up"]',
      '\tURL = "https://u:p@h/r"',
      '[branch.Feature]',
      '\tremote = up',
      '[section "sub \\"quoted\\" \\\\ x"]',
      '\tkey = value   with   spaces  ',
      '',
    ].join('\n');
    const { text } = sanitizeGitConfig(tricky);
    const withoutUserinfo = (line: string) => (line.startsWith('remote.Up.url=') ? 'remote.Up.url=https://h/r' : line);
    const expected = gitConfigList(tricky).map(withoutUserinfo);
    expect(gitConfigList(text)).toEqual(expected);
    expect(text).not.toContain('u:p@');
  });

  it('drops what it cannot parse, with the lines it continues onto (never passes a half-read secret)', () => {
    const input = ['[http]', '\textra = "bad \\q escape \\', 'token = SECRET', '[user]', '\tname = x', ''];
    const { text, removed } = sanitizeGitConfig(input.join('\n'));
    expect(text).not.toContain('SECRET');
    expect(gitConfigList(text)).toEqual(['user.name=x']);
    expect(removed).toEqual(['(unparsed line)']);
  });

  it('a key before any section, or an unterminated quote, is dropped', () => {
    const { text } = sanitizeGitConfig(['orphan = 1', '[a]', '\tb = "open', '\tc = 2', ''].join('\n'));
    expect(gitConfigList(text)).toEqual(['a.c=2']);
  });

  it('no trailing newline, CRLF line ends', () => {
    const { text } = sanitizeGitConfig('[user]\r\n\tname = A B\r\n[remote "o"]\r\n\turl = https://t@h/x');
    expect(gitConfigList(text)).toEqual(['user.name=A B', 'remote.o.url=https://h/x']);
  });
});
