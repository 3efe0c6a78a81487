// A workspace with thousands of secret-looking files still runs (issue 18): one mask each would pass
// bubblewrap's 9000 arguments, so directories holding nothing but masked files are masked whole
// (sensitive/host/mask-fit.ts). Every one of 3,500 planted secrets stays unreadable inside, beside its
// unsandboxed control; what cannot be fitted is refused before anything starts. Real bwrap via
// bin/sbx.js, and fitMasks on real trees.
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSensitiveRules } from '../../../src/sensitive/sensitive-files.js';
import { fitMasks } from '../../../src/sensitive/host/mask-fit.js';
import { scanMountedTrees } from '../../../src/sensitive/host/sensitive-scan.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { makeTempDir } from '../../helpers/tmp.js';

const COUNT = 3500;
const secret = (i: number) => `SBX-MANY-${i}-SECRET\n`;
/**
 * Reads every planted file by name (an awk expression of i), errors silenced: prints only what was
 * readable, then README.md. One cat for all of them: a loop of 3,500 processes takes a minute.
 */
const readAll = (path: string) => [
  'sh',
  '-c',
  `awk 'BEGIN { for (i = 0; i < ${COUNT}; i++) print ${path} }' | xargs cat 2>/dev/null; cat README.md`,
];

describe.skipIf(SKIP_INTEGRATION)('thousands of masked files (real bwrap via bin/sbx.js)', () => {
  let t: TestHost;
  const opts = (cwd: string) => ({ env: t.env, cwd, timeoutMs: 60_000 });
  const all = Array.from({ length: COUNT }, (_, i) => secret(i)).join('');

  function workspace(name: string, plant: (ws: string, i: number) => void): string {
    const ws = join(t.root, name);
    mkdirSync(ws);
    writeFileSync(join(ws, 'README.md'), 'readme\n');
    mkdirSync(join(ws, 'src'));
    writeFileSync(join(ws, 'src', 'index.js'), '');
    for (let i = 0; i < COUNT; i++) plant(ws, i);
    return ws;
  }

  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('many');
  });
  afterAll(() => t?.cleanup());

  it.each([
    {
      layout: "in one directory, the workspace's other files beside it",
      name: 'one-dir',
      plant: (ws: string, i: number) => {
        mkdirSync(join(ws, 'fixtures'), { recursive: true });
        writeFileSync(join(ws, 'fixtures', `.env.${i}`), secret(i));
      },
      path: '"fixtures/.env." i',
    },
    {
      layout: 'spread over directories',
      name: 'spread',
      plant: (ws: string, i: number) => {
        mkdirSync(join(ws, 'envs', `d${i % 50}`, `e${i}`), { recursive: true });
        writeFileSync(join(ws, 'envs', `d${i % 50}`, `e${i}`, '.env'), secret(i));
      },
      path: '"envs/d" i % 50 "/e" i "/.env"',
    },
  ])(
    `${COUNT} .env files $layout: runs, none readable`,
    async ({ name, plant, path }) => {
      const ws = workspace(name, plant);
      const probe = readAll(path);
      expect((await runHost(probe, opts(ws))).out).toBe(`${all}readme\n`);
      const inside = await runSbx(['--', ...probe], opts(ws));
      expect(inside.err).toBe('');
      expect(inside.out).toBe('readme\n');
      expect(inside.code).toBe(0);
    },
    120_000,
  );

  it(`${COUNT} .env files beside files the sandbox may read: refused before anything runs (125), naming the fix`, async () => {
    const ws = workspace('mixed', (ws, i) => {
      mkdirSync(join(ws, 'pkgs', `p${i}`), { recursive: true });
      writeFileSync(join(ws, 'pkgs', `p${i}`, '.env'), secret(i));
      writeFileSync(join(ws, 'pkgs', `p${i}`, 'package.json'), '{}\n');
    });
    const r = await runSbx(['--', 'touch', 'ran'], opts(ws));
    expect(r.code).toBe(125);
    expect(r.err).toMatch(
      /^sbx: error: the sandbox needs \d+ bwrap arguments, more than bubblewrap's limit of 9000 \(35\d\d masked paths, \d+ arguments;/,
    );
    expect(r.err).toContain('split the tree');
    expect(existsSync(join(ws, 'ran'))).toBe(false);
  }, 120_000);
});

describe('fitMasks on real trees', () => {
  const rules = compileSensitiveRules();
  const fitted = (root: string) => fitMasks(scanMountedTrees([root], rules).masks, [root]);

  it('masks whole only directories of masked files: never a scan root, nor one beside a file, symlink or empty directory', () => {
    const root = makeTempDir('sbx-fit-');
    const plant = (dir: string, n: number) => {
      mkdirSync(join(root, dir), { recursive: true });
      for (let i = 0; i < n; i++) writeFileSync(join(root, dir, `.env.${i}`), '');
    };
    plant('', 1000); // the root itself: its files stay masked one by one
    plant('with-file', 500);
    writeFileSync(join(root, 'with-file', 'notes.txt'), '');
    plant('with-link', 500);
    symlinkSync('.env.0', join(root, 'with-link', 'current'));
    plant('with-empty', 500);
    mkdirSync(join(root, 'with-empty', 'empty'));
    plant('only', 500);
    const masks = fitted(root);
    expect(masks.filter((m) => m.dir)).toEqual([{ path: join(root, 'only'), dir: true }]);
    expect(masks.filter((m) => !m.dir)).toHaveLength(2500);
    // Within the budget, the masks stay one per file.
    const small = makeTempDir('sbx-fit-small-');
    mkdirSync(join(small, 'only'));
    for (let i = 0; i < 100; i++) writeFileSync(join(small, 'only', `.env.${i}`), '');
    expect(fitted(small)).toHaveLength(100);
  });
});
