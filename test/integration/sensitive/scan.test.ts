// The sensitive-file scan (sensitive/host/sensitive-scan.ts) on real trees: exact mask and protect lists
// for files, directories, symlinks (never followed) and awkward names; skip directories; the entry
// bound (fail closed); an unreadable directory, scanned by an unprivileged uid, masked whole.
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { compileSensitiveRules } from '../../../src/sensitive/sensitive-files.js';
import { loadSensitiveRules } from '../../../src/sensitive/host/rules-cache.js';
import { scanSensitiveFiles } from '../../../src/sensitive/host/sensitive-scan.js';
import { IS_ROOT } from '../../helpers/sbx-cli.js';
import { REPO_ROOT } from '../../helpers/paths.js';
import { makeTempDir, writeTree } from '../../helpers/tmp.js';

const rules = compileSensitiveRules();

/** A tree with something for every rule kind, and the names a shell-joined path would get wrong. */
function plantTree(root: string): void {
  writeTree(root, {
    '.env': 'API_KEY=planted',
    '.env.example': 'API_KEY=',
    'README.md': '',
    'my secret notes.txt': '',
    'line\nbreak.pem': '',
    'clé-privée.key': '',
    '日本語/.env.local': '',
    '日本語/パスワード.txt': '',
    'src/index.ts': '',
    'src/hooks/useThing.ts': '',
    'config/prod.env': '',
    'keys/server.key': '',
    'keys/server.crt': '',
    'secrets/db.yaml': '',
    'secrets/nested/.env': '',
    'node_modules/pkg/.env': '',
    'node_modules/pkg/index.js': '',
    'node_modules/.cache/loader/.env': '',
    '.git/config': '',
    '.git/HEAD': '',
    '.git/hooks/pre-commit.sample': '',
    '.git/hooks/deploy.key': '',
    '.git/objects/ab/cdef0123': '',
    '.git/objects/ab/stray.key': '',
    '.git/refs/heads/fix-password-reset': '',
    'vendor/lib/.git/config': '',
    'vendor/lib/.git/hooks/post-checkout': '',
    'tracked-hooks/pre-push': '',
    'sub/.git/HEAD': '',
  });
  const outside = join(root, '..', 'outside');
  writeTree(outside, { '.env': '', id_rsa: '' });
  // Symlinks: a sensitive name pointing elsewhere (listed in links, not followed); a dangling
  // one; a directory link that must not be followed; a hooks dir linked to a tracked directory.
  symlinkSync('/etc/hostname', join(root, '.npmrc'));
  symlinkSync('/nonexistent/target', join(root, '.env.prod'));
  symlinkSync(outside, join(root, 'outside-link'));
  symlinkSync('../../tracked-hooks', join(root, 'sub/.git/hooks'));
}

describe('scanSensitiveFiles on a real tree', () => {
  it('masks and protects exactly what the rules say, without following symlinks', () => {
    const root = join(makeTempDir('sbx-scan-'), 'tree');
    mkdirSync(root);
    plantTree(root);
    const scan = scanSensitiveFiles(root, rules);
    const at = (rel: string) => join(root, rel);

    expect(scan.truncated).toBe(false);
    // The tree's .git has no index: nothing counts as tracked (masked by name).
    expect(scan.masks).toEqual(
      [
        { path: at('.env'), what: 'file' },
        { path: at('.git/hooks/deploy.key'), what: 'file' },
        { path: at('clé-privée.key'), what: 'file' },
        { path: at('keys/server.key'), what: 'file' },
        { path: at('line\nbreak.pem'), what: 'file' },
        { path: at('my secret notes.txt'), what: 'file' },
        // A hinted directory is searched: its data files are masked, not the directory.
        { path: at('secrets/db.yaml'), what: 'file' },
        { path: at('secrets/nested/.env'), what: 'file' },
        { path: at('日本語/.env.local'), what: 'file' },
      ].sort((a, b) => (a.path < b.path ? -1 : 1)),
    );
    // Git config files are shown without credentials (these are empty: the view is a comment).
    expect(scan.views.map((v) => v.path)).toEqual([at('.git/config'), at('vendor/lib/.git/config')]);
    expect(scan.protect).toEqual([at('.git/hooks'), at('sub/.git/hooks'), at('vendor/lib/.git/hooks')]);
    // Matching symlinks are listed apart, unfollowed: the caller resolves them.
    expect(scan.links).toEqual([at('.env.prod'), at('.npmrc')]);
  });

  it('examines every entry it walks: nothing below a masked or skipped directory or a symlink', () => {
    const root = join(makeTempDir('sbx-scan-'), 'tree');
    mkdirSync(root);
    plantTree(root);
    const scan = scanSensitiveFiles(root, rules);
    // Entries listed: root 19, 日本語 2, src 2, src/hooks 1, config 1, keys 2, .git 5, .git/hooks 2, vendor 1, vendor/lib 1, vendor/lib/.git 2,
    // vendor/lib/.git/hooks 1, tracked-hooks 1, sub 1, sub/.git 2, secrets 2 and secrets/nested 1
    // (a hinted directory is searched). Not listed: node_modules, .git/objects, .git/refs (skipped),
    // outside-link (a symlink).
    expect(scan.scanned).toBe(19 + 2 + 2 + 1 + 1 + 2 + 5 + 2 + 1 + 1 + 2 + 1 + 1 + 1 + 2 + 2 + 1);
  });

  it('a trailing slash on the root, and profile rules, change nothing else', () => {
    const root = join(makeTempDir('sbx-scan-'), 'tree');
    mkdirSync(root);
    plantTree(root);
    const withSlash = scanSensitiveFiles(`${root}/`, rules);
    expect(withSlash).toEqual(scanSensitiveFiles(root, rules));
    const custom = scanSensitiveFiles(
      root,
      compileSensitiveRules({ files: ['config/*.env'], except: ['secrets'], skip: ['src'] }),
    );
    const paths = custom.masks.map((m) => m.path);
    expect(paths).toContain(join(root, 'config/prod.env'));
    expect(paths).not.toContain(join(root, 'secrets'));
    expect(paths).toContain(join(root, 'secrets/nested/.env'));
    // src (2 entries) and src/hooks (1) are not walked.
    expect(custom.scanned).toBe(
      scanSensitiveFiles(root, compileSensitiveRules({ files: ['config/*.env'], except: ['secrets'] })).scanned - 3,
    );
  });

  it('stops at maxEntries and says so (the caller refuses to run half-masked)', () => {
    const root = makeTempDir('sbx-scan-');
    // 3 directories of 3 files: 12 entries.
    writeTree(
      root,
      Object.fromEntries(['a', 'b', 'c'].flatMap((d) => ['1', '2', '.env'].map((f) => [`${d}/${f}`, '']))),
    );
    expect(scanSensitiveFiles(root, rules, { maxEntries: 12 })).toMatchObject({ scanned: 12, truncated: false });
    expect(scanSensitiveFiles(root, rules, { maxEntries: 12 }).masks).toHaveLength(3);
    const cut = scanSensitiveFiles(root, rules, { maxEntries: 11 });
    expect(cut.truncated).toBe(true);
    expect(cut.scanned).toBeLessThanOrEqual(11);
  });

  it('a root that cannot be listed throws', () => {
    const root = makeTempDir('sbx-scan-');
    expect(() => scanSensitiveFiles(join(root, 'missing'), rules)).toThrow(/ENOENT/);
    writeFileSync(join(root, 'file'), '');
    expect(() => scanSensitiveFiles(join(root, 'file'), rules)).toThrow(/ENOTDIR/);
  });
});

