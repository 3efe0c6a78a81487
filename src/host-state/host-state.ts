// The invoking user's host state that no sandbox may write: sbx's own directories (profiles, trust
// pins, approvals, ledger, caches) and every file a host shell or tool runs later (shell startup
// files, PATH directories, git and package-manager configs that run code). Pure: the runtime resolves
// each path to its chain of directory identities (host/path-chain.ts) and derivePolicy refuses any
// writable bind that overlaps one (docs/SECURITY.md, "sbx's own state").
//
// Protecting such a path *by path* is not enough: a sandbox that can write a parent directory renames
// it, the read-only bind or mask moves with it, and the sandbox recreates the path empty, owned by the
// caller's uid, so it passes every owner and mode check. So the rule is about trees: no writable bind
// may contain one of these paths or lie inside one. HOME itself may hold writable binds (a project
// under ~ is the common case), but no writable bind may contain HOME.
import { posix } from 'node:path';
import { SbxError } from '../errors.js';
import { keySource } from '../profile/positions.js';
import { xdgDirs } from '../policy/user-dirs.js';

/** Relative to a home directory: what the host runs or reads as configuration later, and why. */
const HOST_RUN_PATHS: readonly (readonly [string, string])[] = [
  ...[
    '.profile',
    '.bash_profile',
    '.bash_login',
    '.bashrc',
    '.bash_logout',
    '.bash_aliases',
    '.zshenv',
    '.zprofile',
    '.zshrc',
    '.zlogin',
    '.zlogout',
    '.kshrc',
    '.mkshrc',
    '.cshrc',
    '.tcshrc',
    '.login',
    '.logout',
    '.config/fish',
    '.inputrc',
  ].map((p) => [p, 'a shell startup file'] as const),
  ...[
    '.xprofile',
    '.xsession',
    '.xsessionrc',
    '.xinitrc',
    '.pam_environment',
    '.config/autostart',
    '.config/environment.d',
    '.config/systemd',
    '.local/share/applications',
  ].map((p) => [p, 'run at login or by the desktop'] as const),
  ...['bin', '.local/bin', '.cargo/bin', 'go/bin', '.deno/bin', '.bun/bin'].map(
    (p) => [p, 'programs on your PATH'] as const,
  ),
  ['.local/lib', "Python's user site (a .pth file runs at every python start)"],
  ...['.npm/_npx', '.cargo/registry', '.cargo/git', 'go/pkg/mod'].map(
    (p) => [p, 'a package cache whose code the host runs without checking it again'] as const,
  ),
  ...['.gdbinit', '.ipython', '.jupyter', '.pythonrc', '.pythonrc.py', '.irbrc', '.psqlrc', '.sqliterc'].map(
    (p) => [p, 'read by an interactive tool, which runs what it says'] as const,
  ),
  ...['.gitconfig', '.config/git'].map((p) => [p, "git's configuration (hooks, aliases, helpers run code)"] as const),
  ...[
    '.npmrc',
    '.yarnrc',
    '.yarnrc.yml',
    '.config/pip',
    '.pip',
    '.pydistutils.cfg',
    '.cargo/config.toml',
    '.cargo/config',
    '.m2',
    '.gradle',
    '.condarc',
    '.bunfig.toml',
  ].map((p) => [p, "a package manager's configuration (it runs code)"] as const),
  ...['.vimrc', '.vim', '.config/nvim', '.emacs', '.emacs.d', '.config/emacs', '.vscode', '.config/Code'].map(
    (p) => [p, "an editor's configuration or extensions"] as const,
  ),
  ...['.tmux.conf', '.config/tmux', '.screenrc', '.direnvrc', '.config/direnv'].map(
    (p) => [p, 'read by a terminal tool, which runs what it says'] as const,
  ),
  ...[
    '.nvm',
    '.fnm',
    '.volta',
    '.pyenv',
    '.rbenv',
    '.rustup',
    '.sdkman',
    '.asdf',
    '.local/share/mise',
    '.local/share/fnm',
  ].map((p) => [p, 'a toolchain the host runs'] as const),
];

export interface HostStatePath {
  /** Absolute, as written (before symlinks are resolved). */
  path: string;
  /** What it is, for the refusal: "sbx's own state", "a shell startup file", ... */
  what: string;
  /** `contents`: only a bind that contains the path is refused (HOME); `tree`: inside it too. */
  scope: 'tree' | 'contents';
  /** The fix, when it is not the general one (a profile file: pin it). */
  hint?: string;
  /** A directory of a few configuration files whose files are checked for hard links (host-state/host/host-state-links.ts). */
  linkWalk?: boolean;
}

