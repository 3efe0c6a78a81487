// Memory the session's processes hold that no resident set shows: shared-memory files
// (memfd, a deleted tmpfs file) kept only by a descriptor, and the files on the tmpfs mounts the
// sandbox's own mount namespace made (bwrap's and nsjail's /tmp, HOME, /dev and so /dev/shm), which
// need no process at all to stay in memory. A memory cgroup charges both; the watchdog
// (memory-watchdog.ts) adds them to the tree's sum. Read from /proc and statfs only.
import { type BigIntStats, readdirSync, readFileSync, readlinkSync, statfsSync, statSync } from 'node:fs';
import type { TreeProcess } from './process-tree.js';

/** statfs f_type of the filesystems whose files are memory (linux/magic.h); memfd and SysV shm are tmpfs. */
const MEMORY_FILESYSTEMS = new Set([
  0x01021994, // TMPFS_MAGIC (shmem: tmpfs, memfd_create, MAP_SHARED|MAP_ANONYMOUS, SysV shm)
  0x858458f6, // RAMFS_MAGIC
  0x958458f6, // HUGETLBFS_MAGIC (memfd_create with MFD_HUGETLB)
  0x5345434d, // SECRETMEM_MAGIC (memfd_secret)
]);
const MEMORY_FSTYPES = new Set(['tmpfs', 'ramfs', 'hugetlbfs']);

/** What sbx's own mount namespace has: a mount the sandbox shares with it is the host's, not the sandbox's. */
export interface OwnMounts {
  /** readlink(/proc/self/ns/mnt). */
  namespace: string;
  /** `major:minor` of every mount sbx sees. */
  devices: ReadonlySet<string>;
}

