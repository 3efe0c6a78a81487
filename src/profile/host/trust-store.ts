// The user's trust pins for project profiles: $XDG_STATE_HOME/sbx/trust.json, 0600 in a 0700 dir
// owned by the user. Whoever can write it decides which policy a repository may set, so it is read
// under the same guards as a profile (and the state dir is hidden from every sandbox by
// policy/derive/probe-plan.ts keepOut), written atomically, and a corrupt one trusts nothing.
import { chmodSync, lstatSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isSbxError, SbxError } from '../../errors.js';
import { readGuarded } from '../../host/guarded-read.js';

const FORMAT = 1;
/** Each pin keeps the trusted text (for `sbx trust`'s diff): profiles are capped at 256 KiB each. */
const STORE_MAX_BYTES = 16 * 1024 * 1024;

export interface TrustedFile {
  file: string;
  sha256: string;
  /** The content trusted (built-in layers keep none: they come with sbx). */
  text?: string;
}

export interface TrustPin {
  /** The chain hash (ResolvedProfile.hash) the user trusted. */
  hash: string;
  /** Every file of the chain, ancestors first. */
  files: TrustedFile[];
  trustedAt: string;
}

export interface TrustStore {
  format: number;
  /** Keyed by the real path of the profile that was trusted (the last of its chain). */
  pins: Record<string, TrustPin>;
}

export function trustStoreFile(stateHome: string): string {
  return join(stateHome, 'sbx', 'trust.json');
}

function storeError(message: string, file: string, cause?: unknown): SbxError {
  return new SbxError('TRUST_STORE', `trust store ${file}: ${message}`, {
    hint: `fix or remove ${file} (then trust your project profiles again with \`sbx trust NAME\`)`,
    ...(cause === undefined ? {} : { cause }),
  });
}

function isPin(value: unknown): value is TrustPin {
  const pin = value as TrustPin;
  return (
    typeof pin === 'object' &&
    pin !== null &&
    typeof pin.hash === 'string' &&
    typeof pin.trustedAt === 'string' &&
    Array.isArray(pin.files) &&
    pin.files.every(
      (f) =>
        typeof f?.file === 'string' &&
        typeof f.sha256 === 'string' &&
        (f.text === undefined || typeof f.text === 'string'),
    )
  );
}

/**
 * The pins, or none when the file does not exist yet. A store that is unsafe or malformed is an
 * error, never "no pins" silently.
 */
export function readTrustStore(file: string, uid: number): TrustStore {
  try {
    lstatSync(file);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return { format: FORMAT, pins: {} };
    throw storeError(`cannot stat it (${(cause as NodeJS.ErrnoException).code})`, file, cause);
  }
  let text: string;
  try {
    text = readGuarded(file, { what: 'trust store', maxBytes: STORE_MAX_BYTES, checkOwner: true, uid }).text;
  } catch (error) {
    if (!isSbxError(error)) throw error;
    throw storeError(error.message, file, error);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (cause) {
    throw storeError('is not valid JSON', file, cause);
  }
  const store = data as TrustStore;
  if (
    typeof store !== 'object' ||
    store === null ||
    store.format !== FORMAT ||
    typeof store.pins !== 'object' ||
    store.pins === null
  ) {
    throw storeError(`is not a format ${FORMAT} trust store`, file);
  }
  for (const [path, pin] of Object.entries(store.pins))
    if (!isPin(pin)) throw storeError(`the pin for ${path} is malformed`, file);
  return store;
}

/** Create (0700) or check the store's directory: owned by the user, writable by nobody else. */
function ensureStoreDir(dir: string, file: string, uid: number): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (cause) {
    throw storeError(`cannot create ${dir} (${(cause as NodeJS.ErrnoException).code})`, file, cause);
  }
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.uid !== uid) throw storeError(`${dir} is not a directory owned by uid ${uid}`, file);
  if ((st.mode & 0o022) !== 0) throw storeError(`${dir} is writable by group or others`, file);
}

/** Replace the store atomically (write a private temp file, rename over). */
export function writeTrustStore(file: string, uid: number, store: TrustStore): void {
  const dir = dirname(file);
  ensureStoreDir(dir, file, uid);
  const tmp = join(dir, `.trust.json.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, JSON.stringify(store, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
  } catch (cause) {
    rmSync(tmp, { force: true });
    throw storeError(`cannot write it (${(cause as NodeJS.ErrnoException).code ?? String(cause)})`, file, cause);
  }
}
