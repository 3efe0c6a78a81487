// Which running sbx serves a published port for a workspace: a run that publishes writes, once its
// listeners are bound, `published.json` into its session directory (the workspace's real path and the
// ports it serves) and a join socket per port beside it, on which sbx hands each connection to the
// port's server as it does a host client (ports.ts). A later run of the same workspace whose publish
// port is taken finds the server here and joins it instead of failing with PORT_IN_USE: the agent's
// dev server of one call, tested from the next (README "Host services and published ports").
//
// Only sbx writes here: the session directories sit in the user's private base (host/session.ts, 0700,
// owner-checked), and every sandbox sees its own read-only and no other (docs/SECURITY.md "sbx's own
// state"). A marker of a run whose sbx died names a dead pid and is passed over.
import { lstatSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join as pathJoin } from 'node:path';
import { readGuarded } from '../../host/guarded-read.js';
import { isProcessAlive } from '../../host/lock-file.js';

const MARKER = 'published.json';
/** Far above a marker's size: a workspace path and a few ports. */
const MAX_MARKER_BYTES = 64 * 1024;

/** The socket in a publishing run's session directory where another run's sbx joins its server on `port`. */
export function joinSocket(port: number): string {
  return `join-${port}.sock`;
}

/** Says, in this run's session directory, which ports it serves for `workspace`. */
export function writePublished(sessionDir: string, workspace: string, ports: readonly number[]): void {
  writeFileSync(pathJoin(sessionDir, MARKER), JSON.stringify({ workspace, ports }), { mode: 0o600, flag: 'wx' });
}

/** Takes the marker back: the run's servers are closing. */
export function unpublish(sessionDir: string): void {
  rmSync(pathJoin(sessionDir, MARKER), { force: true });
}

/**
 * A marker's content, or undefined: unreadable as a guarded file owned by `uid` (host/guarded-read.ts),
 * or not the shape.
 */
function readMarker(path: string, uid: number): { workspace: string; ports: number[] } | undefined {
  try {
    const { text } = readGuarded(path, { what: 'publish marker', maxBytes: MAX_MARKER_BYTES, checkOwner: true, uid });
    const { workspace, ports } = JSON.parse(text) as { workspace?: unknown; ports?: unknown };
    if (typeof workspace !== 'string' || !Array.isArray(ports) || !ports.every(Number.isInteger)) return undefined;
    return { workspace, ports: ports as number[] };
  } catch {
    return undefined;
  }
}

/**
 * Another live run of this user (`uid`, the run's) that serves `port` for `workspace`: its session id and
 * join socket, if there is one.
 */
export function findPublisher(
  join: { sessionDir: string; workspace: string; uid: number },
  port: number,
): { session: string; socket: string } | undefined {
  const { sessionDir, workspace, uid } = join;
  const base = dirname(sessionDir);
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return undefined;
  }
  for (const name of names) {
    if (name === basename(sessionDir)) continue;
    // host/session.ts names each directory ID.PID.
    const match = /^([0-9a-z]+-[0-9a-f]+)\.(\d+)$/.exec(name);
    if (!match || !isProcessAlive(Number(match[2]))) continue;
    const marker = readMarker(pathJoin(base, name, MARKER), uid);
    if (marker?.workspace !== workspace || !marker.ports.includes(port)) continue;
    const socket = pathJoin(base, name, joinSocket(port));
    try {
      if (!lstatSync(socket).isSocket()) continue;
    } catch {
      continue;
    }
    return { session: match[1]!, socket };
  }
  return undefined;
}
