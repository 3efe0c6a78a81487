// Notices said once per host, not on every run ("memory/cpus not enforced" on every
// unprivileged `untrusted` run). A notice is remembered under a key of the host facts that decide it
// (boot id, the cgroup filesystems mounted, the uid) and its own text: a reboot, a new cgroup layout
// or another user hears it again. `sbx doctor` and the JSON report always carry it; only the stderr
// line is spared. The file is sbx's state ($XDG_STATE_HOME/sbx, hidden from every sandbox), but only a
// memory: read and replaced as sbx's caches are (host/cache-file.ts), and one that cannot be trusted
// or written means the notice is said again.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CacheFile, readCacheFile, writeCacheFile } from '../../host/cache-file.js';

/** Hundreds of notices at most: a larger file is not ours, and is replaced. */
const MAX_NOTICES_BYTES = 64 * 1024;
/** Keys kept; the oldest go first (a host's facts rarely change). */
const MAX_KEYS = 200;

export interface HostNoticeFacts {
  bootId: string;
  uid: number;
  /** The cgroup filesystems mounted, `type path` per line, sorted: v1, v2 or hybrid, and where. */
  cgroupLayout: string;
}

function readOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
}

/** The facts that decide whether this host can enforce a limit for this user. */
export function probeNoticeFacts(uid: number): HostNoticeFacts {
  const mounts = readOr('/proc/self/mounts', '')
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => f[2] === 'cgroup' || f[2] === 'cgroup2')
    .map((f) => `${f[2]} ${f[1]}`)
    .sort();
  return { bootId: readOr('/proc/sys/kernel/random/boot_id', 'unknown').trim(), uid, cgroupLayout: mounts.join('\n') };
}

/** Pure: the key under which `notice` is remembered on this host. */
export function noticeKey(facts: HostNoticeFacts, notice: string): string {
  return createHash('sha256')
    .update([facts.bootId, String(facts.uid), facts.cgroupLayout, notice].join('\0'))
    .digest('hex')
    .slice(0, 32);
}

function readKeys(file: CacheFile): string[] {
  // Missing, foreign, too large or corrupt: nothing remembered (the notice is said again).
  const text = readCacheFile(file);
  if (text === undefined) return [];
  try {
    const doc = JSON.parse(text) as { version?: unknown; seen?: unknown };
    if (doc?.version !== 1 || !Array.isArray(doc.seen)) return [];
    return doc.seen.filter((k): k is string => typeof k === 'string' && /^[0-9a-f]{32}$/.test(k));
  } catch {
    return [];
  }
}

/**
 * The notices not yet said on this host, and remembers them as said. A state directory that cannot
 * be written leaves every notice to be said (never silences one it could not remember).
 */
export function firstOnHost(
  notices: readonly string[],
  ctx: { stateDir: string; uid: number; facts: HostNoticeFacts },
): string[] {
  if (notices.length === 0) return [];
  const file = { path: join(ctx.stateDir, 'notices.json'), uid: ctx.uid, maxBytes: MAX_NOTICES_BYTES };
  const seen = readKeys(file);
  const fresh = notices.filter((n) => !seen.includes(noticeKey(ctx.facts, n)));
  if (fresh.length === 0) return [];
  const keys = [...seen, ...fresh.map((n) => noticeKey(ctx.facts, n))].slice(-MAX_KEYS);
  writeCacheFile(file, JSON.stringify({ version: 1, seen: keys }) + '\n');
  return fresh;
}
