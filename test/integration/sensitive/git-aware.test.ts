// The sensitive-file scan in git work trees (sensitive/host/sensitive-scan.ts with git/host/tracked-files.ts),
// on repositories real git built: tracked files with their indexed content are not masked, ignored
// and untracked ones are, a tracked file changed since is masked with an unreadable stand-in, and an
// index the sandbox could have written vouches for nothing it does not hold.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileSensitiveRules } from '../../../src/sensitive/sensitive-files.js';
import { scanSensitiveFiles } from '../../../src/sensitive/host/sensitive-scan.js';
import { makeTempDir, writeTree } from '../../helpers/tmp.js';

const rules = compileSensitiveRules();

function git(cwd: string, ...args: string[]): string {
  const r = spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Tracked secret-like names, an ignored .env, an untracked key, a tracked key edited since. */
function makeRepo(): string {
  const dir = join(realpathSync(makeTempDir('sbx-gitscan-')), 'repo');
  mkdirSync(dir);
  git(dir, 'init', '-q');
  writeTree(dir, {
    'src/secrets.ts': 'export const secrets = 1;\n',
    'password-policy.md': '# rules\n',
    'config/secret.yaml': 'tracked: yes\n',
    'fixtures/test.pem': 'a test key, committed\n',
    'config/app.key': 'committed\n',
    '.gitignore': '.env\n',
  });
  git(dir, 'add', '-A');
  git(dir, 'commit', '-qm', 'init');
  writeTree(dir, { '.env': 'API_KEY=real\n', 'keys/dev.pem': 'untracked key\n', 'config/app.key': 'edited locally\n' });
  return dir;
}

const rel = (root: string, paths: { path: string }[]) => paths.map((p) => p.path.slice(root.length + 1));
/** What masking by name alone hides in makeRepo's tree (the hint spares src/secrets.ts, code). */
const BY_NAME = ['.env', 'config/app.key', 'config/secret.yaml', 'fixtures/test.pem', 'keys/dev.pem'];

describe('scan in a git work tree', () => {
  it('masks ignored, untracked and changed files; leaves tracked ones with their indexed content', () => {
    const dir = makeRepo();
    const scan = scanSensitiveFiles(dir, rules);
    expect(scan.masks.map((m) => ({ ...m, path: m.path.slice(dir.length + 1) }))).toEqual([
      { path: '.env', what: 'file' },
      { path: 'config/app.key', what: 'file', tracked: true },
      { path: 'keys/dev.pem', what: 'file' },
    ]);
    // The exclude view names the masked untracked files, so `git add -A` inside leaves the stand-ins out.
    expect(rel(dir, scan.views)).toEqual(['.git/config', '.git/info/exclude']);
    const exclude = scan.views[1]!.content;
    expect(exclude.startsWith(readFileSync(join(dir, '.git/info/exclude'), 'utf8'))).toBe(true);
    expect(exclude.split('\n').filter((l) => l.startsWith('/'))).toEqual(['/.env', '/keys/dev.pem']);
  });

  it('control: without git the same tree is masked by name (hints spare the source file only)', () => {
    const dir = makeRepo();
    spawnSync('rm', ['-rf', join(dir, '.git')]);
    expect(rel(dir, scanSensitiveFiles(dir, rules).masks)).toEqual(BY_NAME);
  });

  it('a corrupt or missing index exempts nothing (fail closed)', () => {
    const dir = makeRepo();
    const index = join(dir, '.git', 'index');
    const bytes = readFileSync(index);
    bytes.writeUInt32BE(bytes.readUInt32BE(8) + 5, 8);
    writeFileSync(index, bytes);
    expect(rel(dir, scanSensitiveFiles(dir, rules).masks)).toEqual(BY_NAME);
    spawnSync('rm', [index]);
    expect(rel(dir, scanSensitiveFiles(dir, rules).masks)).toHaveLength(5);
  });

  it('an index staging an empty .env (what a sandbox could do) does not unmask the real one', () => {
    const dir = makeRepo();
    const empty = spawnSync('git', ['hash-object', '-w', '--stdin'], { cwd: dir, input: '', encoding: 'utf8' }).stdout;
    git(dir, 'update-index', '--add', '--cacheinfo', `100644,${empty.trim()},.env`);
    expect(rel(dir, scanSensitiveFiles(dir, rules).masks)).toContain('.env');
    // Control: once .env is committed with its real content, that content is in the object store.
    git(dir, 'add', '-f', '.env');
    expect(rel(dir, scanSensitiveFiles(dir, rules).masks)).not.toContain('.env');
  });

  it('a workspace inside a repository uses the enclosing index', () => {
    const dir = makeRepo();
    const scan = scanSensitiveFiles(join(dir, 'config'), rules);
    expect(rel(join(dir, 'config'), scan.masks)).toEqual(['app.key']);
    expect(scan.views).toEqual([]);
  });

  it('a linked worktree (.git is a file naming its gitdir) and a nested repository read their own index', () => {
    const dir = makeRepo();
    const wt = join(dir, '..', 'wt');
    git(dir, 'worktree', 'add', '-q', wt);
    writeTree(wt, { '.env': 'x\n' });
    expect(rel(wt, scanSensitiveFiles(wt, rules).masks)).toEqual(['.env']);
    const nested = join(dir, 'vendor', 'lib');
    mkdirSync(nested, { recursive: true });
    git(nested, 'init', '-q');
    writeTree(nested, { 'lib.pem': 'vendored\n', 'local.pem': 'untracked\n' });
    git(nested, 'add', 'lib.pem');
    const masks = rel(dir, scanSensitiveFiles(dir, rules).masks);
    expect(masks).toContain('vendor/lib/local.pem');
    expect(masks).not.toContain('vendor/lib/lib.pem');
  });

  it('a profile directory holding tracked files: its untracked entries are masked, not the tracked ones', () => {
    const dir = makeRepo();
    writeTree(dir, { 'fixtures/local.json': '{}', 'fixtures/new/a.txt': 'a' });
    const scan = scanSensitiveFiles(dir, compileSensitiveRules({ files: ['fixtures/'] }));
    const untracked = ['fixtures/local.json', 'fixtures/new'];
    expect(rel(dir, scan.masks)).toEqual(['.env', 'config/app.key', ...untracked, 'keys/dev.pem']);
    // Control: untracked, the directory is masked whole.
    const plain = join(realpathSync(makeTempDir('sbx-gitscan-')));
    writeTree(plain, { 'fixtures/a.txt': '' });
    const whole = scanSensitiveFiles(plain, compileSensitiveRules({ files: ['fixtures/'] }));
    expect(rel(plain, whole.masks)).toEqual(['fixtures']);
  });
});
