// Remembered approval answers (docs/DESIGN.md, "Approvals"): "always" allows a command for a
// profile for good; "deny" refuses it again without asking for DENY_TTL_MS, so a command that keeps
// retrying cannot wear the user down with prompts (no silent approval loops). Only explicit answers
// are remembered: Enter at the prompt is "deny once" and leaves nothing behind. `sbx
// approvals` lists, revokes and clears them. A network `always` (network/network-asks.ts) is an entry
// too, for a host and port instead of a command: later runs of the profile add it to network.allow.
// One JSON file per user; several sbx processes may answer at once, so every write re-reads, merges
// and replaces the file under a lock, and never drops another process's decision.
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { SbxError } from '../../errors.js';
import { isWithin } from '../../path-within.js';
import { xdgDirs } from '../../policy/user-dirs.js';
import { breakStaleLock, createLock, holdsLock, releaseLock } from '../../host/lock-file.js';
import type { NetworkRequest } from '../../network/network-asks.js';

/** How long a denial is remembered. Long enough to stop a retry loop, short enough that a mistaken "deny" heals itself. */
export const DENY_TTL_MS = 10 * 60_000;
/** A lock older than this is abandoned: the critical section is one small read and write. */
export const STALE_LOCK_MS = 10_000;
/** Give up on the lock after this long (a stale lock is broken well before). */
const LOCK_WAIT_MS = STALE_LOCK_MS + 5_000;
const FORMAT_VERSION = 1;
/** The store holds a few hundred short entries; a larger file is not one sbx wrote (refused, fail closed). */
const MAX_STORE_BYTES = 4 * 1024 * 1024;

export type Decision = 'always' | 'deny';
export type Verdict = 'allow' | 'deny';

/** Where the decisions live, checked by openApprovalStore: a private file in a directory only `uid` can write. */
export interface ApprovalStore {
  path: string;
  uid: number;
}

export interface Entry {
  profile: string;
  fingerprint: string;
  decision: Decision;
  atMs: number;
  /** The command as answered, secrets redacted (absent in entries written before sbx recorded it). */
  argv?: string[];
  /** A network answer: the destination allowed (always `always`), instead of a command. */
  network?: NetworkRequest;
}

export interface ApprovalStoreContext {
  /** $XDG_STATE_HOME or ~/.local/state (see stateHomeOf). */
  stateHome: string;
  uid: number;
  /**
   * Host path of the workspace: the sandboxed command can write there, so the store must lie outside.
   * Absent for `sbx approvals`, which runs no sandbox.
   */
  workspace?: string;
}

/** $XDG_STATE_HOME when valid, else ~/.local/state (policy/user-dirs.ts). */
export function stateHomeOf(env: Record<string, string | undefined>, home: string): string {
  return xdgDirs(env, home).stateHome;
}

/** sha256 over the profile name and the argv, NUL-separated: no argument can contain NUL, so no two inputs collide. */
export function fingerprintOf(profile: string, argv: readonly string[]): string {
  return createHash('sha256')
    .update([profile, ...argv].join('\0'))
    .digest('hex');
}

/**
 * A network answer's fingerprint: sha256 over JSON, which holds no NUL byte (JSON escapes it), while
 * every command's input does (fingerprintOf: the profile, NUL, at least one argument), so no command
 * approval ever matches it, whatever the profile is called.
 */
export function networkFingerprintOf(profile: string, request: NetworkRequest): string {
  return createHash('sha256')
    .update(JSON.stringify(['network', profile, request.host, request.port]))
    .digest('hex');
}

function storeError(message: string, hint: string, cause?: unknown): SbxError {
  // A store whose integrity or readability is in doubt cannot vouch for an "always": fail closed.
  return new SbxError('APPROVAL_DENIED', message, { hint, ...(cause === undefined ? {} : { cause }) });
}