/**
 * A protected file's other name inside a writable tree (a hard link: the same inode), or, without
 * `other`, a search for its other names that stopped at `maxEntries` (host-state/host/host-state-links.ts).
 */
export interface HostStateLink {
  /** The protected file, as protected (~/.bashrc). */
  path: string;
  what: string;
  /** The writable tree searched (a bind's realpath). */
  tree: string;
  other?: string;
  nlink?: number;
  maxEntries?: number;
}

/**
 * The profile files of this run that were trusted on their owner and mode alone (named by path, outside
 * the trees the trust check knew of: profile/host/trust.ts). Lying in a tree this run writes, such a file
 * would be rewritten by the sandbox and obeyed by the next run, so that run is refused instead, unless
 * the chain is pinned (`sbx trust`, --trust-profile), which judgeTrust then reports as trusted.
 */
export function profileFileState(files: readonly string[], hash: string): HostStatePath[] {
  return files.map((path) => ({
    path,
    what: 'a profile file this run uses, trusted on its owner and mode alone',
    scope: 'tree',
    hint: `review it, then pin it: sbx trust ${path} (CI: --trust-profile ${hash}); or keep it outside every writable tree`,
  }));
}

function under(home: string, rel: string): string {
  return home === '/' ? `/${rel}` : `${home}/${rel}`;
}

/**
 * Every path no writable bind may overlap (and sbx's session directories, `sessionBase`), for each home the user has (the environment's HOME and
 * the passwd entry's, when they differ: a run with HOME pointed elsewhere must not reach the files
 * the next ordinary login runs) and for the XDG directories sbx itself uses.
 */
/** Where the running sbx and the Node.js running it live: code and built-in policy the next launch runs. */
export interface OwnInstall {
  /** sbx's package root (dist/, bin/, profiles/, native/): a built-in profile is policy. */
  packageRoot: string;
  /** The directory of the Node.js binary that runs sbx. */
  nodeDir: string;
}

export function hostStatePaths(
  homes: readonly string[],
  env: Record<string, string>,
  sessionBase?: string,
  install?: OwnInstall,
): HostStatePath[] {
  const out = new Map<string, HostStatePath>();
  const add = (path: string, what: string, scope: HostStatePath['scope'], linkWalk = false) => {
    if (!out.has(path)) out.set(path, { path, what, scope, ...(linkWalk ? { linkWalk } : {}) });
  };
  const ownDirs = (dirs: ReturnType<typeof xdgDirs>) => {
    add(posix.join(dirs.configHome, 'sbx'), "sbx's own profiles and secrets", 'tree', true);
    add(posix.join(dirs.stateHome, 'sbx'), "sbx's own state (trust pins, approvals, audit ledger)", 'tree', true);
    add(posix.join(dirs.configHome, 'git'), "git's configuration (hooks, aliases, helpers run code)", 'tree', true);
    add(
      posix.join(dirs.cacheHome, 'sbx'),
      "sbx's own caches (profiles, rules, toolchain scans, Node's compiled code)",
      'tree',
    );
  };
  for (const home of homes) add(home, 'your home directory', 'contents');
  // Every run's mask source and proxy sockets live there (host/session.ts).
  if (sessionBase !== undefined) add(sessionBase, "sbx's session directories", 'tree');
  // A sandbox that rewrote sbx's dist/ or a built-in profile would run, or set the policy, on the
  // host at the next launch: sbx installed inside the project it sandboxes (a checkout, or the
  // project's own node_modules) cannot sandbox that project writable.
  if (install) {
    add(install.packageRoot, "sbx's own code and built-in profiles, which the next sbx launch runs", 'tree');
    add(install.nodeDir, 'the Node.js that runs sbx', 'tree');
  }
  // The environment's XDG dirs are the ones this run reads; the spec's defaults in every home are the
  // ones a later run with an ordinary environment reads.
  if (homes[0] !== undefined) ownDirs(xdgDirs(env, homes[0]));
  for (const home of homes) {
    ownDirs(xdgDirs({}, home));
    for (const [rel, what] of HOST_RUN_PATHS) add(under(home, rel), what, 'tree');
  }
  return [...out.values()];
}

