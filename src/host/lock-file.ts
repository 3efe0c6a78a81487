// A lock file shared by sbx processes of one user (ledger rotation, the approval store): created with
// O_EXCL, holding "PID TOKEN"; a lock whose holder died or that outlived its useful life is broken.
// Callers check holdsLock again right before they commit, since a holder stopped long enough (^Z) may
// have lost its lock to a stale-breaker meanwhile.
import {
  closeSync,
  constants,
  linkSync,
  lstatSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock: its token, or undefined when it is held. Other errors (EACCES, ENOSPC) are thrown for the caller to word. */
export function createLock(lockPath: string): string | undefined {
  const token = `${process.pid} ${randomBytes(8).toString('hex')}`;
  let fd: number;
  try {
    fd = openSync(lockPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw cause;
  }
  try {
    writeSync(fd, token);
    return token;
  } catch (cause) {
    rmSync(lockPath, { force: true });
    throw cause;
  } finally {
    closeSync(fd);
  }
}

/**
 * Removes the lock if its holder is dead or it is older than `staleMs`; true when it is gone (try
 * again). Moved aside and compared, not unlinked by name: two processes may judge the same lock
 * stale, and the second must not delete the fresh lock the first has taken since. An empty lock is
 * one being written: only its age decides.
 */
export function breakStaleLock(lockPath: string, staleMs: number): boolean {
  let seen: string;
  let ageMs: number;
  try {
    ageMs = Date.now() - lstatSync(lockPath).mtimeMs;
    seen = readFileSync(lockPath, 'utf8');
  } catch {
    return true; // released meanwhile
  }
  const pid = Number(seen.split(' ')[0]);
  const holderDead = Number.isInteger(pid) && pid > 0 && !isProcessAlive(pid);
  if (!holderDead && ageMs <= staleMs) return false;
  const aside = `${lockPath}.${randomBytes(6).toString('hex')}.stale`;
  try {
    renameSync(lockPath, aside);
  } catch {
    return false;
  }
  try {
    if (readFileSync(aside, 'utf8') === seen) return true;
    // We moved a fresh lock taken after our check: put it back. If yet another process locked in
    // between (EEXIST), the displaced holder finds out before it commits (holdsLock).
    linkSync(aside, lockPath);
    return false;
  } catch {
    return false;
  } finally {
    rmSync(aside, { force: true });
  }
}

export function holdsLock(lockPath: string, token: string): boolean {
  try {
    return readFileSync(lockPath, 'utf8') === token;
  } catch {
    return false;
  }
}

/** Only our own: if ours was broken as stale, the file now belongs to another process. */
export function releaseLock(lockPath: string, token: string): void {
  if (holdsLock(lockPath, token)) rmSync(lockPath, { force: true });
}
