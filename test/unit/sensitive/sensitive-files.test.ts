// The sensitive-file rules (sensitive/sensitive-files.ts): each built-in masks what it should, name
// hints spare source code, git config files are classed apart, the templates stay readable, profile
// additions and their dialect, and the two shortcuts the scan relies on (canPrune, mayMatchName) are
// sound: they never skip an entry a rule would have caught.
import { describe, expect, it } from 'vitest';
import { compileSensitiveRules } from '../../../src/sensitive/sensitive-files.js';
import { BUILTIN_MASK_GLOBS, DEFAULT_SKIP_DIRS, SOURCE_EXTENSIONS } from '../../../src/sensitive/sensitive-globs.js';

const builtins = compileSensitiveRules();

describe('built-in masks', () => {
  // [rule, paths it masks (at the root and nested), a near miss it leaves alone]
  const table: [string, string[], string[]][] = [
    ['.env', ['.env', 'app/.env', 'a/b/c/.env'], ['env', '.envrc', 'app/env']],
    ['.env.*', ['.env.local', '.env.production', 'svc/.env.test'], ['.env-local', 'x.env.local']],
    ['credentials.json', ['credentials.json', 'gcp/credentials.json'], ['credentials.json.md', 'credentials.yaml']],
    ['*.pem', ['cert.pem', 'tls/server.pem', '.pem'], ['cert.pem.txt', 'pem']],
    ['*.key', ['server.key', 'a/b.key'], ['server.key.pub', 'keys', 'monkey']],
    ['*.p12', ['cert.p12', 'x/y.p12'], ['p12']],
    ['*.pfx', ['cert.pfx', 'x/y.pfx'], ['pfx']],
    ['id_rsa*', ['id_rsa', 'id_rsa.pub', 'deploy/id_rsa_backup'], ['my_id_rsa']],
    ['id_ed25519*', ['id_ed25519', '.ssh/id_ed25519.pub'], ['ed25519']],
    ['id_ecdsa*', ['id_ecdsa', 'k/id_ecdsa_sk'], ['ecdsa']],
    ['.npmrc', ['.npmrc', 'packages/a/.npmrc'], ['npmrc', '.npmrc.bak']],
    ['.pypirc', ['.pypirc', 'py/.pypirc'], ['pypirc']],
    ['.netrc', ['.netrc', 'h/.netrc'], ['netrc', '_netrc']],
    ['.git-credentials', ['.git-credentials', 'x/.git-credentials'], ['git-credentials']],
  ];

  it('covers every built-in glob', () => {
    const covered = table.map(([rule]) => rule);
    for (const glob of BUILTIN_MASK_GLOBS) {
      const bare = glob.replace(/^\*\*\//, '');
      expect(covered, glob).toContain(bare);
    }
  });

  it.each(table)('%s masks its matches, files and directories alike', (_rule, hits, misses) => {
    for (const path of hits) {
      expect(builtins.classify(path, false), path).toBe('mask');
      expect(builtins.classify(path, true), `${path} (dir)`).toBe('mask');
    }
    for (const path of misses) expect(builtins.classify(path, false), path).toBeUndefined();
  });

  it('name hints (*secret*, *password*) mask data and config files, never source code or docs', () => {
    const data = ['secret', 'client_secret.json', 'k8s/secrets.yaml', 'a/my-secret-file', '.secret'];
    data.push('db/password.txt', 'reset-passwords.csv', 'x.secret.env');
    for (const path of data) expect(builtins.classify(path, false), path).toBe('hint');
    const code = ['src/env/host/secrets.ts', 'src/profile/schema-secrets.ts', 'dist/secrets-3f2a.js'];
    code.push('dist/secrets-3f2a.js.map', 'lib/password_hash.py', 'PasswordReset.java', 'scripts/rotate-secrets.sh');
    code.push('docs/password-policy.md', 'x/secret.TS');
    for (const path of code) expect(builtins.classify(path, false), path).toBeUndefined();
    for (const near of ['Secret.txt', 'SECRETS', 'Password.java', 'passwd']) {
      expect(builtins.classify(near, false), near).toBeUndefined();
    }
    // A hinted directory is searched, not hidden: the scan classifies what it holds as hinted.
    expect(builtins.classify('k8s/secrets', true)).toBe('hint');
    expect(builtins.classify('k8s/secrets/db.yaml', false, true)).toBe('hint');
    expect(builtins.classify('src/secrets/index.ts', false, true)).toBeUndefined();
    expect(builtins.classify('k8s/secrets/.env.example', false, true)).toBeUndefined();
    expect(builtins.classify('k8s/secrets/tls.key', false, true)).toBe('mask');
    expect(SOURCE_EXTENSIONS).not.toContain('json');
  });

  it('git config files, in nested repositories and submodule gitdirs, are classed git-config', () => {
    const configs = ['.git/config', 'vendor/lib/.git/config', '.git/modules/sub/config', '.git/modules/a/b/config'];
    for (const path of configs) {
      expect(builtins.classify(path, false), path).toBe('git-config');
    }
    for (const path of ['config', 'git/config', '.git/config.bak', 'src/config']) {
      expect(builtins.classify(path, false), path).toBeUndefined();
    }
    // A profile glob that names it hides it whole.
    expect(compileSensitiveRules({ files: ['.git/config'] }).classify('.git/config', false)).toBe('mask');
  });

  it('never masks the committed templates, at any depth', () => {
    for (const name of ['.env.example', '.env.sample', '.env.template', '.env.dist']) {
      expect(builtins.classify(name, false), name).toBeUndefined();
      expect(builtins.classify(`services/api/${name}`, false), name).toBeUndefined();
    }
    // Only those exact names: a variant is still masked.
    expect(builtins.classify('.env.example.local', false)).toBe('mask');
  });

  it('protects git hooks (read-only, not hidden), in nested repos and submodule gitdirs', () => {
    for (const path of ['.git/hooks', 'vendor/x/.git/hooks', '.git/modules/sub/hooks', '.git/modules/a/b/hooks']) {
      expect(builtins.classify(path, true), path).toBe('protect');
      // A symlinked hooks dir (core setups link it to a tracked directory) is bound through the link.
      expect(builtins.classify(path, false), path).toBe('protect');
    }
    expect(builtins.classify('src/hooks', true)).toBeUndefined();
    expect(builtins.classify('.git/hooks/pre-commit', false)).toBeUndefined();
  });

  it('masking beats protection', () => {
    const rules = compileSensitiveRules({ files: ['.git/hooks'] });
    expect(rules.classify('.git/hooks', true)).toBe('mask');
  });

  it('an ordinary project tree is left alone', () => {
    for (const path of [
      'package.json',
      'src/index.ts',
      'README.md',
      'node_modules/react/index.js',
      'tsconfig.json',
      '.gitignore',
      '.github/workflows/ci.yml',
      'src/hooks/useAuth.ts',
      'config/app.yaml',
      '.git/HEAD',
    ]) {
      expect(builtins.classify(path, false), path).toBeUndefined();
    }
  });
});

describe('profile additions', () => {
  it('files are added to the built-ins; a pattern without a slash matches at any depth', () => {
    const rules = compileSensitiveRules({ files: ['*.sqlite', 'deploy/vault.yml'] });
    expect(rules.classify('db.sqlite', false)).toBe('mask');
    expect(rules.classify('data/dev/db.sqlite', false)).toBe('mask');
    expect(rules.classify('deploy/vault.yml', false)).toBe('mask');
    expect(rules.classify('other/deploy/vault.yml', false)).toBeUndefined();
    expect(rules.classify('.env', false)).toBe('mask');
  });

  it('braces that add a slash make a path pattern (anchored); ** matches any depth', () => {
    const rules = compileSensitiveRules({ files: ['{ops/vault,*.vault}.yml', 'private/**'] });
    expect(rules.classify('ops/vault.yml', false)).toBe('mask');
    expect(rules.classify('x/ops/vault.yml', false)).toBeUndefined();
    // `*.vault.yml` has a slash only through its sibling: still anchored, as minimatch expands first.
    expect(rules.classify('prod.vault.yml', false)).toBe('mask');
    expect(rules.classify('private/a/b/c.txt', false)).toBe('mask');
    expect(rules.classify('public/private', true)).toBeUndefined();
  });

  it('a leading / or ./ anchors to the tree root', () => {
    for (const pattern of ['/local.db', './local.db']) {
      const rules = compileSensitiveRules({ files: [pattern] });
      expect(rules.classify('local.db', false), pattern).toBe('mask');
      expect(rules.classify('sub/local.db', false), pattern).toBeUndefined();
    }
  });

  it('a trailing / matches directories (and symlinks, which may resolve to one) only', () => {
    const rules = compileSensitiveRules({ files: ['vault/'] });
    expect(rules.classify('vault', true)).toBe('mask');
    expect(rules.classify('ops/vault', true)).toBe('mask');
    expect(rules.classify('vault', false)).toBeUndefined();
  });

  it('except unmasks (reported as unmasked by the profile), and beats a built-in', () => {
    const rules = compileSensitiveRules({
      except: ['test/fixtures/**', '**/node_modules/@aws-sdk/client-secrets-manager'],
    });
    expect(rules.classify('test/fixtures/server.key', false)).toBe('unmasked');
    expect(rules.unmaskedBy('test/fixtures/server.key', false)).toBe('profile');
    expect(rules.classify('node_modules/@aws-sdk/client-secrets-manager', true)).toBe('unmasked');
    expect(rules.classify('src/server.key', false)).toBe('mask');
    expect(builtins.classify('node_modules/@aws-sdk/client-secrets-manager', true)).toBe('hint');
  });

  it('# and ! are name characters, not comments or negations', () => {
    const rules = compileSensitiveRules({ files: ['#notes', '!important'] });
    expect(rules.classify('#notes', false)).toBe('mask');
    expect(rules.classify('!important', false)).toBe('mask');
    expect(rules.classify('important', false)).toBeUndefined();
  });

  it('a POSIX class (compiled with the u flag) sits beside the built-ins (compiled without)', () => {
    const rules = compileSensitiveRules({ files: ['[[:digit:]]*.dump'] });
    expect(rules.classify('db/2024.dump', false)).toBe('mask');
    expect(rules.classify('db/x2024.dump', false)).toBeUndefined();
    expect(rules.classify('.git-credentials', false)).toBe('mask');
  });

  it('a glob naming no path is refused', () => {
    expect(() => compileSensitiveRules({ files: ['/'] })).toThrow(RangeError);
    expect(() => compileSensitiveRules({ skip: ['./'] })).toThrow(/names no path/);
  });
});

/** A seeded PRNG (mulberry32): the property checks below are random but reproducible. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Segments that exercise the rules: sensitive names, near misses, git and node_modules internals.
const SEGMENTS = [
  '.git',
  'objects',
  'lfs',
  'refs',
  'logs',
  'hooks',
  'config',
  'modules',
  'node_modules',
  '.cache',
  'src',
  'a',
  '.env',
  '.env.local',
  'env',
  'secret',
  'my-secret',
  'keys',
  'x.key',
  'password.txt',
  'id_rsa',
  'cert.pem',
  '.npmrc',
  'credentials.json',
  'lib',
  'ab',
  'pack',
];

function randomPath(next: () => number, maxDepth: number): string {
  const depth = 1 + Math.floor(next() * maxDepth);
  return Array.from({ length: depth }, () => SEGMENTS[Math.floor(next() * SEGMENTS.length)]!).join('/');
}

// Whether `dir` is a DEFAULT_SKIP_DIRS entry (each is `**/<tail>`) or inside one.
function isInDefaultSkip(dir: string): boolean {
  const tails = DEFAULT_SKIP_DIRS.map((g) => g.replace(/^\*\*\//, ''));
  const parts = dir.split('/');
  return parts.some((_, i) => {
    const prefix = parts.slice(0, i + 1).join('/');
    return tails.some((tail) => prefix === tail || prefix.endsWith(`/${tail}`));
  });
}

describe('pruning', () => {
  it('skips the default directories and everything below them, at any depth', () => {
    for (const dir of [
      '.git/objects',
      '.git/objects/ab',
      '.git/lfs/objects/12/34',
      '.git/refs/heads',
      '.git/logs',
      'sub/.git/objects',
      'node_modules',
      'node_modules/pkg',
      'packages/a/node_modules/.cache/babel',
      '.venv/lib',
    ]) {
      expect(builtins.canPrune(dir), dir).toBe(true);
    }
    for (const dir of [
      '.git',
      '.git/hooks',
      '.git/modules/x',
      'objects',
      'src/refs',
      '.cache',
      'node_modules_old',
      'venv',
    ]) {
      expect(builtins.canPrune(dir), dir).toBe(false);
    }
  });

  it('skip directories hold nothing a rule catches: what git and tools put there', () => {
    const realistic = [
      '.git/objects/ab/cdef0123456789abcdef0123456789abcdef01',
      '.git/objects/pack/pack-0123456789abcdef0123456789abcdef01234567.pack',
      '.git/objects/pack/pack-0123456789abcdef0123456789abcdef01234567.idx',
      '.git/objects/info/packs',
      '.git/objects/info/alternates',
      '.git/lfs/objects/ab/cd/abcd0123',
      '.git/lfs/tmp/abcd0123',
      '.git/refs/heads/main',
      '.git/refs/remotes/origin/HEAD',
      '.git/logs/HEAD',
      'node_modules/.cache/babel-loader/0123abcd.json',
    ];
    for (const path of realistic) expect(builtins.classify(path, false), path).toBeUndefined();
  });

  it('random directories: canPrune only inside a default skip dir; everywhere else a rule can match below', () => {
    const next = prng(0x5b5);
    for (let i = 0; i < 5000; i++) {
      const dir = randomPath(next, 6);
      if (builtins.canPrune(dir)) {
        expect(isInDefaultSkip(dir), dir).toBe(true);
      } else {
        expect(isInDefaultSkip(dir), dir).toBe(false);
        // Why the globs cannot prune: a leading **/ reaches every directory.
        expect(builtins.classify(`${dir}/.env`, false), dir).toBe('mask');
      }
    }
  });

  it('a profile may skip more (a build output directory, at any depth)', () => {
    expect(builtins.canPrune('target')).toBe(false);
    expect(builtins.classify('target/.env', false)).toBe('mask');
    const rules = compileSensitiveRules({ skip: ['target'] });
    expect(rules.canPrune('target')).toBe(true);
    expect(rules.canPrune('crates/web/target')).toBe(true);
    expect(rules.canPrune('target/debug/build')).toBe(true);
    expect(rules.canPrune('src')).toBe(false);
  });
});

describe('mayMatchName (the scan skips building paths for names it rejects)', () => {
  const ruleSets = {
    builtins,
    'profile with classes and braces': compileSensitiveRules({ files: ['*.{sqlite,db}', 'dump-[0-9]*.sql', 'vault/'] }),
  };

  it.each(Object.entries(ruleSets))('%s: rejects ordinary names', (_label, rules) => {
    for (const name of ['index.js', 'package.json', 'README.md', 'src', 'lib', 'main.go'])
      expect(rules.mayMatchName(name), name).toBe(false);
  });

  it.each(Object.entries(ruleSets))(
    '%s: sound on random paths (classify says something ⇒ the name passed)',
    (_label, rules) => {
      const next = prng(0xbeef);
      const extra = ['db.sqlite', 'x.db', 'dump-1.sql', 'dump-.sql', 'vault', 'hooks'];
      let classified = 0;
      for (let i = 0; i < 5000; i++) {
        const parent = randomPath(next, 4);
        const name =
          next() < 0.2 ? extra[Math.floor(next() * extra.length)]! : SEGMENTS[Math.floor(next() * SEGMENTS.length)]!;
        for (const isDir of [false, true]) {
          if (rules.classify(`${parent}/${name}`, isDir) !== undefined) {
            classified++;
            expect(rules.mayMatchName(name), name).toBe(true);
          }
        }
      }
      expect(classified).toBeGreaterThan(1000);
    },
  );

  it('passes every name when a rule ends in ** (no literal to look for)', () => {
    const rules = compileSensitiveRules({ files: ['private/**'] });
    expect(rules.mayMatchName('index.js')).toBe(true);
    expect(rules.classify('private/index.js', false)).toBe('mask');
  });

  it('passes every name for syntax it does not parse (extglob, escapes, odd classes)', () => {
    for (const pattern of ['+(a|b).txt', 'x\\*y', '[]a]']) {
      expect(compileSensitiveRules({ files: [pattern] }).mayMatchName('index.js'), pattern).toBe(true);
    }
  });
});
