// Finds what can enforce limits on this host: cgroup v2, v1 or none, whether we may create a session
// cgroup, whether a systemd manager would make us a scope. Runs on every `sbx run` that has limits
// (the caller skips it otherwise), so it is a handful of small reads and stats, never a spawn.
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { type CgroupController, type HostLimitFacts, v2SessionParent } from '../../plan.js';
import { xdgRuntimeDir } from '../../../policy/user-dirs.js';

export interface ProbeOptions {
  /** Prefix for /proc, /sys and /run paths: a fake cgroupfs in tests. */
  root?: string;
  /** Path of the file to read instead of `<root>/proc/self/cgroup`. */
  procSelfCgroup?: string;
  /** PATH, XDG_RUNTIME_DIR. Default: process.env (the pipeline passes its context's). */
  env?: Readonly<NodeJS.ProcessEnv>;
  /** The uid the sandbox will run as. Default: ours. */
  uid?: number;
}

const CONTROLLERS: readonly CgroupController[] = ['memory', 'pids', 'cpu'];

interface MountEntry {
  /** The hierarchy path mounted here (`/` unless a subtree was bind-mounted). */
  root: string;
  point: string;
  fstype: string;
  superOptions: string[];
  readOnly: boolean;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

const words = (text: string | undefined) => (text ?? '').split(/\s+/).filter(Boolean);

/** proc(5): mountinfo escapes space, tab, newline and backslash as \ooo. */
const unescapeOctal = (field: string) =>
  field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));

function parseMountinfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    const dash = f.indexOf('-');
    if (dash < 6 || f.length < dash + 4) continue;
    out.push({
      root: unescapeOctal(f[3]!),
      point: unescapeOctal(f[4]!),
      fstype: f[dash + 1]!,
      superOptions: f[dash + 3]!.split(','),
      readOnly: f[5]!.split(',').includes('ro'),
    });
  }
  return out;
}

/** /proc/self/cgroup: `0::/path` for v2, `N:ctrl,ctrl:/path` per v1 hierarchy. */
function parseProcCgroup(text: string): { v2?: string; v1: Map<string, string> } {
  const v1 = new Map<string, string>();
  let v2: string | undefined;
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === '0' && m[2] === '') v2 = m[3]!;
    else for (const c of m[2]!.split(',')) v1.set(c, m[3]!);
  }
  return v2 === undefined ? { v1 } : { v2, v1 };
}

/** The cgroup at hierarchy path `path` as a host directory, or undefined if this mount does not show it. */
function hostDir(root: string, mount: MountEntry, path: string): string | undefined {
  let rel: string;
  if (mount.root === '/') rel = path;
  else if (path === mount.root || path.startsWith(`${mount.root}/`)) rel = path.slice(mount.root.length);
  else return undefined;
  return join(root, mount.point, rel).replace(/(.)\/+$/, '$1');
}

/**
 * May `uid` write `path`? For ourselves access(2) is exact (ACLs, read-only mounts). For another uid
 * (root probing for the user it will drop to) the mode bits decide; group write is not trusted
 * because we cannot know that uid's groups cheaply.
 */
function canWrite(path: string, uid: number, ownUid: number): boolean {
  try {
    if (uid === ownUid) {
      accessSync(path, constants.W_OK);
      return true;
    }
    if (uid === 0) return existsSync(path);
    const st = statSync(path);
    return st.uid === uid ? (st.mode & 0o200) !== 0 : (st.mode & 0o002) !== 0;
  } catch {
    return false;
  }
}

