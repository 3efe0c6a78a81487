// The user's toolchains on the host: each PATH entry the profile shows (inside HOME, and outside it:
// a CI tool cache, /opt/TOOL/bin) resolved and pinned once, matched to its layout
// (toolchains/toolchains.ts), its roots pinned and checked. What was checked is what gets bound: the
// roots are pinned here (host/pins.ts) and mounted through those descriptors.
import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { posix } from 'node:path';
import { isWithin } from '../../path-within.js';
import {
  type BesideEntry,
  candidateEntries,
  followsLinks,
  isFoundOnDisk,
  type LayoutScope,
  matchLayout,
  type ToolchainFacts,
} from '../toolchains.js';
import type { Pins } from '../../host/pins.js';

/** A directory of links is followed this far: a ~/.local/bin of thousands of links is not a toolchain. */
const MAX_LINKS = 256;

export interface ToolchainProbeInput {
  env: Record<string, string>;
  /** HOME, which entries the profile shows, the system binds, the runner's tool cache. */
  scope: LayoutScope;
  /**
   * Inside a GitHub Actions job: the runner's tool cache is the job's own, which the runner image
   * leaves writable by everyone (mode 0777 on /opt and below, owned by the image's build user) and
   * which every later step of the job runs unsandboxed: under it no owner or mode is held against a
   * root (docs/SECURITY.md, "The user's toolchains").
   */
  jobToolCache?: string | undefined;
  /** $VIRTUAL_ENV's real path, when it names a directory. */
  virtualEnv?: string | undefined;
  uid: number;
  gid: number;
  /** Paths no toolchain root may lie in or contain: credential stores, sbx's own state. */
  forbidden: readonly string[];
  /**
   * The workspace and every writable bind, as requested and as real paths: the repository and the
   * sandbox write there, so no PATH entry may lie there or be resolved through a link placed there.
   */
  adversarial: readonly string[];
}

/** Symlinks followed this many times at most while tracing a path, as the kernel's own limit. */
const MAX_HOPS = 40;

/**
 * Every symbolic link the kernel would follow to resolve `path`, by where each link lies. Undefined
 * when the path cannot be traced (a loop, a dangling link, a component missing).
 */
export function linksOnTheWay(path: string): string[] | undefined {
  const links: string[] = [];
  let rest = path.split('/').filter(Boolean);
  let at = '/';
  while (rest.length > 0) {
    const [name, ...tail] = rest;
    const next = posix.join(at, name!);
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(next);
    } catch {
      return undefined;
    }
    if (st.isSymbolicLink()) {
      if (links.push(next) > MAX_HOPS) return undefined;
      const target = readlinkSync(next);
      const resolved = posix.resolve(at, target);
      rest = [...resolved.split('/').filter(Boolean), ...tail];
      at = '/';
      continue;
    }
    at = next;
    rest = tail;
  }
  return links;
}

/**
 * Why `real` must not be bound: another user (or everyone) could write it or a directory above it,
 * and so swap what the sandbox runs, or plant code there that the user's tools then run. Root and
 * the user may own the chain; a sticky world-writable directory (/tmp) lets nobody else rename ours.
 */
export function unsafeOwner(real: string, uid: number, gid: number): string | undefined {
  for (let dir = real; ; dir = posix.dirname(dir)) {
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(dir);
    } catch {
      return `${dir} cannot be checked`;
    }
    if (st.uid !== uid && st.uid !== 0) return `${dir} belongs to another user (uid ${st.uid})`;
    const sticky = (st.mode & 0o1000) !== 0 && dir !== real;
    if ((st.mode & 0o002) !== 0 && !sticky) return `${dir} is writable by every user`;
    if ((st.mode & 0o020) !== 0 && st.gid !== gid && !sticky) return `${dir} is writable by group ${st.gid}`;
    if (dir === '/') return undefined;
  }
}

/** The files a directory of links points to inside HOME, read through its pinned descriptor. */
function linkTargets(fdPath: string, dir: string, home: string): { real: string; direct: boolean }[] {
  let names: string[];
  try {
    names = readdirSync(fdPath).slice(0, MAX_LINKS);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const path = posix.join(fdPath, name);
    try {
      if (!lstatSync(path).isSymbolicLink()) return [];
      const real = realpathSync(path);
      // Programs only: a link to a key or a token file is not a tool.
      const st = statSync(real);
      if (!isWithin(real, home) || !st.isFile() || (st.mode & 0o111) === 0) return [];
      // Direct: the link names its target, and no other link on the way could have redirected it.
      const named = posix.resolve(dir, readlinkSync(path));
      return [{ real, direct: named === real && linksOnTheWay(named)?.length === 0 }];
    } catch {
      return [];
    }
  });
}

/**
 * Every PATH entry the profile shows (inside HOME, fnm's per-shell links into it, outside HOME), with
 * the roots to bind read-only or the reason it is not bound. Each path is pinned by `pins`: the descriptor checked is mounted.
 */
