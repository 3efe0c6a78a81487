// One directory per run, owned by the run and removed when it ends. Stale ones (their sbx died) are
// swept by the next run. Lives under $XDG_RUNTIME_DIR/sbx, else a private dir in /tmp.
import { randomBytes } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, readdirSync, rmdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SbxError } from '../errors.js';
import { dataFilePath, type Session } from '../backend/launch.js';
import type { Mount } from '../policy/types.js';
import { isProcessAlive } from './lock-file.js';
import { xdgRuntimeDir } from '../policy/user-dirs.js';

export interface SessionHandle extends Session {
  close(): void;
}

/** The parent of all session dirs for this user. */
export function sessionBase(env: Record<string, string | undefined>, uid: number): string {
  const runtimeDir = xdgRuntimeDir(env);
  return runtimeDir ? join(runtimeDir, 'sbx') : join('/tmp', `sbx-${uid}`);
}

/** Create `dir` as a private directory, or accept it only if it already is one we own. */
function ensurePrivateDir(dir: string, uid: number): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (cause) {
    throw new SbxError('SESSION_DIR', `cannot create session directory ${dir}: ${(cause as Error).message}`, {
      cause,
      hint: 'set XDG_RUNTIME_DIR to a writable private directory',
    });
  }
  // In /tmp another user could have planted the directory (or a symlink) first.
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) {
    throw new SbxError('SESSION_DIR', `session directory ${dir} is not a private directory owned by uid ${uid}`, {
      hint: `remove it (rm -rf ${dir}) or set XDG_RUNTIME_DIR`,
    });
  }
}

/** Remove session dirs whose owning sbx process is gone. Returns how many. */
export function sweepSessions(base: string): number {
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return 0;
  }
  for (const name of names) {
    const pid = Number(/^[0-9a-z]+-[0-9a-f]+\.(\d+)$/.exec(name)?.[1]);
    if (!pid || isProcessAlive(pid)) continue;
    rmSync(join(base, name), { recursive: true, force: true });
    removed++;
  }
  return removed;
}

/**
 * A session directory holds files only (the mask source, data files, the proxy's sockets): unlink
 * them and rmdir, which spares a launch loading rmSync's recursive walker (0.7 ms); anything else
 * (a directory inside, a file that cannot be unlinked) goes to rmSync as before.
 */
function removeSessionDir(dir: string): void {
  try {
    for (const name of readdirSync(dir)) unlinkSync(join(dir, name));
    rmdirSync(dir);
  } catch {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function newSessionId(): string {
  return `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

/** Where run `id` of this process keeps its session (compile() shows these paths; run() creates them). */
export function plannedSession(env: Record<string, string | undefined>, uid: number, id: string): Session {
  // The pid in the name lets the next run tell a live session from a crashed one.
  const dir = join(sessionBase(env, uid), `${id}.${process.pid}`);
  return { id, dir, emptyFile: join(dir, 'empty') };
}

export function openSession(env: Record<string, string | undefined>, uid: number, id = newSessionId()): SessionHandle {
  const base = sessionBase(env, uid);
  ensurePrivateDir(base, uid);
  sweepSessions(base);
  const { dir, emptyFile } = plannedSession(env, uid, id);
  try {
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(emptyFile, '', { mode: 0o444 });
    chmodSync(emptyFile, 0o444);
    let closed = false;
    return {
      id,
      dir,
      emptyFile,
      close() {
        if (closed) return;
        closed = true;
        removeSessionDir(dir);
      },
    };
  } catch (cause) {
    throw new SbxError('SESSION_DIR', `cannot create session directory ${dir}: ${(cause as Error).message}`, {
      cause,
      hint: 'check free space and permissions of ' + base,
    });
  }
}

/**
 * The content of the policy's `file` mounts, written where the backends bind them from. chmod after
 * the write: the mode given to open is narrowed by the umask, and a mode-0 stand-in is the point.
 */
export function writeFileMounts(session: Session, mounts: readonly Mount[]): void {
  mounts
    .filter((m) => m.kind === 'file')
    .forEach((m, ordinal) => {
      const path = dataFilePath(session, ordinal);
      writeFileSync(path, m.content, { mode: 0o600, flag: 'wx' });
      chmodSync(path, m.mode);
    });
}
