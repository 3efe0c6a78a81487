// The built-in sensitive-file globs (docs/DESIGN.md, "Sensitive roots and files"); their dialect is described in sensitive-files.ts, which
// compiles them. Data only: the runtime keys its cache of the compiled rules on these lists.
//
// Decided by what a file is, not only by its name. A credential name (.env, a private key, a
// registry's token file) is masked wherever it is not tracked by git (git/host/tracked-files.ts
// checks the index). A name hint (*secret*, *password*) is weaker: `src/env/host/secrets.ts` is code
// that reads secrets, not one, so a hint masks only files that are not source code or docs
// (SOURCE_EXTENSIONS), and a directory named by a hint is searched, not hidden whole.

/** Credential files by name: masked unless git tracks them with this exact content. */
export const BUILTIN_MASK_GLOBS: readonly string[] = [
  '.env',
  '.env.*',
  '**/.env',
  '**/.env.*',
  '**/credentials.json',
  '**/*.pem',
  '**/*.key',
  '**/*.p12',
  '**/*.pfx',
  '**/id_rsa*',
  '**/id_ed25519*',
  '**/id_ecdsa*',
  '**/.npmrc',
  '**/.pypirc',
  '**/.netrc',
  '**/.git-credentials',
];

/** Name hints: masked only for data and config files (not SOURCE_EXTENSIONS), and only untracked. */
export const BUILTIN_HINT_GLOBS: readonly string[] = ['**/*secret*', '**/*password*'];

/**
 * Extensions of source code, scripts and docs (lowercase, no dot): a hint never masks these. Data
 * and config formats (.json .yaml .toml .ini .txt .sql .env ...) are not here: that is where a
 * `db-password.txt` or `client_secret.json` keeps its value.
 */
export const SOURCE_EXTENSIONS: readonly string[] = [
  'ts',
  'tsx',
  'mts',
  'cts',
  'js',
  'jsx',
  'mjs',
  'cjs',
  'map',
  'vue',
  'svelte',
  'astro',
  'py',
  'pyi',
  'pyx',
  'go',
  'rs',
  'java',
  'kt',
  'kts',
  'scala',
  'groovy',
  'gradle',
  'clj',
  'cljs',
  'c',
  'h',
  'cc',
  'cpp',
  'cxx',
  'hpp',
  'hh',
  'hxx',
  'm',
  'mm',
  'cs',
  'fs',
  'vb',
  'swift',
  'dart',
  'rb',
  'erb',
  'php',
  'pl',
  'pm',
  'lua',
  'r',
  'jl',
  'ex',
  'exs',
  'erl',
  'hrl',
  'hs',
  'ml',
  'mli',
  'elm',
  'nim',
  'zig',
  'v',
  'sv',
  'vhd',
  'sol',
  'proto',
  'graphql',
  'gql',
  'sh',
  'bash',
  'zsh',
  'fish',
  'ps1',
  'psm1',
  'bat',
  'cmd',
  'html',
  'htm',
  'css',
  'scss',
  'sass',
  'less',
  'md',
  'mdx',
  'markdown',
  'rst',
  'adoc',
  'tex',
];

/**
 * Git's own config files: not hidden but replaced by a view without credentials (git/git-config.ts),
 * so git inside still knows user.name, remotes and branches. Submodules keep theirs in
 * .git/modules/<path>/config. `config.worktree` is read too once the repository sets
 * extensions.worktreeConfig (`git sparse-checkout init` does), in a gitdir and in each linked
 * worktree's `.git/worktrees/<name>`: a hooksPath or fsmonitor written there runs on the host.
 */
export const BUILTIN_GIT_CONFIG_GLOBS: readonly string[] = [
  '.git/config',
  '**/.git/config',
  '**/.git/modules/**/config',
  '.git/config.worktree',
  '**/.git/config.worktree',
  '**/.git/modules/**/config.worktree',
  '**/.git/worktrees/*/config.worktree',
];

/** Committed templates that name variables without values: never masked (nor by a hint). */
export const BUILTIN_EXCEPT_GLOBS: readonly string[] = [
  '**/.env.example',
  '**/.env.sample',
  '**/.env.template',
  '**/.env.dist',
];

// Bound read-only over themselves, not hidden: git runs hooks on the host at the next commit or
// checkout, so a hook planted by a sandboxed build is code execution outside the sandbox. Git looks
// for a submodule's hooks in its own gitdir.
export const BUILTIN_PROTECT_GLOBS: readonly string[] = ['.git/hooks', '**/.git/hooks', '**/.git/modules/**/hooks'];

// Why pruning is a list and not an analysis of the globs: the built-ins start with `**/`, so for
// every directory D some rule matches D/.env; no directory can be proven empty of matches. These
// hold git's or a tool's own data, never a user's file, and they are large: objects and LFS blobs are
// content-addressed; refs and reflogs hold commit ids under branch names (a branch called
// fix-password-reset must not be masked: git would read an empty ref); node_modules/.cache holds
// build caches named by hash. Installed packages (node_modules, a Python .venv) are skipped too:
// they are published, public files (their test keys and sample .env files are nobody's secrets), and
// they are most of a project's entries: scanning node_modules would add ~100 ms to every launch.
export const DEFAULT_SKIP_DIRS: readonly string[] = [
  '**/.git/objects',
  '**/.git/lfs',
  '**/.git/refs',
  '**/.git/logs',
  '**/node_modules',
  '**/.venv',
];