/** Create (0700) or check the store's directory. Whoever can write it decides what runs without asking. */
export function openApprovalStore(ctx: ApprovalStoreContext): ApprovalStore {
  const dir = join(ctx.stateHome, 'sbx');
  let real: string;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    real = realpathSync(dir);
  } catch (cause) {
    throw storeError(
      `cannot create the approval store directory ${dir} (${(cause as NodeJS.ErrnoException).code ?? 'error'})`,
      'set XDG_STATE_HOME to a writable directory of your own',
      cause,
    );
  }
  const st = statSync(real);
  if (!st.isDirectory() || st.uid !== ctx.uid)
    throw storeError(
      `approval store directory ${real} is not a directory owned by uid ${ctx.uid}`,
      'set XDG_STATE_HOME to a directory of your own',
    );
  // Created 0700, but a 0755 one is accepted: it is shared with the audit ledger, and what matters
  // here is who can write (the file itself is 0600).
  if ((st.mode & 0o022) !== 0)
    throw storeError(`approval store directory ${real} is writable by group or others`, `chmod 700 ${real}`);
  if (ctx.workspace !== undefined && isWithin(real, realOrSelf(ctx.workspace))) {
    throw storeError(
      `approval store ${real} lies inside the workspace, where the sandboxed command could approve itself`,
      'set XDG_STATE_HOME outside the workspace, or choose a narrower --workspace',
    );
  }
  return { path: join(real, 'approvals.json'), uid: ctx.uid };
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function isEntry(v: unknown): v is Entry {
  const e = v as Entry;
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof e.profile === 'string' &&
    typeof e.fingerprint === 'string' &&
    (e.decision === 'always' || e.decision === 'deny') &&
    Number.isFinite(e.atMs) &&
    (e.argv === undefined || (Array.isArray(e.argv) && e.argv.every((a) => typeof a === 'string'))) &&
    (e.network === undefined || isNetworkRequest(e.network))
  );
}

function isNetworkRequest(v: unknown): v is NetworkRequest {
  const r = v as NetworkRequest;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.host === 'string' &&
    Number.isInteger(r.port) &&
    r.port >= 1 &&
    r.port <= 65535
  );
}

/** The stored entries; none when the file does not exist yet. The checks run on the open descriptor, so nothing is swapped in between. */
function readEntries(store: ApprovalStore): Entry[] {
  let fd: number;
  try {
    fd = openSync(store.path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return [];
    throw storeError(
      `cannot open the approval store ${store.path} (${code ?? 'error'})`,
      `remove it (rm ${store.path}); sbx will ask again`,
      cause,
    );
  }
  let text: string;
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.uid !== store.uid || (st.mode & 0o022) !== 0) {
      throw storeError(
        `approval store ${store.path} is not a private file owned by uid ${store.uid}`,
        `remove it (rm ${store.path}); sbx will ask again`,
      );
    }
    if (st.size > MAX_STORE_BYTES)
      throw storeError(
        `approval store ${store.path} is larger than ${MAX_STORE_BYTES} bytes`,
        `remove it (rm ${store.path}); sbx will ask again`,
      );
    text = readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (cause) {
    throw storeError(
      `approval store ${store.path} is not valid JSON`,
      `remove it (rm ${store.path}); sbx will ask again`,
      cause,
    );
  }
  const doc = data as { version?: unknown; decisions?: unknown };
  if (
    typeof doc !== 'object' ||
    doc === null ||
    doc.version !== FORMAT_VERSION ||
    !Array.isArray(doc.decisions) ||
    !doc.decisions.every(isEntry)
  ) {
    throw storeError(
      `approval store ${store.path} is not in the format this sbx writes (version ${FORMAT_VERSION})`,
      `remove it (rm ${store.path}); sbx will ask again`,
    );
  }
  return doc.decisions;
}

function isLive(e: Entry, nowMs: number): boolean {
  return e.decision === 'always' || nowMs - e.atMs < DENY_TTL_MS;
}

/** When a remembered answer stops applying: never for "always". */
export function expiryOf(e: Entry): number | undefined {
  return e.decision === 'always' ? undefined : e.atMs + DENY_TTL_MS;
}

/** Every answer that still applies, oldest first (`sbx approvals list`). */
export function listDecisions(store: ApprovalStore, nowMs: number): Entry[] {
  return readEntries(store)
    .filter((e) => isLive(e, nowMs))
    .sort((a, b) => a.atMs - b.atMs);
}

/**
 * Forget the answers `keep` rejects, under the lock like every write; returns those forgotten.
 * Expired denials are dropped on the way, as every write does.
 */
export async function forgetDecisions(
  store: ApprovalStore,
  forget: (e: Entry) => boolean,
  nowMs: number,
): Promise<Entry[]> {
  let gone: Entry[] = [];
  await rewriteStore(store, (entries) => {
    const live = entries.filter((e) => isLive(e, nowMs));
    gone = live.filter(forget);
    return live.filter((e) => !forget(e));
  });
  return gone;
}

/** A remembered answer for this command under this profile, if one still applies. */
export function lookupDecision(
  store: ApprovalStore,
  profile: string,
  fingerprint: string,
  nowMs: number,
): Verdict | undefined {
  const entry = readEntries(store).find((e) => e.profile === profile && e.fingerprint === fingerprint);
  if (!entry || !isLive(entry, nowMs)) return undefined;
  return entry.decision === 'always' ? 'allow' : 'deny';
}

