// The facts doctor/host-diagnosis.ts judges, read from /proc, /sys and /etc/apparmor.d. Bounded so an odd
// filesystem cannot hang or flood sbx: only regular files are read (O_NONBLOCK, so a FIFO planted
// where a file should be returns at once), at most MAX_BYTES each, at most MAX_PROFILES AppArmor
// profiles. `root` lets the tests point it at a fixture tree (test/fixtures/hosts-fs/<case>/).
import { closeSync, constants, fstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { diagnoseHost, type Cause, type ContainerKind, type HostFacts } from '../host-diagnosis.js';

const MAX_BYTES = 64 * 1024;
const MAX_PROFILES = 400;

function readSmall(root: string, path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(join(root, path), constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch {
    return undefined;
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    const buf = Buffer.alloc(MAX_BYTES);
    let len = 0;
    // procfs files report size 0: read until EOF or the cap.
    for (let n = 1; n > 0 && len < MAX_BYTES; len += n) n = readSync(fd, buf, len, MAX_BYTES - len, null);
    return buf.subarray(0, len).toString('utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Values that reach error messages and doctor's output: the environment is the caller's, so a crafted
 * SBX_SESSION_ID could carry terminal escapes. Only short plain words pass.
 */
function printable(value: string | undefined): string | undefined {
  return value !== undefined && /^[A-Za-z0-9._-]{1,64}$/.test(value) ? value : undefined;
}

function readInt(root: string, path: string): number | undefined {
  const text = readSmall(root, path)?.trim();
  return text && /^-?\d+$/.test(text) ? Number(text) : undefined;
}

function statusField(status: string, name: string): string | undefined {
  return new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)?.[1]?.trim();
}

function detectContainer(root: string, env: Record<string, string | undefined>): HostFacts['container'] {
  const found = (kind: ContainerKind, evidence: string) => ({ kind, evidence });
  if (env.KUBERNETES_SERVICE_HOST) return found('kubernetes', 'KUBERNETES_SERVICE_HOST is set');
  const cgroup = readSmall(root, 'proc/1/cgroup') ?? '';
  if (/kubepods/.test(cgroup)) return found('kubernetes', '/proc/1/cgroup names kubepods');
  if (readSmall(root, 'run/.containerenv') !== undefined) return found('podman', '/run/.containerenv exists');
  if (readSmall(root, '.dockerenv') !== undefined) return found('docker', '/.dockerenv exists');
  if (/\/docker[/-]/.test(cgroup)) return found('docker', '/proc/1/cgroup names docker');
  if (/\/docker\/containers\//.test(readSmall(root, 'proc/self/mountinfo') ?? '')) {
    return found('docker', '/proc/self/mountinfo mounts from /var/lib/docker/containers');
  }
  const systemd = printable(readSmall(root, 'run/systemd/container')?.trim());
  if (!systemd) return undefined;
  const kind = systemd === 'lxc' || systemd === 'docker' || systemd === 'podman' ? systemd : 'container';
  return found(kind, `/run/systemd/container says ${systemd}`);
}

/** AppArmor profiles that name `bwrap` and grant `userns` (Ubuntu's bwrap-userns-restrict, sbx setup's). */
function apparmorProfilesFor(root: string, bwrap: string | undefined): string[] {
  if (!bwrap) return [];
  let names: string[];
  try {
    names = readdirSync(join(root, 'etc/apparmor.d')).slice(0, MAX_PROFILES);
  } catch {
    return [];
  }
  return names
    .map((name) => `/etc/apparmor.d/${name}`)
    .filter((path) => {
      const text = readSmall(root, path.slice(1));
      return text?.includes(bwrap) && /^\s*(allow\s+)?userns\s*,/m.test(text);
    })
    .sort();
}

function wslVersion(root: string, env: Record<string, string | undefined>): 1 | 2 | undefined {
  const release = readSmall(root, 'proc/sys/kernel/osrelease') ?? readSmall(root, 'proc/version') ?? '';
  if (/WSL2|microsoft-standard/i.test(release)) return 2;
  if (/Microsoft/.test(release)) return 1;
  return env.WSL_INTEROP || env.WSL_DISTRO_NAME ? 2 : undefined;
}

export interface HostFactsInput {
  uid: number;
  bwrap: string | undefined;
  env: Record<string, string | undefined>;
  /** `/` on a real host; a fixture directory in tests. */
  root?: string;
}

export function probeHostFacts({ uid, bwrap, env, root = '/' }: HostFactsInput): HostFacts {
  const status = readSmall(root, 'proc/self/status') ?? '';
  const uidMap = (readSmall(root, 'proc/self/uid_map') ?? '').trim().split(/\s+/);
  const mountinfo = readSmall(root, 'proc/self/mountinfo') ?? '';
  const mountPoints = mountinfo.split('\n').map((line) => line.split(' ')[4] ?? '');
  return {
    uid,
    bwrap,
    maxUserNamespaces: readInt(root, 'proc/sys/user/max_user_namespaces'),
    unprivilegedUsernsClone: readInt(root, 'proc/sys/kernel/unprivileged_userns_clone'),
    apparmorRestrictUserns: readInt(root, 'proc/sys/kernel/apparmor_restrict_unprivileged_userns'),
    apparmorEnabled: readSmall(root, 'sys/module/apparmor/parameters/enabled')?.trim() === 'Y',
    apparmorProfiles: apparmorProfilesFor(root, bwrap),
    container: detectContainer(root, env),
    seccompMode: Number(statusField(status, 'Seccomp') ?? 0),
    seccompFilters: Number(statusField(status, 'Seccomp_filters') ?? 0),
    noNewPrivs: statusField(status, 'NoNewPrivs') === '1',
    // The initial user namespace maps every id: "0 0 4294967295".
    inUserNamespace: uidMap.length >= 3 && uidMap.join(' ') !== '0 0 4294967295',
    procMasked: mountPoints.some((m) => m.startsWith('/proc/') && m !== '/proc/sys/fs/binfmt_misc'),
    outerSbxSession: env.SBX_SESSION_ID ? (printable(env.SBX_SESSION_ID) ?? '(unprintable id)') : undefined,
    wsl: wslVersion(root, env),
  };
}

/** Why bwrap cannot build a sandbox here, most specific cause first (empty: nothing visible blocks it). */
export function diagnoseUserNamespaces(input: HostFactsInput): Cause[] {
  return diagnoseHost(probeHostFacts(input));
}
