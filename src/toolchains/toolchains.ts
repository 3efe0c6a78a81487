// The user's own toolchains (nvm, pyenv, rustup, a virtualenv, a CI tool cache, ...): which PATH
// entries sbx shows read-only, and the toolchain root each belongs to. Pure: the runtime
// (toolchains/host/toolchain-probe.ts) resolves and pins the paths, checks their owners and reads what
// lies beside them (a virtualenv's pyvenv.cfg); this file only knows layouts, by the path relative to
// HOME or to the runner's tool cache, as the tools create them.
import { posix } from 'node:path';
import { isWithin } from '../path-within.js';
import { FORBIDDEN_ROOTS } from '../policy/derive/bind-checks.js';
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
  // uv's own Pythons, which the virtualenvs uv creates link to (their bin/ alone lacks lib/).
  { name: 'uv', entry: /^\.local\/share\/uv\/python\/([^/]+)\/bin$/, roots: ['.local/share/uv/python/$1'] },
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

/** A PATH entry `bin/` beside a `pyvenv.cfg`: a virtualenv (venv, virtualenvwrapper, Poetry, Pipenv). */
export const VIRTUALENV = 'virtualenv';
/** An entry of no known layout: bound alone. */
const UNKNOWN = 'PATH entry';

/**
 * Whether a layout's entries are directories of links whose targets the runtime follows: a virtualenv's
 * `python` links to the interpreter it was made from, which may be a toolchain in HOME (pyenv, uv).
 */
export function followsLinks(layout: string): boolean {
  return layout === 'local bin' || layout === VIRTUALENV;
}

/**
 * Whether the layout was read from the disk rather than from the path (an unknown directory, a
 * virtualenv found by its pyvenv.cfg): such an entry is bound only where it is written, never
 * through a link, which could make any directory in HOME look like one.
 */
export function isFoundOnDisk(layout: string): boolean {
  return layout === UNKNOWN || layout === VIRTUALENV;
}

/**
 * Directories that hold the user's dotfiles wholesale, and HOME itself: a PATH entry there would
 * show every config file and token in them. Never bound, whatever the PATH says.
 */
const DOTFILE_CONTAINERS = ['', '.config', '.local', '.local/share', '.local/state', '.cache'];

export type LayoutMatch =
  | { kind: 'layout'; layout: string; roots: { path: string; optional: boolean }[]; env: Record<string, string> }
  /** `shown`: the entry is visible anyway (a system directory, the workspace): nothing is missing. */
  | { kind: 'skip'; why: string; shown?: true };

/** Which PATH entries a profile shows: `toolchains: true` both kinds, `machine` those outside HOME only. */
export interface ToolchainReach {
  home: boolean;
  outside: boolean;
}

export function reachOf(setting: boolean | 'machine' | undefined): ToolchainReach | undefined {
  if (setting === true) return { home: true, outside: true };
  return setting === 'machine' ? { home: false, outside: true } : undefined;
}

/** What places a PATH entry besides its own path: facts the runtime read once per run. */
export interface LayoutScope {
  home: string;
  reach: ToolchainReach;
  /** The system binds, as written and as real paths: an entry there is shown already. */
  system: readonly string[];
  /** The runner's tool cache (RUNNER_TOOL_CACHE), real path: setup-node and setup-python install there. */
  toolCache?: string | undefined;
}

/** What the runtime read beside one entry. */
export interface BesideEntry {
  /** A regular `pyvenv.cfg` lies in the entry's parent, and the entry is named `bin`. */
  venv?: boolean;
  /** $VIRTUAL_ENV's real path: kept for the sandbox when it names the virtualenv bound. */
  virtualEnv?: string | undefined;
}

/** Why an entry in HOME is not shown under `toolchains: machine`. */
const HOME_KEPT_PRIVATE = 'in HOME, which toolchains: machine keeps private';

/**
 * The kernel's trees and the runtime state under /run: a tool never lives there, and a read-only bind
 * does not stop connect() on a unix socket (docker.sock, the system bus), which lie there.
 */
const RUNTIME_TREES = ['/proc', '/sys', '/dev', '/run'];

/**
 * A GitHub runner's tool cache holds `TOOL/VERSION/ARCH` trees (actions/toolkit's tool-cache, used by
 * setup-node, setup-python, setup-go, setup-java): the PATH names `ARCH/bin` (setup-python also `ARCH`),
 * and the tool needs the whole tree (node's lib/node_modules/npm, python's lib/).
 */
function toolCacheRoot(real: string, cache: string): string | undefined {
  if (!isWithin(real, cache) || real === cache) return undefined;
  const m = /^([^/]+\/[^/]+\/[^/]+)(\/bin)?$/.exec(posix.relative(cache, real));
  return m ? posix.join(cache, m[1]!) : undefined;
}

/** An entry outside HOME: shown already (system), never bound (it holds HOME or the system), or its root. */
function matchOutside(real: string, scope: LayoutScope): LayoutMatch {
  if (scope.system.some((s) => isWithin(real, s)))
    return { kind: 'skip', why: 'a system directory, shown already', shown: true };
  if (!scope.reach.outside) return { kind: 'skip', why: 'resolves outside HOME, which this profile does not show' };
  if (isWithin(scope.home, real)) return { kind: 'skip', why: 'holds HOME: never bound' };
  if (RUNTIME_TREES.some((t) => isWithin(real, t)))
    return { kind: 'skip', why: "in the kernel's or the runtime's state (/proc, /sys, /dev, /run): never bound" };
  // Nor /var or /run whole: daemons' sockets (LXD's, containerd's) lie below them.
  if ([...scope.system, ...FORBIDDEN_ROOTS].some((s) => isWithin(s, real)))
    return { kind: 'skip', why: 'holds system directories: never bound' };
  const cached = scope.toolCache === undefined ? undefined : toolCacheRoot(real, scope.toolCache);
  if (cached) return { kind: 'layout', layout: 'tool cache', roots: [{ path: cached, optional: false }], env: {} };
  return { kind: 'layout', layout: UNKNOWN, roots: [{ path: real, optional: false }], env: {} };
}

