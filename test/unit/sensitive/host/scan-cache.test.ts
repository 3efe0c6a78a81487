// The tree-scan cache (sensitive/host/scan-cache.ts) around the real secret scan: a settled tree's result is
// kept and reused without walking it; every change the scan could have seen (a file created deep in
// the tree, content rewritten, a directory swapped, a hard link made, a looked-for file appearing) is a
// miss, each beside a control that reuses the entry; a tree written to just before the scan, a scan
// that resolved a symlink, and an entry sbx cannot vouch for are never used.
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keptScan, recordedScan, type ScanCacheOptions } from '../../../../src/sensitive/host/scan-cache.js';
import { loadSensitiveRules } from '../../../../src/sensitive/host/rules-cache.js';
import { scanMountedTrees } from '../../../../src/sensitive/host/sensitive-scan.js';
import type { ScanReader } from '../../../../src/sensitive/scan-result.js';
import { makeTempDir, writeTree } from '../../../helpers/tmp.js';

const uid = process.getuid?.() ?? 0;
/** A start well after the tree was made: its timestamps count as settled. */
const settled = () => Date.now() + 60_000;

/** As the policy stage uses the two halves: the kept result, else a walk kept when it may be. */
function cachedScan<T>(opts: ScanCacheOptions, scan: Parameters<typeof recordedScan<T>>[1]): T {
  return keptScan<T>(opts) ?? recordedScan(opts, scan);
}

async function setup(files: Record<string, string>, ruleFiles: string[] = []) {
  const base = makeTempDir('sbx-scan-cache-');
  const root = join(base, 'tree');
  const dir = join(base, 'cache');
  mkdirSync(root);
  mkdirSync(dir, { mode: 0o700 });
  writeTree(root, files);
  const rules = await loadSensitiveRules(ruleFiles.length > 0 ? { files: ruleFiles } : {}, undefined);
  let walks = 0;
  const scan = (opts: Partial<ScanCacheOptions> = {}) =>
    cachedScan({ dir, material: ['test', root], via: root, root, uid, startedAt: settled(), ...opts }, (read) => {
      walks++;
      return scanMountedTrees([root], rules, { read }).masks.map((m) => m.path);
    });
  return { root, dir, scan, walks: () => walks };
}

