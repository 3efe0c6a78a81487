// Whether the landlock backend can run here (its helper was built, the kernel's Landlock is recent
// enough), and whether `--backend auto` must fall back to it (no user namespace can be created).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { SbxError } from '../../../errors.js';
import { diagnoseUserNamespaces } from '../../../doctor/host/host-facts.js';

/** Signal and abstract-socket scoping (native/sbx-landlock.c refuses to run without them). */
export const LANDLOCK_MIN_ABI = 6;

export interface LandlockInfo {
  path: string;
  version: string;
}

export function probeLandlock(helper: string): LandlockInfo {
  if (!existsSync(helper)) {
    const message = `the landlock backend's helper ${helper} was not built (no C compiler when sbx was built)`;
    throw new SbxError('LANDLOCK_UNAVAILABLE', message, {
      hint: 'install a C compiler (apt-get install gcc) and rebuild sbx (npm run build)',
    });
  }
  let abi: number;
  try {
    const stdio: ['ignore', 'pipe', 'ignore'] = ['ignore', 'pipe', 'ignore'];
    abi = Number(execFileSync(helper, ['--abi'], { encoding: 'utf8', env: {}, stdio, timeout: 5000 }).trim());
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
  return { path: helper, version: `sbx-landlock (kernel Landlock ABI ${abi})` };
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

/**
 * Why the helper's network judge (native/sbx-landlock-net.c) cannot work here, or undefined when it
 * can: `sbx-landlock --probe-judge` tries the whole mechanism once on a child (seccomp user
 * notification, the listener passed over a socketpair, pidfd_getfd, process_vm_readv), which an outer
 * seccomp profile, a ptrace policy or a listener already on the process can each forbid. Only runs
 * with an allow-list network pay for it (backend/landlock/host/backend.ts); the landlock compiler refuses them
 * by name when it fails.
 */
export function probeNetworkJudge(helper: string): string | undefined {
  let said: string;
  try {
    const stdio: ['ignore', 'pipe', 'ignore'] = ['ignore', 'pipe', 'ignore'];
    said = execFileSync(helper, ['--probe-judge'], { encoding: 'utf8', env: {}, stdio, timeout: 5000 }).trim();
  } catch (cause) {
    return `${helper} --probe-judge failed: ${(cause as Error).message.split('\n')[0]}`;
  }
  return said === 'ok' ? undefined : said || 'the helper did not say';
}
