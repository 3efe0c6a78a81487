// The second, unprivileged user that tests started as root drop to. Borrowed, never created: uid and
// gid 65534, the kernel's overflow ids (/proc/sys/kernel/overflowuid; "nobody"/"nogroup" on Debian).
// A process can run as them whether or not /etc/passwd names them, so `npm test` on a fresh machine
// needs no account set up beforehand. Such a test passes `spawn(..., { ...unprivilegedUser() })`.

export interface TestUser {
  uid: number;
  gid: number;
}

const OVERFLOW_ID = 65534;

/** The user to drop to; only root can switch to it, so anyone else gets an error that says why. */
export function unprivilegedUser(): TestUser {
  const uid = process.getuid?.();
  if (uid !== 0) throw new Error(`dropping to uid ${OVERFLOW_ID} needs root (running as uid ${uid})`);
  return { uid: OVERFLOW_ID, gid: OVERFLOW_ID };
}
