// host/path-chain.ts on a real temp tree: a path's chain is the device:inode of every directory
// the kernel would walk through, so a symlink (dangling too), `..` after a symlink and a directory
// listed once instead of probed by name all end where the kernel would.
import { mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chainMemo, pathChain } from '../../../src/host/path-chain.js';
import { makeTempDir } from '../../helpers/tmp.js';

const id = (path: string) => {
  const st = statSync(path);
  return `${st.dev}:${st.ino}`;
};

/** The chain `real` has when nothing in it is a link: every prefix's identity. */
function lexical(real: string): string[] {
  const parts = real.split('/').filter(Boolean);
  return ['/', ...parts.map((_, i) => `/${parts.slice(0, i + 1).join('/')}`)].map(id);
}

describe('pathChain', () => {
  it('is the identity of every directory down to an existing path', () => {
    const root = makeTempDir();
    mkdirSync(join(root, 'a', 'b'), { recursive: true });
    expect(pathChain(join(root, 'a', 'b'))).toEqual({ ids: lexical(join(root, 'a', 'b')), exists: true });
  });

  it('ends at the deepest existing ancestor of a missing path', () => {
    const root = makeTempDir();
    mkdirSync(join(root, 'a'));
    expect(pathChain(join(root, 'a', 'missing', 'deeper'))).toEqual({ ids: lexical(join(root, 'a')), exists: false });
  });

  it('follows a symlink to where it leads, and a dangling one to where it would create the file', () => {
    const root = makeTempDir();
    mkdirSync(join(root, 'repo', 'dotconfig'), { recursive: true });
    mkdirSync(join(root, 'home'));
    symlinkSync(join(root, 'repo', 'dotconfig'), join(root, 'home', '.config'));
    symlinkSync('../repo/bashrc', join(root, 'home', '.bashrc'));
    const config = pathChain(join(root, 'home', '.config', 'sbx'));
    expect(config).toEqual({ ids: lexical(join(root, 'repo', 'dotconfig')), exists: false });
    // The dangling ~/.bashrc: its chain runs through the repository, which a bind of it contains.
    expect(pathChain(join(root, 'home', '.bashrc')).ids).toContain(id(join(root, 'repo')));
  });

  it('climbs from a symlink target on `..`, as the kernel does (not from the link)', () => {
    const root = makeTempDir();
    mkdirSync(join(root, 'x', 'deep'), { recursive: true });
    mkdirSync(join(root, 'y'));
    symlinkSync(join(root, 'x', 'deep'), join(root, 'y', 'link'));
    expect(pathChain(`${join(root, 'y', 'link')}/..`)).toEqual({ ids: lexical(join(root, 'x')), exists: true });
  });

  it('stops a symlink loop without looping', () => {
    const root = makeTempDir();
    symlinkSync(join(root, 'b'), join(root, 'a'));
    symlinkSync(join(root, 'a'), join(root, 'b'));
    expect(pathChain(join(root, 'a', 'x'))).toMatchObject({ exists: false });
  });

  it('answers the same from a listed directory as from lookups by name', () => {
    const root = makeTempDir();
    const home = join(root, 'home');
    mkdirSync(join(home, '.config', 'git'), { recursive: true });
    writeFileSync(join(home, '.bashrc'), '');
    symlinkSync(join(home, '.config'), join(home, 'cfg'));
    const paths = ['.bashrc', '.profile', '.zshrc', '.config', 'cfg', 'cfg/git', '.config/nope'].map((p) =>
      join(home, p),
    );
    const memo = chainMemo(paths);
    expect(memo.toList.has(home)).toBe(true);
    expect(paths.map((p) => pathChain(p, memo))).toEqual(paths.map((p) => pathChain(p)));
  });
});
