// The policy's `remount-ro` entries, folded into the mounts they make read-only: container engines
// have no remount step, they mount read-only from the start. Pure.
import type { Mount } from '../policy/types.js';

export interface Remounts {
  /** `remount-ro /`: the root filesystem is read-only. */
  rootReadOnly: boolean;
  /** Targets below `/` made read-only after everything under them was mounted (HOME in read-only mode). */
  targets: string[];
}

export function foldRemounts(mounts: readonly Mount[]): Remounts {
  const targets = mounts.flatMap((m) => (m.kind === 'remount-ro' && m.target !== '/' ? [m.target] : []));
  return { rootReadOnly: mounts.some((m) => m.kind === 'remount-ro' && m.target === '/'), targets };
}