export function probeToolchains(input: ToolchainProbeInput, pins: Pins): ToolchainFacts {
  const { env, scope, uid, gid, forbidden, adversarial } = input;
  const facts: ToolchainFacts = { roots: [], skipped: [], resolved: {}, env: {}, masks: [] };
  const skip = (entry: string, why: string) => facts.skipped.push({ entry, why });
  const seen = new Set<string>();
  const refusal = (path: string): string | undefined => {
    if (forbidden.some((f) => isWithin(path, f) || isWithin(f, path)))
      return `${path} overlaps a credential store, sbx's own state or the runner's files`;
    if (input.jobToolCache !== undefined && isWithin(path, input.jobToolCache)) return undefined;
    return unsafeOwner(path, uid, gid);
  };
  /** Pins one root; undefined when it is bound, else why not. */
  const addRoot = (path: string, layout: string, entry: string, optional: boolean): string | undefined => {
    const f = pins.probe(path);
    if (!f.exists) return optional ? undefined : `${path} does not exist`;
    if (f.type !== 'dir' && f.type !== 'file') return `${path} is not a file or directory`;
    const place = matchLayout(f.real, scope);
    if (place.kind === 'skip') return `${path}: ${place.why}`;
    const why = refusal(f.real);
    if (why) return why;
    if (!seen.has(f.real)) facts.roots.push({ path: f.real, dir: f.type === 'dir', layout, entry });
    seen.add(f.real);
    return undefined;
  };
  const inAdversarial = (path: string) => adversarial.some((a) => isWithin(path, a));
  for (const entry of candidateEntries(env.PATH, scope, env)) {
    // The workspace is shown anyway; a PATH entry there (an activated .venv/bin) is the repository's
    // to turn into a link to any directory in HOME, so it is never a toolchain.
    if (inAdversarial(entry)) {
      facts.skipped.push({
        entry,
        why: 'lies in the workspace or a writable bind (shown there, never bound as a toolchain)',
        shown: true,
      });
      continue;
    }
    // An entry that names nothing (a ~/bin never made) has nothing to show, and nothing to say.
    if (!existsSync(entry)) continue;
    const links = linksOnTheWay(entry);
    if (links === undefined) {
      skip(entry, 'cannot be resolved (a missing component, a dangling link or a loop)');
      continue;
    }
    const planted = links.find(inAdversarial);
    if (planted !== undefined) {
      skip(entry, `is reached through ${planted}, a link in the workspace or a writable bind`);
      continue;
    }
    const f = pins.probe(entry);
    if (!f.exists || f.type !== 'dir') {
      skip(entry, 'not a directory');
      continue;
    }
    if (inAdversarial(f.real)) {
      skip(entry, `resolves to ${f.real}, in the workspace or a writable bind`);
      continue;
    }
    const match = matchLayout(f.real, scope, besideEntry(f.real, input.virtualEnv));
    if (match.kind === 'skip') {
      facts.skipped.push({ entry, why: match.why, ...(match.shown ? { shown: true as const } : {}) });
      continue;
    }
    // A directory of no known layout is bound only where it is written: through a link, any
    // directory in HOME could be made to look like one.
    if (isFoundOnDisk(match.layout) && links.length > 0) {
      skip(entry, `is reached through the link ${links[0]}: an unknown directory is shown only at its own path`);
      continue;
    }
    const errors = match.roots.flatMap((r) => addRoot(r.path, match.layout, entry, r.optional) ?? []);
    if (errors.length > 0) {
      skip(entry, errors.join('; '));
      continue;
    }
    if (f.real !== entry) facts.resolved[entry] = f.real;
    for (const [name, value] of Object.entries(match.env)) if (seen.has(value)) facts.env[name] = value;
    if (followsLinks(match.layout)) {
      const within = match.roots.map((r) => r.path);
      followLinks({ entry, real: f.real, within, pins, scope }, addRoot, skip);
    }
  }
  return facts;
}

/**
 * Whether `real` (a `bin` directory, pinned) is a virtualenv's: python finds its packages through the
 * pyvenv.cfg beside bin/ (PEP 405), so the whole environment is its root.
 */
function besideEntry(real: string, virtualEnv: string | undefined): BesideEntry {
  if (posix.basename(real) !== 'bin') return {};
  try {
    const cfg = lstatSync(posix.join(posix.dirname(real), 'pyvenv.cfg'));
    return cfg.isFile() ? { venv: true, virtualEnv } : {};
  } catch {
    return {};
  }
}

/** One directory of links being followed: its entry, real path, the roots already bound for it. */
interface LinkDir {
  entry: string;
  real: string;
  within: readonly string[];
  pins: Pins;
  scope: LayoutScope;
}

/**
 * A directory of links (~/.local/bin, a virtualenv's bin/): each link's target inside HOME, by the
 * layout of its directory (a pipx venv, a pyenv version), else the file alone. A target refused is
 * reported and left out.
 */
function followLinks(
  dir: LinkDir,
  addRoot: (path: string, layout: string, entry: string, optional: boolean) => string | undefined,
  skip: (entry: string, why: string) => void,
): void {
  const { entry, real, scope } = dir;
  const home = scope.home;
  const fd = dir.pins.fdOf(real);
  if (fd === undefined) return;
  for (const { real: target, direct } of linkTargets(`/proc/self/fd/${fd}`, real, home)) {
    if (dir.within.some((root) => isWithin(target, root))) continue;
    const match = matchLayout(posix.dirname(target), scope);
    const known = match.kind === 'layout' && !isFoundOnDisk(match.layout);
    // A file of no known layout is shown only when the link names it outright (no link on the way).
    if (!known && !direct) {
      skip(`${entry} → ${target}`, 'reached through more than one link: shown only when the link names it outright');
      continue;
    }
    const roots = known ? match.roots : [{ path: target, optional: false }];
    const layout = known ? match.layout : 'link target';
    const errors = roots.flatMap((r) => addRoot(r.path, layout, `${entry} → ${target}`, r.optional) ?? []);
    if (errors.length > 0) skip(`${entry} → ${target}`, errors.join('; '));
  }
}
