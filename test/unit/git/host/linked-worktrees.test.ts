// A repository with extensions.worktreeConfig gets an empty config.worktree in its gitdir and in each
// linked worktree's `worktrees/<name>` before the run (git/host/held-git-files.ts madeWorktreeConfigs),
// so that the sandbox cannot plant one. A `worktrees` the repository ships as a link to elsewhere is
// not followed: nothing is created outside the tree. Control: a real `worktrees` directory gets it.
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSensitiveRules } from '../../../../src/sensitive/host/rules-cache.js';
import { scanSensitiveFiles } from '../../../../src/sensitive/host/sensitive-scan.js';
import { makeTempDir, writeTree } from '../../../helpers/tmp.js';

const CONFIG = '[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n';

async function scanRepo(worktrees: 'dir' | 'link') {
  const base = makeTempDir('sbx-worktrees-');
  const repo = join(base, 'repo');
  const elsewhere = join(base, 'elsewhere');
  writeTree(repo, { '.git/config': CONFIG, '.git/HEAD': 'ref: refs/heads/main\n', README: 'x' });
  mkdirSync(join(elsewhere, 'wt1'), { recursive: true });
  if (worktrees === 'dir') mkdirSync(join(repo, '.git/worktrees/wt1'), { recursive: true });
  else symlinkSync(elsewhere, join(repo, '.git/worktrees'));
  const reads: string[] = [];
  scanSensitiveFiles(repo, await loadSensitiveRules({}, undefined), { read: (path) => reads.push(path) });
  return { repo, elsewhere, reads };
}

describe('linked worktrees of a repository with worktreeConfig', () => {
  it('a real worktrees directory: each linked worktree gets an empty config.worktree (control)', async () => {
    const { repo, reads } = await scanRepo('dir');
    expect(existsSync(join(repo, '.git/config.worktree'))).toBe(true);
    expect(existsSync(join(repo, '.git/worktrees/wt1/config.worktree'))).toBe(true);
    expect(reads).toContain(join(repo, '.git/worktrees'));
  });

  it('a worktrees link the repository ships: nothing is created where it points', async () => {
    const { repo, elsewhere, reads } = await scanRepo('link');
    expect(existsSync(join(repo, '.git/config.worktree'))).toBe(true);
    expect(existsSync(join(elsewhere, 'wt1', 'config.worktree'))).toBe(false);
    expect(reads).toContain(join(repo, '.git/worktrees'));
  });
});