function probeV2(
  root: string,
  mount: MountEntry,
  ownHierarchyPath: string | undefined,
  uid: number,
  ownUid: number,
): Extract<HostLimitFacts['cgroup'], { kind: 'v2' }> {
  const mountDir = join(root, mount.point);
  const reachable = ownHierarchyPath !== undefined ? hostDir(root, mount, ownHierarchyPath) : undefined;
  const ownPath = reachable === undefined ? '/' : `/${reachable.slice(mountDir.length).replace(/^\/+/, '')}`;
  const parent = v2SessionParent(mountDir, ownPath);
  const subtree = words(read(join(parent, 'cgroup.subtree_control')));
  const writable =
    reachable !== undefined &&
    !mount.readOnly &&
    canWrite(parent, uid, ownUid) &&
    canWrite(join(parent, 'cgroup.procs'), uid, ownUid);
  // "No internal processes": a non-root cgroup can hand controllers to children only while it holds
  // no process itself. The true root is exempt, and is the only cgroup without cgroup.events.
  const isTrueRoot = !existsSync(join(parent, 'cgroup.events'));
  const canEnable =
    writable &&
    canWrite(join(parent, 'cgroup.subtree_control'), uid, ownUid) &&
    (isTrueRoot || words(read(join(parent, 'cgroup.procs'))).length === 0);
  const available = canEnable ? words(read(join(parent, 'cgroup.controllers'))) : [];
  return { kind: 'v2', mount: mountDir, ownPath, writable, controllers: [...new Set([...subtree, ...available])] };
}

/** systemd-run on PATH and a manager socket to talk to: the user's for a user, the system's for root. */
function hasSystemdRun(root: string, env: NodeJS.ProcessEnv, uid: number): boolean {
  const onPath = (env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && canExecute(join(dir, 'systemd-run')));
  if (!onPath) return false;
  if (uid === 0) return existsSync(join(root, '/run/systemd/private'));
  const runtimeDir = xdgRuntimeDir(env) ?? join(root, `/run/user/${uid}`);
  return existsSync(join(runtimeDir, 'systemd/private')) || existsSync(join(runtimeDir, 'bus'));
}

function canExecute(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export function probeCgroupFacts(opts: ProbeOptions = {}): HostLimitFacts {
  const root = opts.root ?? '';
  const ownUid = process.getuid?.() ?? 0;
  const uid = opts.uid ?? ownUid;
  const env = opts.env ?? process.env;
  const mounts = parseMountinfo(read(join(root, '/proc/self/mountinfo')) ?? '');
  const own = parseProcCgroup(read(opts.procSelfCgroup ?? join(root, '/proc/self/cgroup')) ?? '');

  const v2Mounts = mounts.filter((m) => m.fstype === 'cgroup2');
  const v2Mount = v2Mounts.find((m) => m.point === '/sys/fs/cgroup') ?? v2Mounts[0];
  // In systemd's hybrid layout a cgroup2 hierarchy is mounted but every controller is bound to v1:
  // its root lists none of ours, and v1 is what can enforce limits.
  const v2Useful =
    v2Mount !== undefined &&
    words(read(join(root, v2Mount.point, 'cgroup.controllers'))).some((c) => (CONTROLLERS as string[]).includes(c));

  const v1Dirs = Object.fromEntries(
    CONTROLLERS.map((c) => {
      const mount = mounts.find((m) => m.fstype === 'cgroup' && m.superOptions.includes(c));
      const path = own.v1.get(c);
      return [c, mount && path !== undefined ? (hostDir(root, mount, path) ?? null) : null];
    }),
  ) as Record<CgroupController, string | null>;
  const v1Mounted = CONTROLLERS.filter((c) => v1Dirs[c] !== null);

  let cgroup: HostLimitFacts['cgroup'];
  if (v2Mount && (v2Useful || v1Mounted.length === 0)) {
    cgroup = probeV2(root, v2Mount, own.v2, uid, ownUid);
  } else if (v1Mounted.length > 0) {
    const readOnly = (dir: string) =>
      mounts.some((m) => m.fstype === 'cgroup' && m.readOnly && dir.startsWith(join(root, m.point)));
    const writable = v1Mounted.every((c) => !readOnly(v1Dirs[c]!) && canWrite(v1Dirs[c]!, uid, ownUid));
    cgroup = { kind: 'v1', controllers: v1Dirs, writable };
  } else {
    cgroup = { kind: 'none' };
  }
  // Scopes only help on the unified hierarchy (plan.ts): skip the PATH walk elsewhere.
  const systemdRun = cgroup.kind === 'v2' && hasSystemdRun(root, env, uid);
  return { uid, cgroup, systemdRun };
}
