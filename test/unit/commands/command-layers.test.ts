// How the command rules read one argv, apart from any rule: the layers of wrappers looked through, the
// script a shell runs with -c, and the subcommand past global options. Every judge stands on these.
import { describe, expect, it } from 'vitest';
import { layersOf, shellScriptAt, splitString, subcommandOf } from '../../../src/commands/command-layers.js';

describe('layersOf', () => {
  it('looks through each wrapper, its options and their values, to the command it runs', () => {
    expect(layersOf(['env', 'X=1', '-u', 'HOME', 'timeout', '-s', 'KILL', '5', 'curl', 'u'])).toEqual([
      ['env', 'X=1', '-u', 'HOME', 'timeout', '-s', 'KILL', '5', 'curl', 'u'],
      ['timeout', '-s', 'KILL', '5', 'curl', 'u'],
      ['curl', 'u'],
    ]);
    expect(layersOf(['/usr/bin/nice', '-n', '5', 'nohup', 'rm', '-rf', 'x']).map((l) => l[0])).toEqual([
      '/usr/bin/nice',
      'nohup',
      'rm',
    ]);
  });

  it('takes option values attached, abbreviated as getopt_long allows, and at the end of a short cluster', () => {
    expect(layersOf(['timeout', '--signal=KILL', '5', 'curl']).at(-1)).toEqual(['curl']);
    expect(layersOf(['timeout', '--sig', 'KILL', '5', 'curl']).at(-1)).toEqual(['curl']);
    expect(layersOf(['sudo', '-uroot', 'id']).at(-1)).toEqual(['id']);
    expect(layersOf(['xargs', '-0n1', 'rm']).at(-1)).toEqual(['rm']);
  });

  it('stops at `--` and runs what follows it', () => {
    expect(layersOf(['env', '--', 'curl', '-x']).at(-1)).toEqual(['curl', '-x']);
  });

  it('runs the command line of env -S in each of its spellings', () => {
    for (const argv of [
      ['env', '-S', 'curl -s u'],
      ['env', '-Scurl -s u'],
      ['env', '-iS', 'curl -s u'],
      ['env', '--split-string=curl -s u'],
      ['env', '--split', 'curl -s u'],
    ])
      expect(layersOf(argv).at(-1), argv.join(' ')).toEqual(['curl', '-s', 'u']);
  });

  it('a command that wraps nothing is its only layer; an empty argv has none', () => {
    expect(layersOf(['git', '-C', 'x', 'push'])).toEqual([['git', '-C', 'x', 'push']]);
    expect(layersOf(['env'])).toEqual([['env']]);
    expect(layersOf([])).toEqual([]);
  });

  it('is bounded: a hostile chain of wrappers yields at most 16 layers', () => {
    expect(layersOf([...Array(40).fill('nohup'), 'curl'])).toHaveLength(16);
  });
});

describe('splitString', () => {
  it('tells an env layer that runs a string (-S) from one that runs its argv', () => {
    expect(splitString(['env', '-S', 'curl u'])).toBe('curl u');
    expect(splitString(['env', '-iScurl'])).toBe('curl');
    expect(splitString(['env', '--split-s=curl'])).toBe('curl');
    expect(splitString(['env', 'X=1', 'curl'])).toBeUndefined();
    expect(splitString(['env', '-u', 'S', 'curl'])).toBeUndefined();
  });
});

describe('shellScriptAt', () => {
  it("finds the -c script past the shell's options, in clusters too", () => {
    expect(shellScriptAt(['sh', '-c', 'ls'])).toBe(2);
    expect(shellScriptAt(['bash', '-ec', 'ls'])).toBe(2);
    expect(shellScriptAt(['/bin/bash', '-O', 'extglob', '-c', 'ls'])).toBe(4);
    expect(shellScriptAt(['bash', '-c', '-o', 'pipefail', '+e', 'ls'])).toBe(5);
    expect(shellScriptAt(['sh', '-c', '--', '-ls'])).toBe(3);
  });

  it('a missing script is past the end; a shell without -c, or no shell, runs no script', () => {
    expect(shellScriptAt(['sh', '-c'])).toBe(2);
    expect(shellScriptAt(['sh', 'script.sh'])).toBeUndefined();
    expect(shellScriptAt(['python3', '-c', 'print()'])).toBeUndefined();
  });
});

describe('subcommandOf', () => {
  it('skips global options and their values (git, npm)', () => {
    expect(subcommandOf(['git', '-C', 'dir', '-c', 'a=b', '--no-pager', 'push', '-f'])).toEqual({
      sub: 'push',
      rest: ['-f'],
    });
    expect(subcommandOf(['npm', '--prefix', 'x', 'ci'])).toEqual({ sub: 'ci', rest: [] });
  });

  it('has none after `--` or without a positional word', () => {
    expect(subcommandOf(['git', '--', 'push'])).toBeUndefined();
    expect(subcommandOf(['git', '--version'])).toBeUndefined();
  });
});
