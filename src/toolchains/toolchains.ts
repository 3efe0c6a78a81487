// The user's own toolchains (nvm, pyenv, rustup, ...): which PATH entries inside HOME sbx shows
// read-only, and the toolchain root each belongs to. Pure: the runtime (toolchains/host/toolchain-probe.ts)
// resolves and pins the paths and checks their owners; this file only knows layouts, by the path
// relative to HOME, as the tools create them.
import { posix } from 'node:path';
import { isWithin } from '../path-within.js';
import type { Mount } from '../policy/types.js';

/** One known layout: a PATH entry's realpath (relative to HOME) → the roots it needs, relative to HOME. */
interface Layout {
  name: string;
  entry: RegExp;
  /** The roots to bind, from the match; `$1`, `$2` are its groups. */
  roots: readonly string[];
  /**
   * Variables pointing the tool at its root: the session HOME is not the host's under the landlock
   * backend (backend/landlock/assessment.ts privateDir), and these tools look for `$HOME/.name` by default.
   */
  env?: Readonly<Record<string, string>>;
  /** Roots that may be absent (a cargo bin with no rustup). */
  optional?: readonly string[];
}

/**
 * The layouts, first match wins. Roots are as narrow as the tool allows: a version directory rather
 * than the version manager's whole tree, `~/.cargo/bin` rather than `~/.cargo` (whose registry
 * and credentials stay out; cargo writes its caches to the session HOME).
 */
export const TOOLCHAIN_LAYOUTS: readonly Layout[] = [
  { name: 'nvm', entry: /^\.nvm\/versions\/node\/([^/]+)\/bin$/, roots: ['.nvm/versions/node/$1'] },
  {
    name: 'fnm',
    entry: /^(\.fnm|\.local\/share\/fnm)\/node-versions\/([^/]+)\/installation\/bin$/,
    roots: ['$1/node-versions/$2/installation'],
  },
  { name: 'volta', entry: /^\.volta\/bin$/, roots: ['.volta'], env: { VOLTA_HOME: '.volta' } },
  {
    name: 'pyenv',
    entry: /^\.pyenv\/(shims|bin|plugins\/[^/]+\/(shims|bin))$/,
    roots: ['.pyenv'],
    env: { PYENV_ROOT: '.pyenv' },
  },
  { name: 'pyenv', entry: /^\.pyenv\/versions\/([^/]+)\/bin$/, roots: ['.pyenv/versions/$1'] },
  {
    name: 'rbenv',
    entry: /^\.rbenv\/(shims|bin|plugins\/[^/]+\/bin)$/,
    roots: ['.rbenv'],
    env: { RBENV_ROOT: '.rbenv' },
  },
  { name: 'rbenv', entry: /^\.rbenv\/versions\/([^/]+)\/bin$/, roots: ['.rbenv/versions/$1'] },
  {
    name: 'rustup',
    entry: /^\.cargo\/bin$/,
    roots: ['.cargo/bin', '.rustup'],
    optional: ['.rustup'],
    env: { RUSTUP_HOME: '.rustup' },
  },
  { name: 'go', entry: /^go\/bin$/, roots: ['go/bin'] },
  { name: 'go', entry: /^(sdk\/go[^/]*|\.local\/go)\/bin$/, roots: ['$1'] },
  { name: 'sdkman', entry: /^\.sdkman\/candidates\/([^/]+)\/([^/]+)\/bin$/, roots: ['.sdkman/candidates/$1/$2'] },
  {
    name: 'asdf',
    entry: /^\.asdf\/(shims|bin)$/,
    roots: ['.asdf'],
    env: { ASDF_DIR: '.asdf', ASDF_DATA_DIR: '.asdf' },
  },
  {
    name: 'mise',
    entry: /^\.local\/share\/mise\/shims$/,
    roots: ['.local/share/mise'],
    env: { MISE_DATA_DIR: '.local/share/mise' },
  },
  {
    name: 'mise',
    entry: /^\.local\/share\/mise\/installs\/([^/]+)\/([^/]+)\/bin$/,
    roots: ['.local/share/mise/installs/$1/$2'],
  },
  { name: 'deno', entry: /^\.deno\/bin$/, roots: ['.deno/bin'] },
  { name: 'bun', entry: /^\.bun\/bin$/, roots: ['.bun/bin'] },
  { name: 'pnpm', entry: /^\.local\/share\/pnpm$/, roots: ['.local/share/pnpm'] },
  { name: 'pipx', entry: /^\.local\/share\/pipx\/venvs\/([^/]+)\/bin$/, roots: ['.local/share/pipx/venvs/$1'] },
  // Directories of links to tools elsewhere: the directory, and the links' targets (toolchains/host/toolchain-probe.ts).
  { name: 'local bin', entry: /^(\.local\/bin|bin)$/, roots: ['$1'] },
];

