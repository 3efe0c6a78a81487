// Where a --report-file may lie: nowhere the sandbox can write. sbx opens the report before the run
// and writes it after; a command that can write its directory could unlink or replace it, or plant
// a symlink there for the next run, and the caller would read a forged report. Pure: the caller
// resolves the path (parent realpath + name, no symlink at the name) and opens it with O_NOFOLLOW.
import { isWithin } from '../path-within.js';
import type { Policy } from '../policy/types.js';

/**
 * Host trees the sandbox of `policy` can write: its read-write binds (the workspace in
 * workspace-write mode, `binds` with rw, unix sockets; `/` in danger mode). A read-only bind or mask
 * inside one is not subtracted: the verdict errs on the side of refusing.
 */
export function writableRoots(policy: Policy): string[] {
  return policy.mounts.flatMap((m) => (m.kind === 'bind' && m.access === 'rw' ? [m.source] : []));
}

/** The writable root that holds `realPath` (an absolute path with no symlink in it), or undefined when none does. */
export function writableRootHolding(policy: Policy, realPath: string): string | undefined {
  return writableRoots(policy).find((root) => isWithin(realPath, root));
}
