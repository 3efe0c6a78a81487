// What an export target cannot say the way bwrap does: the shape every exporter reports it in, and
// the refusal when a policy needs what the target cannot honour. Pure.
import type { Gap } from '../backend/shared/gap.js';
import { SbxError } from '../errors.js';
import type { Policy } from '../policy/types.js';

export type ExportTarget = 'docker' | 'oci' | 'k8s';

/** A file the export needs beside its output (the seccomp profile, generated files, the bundle's root). */
export type ExportFile =
  | { kind: 'file'; path: string; content: string; mode: number }
  | { kind: 'dir'; path: string; mode: number }
  | { kind: 'symlink'; path: string; linkTo: string };

/** Collects gaps as a compiler walks the policy; each key is reported once. */
export class GapList {
  readonly items: Gap[] = [];

  add(key: string, effect: Gap['effect'], detail: string): void {
    if (!this.items.some((g) => g.key === key && g.detail === detail)) this.items.push({ key, effect, detail });
  }

  /** Throws the first refusal (all of them in `details`), if any. */
  refuseIfAny(target: ExportTarget, hint: string): void {
    const refused = this.items.filter((g) => g.effect === 'refused');
    const [first, ...rest] = refused;
    if (!first) return;
    throw new SbxError('BACKEND_UNSUPPORTED', `${target} export: ${first.key}: ${first.detail}`, {
      hint,
      details: rest.map((g) => `${g.key}: ${g.detail}`),
    });
  }
}

/**
 * The gaps every exporter starts with. `git-state`: sbx run's git-state auditor (src/git/) walks the
 * writable trees before and after the command, on the host; an engine runs the container without it,
 * so a hook or a config program the container writes into a bound repository would run at the next
 * host git command. `sbx audit` wraps the engine's run in the same audit.
 */
export function exportGaps(policy: Policy): GapList {
  const gaps = new GapList();
  // The values would have to reach the engine, or a proxy of sbx's beside it that terminates TLS with a
  // CA the container trusts: none of the three engines has a place for either.
  if (policy.credentials)
    gaps.add(
      'credentials',
      'refused',
      `${policy.credentials.rules.map((r) => r.name).join(', ')}: sbx's proxy puts the values in at run time, and an export has none (use sbx run)`,
    );
  if (policy.mounts.some((m) => m.kind === 'bind' && m.access === 'rw'))
    gaps.add(
      'git-state',
      'weaker',
      "not audited by the engine: what the container writes into a bound repository's git state (hooks, " +
        'config programs, new git dirs) is not checked after it; run the container in the foreground through ' +
        '`sbx audit --writable DIR -- <engine run>` on the host holding DIR',
    );
  return gaps;
}

/** Whether a limit the target cannot enforce may be left out: only when the profile does not require it. */
export function unenforcedLimit(gaps: GapList, key: string, required: boolean, why: string): void {
  gaps.add(
    key,
    required ? 'refused' : 'weaker',
    required ? `required by the profile, and ${why}` : `not enforced: ${why}`,
  );
}
