// The built-in sensitive-file globs (docs/DESIGN.md, "Sensitive roots and files"); their dialect is described
// in sensitive-files.ts, which compiles them. Data only: the runtime keys its cache of the compiled
// rules on these lists.

export const BUILTIN_MASK_GLOBS: readonly string[] = [
  '.env',
  '.env.*',
  '**/.env',
  '**/.env.*',
  '**/credentials.json',
  '**/*secret*',
  '**/*password*',
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
  // Remote URLs with embedded tokens (https://x-access-token:…@github.com), credential helpers.
  // Submodules keep theirs in .git/modules/<path>/config.
  '.git/config',
  '**/.git/config',
  '**/.git/modules/**/config',
];

/** Committed templates that name variables without values: never masked. */
export const BUILTIN_EXCEPT_GLOBS: readonly string[] = ['**/.env.example', '**/.env.sample', '**/.env.template', '**/.env.dist'];

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
export const DEFAULT_SKIP_DIRS: readonly string[] = ['**/.git/objects', '**/.git/lfs', '**/.git/refs', '**/.git/logs', '**/node_modules', '**/.venv'];
