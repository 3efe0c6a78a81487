// The scan walks the tree that will be mounted (the pinned descriptor), not whatever its path holds by
// then: a concurrent writer that renames the pinned directory away and puts an empty one in its place
// must not leave the mounted tree's secrets unmasked (sensitive/host/sensitive-scan.ts scanMountedTrees).
import { closeSync, constants, mkdirSync, openSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileSensitiveRules } from '../../../src/sensitive/sensitive-files.js';
import { scanMountedTrees } from '../../../src/sensitive/host/sensitive-scan.js';
import { makeTempDir } from '../../helpers/tmp.js';

describe('the sensitive-file scan and pinned trees', () => {
  it('masks what the pinned descriptor holds after the directory was swapped behind its path', () => {
    const root = makeTempDir();
    const tree = join(root, 'tree');
    mkdirSync(tree);
    writeFileSync(join(tree, '.env'), 'TOKEN=planted\n');
    const fd = openSync(tree, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      // The swap: the pinned directory moves away, an empty one takes its path.
      renameSync(tree, join(root, 'moved'));
      mkdirSync(tree);
      const rules = compileSensitiveRules();
      const byPath = scanMountedTrees([tree], rules);
      // Control: walking the path sees only the empty stand-in directory.
      expect(byPath.masks).toEqual([]);
      const pinned = scanMountedTrees([tree], rules, { walkVia: () => `/proc/self/fd/${fd}` });
      // The mask is named where the pinned tree is mounted: at the path as checked.
      expect(pinned.masks.map((m) => m.path)).toEqual([join(tree, '.env')]);
    } finally {
      closeSync(fd);
    }
  });
});