/** Where a path lies: device:inode of `/` and each directory down to it (the path itself last). */
export interface PathChain {
  ids: string[];
  /** Whether the last id is the path itself (false: the path is missing; ids end at its deepest existing ancestor). */
  exists: boolean;
}

export interface HostStateFact extends HostStatePath {
  chain: PathChain;
}

export interface WritableBind {
  /** The profile key or flag it comes from, for the message. */
  where: string;
  /** The host path as requested, and its realpath (what is mounted). */
  path: string;
  real: string;
}

/**
 * Refuses every writable bind that contains a protected path or lies inside one. Identities, not
 * paths, are compared, so a symlink or a second mount of the same tree cannot hide an overlap.
 * `chains` holds the chain of every writable bind's realpath; one missing is an error, never "fine".
 */
export function refuseWritableHostState(
  binds: readonly WritableBind[],
  state: readonly HostStateFact[],
  chains: Readonly<Record<string, PathChain>>,
): void {
  for (const bind of binds) {
    const chain = chains[bind.real];
    if (!chain?.exists) {
      throw new SbxError('HOST_STATE_WRITABLE', `${bind.where}: ${bind.real} was not probed for sbx's own state`, {
        hint: 'this is a bug in sbx: please report it with the command line',
      });
    }
    const self = chain.ids.at(-1)!;
    for (const p of state) {
      const own = p.chain.exists ? p.chain.ids.at(-1) : undefined;
      const contains = p.chain.ids.includes(self);
      const inside = p.scope === 'tree' && own !== undefined && chain.ids.includes(own);
      if (contains || inside)
        throw hostStateError(bind, p, contains ? (own === self ? 'is' : 'contains') : 'lies inside');
    }
  }
}

/**
 * Refuses a run whose writable trees hold a second name of a protected file (a hard link), naming
 * both, or in which the search for such names stopped at its bound (host-state/host/host-state-links.ts).
 */
export function refuseLinkedHostState(links: readonly HostStateLink[], binds: readonly WritableBind[]): void {
  // The runtime searched every tree it probed as writable; only the ones this mode binds writable count.
  const link = links.find((l) => binds.some((b) => b.real === l.tree));
  if (!link) return;
  const where = binds.find((b) => b.real === link.tree)!.where;
  const source = keySource(where);
  if (link.other !== undefined) {
    throw new SbxError(
      'HOST_STATE_WRITABLE',
      `${where}: ${link.other} is a hard link to ${link.path} (${link.what}): the sandbox would rewrite it through that name, and your shell or sbx would use it later`,
      {
        hint: `give ${link.other} its own copy (cp --remove-destination ${link.path} ${link.other}), or keep it outside the writable trees`,
        ...(source ? { source } : {}),
      },
    );
  }
  throw new SbxError(
    'HOST_STATE_WRITABLE',
    `${where}: ${link.path} (${link.what}) has ${link.nlink} links, and the search of ${link.tree} for the others stopped at ${link.maxEntries} entries`,
    {
      hint: `find ${link.tree} -samefile ${link.path}, and give each name found its own copy; or make ${link.path} a file with one link`,
      ...(source ? { source } : {}),
    },
  );
}

function hostStateError(bind: WritableBind, p: HostStateFact, relation: 'is' | 'contains' | 'lies inside'): SbxError {
  const shown = bind.path === bind.real ? bind.path : `${bind.path} (${bind.real})`;
  const what = relation === 'is' ? `is ${p.what}` : `${relation} ${p.path} (${p.what})`;
  const message = `${bind.where}: ${shown} ${what}, which no sandbox may write: it decides what sbx or your shell runs later`;
  const hint = p.hint
    ? p.hint
    : p.what.startsWith("sbx's own code")
      ? 'run an sbx installed outside this project (npm install -g sbx-sandbox, or ./install.sh from a checkout elsewhere)'
      : bind.where === 'workspace'
        ? 'run sbx from a project directory (cd ~/src/proj) or pass --workspace DIR; with HOME inside the workspace (HOME=$PWD in CI), point HOME elsewhere first'
        : 'bind a directory only the sandbox uses (not one your tools read or run from later), or bind it read-only';
  const source = keySource(bind.where);
  return new SbxError('HOST_STATE_WRITABLE', message, { hint, ...(source ? { source } : {}) });
}
