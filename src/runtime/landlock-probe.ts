// Whether the landlock backend can run here (its helper was built, the kernel's Landlock is recent
// enough), and whether `--backend auto` must fall back to it (no user namespace can be created).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { SbxError } from '../errors.js';
import { diagnoseUserNamespaces } from './host-facts.js';

/** Signal and abstract-socket scoping (native/sbx-landlock.c refuses to run without them). */
export const LANDLOCK_MIN_ABI = 6;

export interface LandlockInfo {
  path: string;
  version: string;
  /**
   * Why the helper's network judge cannot work here (seccomp user notification, pidfd_getfd,
   * process_vm_readv: an outer seccomp profile or a ptrace policy can forbid each), or undefined when
   * it can. An allow-list network is refused by name without it (backend/landlock.ts).
   */
  judgeUnavailable?: string;
}

/** `sbx-landlock --probe`: "abi=N" then "notify=ok" or the step that failed (native/sbx-landlock.c main). */
function parseProbe(text: string): { abi: number; notify: string } {
  const field = (key: string) => new RegExp(`^${key}=(.*)$`, 'm').exec(text)?.[1] ?? '';
  return { abi: Number(field('abi') || Number.NaN), notify: field('notify') || 'the helper did not say' };
}

export function probeLandlock(helper: string): LandlockInfo {
  if (!existsSync(helper)) {
    const message = `the landlock backend's helper ${helper} was not built (no C compiler when sbx was built)`;
    throw new SbxError('LANDLOCK_UNAVAILABLE', message, {
      hint: 'install a C compiler (apt-get install gcc) and rebuild sbx (npm run build)',
    });
  }
  let abi: number;
  let notify: string;
  try {
    const stdio: ['ignore', 'pipe', 'ignore'] = ['ignore', 'pipe', 'ignore'];
    ({ abi, notify } = parseProbe(
      execFileSync(helper, ['--probe'], { encoding: 'utf8', env: {}, stdio, timeout: 5000 }),
    ));
  } catch (cause) {
    const message = `${helper} does not run: ${(cause as Error).message.split('\n')[0]}`;
    throw new SbxError('LANDLOCK_UNAVAILABLE', message, { cause, hint: 'rebuild sbx (npm run build)' });
  }
  if (!(abi >= LANDLOCK_MIN_ABI)) {
    const what = abi > 0 ? `Landlock ABI ${abi}` : 'no Landlock (or it is not in the lsm= list)';
    const message = `this kernel has ${what}: the landlock backend needs ABI ${LANDLOCK_MIN_ABI} (Linux 6.12+)`;
    throw new SbxError('LANDLOCK_UNAVAILABLE', message, {
      hint: 'run on a newer kernel, or where user namespaces work (--backend bwrap)',
    });
  }
  const judge = notify === 'ok' ? {} : { judgeUnavailable: notify };
  return { path: helper, version: `sbx-landlock (kernel Landlock ABI ${abi})`, ...judge };
}

/**
 * Whether bwrap cannot create its namespaces here. Only when the host diagnosis names a cause (a
 * container's seccomp profile, an outer sandbox, a sysctl): then bwrap is tried once, so a cause that
 * does not really block it (a parent's seccomp filter that allows namespaces) keeps bwrap. A host with
 * no visible cause pays for nothing but a few small reads of /proc.
 */
export function userNamespacesBlocked(uid: number, bwrap: string, env: Record<string, string | undefined>): boolean {
  if (diagnoseUserNamespaces({ uid, bwrap, env }).length === 0) return false;
  const tried = spawnSync(bwrap, ['--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', '--', '/bin/true'], {
    env: {},
    stdio: 'ignore',
    timeout: 5000,
  });
  return tried.status !== 0;
}