/** Shared memory the tree holds beyond its resident sets, and what the precise sum must not count twice. */
export interface HeldShmem {
  bytes: number;
  /** `major:minor:inode` of each file counted through a descriptor. */
  files: ReadonlySet<string>;
  /** `major:minor` of each sandbox tmpfs counted whole. */
  devices: ReadonlySet<string>;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** st_dev as `major:minor` (the kernel's new_encode_dev, which stat returns). */
export function deviceName(dev: number | bigint): string {
  const d = BigInt(dev);
  const major = ((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn);
  const minor = (d & 0xffn) | ((d >> 12n) & ~0xffn);
  return `${major}:${minor}`;
}

/** mountinfo escapes space, tab, newline and backslash as octal (proc(5)). */
const unescapeOctal = (field: string) =>
  field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

export interface MountEntry {
  /** The mount id (fdinfo's `mnt_id` names it). */
  id: number;
  device: string;
  mountPoint: string;
  fstype: string;
  /** The mount's own flags say rw (a read-only bind of a tmpfs cannot be filled through it). */
  writable: boolean;
}

/** /proc/PID/mountinfo's lines (proc(5)): `id parent major:minor root mountpoint options [optional...] - fstype source super`. */
export function parseMountinfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (dash < 6) continue;
    out.push({
      id: Number(fields[0]),
      device: fields[2]!,
      mountPoint: unescapeOctal(fields[4]!),
      fstype: fields[dash + 1] ?? '',
      writable: fields[5]!.split(',')[0] === 'rw',
    });
  }
  return out;
}

export function ownMounts(): OwnMounts {
  const namespace = readlinkOr('/proc/self/ns/mnt') ?? '';
  return { namespace, devices: new Set(parseMountinfo(read('/proc/self/mountinfo') ?? '').map((m) => m.device)) };
}

function readlinkOr(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

/** One mount namespace of the tree: a member to read it through, and its mounts by id. */
interface NamespaceView {
  pid: number;
  mounts: Map<number, MountEntry>;
}

/** Each member's mount namespace (one readlink each), each namespace's mountinfo read once. */
function namespacesOf(tree: readonly TreeProcess[]): {
  byPid: Map<number, NamespaceView>;
  byLink: Map<string, NamespaceView>;
} {
  const byPid = new Map<number, NamespaceView>();
  const byLink = new Map<string, NamespaceView>();
  for (const p of tree) {
    const link = readlinkOr(`/proc/${p.pid}/ns/mnt`);
    if (link === undefined) continue;
    let view = byLink.get(link);
    if (!view) {
      const text = read(`/proc/${p.pid}/mountinfo`);
      if (text === undefined) continue;
      view = { pid: p.pid, mounts: new Map(parseMountinfo(text).map((m) => [m.id, m])) };
      byLink.set(link, view);
    }
    byPid.set(p.pid, view);
  }
  return { byPid, byLink };
}

/**
 * The used bytes of every writable tmpfs a mount namespace of the tree has and sbx's does not: those
 * were made for the sandbox (bwrap's and nsjail's /tmp, HOME, /dev/shm; a nested namespace's own) and
 * their files live as long as the namespace, mapped or not. A tmpfs sbx also sees (a bind of the
 * host's /dev/shm) is the host's: its files are counted only through the descriptors the tree holds
 * (heldFiles). One statfs per tmpfs, through a member's /proc/PID/root: cheap enough for every poll,
 * and a mount added later is seen. The mount point is the sandbox's to name (and to swap for a
 * symlink meanwhile): at worst sbx then counts another filesystem's usage against the sandbox.
 */
function sandboxTmpfs(
  byLink: ReadonlyMap<string, NamespaceView>,
  own: OwnMounts,
): { bytes: number; devices: Set<string> } {
  const devices = new Set<string>();
  let bytes = 0;
  for (const [link, view] of byLink) {
    if (link === own.namespace) continue;
    for (const m of view.mounts.values()) {
      if (!m.writable || !MEMORY_FSTYPES.has(m.fstype) || own.devices.has(m.device) || devices.has(m.device)) continue;
      try {
        const s = statfsSync(`/proc/${view.pid}/root${m.mountPoint}`);
        // A tmpfs mounted with size=0 has no block count (f_blocks 0): its usage cannot be read.
        bytes += Math.max(0, s.blocks - s.bfree) * s.bsize;
        devices.add(m.device);
      } catch {
        // The member left between the two reads: the next poll reads through another.
      }
    }
  }
  return { bytes, devices };
}

/**
 * Files on a memory filesystem the tree holds open, each once (by device and inode), st_blocks × 512:
 * every unlinked one (a memfd, a deleted tmpfs file: only descriptors and mappings keep it) and every
 * linked one opened for writing (landlock's granted tmpfs paths, a bound host tmpfs). Not a file on a
 * sandbox tmpfs, which sandboxTmpfs counts whole, nor a host tmpfs file only read.
 *
 * fdinfo (flags, mnt_id) is read first, and a descriptor on a mount the process's mountinfo lists as
 * anything but a memory filesystem is never stat'ed: a stat on a FUSE or network file may block, and
 * would block sbx's event loop on a filesystem the sandbox may serve. Kernel-internal mounts (memfd's
 * and SysV's shm, pipes, sockets) are in no mountinfo: those are stat'ed (no I/O), and their type
 * read by statfs once per device.
 */
function heldFiles(
  tree: readonly TreeProcess[],
  byPid: ReadonlyMap<number, NamespaceView>,
  counted: ReadonlySet<string>,
): { bytes: number; files: Set<string> } {
  const files = new Set<string>();
  const isMemory = new Map<string, boolean>();
  let bytes = 0;
  for (const p of tree) {
    const view = byPid.get(p.pid);
    let fds: string[];
    try {
      fds = view ? readdirSync(`/proc/${p.pid}/fd`) : [];
    } catch {
      continue;
    }
    for (const fd of fds) {
      const info = read(`/proc/${p.pid}/fdinfo/${fd}`) ?? '';
      const flags = /^flags:\s+([0-7]+)$/m.exec(info)?.[1];
      const mountId = /^mnt_id:\s+(\d+)$/m.exec(info)?.[1];
      if (flags === undefined || mountId === undefined) continue;
      const mount = view!.mounts.get(Number(mountId));
      if (mount && !MEMORY_FSTYPES.has(mount.fstype)) continue;
      const path = `/proc/${p.pid}/fd/${fd}`;
      let st: BigIntStats | undefined;
      try {
        st = statSync(path, { bigint: true, throwIfNoEntry: false });
      } catch {
        continue;
      }
      if (!st?.isFile()) continue;
      const device = deviceName(st.dev);
      const key = `${device}:${st.ino}`;
      if (counted.has(device) || files.has(key)) continue;
      if (!mount && !isMemory.has(device)) {
        try {
          isMemory.set(device, MEMORY_FILESYSTEMS.has(statfsSync(path).type));
        } catch {
          continue;
        }
      }
      if (!mount && !isMemory.get(device)) continue;
      // O_ACCMODE: 0 is O_RDONLY.
      if (st.nlink > 0n && (parseInt(flags, 8) & 3) === 0) continue;
      files.add(key);
      bytes += Number(st.blocks) * 512;
    }
  }
  return { bytes, files };
}

/** What the tree holds in shared memory beyond its resident sets (see the file comment). */
export function heldShmem(tree: readonly TreeProcess[], own: OwnMounts): HeldShmem {
  const namespaces = namespacesOf(tree);
  const mounts = sandboxTmpfs(namespaces.byLink, own);
  const held = heldFiles(tree, namespaces.byPid, mounts.devices);
  return { bytes: mounts.bytes + held.bytes, files: held.files, devices: mounts.devices };
}

/** A maps line's `0a:1f` (hex major:minor) as `10:31`. */
const hexDevice = (dev: string) =>
  dev
    .split(':')
    .map((n) => parseInt(n, 16))
    .join(':');

/**
 * The proportional bytes of `dir`'s shared mappings of files heldShmem already counts whole: their
 * pages are in the process's Pss_Shmem too, and the precise sum must not count a page twice. Reads
 * /proc/PID/smaps (a page-table walk): only for the precise sum, past the limit.
 */
export function countedMappings(dir: string, held: HeldShmem): number {
  if (held.files.size === 0 && held.devices.size === 0) return 0;
  let bytes = 0;
  let counting = false;
  for (const line of (read(`${dir}/smaps`) ?? '').split('\n')) {
    const header = /^[0-9a-f]+-[0-9a-f]+ (\S{4}) [0-9a-f]+ ([0-9a-f]+:[0-9a-f]+) (\d+)/.exec(line);
    if (header) {
      const device = hexDevice(header[2]!);
      counting = header[1]![3] === 's' && (held.devices.has(device) || held.files.has(`${device}:${header[3]}`));
      continue;
    }
    const pss = counting ? /^Pss:\s+(\d+) kB/.exec(line) : null;
    if (pss) bytes += Number(pss[1]) * 1024;
  }
  return bytes;
}