describe('an unreadable directory', () => {
  // Mode 000 stops the scanning uid, but the same uid inside the sandbox may chmod its own directory
  // back on a writable mount: what it holds is unknown, so it is masked whole. Root reads through
  // mode bits, so as root the scan runs in a child as nobody (65534).
  it('is masked whole, its contents unknown', async () => {
    const base = makeTempDir('sbx-scan-');
    chmodSync(base, 0o755);
    const root = join(base, 'tree');
    writeTree(root, { 'locked/.env': '', 'locked/notes.txt': '', 'open/ok.txt': '' });
    const bundled = await build({
      stdin: {
        contents: [
          "import { compileSensitiveRules } from './src/sensitive/sensitive-files.ts';",
          "import { scanSensitiveFiles } from './src/sensitive/host/sensitive-scan.ts';",
          'process.stdout.write(JSON.stringify(scanSensitiveFiles(process.argv[2], compileSensitiveRules())));',
        ].join('\n'),
        resolveDir: REPO_ROOT,
        loader: 'ts',
      },
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'node',
      logLevel: 'silent',
    });
    const script = join(base, 'scan.mjs');
    writeFileSync(script, bundled.outputFiles[0]!.text, { mode: 0o644 });
    chmodSync(join(root, 'locked'), 0o000);
    let child: SpawnSyncReturns<string>;
    try {
      child = spawnSync(process.execPath, [script, root], {
        encoding: 'utf8',
        ...(IS_ROOT ? { uid: 65534, gid: 65534 } : {}),
      });
    } finally {
      chmodSync(join(root, 'locked'), 0o755);
    }
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout).masks).toEqual([{ path: join(root, 'locked'), what: 'dir' }]);
  });
});

describe('loadSensitiveRules: compiled once, then read from the cache', () => {
  it('writes the compiled rules, reuses them (a hand-edited file of the user is trusted as sbx wrote it), recompiles when foreign or corrupt', async () => {
    const cache = makeTempDir('sbx-rules-cache-');
    const first = await loadSensitiveRules({ files: ['*.sqlite'] }, cache);
    expect(first.classify('db/app.sqlite', false)).toBe('mask');
    const files = readdirSync(cache).filter((f) => f.startsWith('sensitive-rules-'));
    expect(files).toHaveLength(1);
    // Proof the second load reads the file: a rule edited there takes effect.
    const path = join(cache, files[0]!);
    const data = JSON.parse(readFileSync(path, 'utf8')) as { mask: { any: { basename: { source: string }[] } } };
    data.mask.any.basename[0]!.source += '|^edited-marker$';
    writeFileSync(path, JSON.stringify(data));
    expect((await loadSensitiveRules({ files: ['*.sqlite'] }, cache)).classify('x/edited-marker', false)).toBe('mask');
    // A cache file others could have written is not read: the rules are compiled afresh.
    chmodSync(path, 0o666);
    expect(
      (await loadSensitiveRules({ files: ['*.sqlite'] }, cache)).classify('x/edited-marker', false),
    ).toBeUndefined();
    writeFileSync(path, JSON.stringify(data), { mode: 0o600 });
    chmodSync(path, 0o600);
    // Another input is another key; a corrupt file is recompiled, not trusted.
    writeFileSync(path, '{not json');
    expect(
      (await loadSensitiveRules({ files: ['*.sqlite'] }, cache)).classify('x/edited-marker', false),
    ).toBeUndefined();
    expect((await loadSensitiveRules({}, cache)).classify('db/app.sqlite', false)).toBeUndefined();
  });

  it('a glob that names nothing is a profile error (PROFILE_INVALID, 125), not a crash', async () => {
    await expect(loadSensitiveRules({ files: ['/'] }, undefined)).rejects.toMatchObject({
      code: 'PROFILE_INVALID',
      exitCode: 125,
    });
  });
});
