// The scans the policy stage asks of the mounted trees (pipeline/policy-stage.ts, through
// policy/host/probe-host.ts): every mounted tree walked for secret-looking files to mask, the
// root-only system files a sandbox that keeps uid 0 must not read, and sbx's session directories
// hidden. A long-lived library caller keeps the walks warm (host/warm-cache.ts); the CLI walks once.
import { dirname } from 'node:path';
import { statSync } from 'node:fs';
import type { Host } from '../../policy/host.js';
import { probePath, scanRootOnly } from '../../host/host-probe.js';
import type { Pins } from '../../host/pins.js';
import { sessionBase } from '../../host/session.js';
import { type WalkWatch, WarmCache } from '../../host/warm-cache.js';
import type { SensitiveRuleInput } from '../sensitive-files.js';
import type { SensitiveRules } from '../sensitive-matcher.js';
import { fitMasks } from './mask-fit.js';
import type { ScanReader } from '../scan-result.js';
import { scanMountedTrees } from './sensitive-scan.js';

export type Sensitive = Host['sensitiveFiles'];

/**
 * A long-lived library caller's warm results (host/warm-cache.ts): the one piece of process-wide state,
 * kept only under exact invalidation. The CLI runs once per process and never fills it.
 */
const rootOnlyCache = new WarmCache<Host['rootOnly']>();

/** Root-only system files (masked when the sandbox keeps uid 0): walked once per change when warm. */
export async function rootOnlyEntries(roots: readonly string[], warm: boolean): Promise<Host['rootOnly']> {
  if (!warm) return scanRootOnly(roots);
  // The roots' own identity is part of the key: a root replaced or re-linked is a new walk.
  const key = JSON.stringify(roots.map((root) => [root, probePath(root)]));
  return rootOnlyCache.get(key, (w) => scanRootOnly(roots, (dir) => w.watch(dir)));
}

const sensitiveCache = new WarmCache<Sensitive>();

/** The directory a pinned root's descriptor holds, by identity: a root replaced since is another key. */
export function pinnedIdentity(root: string, pins: Pins): string | undefined {
  const fd = pins.fdOf(root);
  if (fd === undefined) return undefined;
  const st = statSync(`/proc/self/fd/${fd}`);
  return `${st.dev}:${st.ino}`;
}

/**
 * Every mounted tree walked for secret-looking files (.env, *.pem, .git/config, ...) to mask. Warm
 * (library): kept while nothing the walk read changes; never when it resolved a symlink, whose
 * target may lie in a directory nobody watches.
 */
export async function scanSensitive(
  roots: string[],
  ruleInput: SensitiveRuleInput,
  rules: SensitiveRules,
  pins: Pins,
  warm: boolean,
): Promise<Sensitive> {
  if (roots.length === 0) return { masks: [], protect: [], views: [], unmasked: [] };
  // The tree that will be mounted, not whatever the path holds by the time it is walked.
  const walkVia = (root: string) => {
    const fd = pins.fdOf(root);
    return fd === undefined ? undefined : `/proc/self/fd/${fd}`;
  };
  const scan = (read?: ScanReader): Sensitive => {
    const opts = { walkVia, ...(read ? { read } : {}) };
    const found = scanMountedTrees(roots, rules, opts);
    // Thousands of masks would pass bubblewrap's argument limit: fitted first (sensitive/host/mask-fit.ts).
    return { ...found, masks: fitMasks(found.masks, roots, opts) };
  };
  if (!warm) return scan();
  const key = JSON.stringify([ruleInput, roots.map((root) => [root, pinnedIdentity(root, pins)])]);
  // Each directory is watched before the scan reads it or a file in it; a file whose link count the
  // scan read is watched itself (sensitive/host/hard-links.ts).
  return sensitiveCache.get(key, (w) => scan(watchingReader(w)));
}

/**
 * A scan's reads as the warm cache watches them: each directory before the scan lists it or reads a
 * file in it; a file whose link count was read, itself; a resolved symlink cannot be watched.
 */
export function watchingReader(w: WalkWatch): ScanReader {
  return (path, what) =>
    what === 'link' ? w.unwatchable() : w.watch(what === 'dir' || what === 'inode' ? path : dirname(path));
}

/**
 * sbx's session directories hold every run's mask source (`empty`, bound by path) and egress sockets:
 * hidden wherever a bind would show them, so no sandbox can swap another run's files.
 */
export function sessionMask(env: Record<string, string>, uid: number, pins: Pins): Sensitive['masks'] {
  const sessions = pins.probe(sessionBase(env, uid));
  return sessions.exists && sessions.type === 'dir' ? [{ path: sessions.real, dir: true }] : [];
}
