// The repository explains itself only while the files its comments and docs name exist: a file moved
// or split leaves every "(see src/…/x.ts)" behind it pointing nowhere. This reads the comments of
// src/, native/, scripts/, bench/ and bin/, and docs/ and README.md whole, takes every path that
// starts at the repository's root (`src/…`, `native/…`) or at a folder of src/ (`git/host/walk.ts`,
// as the code's comments write them), and every TypeScript path whatever its first folder (a folder
// that was renamed is no longer a root), and checks a file of the repository ends with it.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../helpers/paths.js';

const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', 'golden', 'fixtures']);

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (SKIP_DIRS.has(e.name)) return [];
    const path = join(dir, e.name);
    return e.isDirectory() ? walk(path) : [relative(REPO_ROOT, path)];
  });
}

const FILES = walk(REPO_ROOT);
const KNOWN = new Set(FILES);
const named = (token: string) => KNOWN.has(token) || FILES.some((f) => f.endsWith(`/${token}`));

/** Where a path the repository means can start: its own top folders and the folders of src/. */
const ROOTS = new Set([
  ...['src', 'test', 'docs', 'native', 'scripts', 'bench', 'bin', 'profiles', 'schema', '.ci'],
  ...readdirSync(join(REPO_ROOT, 'src'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name),
]);

/** Paths that name another project's file, or a user's in an example: not this repository's. */
const EXAMPLES = new Set([
  // README, "Sensitive files": a workspace's source file whose name says "secrets" is not masked.
  'src/secrets.ts',
  // src/seccomp/sets.ts: Docker's default seccomp profile, in the moby repository.
  'profiles/seccomp/default.json',
]);

const TOKEN =
  /(?<![\w@.:/$-])((?:\.[\w-]+|[A-Za-z_][\w-]*)(?:\/[\w.-]+)+\.(?:ts|c|h|cjs|mjs|md|sh|yml|yaml|json))(?![\w/-])/g;

/** The comments of a source file (line and block), or a document whole. */
function prose(file: string): string {
  const text = readFileSync(join(REPO_ROOT, file), 'utf8');
  if (file.endsWith('.md')) return text;
  const block = [...text.matchAll(/\/\*[\s\S]*?\*\//g)].map((m) => m[0]);
  const line = [...text.matchAll(/(?:^|\s)(\/\/.*|#.*)$/gm)].map((m) => m[1]!);
  return [...block, ...line].join('\n');
}

const READ = FILES.filter(
  (f) =>
    (/^(src|native|scripts|bench|bin|\.ci)\//.test(f) && /\.(ts|c|h|cjs|mjs|js|sh)$|\/run$/.test(f)) ||
    (/^docs\/[^/]+\.md$/.test(f) && !f.includes('CHANGELOG')) ||
    f === 'README.md',
);

/** Every path a text names that starts where the repository's paths start, and names no file of it. */
function danglingIn(text: string): string[] {
  return [...text.matchAll(TOKEN)]
    .map((m) => m[1]!)
    .filter((token) => ROOTS.has(token.split('/')[0]!) || /\.(ts|cjs|mjs)$/.test(token))
    .filter((token) => !EXAMPLES.has(token) && !token.startsWith('dist/'))
    .filter((token) => !named(token));
}

const dangling = (file: string) => danglingIn(prose(file));

describe('paths named in comments and docs', () => {
  it('reads the places it claims to (the check is not vacuous)', () => {
    expect(READ).toEqual(expect.arrayContaining(['README.md', 'docs/ARCHITECTURE.md', 'native/sbx-landlock.c']));
    expect(READ.filter((f) => f.startsWith('src/')).length).toBeGreaterThan(200);
  });

  it.each(READ)('%s names only files that exist', (file) => {
    expect(dangling(file)).toEqual([]);
  });

  it('control: a moved file is caught, an example or a header is not', () => {
    const text = 'see src/runtime/exec.ts and runtime/pins.ts, <linux/filter.h>, src/secrets.ts, git/host/walk.ts';
    expect(danglingIn(text)).toEqual(['src/runtime/exec.ts', 'runtime/pins.ts']);
  });
});