/**
 * The layout of one PATH entry, given by its realpath: its roots (absolute) and variables, or why
 * it is not bound. An entry of no known layout is bound alone (its directory, not its parent),
 * unless it is a virtualenv's bin/, whose root python needs (pyvenv.cfg, lib/).
 */
export function matchLayout(real: string, scope: LayoutScope, beside: BesideEntry = {}): LayoutMatch {
  const { home } = scope;
  const found = isWithin(real, home) ? matchInHome(real, scope) : matchOutside(real, scope);
  if (found.kind !== 'layout' || found.layout !== UNKNOWN || !beside.venv) return found;
  const root = posix.dirname(real);
  // The root of a venv must itself be a place a root may be (not HOME, ~/.local, a system directory).
  const place = matchLayout(root, scope);
  if (place.kind === 'skip') return { kind: 'skip', why: `its virtualenv ${root}: ${place.why}` };
  const env: Record<string, string> = beside.virtualEnv === root ? { VIRTUAL_ENV: root } : {};
  return { kind: 'layout', layout: VIRTUALENV, roots: [{ path: root, optional: false }], env };
}

function matchInHome(real: string, scope: LayoutScope): LayoutMatch {
  const { home } = scope;
  const rel = posix.relative(home, real);
  if (DOTFILE_CONTAINERS.includes(rel))
    return { kind: 'skip', why: `${rel === '' ? 'HOME itself' : `~/${rel}`} holds your dotfiles: never bound` };
  if (!scope.reach.home) return { kind: 'skip', why: HOME_KEPT_PRIVATE };
  const abs = (p: string) => posix.join(home, p);
  for (const layout of TOOLCHAIN_LAYOUTS) {
    const m = layout.entry.exec(rel);
    if (!m) continue;
    const fill = (p: string) => p.replace(/\$(\d)/g, (_, i: string) => m[Number(i)] ?? '');
    const roots = layout.roots.map((p) => ({ path: abs(fill(p)), optional: layout.optional?.includes(p) ?? false }));
    const env = Object.fromEntries(Object.entries(layout.env ?? {}).map(([k, v]) => [k, abs(v)]));
    return { kind: 'layout', layout: layout.name, roots, env };
  }
  return { kind: 'layout', layout: UNKNOWN, roots: [{ path: real, optional: false }], env: {} };
}

/**
 * The facts a profile may use: with `toolchains: machine` nothing in HOME, whatever the facts hold (the
 * runtime probes only what the profile shows; a library caller's Host is held to it here too).
 */
export function factsWithinReach(facts: ToolchainFacts, reach: ToolchainReach, home: string): ToolchainFacts {
  if (reach.home) return facts;
  const inHome = (path: string) => isWithin(path, home);
  const why = HOME_KEPT_PRIVATE;
  const outside = (record: Record<string, string>) =>
    Object.fromEntries(Object.entries(record).filter(([, v]) => !inHome(v)));
  return {
    roots: facts.roots.filter((r) => !inHome(r.path)),
    skipped: [
      ...facts.skipped,
      ...[...new Set(facts.roots.filter((r) => inHome(r.path)).map((r) => r.entry))].map((entry) => ({ entry, why })),
    ],
    resolved: outside(facts.resolved),
    env: outside(facts.env),
    masks: facts.masks.filter((m) => !inHome(m.path)),
  };
}

/**
 * The PATH entries the runtime probes: absolute ones inside HOME, fnm's per-shell links (they resolve
 * into HOME) and, when the profile shows them, those outside HOME; not those the system binds show
 * as written, nor the kernel's trees.
 */
export function candidateEntries(
  pathVar: string | undefined,
  scope: LayoutScope,
  env: Record<string, string>,
): string[] {
  const { home } = scope;
  const runtimeDir = env.XDG_RUNTIME_DIR;
  const multishells = [
    posix.join(home, '.local/state/fnm_multishells'),
    ...(runtimeDir?.startsWith('/') ? [posix.join(posix.normalize(runtimeDir), 'fnm_multishells')] : []),
  ];
  const outside = (e: string) =>
    scope.reach.outside && ![...scope.system, ...RUNTIME_TREES].some((s) => isWithin(e, s));
  const entries = (pathVar ?? '')
    .split(':')
    .filter((e) => e.startsWith('/') && !e.split('/').includes('..'))
    .map((e) => posix.normalize(e).replace(/(.)\/$/, '$1'))
    .filter((e) => isWithin(e, home) || multishells.some((dir) => isWithin(e, dir)) || outside(e));
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
  /** Visible anyway (the workspace, a system directory): nothing is missing, so never named as dropped. */
  shown?: true;
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
 * The PATH entries the sandbox will not see, each with why, as one line (the CLI says it once per host:
 * report/host/notices.ts); none when every entry is shown. `sbx explain` lists them too.
 */
export function droppedPathNotice(skipped: readonly ToolchainSkip[] | undefined): string[] {
  const byWhy = new Map<string, string[]>();
  for (const s of skipped ?? []) if (!s.shown) byWhy.set(s.why, [...(byWhy.get(s.why) ?? []), s.entry]);
  if (byWhy.size === 0) return [];
  const shown = [...byWhy].map(([why, entries]) => `${[...new Set(entries)].join(', ')} (${why})`).join('; ');
  return [`PATH entries not shown in the sandbox (\`sbx explain\` lists them): ${shown}`];
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
