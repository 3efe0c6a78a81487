// host-state/host/host-state-links.ts on a real temp directory: the other names of linked protected files are
// found in the writable trees, files in a linkWalk directory are checked, and a search cut at its
// bound is reported as unfinished (the run is then refused: host-state/host-state.ts), never as "none".
import { linkSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type HostStatePath, refuseLinkedHostState } from '../../../../src/host-state/host-state.js';
import { hostStateLinks } from '../../../../src/host-state/host/host-state-links.js';
import { sbxErrorOf } from '../../../helpers/errors.js';
import { makeTempDir } from '../../../helpers/tmp.js';

function fixture() {
  const root = makeTempDir('sbx-links-');
  const home = join(root, 'home');
  const ws = join(root, 'ws');
  mkdirSync(join(home, '.config', 'sbx', 'profiles'), { recursive: true });
  mkdirSync(join(ws, 'a', 'b'), { recursive: true });
  for (let i = 0; i < 50; i++) writeFileSync(join(ws, 'a', `f${i}`), '');
  const state: HostStatePath[] = [
    { path: join(home, '.bashrc'), what: 'a shell startup file', scope: 'tree' },
    { path: join(home, '.config', 'sbx'), what: "sbx's own profiles and secrets", scope: 'tree', linkWalk: true },
    { path: home, what: 'your home directory', scope: 'contents' },
  ];
  return { root, home, ws, state, trees: [{ real: ws, via: ws }] };
}

describe('hostStateLinks', () => {
  it('finds nothing (and walks nothing) when no protected file has a second link', () => {
    const f = fixture();
    writeFileSync(join(f.home, '.bashrc'), '');
    expect(hostStateLinks(f.state, f.trees, 1)).toEqual([]);
  });

  it('names the other name of a linked startup file and of a file in a linkWalk directory', () => {
    const f = fixture();
    writeFileSync(join(f.home, '.bashrc'), '');
    linkSync(join(f.home, '.bashrc'), join(f.ws, 'a', 'b', 'bashrc'));
    const profile = join(f.home, '.config', 'sbx', 'profiles', 'default.yaml');
    writeFileSync(profile, '');
    linkSync(profile, join(f.ws, 'default.yaml'));
    const links = hostStateLinks(f.state, f.trees);
    expect(links).toEqual(
      expect.arrayContaining([
        {
          path: join(f.home, '.bashrc'),
          what: 'a shell startup file',
          tree: f.ws,
          other: join(f.ws, 'a', 'b', 'bashrc'),
        },
        { path: profile, what: "sbx's own profiles and secrets", tree: f.ws, other: join(f.ws, 'default.yaml') },
      ]),
    );
    expect(links).toHaveLength(2);
  });

  it('a search cut at its bound is unfinished, and refuses the run', () => {
    const f = fixture();
    writeFileSync(join(f.home, '.bashrc'), '');
    // The other name is outside the tree: only a complete search could tell.
    linkSync(join(f.home, '.bashrc'), join(f.root, 'elsewhere'));
    expect(hostStateLinks(f.state, f.trees)).toEqual([]);
    const cut = hostStateLinks(f.state, f.trees, 10);
    expect(cut).toEqual([
      { path: join(f.home, '.bashrc'), what: 'a shell startup file', tree: f.ws, nlink: 2, maxEntries: 10 },
    ]);
    const error = sbxErrorOf(() => refuseLinkedHostState(cut, [{ where: 'workspace', path: f.ws, real: f.ws }]));
    expect(error.code).toBe('HOST_STATE_WRITABLE');
    expect(error.message).toContain('has 2 links, and the search of');
    expect(error.hint).toContain(`find ${f.ws} -samefile ${join(f.home, '.bashrc')}`);
    // Not a writable bind of this run (a read-only workspace): nothing to refuse.
    expect(() => refuseLinkedHostState(cut, [])).not.toThrow();
  });
});