describe('tree scan cache', () => {
  it('keeps a settled tree: the second run uses the entry without walking', async () => {
    const t = await setup({ 'a/b/c/.env': 'SECRET=1', 'a/b/readme.txt': 'x' });
    const first = t.scan();
    expect(first).toEqual([join(t.root, 'a/b/c/.env')]);
    expect(t.scan()).toEqual(first);
    expect(t.walks()).toBe(1);
    expect(readdirSync(t.dir).filter((f) => f.startsWith('tree-scan-'))).toHaveLength(1);
  });

  it('misses when a secret appears in a directory deep in the tree (control: unchanged, kept)', async () => {
    const t = await setup({ 'a/b/c/readme.txt': 'x' });
    expect(t.scan()).toEqual([]);
    expect(t.scan()).toEqual([]);
    expect(t.walks()).toBe(1);
    writeFileSync(join(t.root, 'a/b/c/id_rsa'), 'KEY');
    expect(t.scan()).toEqual([join(t.root, 'a/b/c/id_rsa')]);
    expect(t.walks()).toBe(2);
  });

  it('misses when a file the scan read is rewritten: a public key that became a private key', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const pub = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const t = await setup({ 'certs/server.pem': pub });
    expect(t.scan()).toEqual([]);
    expect(t.scan()).toEqual([]);
    expect(t.walks()).toBe(1);
    writeFileSync(join(t.root, 'certs/server.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    expect(t.scan()).toEqual([join(t.root, 'certs/server.pem')]);
  });

  it('misses when a tracked file in a masked directory is edited in place (no directory changes)', async () => {
    // A directory rule masks `vault/` whole but for what git tracks there with its indexed content.
    const t = await setup({ 'vault/app.yml': 'mode: dev\n' }, ['vault/']);
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', ...args], { cwd: t.root });
    git('init', '-q');
    git('add', 'vault/app.yml');
    git('commit', '-qm', 'init');
    // Control: tracked with its indexed content, it is shown; the kept entry is reused.
    expect(t.scan()).toEqual([]);
    expect(t.scan()).toEqual([]);
    expect(t.walks()).toBe(1);
    writeFileSync(join(t.root, 'vault/app.yml'), 'token: s3cr3t\n');
    expect(t.scan()).toEqual([join(t.root, 'vault/app.yml')]);
  });

  it('misses when a listed directory is swapped for another with the same names', async () => {
    const t = await setup({ 'lib/x/readme.txt': 'x', 'other/x/readme.txt': 'x', 'other/x/.env': 'S=1' });
    t.scan();
    renameSync(join(t.root, 'lib/x'), join(t.root, 'lib/old'));
    renameSync(join(t.root, 'other/x'), join(t.root, 'lib/x'));
    expect(t.scan()).toContain(join(t.root, 'lib/x/.env'));
    expect(t.walks()).toBe(2);
  });

  it('misses when a masked file gets another name by a hard link (its link count was read)', async () => {
    const t = await setup({ 'a/.env': 'S=1', 'b/readme.txt': 'x' });
    t.scan();
    expect(t.scan()).toEqual([join(t.root, 'a/.env')]);
    expect(t.walks()).toBe(1);
    linkSync(join(t.root, 'a/.env'), join(t.root, 'b/notes.txt'));
    expect(t.scan()).toEqual([join(t.root, 'a/.env'), join(t.root, 'b/notes.txt')]);
  });

  it('misses when a file the scan looked for and did not find appears', () => {
    const base = makeTempDir('sbx-scan-cache-');
    const dir = join(base, 'cache');
    mkdirSync(dir, { mode: 0o700 });
    const looked = join(base, 'maybe');
    let walks = 0;
    const scan = () =>
      cachedScan({ dir, material: 'm', via: base, root: base, uid, startedAt: settled() }, (read: ScanReader) => {
        walks++;
        read(base, 'dir');
        read(looked, 'file');
        return walks;
      });
    expect(scan()).toBe(1);
    expect(scan()).toBe(1);
    writeFileSync(looked, 'now here');
    expect(scan()).toBe(2);
  });

  it('does not keep a tree changed just before the scan started (the racy margin)', async () => {
    const t = await setup({ 'a/readme.txt': 'x' });
    t.scan({ startedAt: Date.now() });
    t.scan({ startedAt: Date.now() });
    expect(t.walks()).toBe(2);
    expect(readdirSync(t.dir)).toEqual([]);
  });

  it('does not keep a scan that resolved a symlink (its target may lie anywhere)', async () => {
    const t = await setup({ 'a/readme.txt': 'x' });
    symlinkSync('/etc/hostname', join(t.root, 'a/.env'));
    t.scan();
    t.scan();
    expect(t.walks()).toBe(2);
  });

  it('does not keep a walk that read anything on a filesystem not known to be local (devpts here; NFS, FUSE)', async () => {
    const t = await setup({ 'a/readme.txt': 'x' });
    let walks = 0;
    const scan = (extra?: string) =>
      cachedScan(
        { dir: t.dir, material: extra ?? 'none', via: t.root, root: t.root, uid, startedAt: settled() },
        (read) => {
          walks++;
          read(t.root, 'dir');
          if (extra) read(extra, 'dir');
          return walks;
        },
      );
    // Control: the same walk without it is kept.
    expect(scan()).toBe(1);
    expect(scan()).toBe(1);
    expect(scan('/dev/pts')).toBe(2);
    expect(scan('/dev/pts')).toBe(3);
  });

  it('keeps a walk through a pinned descriptor with a match and no repository at its root', async () => {
    // A pinned tree has no parents to search for a repository: nothing under /proc is looked up.
    const t = await setup({ 'etc/npmrc.pem': 'x', 'bin/tool': 'x' });
    const fd = openSync(t.root, 'r');
    const via = `/proc/self/fd/${fd}`;
    const rules = await loadSensitiveRules({}, undefined);
    let walks = 0;
    const scan = () =>
      cachedScan({ dir: t.dir, material: 'pinned', via, root: t.root, uid, startedAt: settled() }, (read) => {
        walks++;
        return scanMountedTrees([t.root], rules, { walkVia: () => via, read }).masks.map((m) => m.path);
      });
    try {
      expect(scan()).toEqual([join(t.root, 'etc/npmrc.pem')]);
      expect(scan()).toEqual([join(t.root, 'etc/npmrc.pem')]);
      expect(walks).toBe(1);
    } finally {
      closeSync(fd);
    }
  });

  it('uses no entry it cannot vouch for: corrupt, for another key, writable by others, or another owner', async () => {
    const t = await setup({ 'a/.env': 'S=1' });
    const expected = [join(t.root, 'a/.env')];
    t.scan();
    const [name] = readdirSync(t.dir);
    const file = join(t.dir, name!);
    const genuine = readFileSync(file, 'utf8');
    // Control: the entry as sbx wrote it is used.
    expect(t.scan()).toEqual(expected);
    expect(t.walks()).toBe(1);
    writeFileSync(file, '{not json');
    expect(t.scan()).toEqual(expected);
    expect(t.walks()).toBe(2);
    writeFileSync(file, JSON.stringify({ ...JSON.parse(genuine), key: 'another' }));
    expect(t.scan()).toEqual(expected);
    expect(t.walks()).toBe(3);
    writeFileSync(file, genuine);
    chmodSync(file, 0o666);
    expect(t.scan()).toEqual(expected);
    expect(t.walks()).toBe(4);
    if (uid === 0) {
      writeFileSync(file, genuine, { mode: 0o600 });
      chownSync(file, 65534, 65534);
      expect(t.scan()).toEqual(expected);
      expect(t.walks()).toBe(5);
    }
  });

  it('a new entry removes the ones written more than 30 days ago, and only those', async () => {
    const t = await setup({ 'a/readme.txt': 'x' });
    const old = join(t.dir, 'tree-scan-old.json');
    const recent = join(t.dir, 'tree-scan-recent.json');
    const other = join(t.dir, 'sensitive-rules-old.json');
    for (const f of [old, recent, other]) writeFileSync(f, '{}');
    const daysAgo = (n: number) => new Date(Date.now() - n * 24 * 60 * 60 * 1000);
    utimesSync(old, daysAgo(31), daysAgo(31));
    utimesSync(recent, daysAgo(29), daysAgo(29));
    utimesSync(other, daysAgo(90), daysAgo(90));
    t.scan();
    const names = readdirSync(t.dir);
    expect(names).toHaveLength(3);
    expect(names).toEqual(expect.arrayContaining(['sensitive-rules-old.json', 'tree-scan-recent.json']));
    expect(names.filter((n) => /^tree-scan-[0-9a-f]{32}\.json$/.test(n))).toHaveLength(1);
    expect(existsSync(old)).toBe(false);
  });

  it('without a cache directory scans every time and writes nothing', async () => {
    const t = await setup({ 'a/.env': 'S=1' });
    t.scan({ dir: undefined });
    t.scan({ dir: undefined });
    expect(t.walks()).toBe(2);
    expect(readdirSync(t.dir)).toEqual([]);
  });

  it('keeps the walk path out of the entry: another descriptor on the same tree finds it', async () => {
    const t = await setup({ 'a/readme.txt': 'x' });
    const fds = [openSync(t.root, 'r'), openSync(t.root, 'r')];
    let walks = 0;
    const scan = (fd: number, extra?: string) => {
      const via = `/proc/self/fd/${fd}`;
      const material = extra ?? 'm';
      return cachedScan({ dir: t.dir, material, via, root: t.root, uid, startedAt: settled() }, (read) => {
        walks++;
        read(via, 'dir');
        read(`${via}/a`, 'dir');
        if (extra) read(extra, 'dir');
        return walks;
      });
    };
    try {
      expect(scan(fds[0]!)).toBe(1);
      expect(scan(fds[1]!)).toBe(1);
      // Control: the entry vouches for the tree's contents, checked at the root path.
      writeFileSync(join(t.root, 'a/new'), 'x');
      expect(scan(fds[1]!)).toBe(2);
      // A read through another process-specific path cannot be checked later: not kept.
      const other = `/proc/self/fd/${fds[1]}/a`;
      expect(scan(fds[0]!, other)).toBe(3);
      expect(scan(fds[0]!, other)).toBe(4);
    } finally {
      for (const fd of fds) closeSync(fd);
    }
  });
});
