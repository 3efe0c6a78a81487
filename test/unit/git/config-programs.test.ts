// The table of config keys that run programs (git/config-programs.ts): each row found, git's name
// rules (case, subsections), and the entries named exactly as `git config --list` names them.
import { describe, expect, it } from 'vitest';
import { addedEntries, isProgramKey, programEntries } from '../../../src/git/config-programs.js';
import { gitConfigList } from '../../helpers/git-config-list.js';

describe('isProgramKey', () => {
  it.each([
    ['core', undefined, 'fsmonitor', undefined],
    ['CORE', undefined, 'FSMonitor', undefined],
    ['core', undefined, 'hooksPath', undefined],
    ['core', undefined, 'sshCommand', undefined],
    ['core', undefined, 'pager', undefined],
    ['core', undefined, 'editor', undefined],
    ['core', undefined, 'askPass', undefined],
    ['core', undefined, 'gitProxy', undefined],
    ['sequence', undefined, 'editor', undefined],
    ['diff', undefined, 'external', undefined],
    ['diff', 'x', 'command', undefined],
    ['diff', 'x', 'textconv', undefined],
    ['filter', 'lfs', 'smudge', undefined],
    ['filter', 'lfs', 'clean', undefined],
    ['filter', 'lfs', 'process', undefined],
    ['merge', 'ours', 'driver', undefined],
    ['credential', undefined, 'helper', undefined],
    ['credential', 'https://h', 'helper', undefined],
    ['alias', undefined, 'x', '!sh -c id'],
    ['alias', undefined, 'x', '  !id'],
    ['gpg', undefined, 'program', undefined],
    ['gpg', 'ssh', 'program', undefined],
    ['include', undefined, 'path', undefined],
    ['includeIf', 'gitdir:/x/', 'path', undefined],
    ['uploadpack', undefined, 'packObjectsHook', undefined],
    ['http', undefined, 'proxy', undefined],
    ['remote', 'origin', 'uploadpack', undefined],
    ['protocol', 'ext', 'allow', undefined],
    ['submodule', 's', 'update', '!sh'],
  ])('%s.%s.%s runs something', (section, sub, name, value) => {
    expect(isProgramKey(section, sub, name, value)).toBe(true);
  });

  it.each([
    ['core', undefined, 'bare', undefined],
    ['user', undefined, 'email', undefined],
    ['alias', undefined, 'st', 'status'],
    ['remote', 'origin', 'url', undefined],
    ['branch', 'main', 'remote', undefined],
    ['submodule', 's', 'update', 'checkout'],
    // A subsection git does not read for this key: diff.command is not a key, diff.<driver>.command is.
    ['diff', undefined, 'command', undefined],
    ['core', 'x', 'fsmonitor', undefined],
  ])('%s.%s.%s runs nothing', (section, sub, name, value) => {
    expect(isProgramKey(section, sub, name, value)).toBe(false);
  });
});

describe('programEntries', () => {
  const text = [
    '[core]',
    '\tbare = false',
    '\tFSMonitor = "touch /tmp/x; false"',
    '[Diff "Pic"]',
    '\ttextconv = exif',
    '[alias]',
    '\tst = status',
    '\tevil = !touch /tmp/y',
    '[include]',
    '\tpath = ../shared.inc',
    '[includeIf "gitdir:~/w/"]',
    '\tpath = ~/w.inc',
    '[core]',
    '\thooksPath = .husky/_',
    '[filter "lfs"]',
    '\tsmudge',
    '',
  ].join('\n');

  it('names each entry as git config --list does, and only the program keys', () => {
    const found = programEntries(text);
    const fromGit = gitConfigList(text).filter((line) => {
      const [name = '', value] = line.split(/=(.*)/s);
      const parts = name.split('.');
      const [section, key] = [parts[0]!, parts.at(-1)!];
      const sub = parts.length > 2 ? parts.slice(1, -1).join('.') : undefined;
      return isProgramKey(section, sub, key, value);
    });
    // git prints a bare boolean key without `=`; the table names it `(true)`.
    expect(found.entries).toEqual(fromGit.map((l) => (l.includes('=') ? l : `${l}=(true)`)));
    expect(found.entries).toContain('alias.evil=!touch /tmp/y');
    expect(found.entries).not.toContain('alias.st=status');
    expect(found.includes).toEqual(['../shared.inc', '~/w.inc']);
    expect(found.hooksPath).toBe('.husky/_');
    expect(found.unparsed).toBe(0);
  });

  it('counts lines it cannot parse', () => {
    expect(programEntries('[core\n\tfsmonitor = x\n').unparsed).toBeGreaterThan(0);
  });
});

describe('addedEntries', () => {
  it('is a multiset difference', () => {
    expect(addedEntries(['a=1', 'b=2'], ['b=2', 'a=1'])).toEqual([]);
    expect(addedEntries(['a=1'], ['a=1', 'a=1'])).toEqual(['a=1']);
    expect(addedEntries(['a=1'], ['a=2'])).toEqual(['a=2']);
    expect(addedEntries(['a=1', 'b=2'], [])).toEqual([]);
  });
});