/** Remember an answer. Re-reads the file under the lock, so concurrent sbx processes each keep their own decisions. */
export async function recordDecision(
  store: ApprovalStore,
  profile: string,
  fingerprint: string,
  decision: Decision,
  nowMs: number,
  argv?: readonly string[],
): Promise<void> {
  await rewriteStore(store, (entries) => [
    ...entries.filter((e) => isLive(e, nowMs) && !(e.profile === profile && e.fingerprint === fingerprint)),
    { profile, fingerprint, decision, atMs: nowMs, ...(argv ? { argv: [...argv] } : {}) },
  ]);
}

/**
 * The destinations answered `always` for this profile. An older sbx keeps the `network` key of entries it rewrites
 * (it keeps every entry's object whole), and never matches them against a command (networkFingerprintOf).
 */
export function networkApprovals(store: ApprovalStore, profile: string, nowMs: number): NetworkRequest[] {
  return listDecisions(store, nowMs).flatMap((e) =>
    e.profile === profile && e.decision === 'always' && e.network ? [e.network] : [],
  );
}

/** Remember a network `always` for this profile, under the lock as every write. */
export async function recordNetworkApproval(
  store: ApprovalStore,
  profile: string,
  request: NetworkRequest,
  nowMs: number,
): Promise<void> {
  const fingerprint = networkFingerprintOf(profile, request);
  const network = { host: request.host, port: request.port };
  await rewriteStore(store, (entries) => [
    ...entries.filter((e) => isLive(e, nowMs) && !(e.profile === profile && e.fingerprint === fingerprint)),
    { profile, fingerprint, decision: 'always', atMs: nowMs, network },
  ]);
}

/** Re-read the entries under the lock, apply `change`, and replace the file atomically. */
async function rewriteStore(store: ApprovalStore, change: (entries: Entry[]) => Entry[]): Promise<void> {
  const lockPath = `${store.path}.lock`;
  for (let attempt = 0; ; attempt++) {
    const token = await acquireLock(lockPath, store.path);
    try {
      const committed = replaceFile(
        store.path,
        { version: FORMAT_VERSION, decisions: change(readEntries(store)) },
        () => holdsLock(lockPath, token),
      );
      if (committed) return;
    } finally {
      releaseLock(lockPath, token);
    }
    // Our lock was judged stale and broken (this process was stopped, e.g. by ^Z): start over from a fresh read.
    if (attempt >= 2)
      throw storeError(
        `lost the lock on the approval store ${store.path} repeatedly`,
        `retry; if it persists, remove ${lockPath}`,
      );
  }
}

/** Write `doc` to a private temp file and rename it over `path` (atomic for readers), if `stillOwner()` just before. */
function replaceFile(path: string, doc: object, stillOwner: () => boolean): boolean {
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeSync(fd, JSON.stringify(doc, null, 1) + '\n');
      // Without it a crash right after the rename can leave an empty file on some filesystems (ext4 delalloc).
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    if (!stillOwner()) return false;
    renameSync(temp, path);
    return true;
  } catch (cause) {
    throw storeError(
      `cannot write the approval store ${path} (${(cause as NodeJS.ErrnoException).code ?? 'error'})`,
      `check free space and the permissions of ${path}`,
      cause,
    );
  } finally {
    rmSync(temp, { force: true });
  }
}

/** Take the lock, waiting for a live holder and breaking a dead or stale one. Returns its token. */
async function acquireLock(lockPath: string, storePath: string): Promise<string> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (let waitMs = 2; ; waitMs = Math.min(waitMs * 2, 50)) {
    let token: string | undefined;
    try {
      token = createLock(lockPath);
    } catch (cause) {
      throw lockError(storePath, lockPath, cause);
    }
    if (token !== undefined) return token;
    breakStaleLock(lockPath, STALE_LOCK_MS);
    if (Date.now() > deadline)
      throw storeError(
        `the approval store ${storePath} stayed locked`,
        `if no other sbx is running, remove ${lockPath}`,
      );
    // Jitter, so processes released together do not collide again in lockstep.
    await delay(waitMs + Math.random() * waitMs);
  }
}

function lockError(storePath: string, lockPath: string, cause: unknown): SbxError {
  return storeError(
    `cannot lock the approval store ${storePath} (${(cause as NodeJS.ErrnoException).code ?? 'error'})`,
    `check free space and the permissions of ${lockPath}`,
    cause,
  );
}