/**
 * Files inside toolchain roots that hold credentials under names the workspace rules do not know: a
 * node prefix's global npmrc (npm's `globalconfig`), pip's config in a venv or version root, cargo's
 * and others' credential files. Added to the sensitive-file scan of every toolchain root.
 */
export const TOOLCHAIN_SECRET_FILES: readonly string[] = [
  '/etc/npmrc',
  'pip.conf',
  'pip.ini',
  'credentials',
  'credentials.toml',
  '.pypirc',
  '.gem/credentials',
];

/**
 * Directories of a toolchain root its secret scan does not enter, like the workspace's node_modules
 * (DEFAULT_SKIP_DIRS in sensitive-globs.ts): installed packages and the toolchain's own documentation
 * and test suites, by far most of its files (rustup's docs alone are 50,000), none of them the user's
 * configuration. Shown unscanned.
 */
export const TOOLCHAIN_SKIP_DIRS: readonly string[] = [
  '**/share/doc',
  '**/share/man',
  '**/site-packages',
  '**/lib/python*/test',
  '**/lib/rustlib/src',
  '**/lib/ruby/gems',
];

/** Whether a layout's entries are directories of links whose targets the runtime follows. */
export function followsLinks(layout: string): boolean {
  return layout === 'local bin';
}

/**
 * Directories that hold the user's dotfiles wholesale, and HOME itself: a PATH entry there would
 * show every config file and token in them. Never bound, whatever the PATH says.
 */
const DOTFILE_CONTAINERS = ['', '.config', '.local', '.local/share', '.local/state', '.cache'];

export type LayoutMatch =
  | { kind: 'layout'; layout: string; roots: { path: string; optional: boolean }[]; env: Record<string, string> }
  | { kind: 'skip'; why: string };

/**
 * The layout of one PATH entry, given by its realpath: its roots (absolute) and variables, or why
 * it is not bound. An entry of no known layout is bound alone (its directory, not its parent).
 */
export function matchLayout(real: string, home: string): LayoutMatch {
  if (!isWithin(real, home))
    return { kind: 'skip', why: 'resolves outside HOME (system directories are bound already)' };
  const rel = posix.relative(home, real);
  if (DOTFILE_CONTAINERS.includes(rel))
    return { kind: 'skip', why: `${rel === '' ? 'HOME itself' : `~/${rel}`} holds your dotfiles: never bound` };
  const abs = (p: string) => posix.join(home, p);
  for (const layout of TOOLCHAIN_LAYOUTS) {
    const m = layout.entry.exec(rel);
    if (!m) continue;
    const fill = (p: string) => p.replace(/\$(\d)/g, (_, i: string) => m[Number(i)] ?? '');
    const roots = layout.roots.map((p) => ({ path: abs(fill(p)), optional: layout.optional?.includes(p) ?? false }));
    const env = Object.fromEntries(Object.entries(layout.env ?? {}).map(([k, v]) => [k, abs(v)]));
    return { kind: 'layout', layout: layout.name, roots, env };
  }
  return { kind: 'layout', layout: 'PATH entry', roots: [{ path: real, optional: false }], env: {} };
}

