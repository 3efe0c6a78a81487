// The user's toolchains on the host: each PATH entry inside HOME resolved and pinned once, matched
// to its layout (policy/toolchains.ts), its roots pinned and checked. What was checked is what gets
// bound: the roots are pinned here (runtime/pins.ts) and mounted through those descriptors.
import { lstatSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { posix } from 'node:path';
import { isWithin } from '../policy/sensitive.js';
import { candidateEntries, followsLinks, matchLayout, type ToolchainFacts } from '../policy/toolchains.js';
import type { Pins } from './pins.js';

/** A directory of links is followed this far: a ~/.local/bin of thousands of links is not a toolchain. */
const MAX_LINKS = 256;

export interface ToolchainProbeInput {
  env: Record<string, string>;
  home: string;
  uid: number;
  gid: number;
  /** Paths no toolchain root may lie in or contain: credential stores, sbx's own state. */
  forbidden: readonly string[];
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
function linkTargets(fdPath: string, home: string): string[] {
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
      return isWithin(real, home) && st.isFile() && (st.mode & 0o111) !== 0 ? [real] : [];
    } catch {
      return [];
    }
  });
}

/**
 * Every PATH entry inside HOME (and fnm's per-shell links into it), with the roots to bind read-only
 * or the reason it is not bound. Each path is pinned by `pins`: the descriptor checked is mounted.
 */
export function probeToolchains(input: ToolchainProbeInput, pins: Pins): ToolchainFacts {
  const { env, home, uid, gid, forbidden } = input;
  const facts: ToolchainFacts = { roots: [], skipped: [], resolved: {}, env: {}, masks: [] };
  const skip = (entry: string, why: string) => facts.skipped.push({ entry, why });
  const seen = new Set<string>();
  const refusal = (path: string): string | undefined => {
    if (forbidden.some((f) => isWithin(path, f) || isWithin(f, path)))
      return `${path} overlaps a credential store or sbx's own state`;
    return unsafeOwner(path, uid, gid);
  };
  /** Pins one root; undefined when it is bound, else why not. */
  const addRoot = (path: string, layout: string, entry: string, optional: boolean): string | undefined => {
    const f = pins.probe(path);
    if (!f.exists) return optional ? undefined : `${path} does not exist`;
    if (f.type !== 'dir' && f.type !== 'file') return `${path} is not a file or directory`;
    const place = matchLayout(f.real, home);
    if (place.kind === 'skip') return `${path}: ${place.why}`;
    const why = refusal(f.real);
    if (why) return why;
    if (!seen.has(f.real)) facts.roots.push({ path: f.real, dir: f.type === 'dir', layout, entry });
    seen.add(f.real);
    return undefined;
  };
  for (const entry of candidateEntries(env.PATH, home, env)) {
    const f = pins.probe(entry);
    if (!f.exists || f.type !== 'dir') {
      skip(entry, 'not a directory');
      continue;
    }
    const match = matchLayout(f.real, home);
    if (match.kind === 'skip') {
      skip(entry, match.why);
      continue;
    }
    const errors = match.roots.flatMap((r) => addRoot(r.path, match.layout, entry, r.optional) ?? []);
    if (errors.length > 0) {
      skip(entry, errors.join('; '));
      continue;
    }
    if (f.real !== entry) facts.resolved[entry] = f.real;
    for (const [name, value] of Object.entries(match.env)) if (seen.has(value)) facts.env[name] = value;
    if (followsLinks(match.layout)) followLinks(entry, f.real, pins, home, addRoot, skip);
  }
  return facts;
}

/**
 * A directory of links (~/.local/bin): each link's target inside HOME, by the layout of its
 * directory (a pipx venv), else the file alone. A target refused is reported and left out.
 */
function followLinks(
  entry: string,
  real: string,
  pins: Pins,
  home: string,
  addRoot: (path: string, layout: string, entry: string, optional: boolean) => string | undefined,
  skip: (entry: string, why: string) => void,
): void {
  const fd = pins.fdOf(real);
  if (fd === undefined) return;
  for (const target of linkTargets(`/proc/self/fd/${fd}`, home)) {
    if (isWithin(target, real)) continue;
    const match = matchLayout(posix.dirname(target), home);
    const known = match.kind === 'layout' && match.layout !== 'PATH entry';
    const roots = known ? match.roots : [{ path: target, optional: false }];
    const layout = known ? match.layout : 'link target';
    const errors = roots.flatMap((r) => addRoot(r.path, layout, `${entry} → ${target}`, r.optional) ?? []);
    if (errors.length > 0) skip(`${entry} → ${target}`, errors.join('; '));
  }
}