/** The PATH entries the runtime probes: absolute ones inside HOME, and fnm's per-shell links (they resolve into HOME). */
export function candidateEntries(pathVar: string | undefined, home: string, env: Record<string, string>): string[] {
  const runtimeDir = env.XDG_RUNTIME_DIR;
  const multishells = [
    posix.join(home, '.local/state/fnm_multishells'),
    ...(runtimeDir?.startsWith('/') ? [posix.join(posix.normalize(runtimeDir), 'fnm_multishells')] : []),
  ];
  const entries = (pathVar ?? '')
    .split(':')
    .filter((e) => e.startsWith('/') && !e.split('/').includes('..'))
    .map((e) => posix.normalize(e).replace(/(.)\/$/, '$1'))
    .filter((e) => isWithin(e, home) || multishells.some((dir) => isWithin(e, dir)));
  return [...new Set(entries)];
}

/** What the runtime found (Host.toolchains): each root pinned and owner-checked, each refusal with its reason. */
export interface ToolchainFacts {
  /** Realpaths to bind read-only at their own path; `entry` is the PATH entry (as written) that asked for it. */
  roots: { path: string; dir: boolean; layout: string; entry: string }[];
  skipped: ToolchainSkip[];
  /** PATH entries as written → their realpath (fnm's per-shell links, a symlinked ~/.local/bin). */
  resolved: Record<string, string>;
  /** Variables naming the bound roots (PYENV_ROOT, RUSTUP_HOME, ...). */
  env: Record<string, string>;
  /** Secret-looking files the scan of the roots found (masked: a git config too, never shown as a view). */
  masks: { path: string; dir: boolean }[];
}

export interface ToolchainSkip {
  entry: string;
  why: string;
}

/** The reason of a mask inside a toolchain root (policy/derive/overlay.ts maskSensitive). */
export const TOOLCHAIN_MASK_REASON = 'sensitive file in a toolchain';

/**
 * The toolchain binds: read-only, each at its own path (inside the private HOME under bwrap, a
 * grant of the host path under landlock). A root inside a credential store or the workspace is
 * left out here, whatever the runtime found (the workspace shows it already, with its own rules).
 */
export function toolchainMounts(
  facts: ToolchainFacts | undefined,
  keepOut: readonly string[],
  workspace: string,
): { mounts: Mount[]; skipped: ToolchainSkip[] } {
  if (!facts) return { mounts: [], skipped: [] };
  const skipped = [...facts.skipped];
  const mounts: Mount[] = [];
  for (const root of facts.roots) {
    const why = keepOut.some((k) => isWithin(root.path, k))
      ? 'lies in a credential store'
      : isWithin(root.path, workspace) || isWithin(workspace, root.path)
        ? 'overlaps the workspace'
        : undefined;
    if (why) skipped.push({ entry: root.entry, why: `${root.path} ${why}` });
    else {
      const reason = `toolchain (${root.layout}): PATH entry ${root.entry}`;
      mounts.push({
        kind: 'bind',
        source: root.path,
        target: root.path,
        access: 'ro',
        optional: false,
        reason,
        role: 'toolchain',
      });
    }
  }
  return { mounts, skipped };
}

/**
 * The sandbox PATH with each bound entry at its realpath (a link outside HOME, like fnm's per-shell
 * one, would not resolve inside), and the toolchains' variables unless the profile set them.
 */
export function applyToolchainEnv(vars: Record<string, string>, facts: ToolchainFacts | undefined): void {
  if (!facts) return;
  if (vars.PATH !== undefined)
    vars.PATH = vars.PATH.split(':')
      .map((e) => facts.resolved[e] ?? e)
      .join(':');
  for (const [name, value] of Object.entries(facts.env)) vars[name] ??= value;
}
