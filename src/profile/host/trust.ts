// Whether a resolved profile chain may be used: a chain with a project file in it (a `.sbx/` found from
// the working directory up, or anything such a file extends) is used only when the user pinned that
// exact chain hash with `sbx trust`, or names it for this invocation (--trust-profile,
// SBX_TRUST_PROFILE). Location grants nothing: a cloned repository or a sandboxed command that wrote
// `.sbx/profiles/default.yaml` would otherwise choose the next run's sandbox.
// A file named by path (`-p ./ci.yaml`, the Action's `profile:`) is pinned the same way when it lies in
// a tree a sandbox or a pull request may have written (`TrustContext.exposed`): a run rewrote it to
// `network: host` with no masking, and the next run read `.env` and reached a host port.
import { SbxError } from '../../errors.js';
import { isWithin } from '../../path-within.js';
import type { ChainLink } from './load.js';
import { readTrustStore, type TrustPin } from './trust-store.js';

export interface TrustContext {
  /** $XDG_STATE_HOME/sbx/trust.json */
  storeFile: string;
  /** Chain hashes trusted for this invocation only (CI): --trust-profile, SBX_TRUST_PROFILE. */
  hashes: readonly string[];
  /** Running in CI (CI=true or GITHUB_ACTIONS=true): a refusal never offers to trust a file that shadows a built-in. */
  ci?: boolean;
  /**
   * Real paths of the trees a sandbox or a pull request may have written before this run: the working
   * directory and its project's top level (an earlier run's default workspace), --workspace, and in
   * GitHub Actions $GITHUB_WORKSPACE (the checkout a pull request controls). A profile file named by
   * path inside one is pinned like a project file. The run's own writable binds are checked after the
   * policy is derived (host-state/host-state.ts), since the profile itself chooses them.
   */
  exposed?: readonly string[];
}

/** CI=true or GITHUB_ACTIONS=true, as GitHub Actions, GitLab CI, CircleCI and others set them. */
export function isCi(env: Record<string, string | undefined>): boolean {
  return env.CI === 'true' || env.GITHUB_ACTIONS === 'true';
}

export type TrustState =
  /** Only sbx's own profiles. */
  | { kind: 'builtin' }
  /** User files, and files named by path outside every exposed tree: they passed the owner and mode checks, which is their trust. */
  | { kind: 'owner-checked' }
  | { kind: 'trusted'; by: 'pin' | 'hash' }
  /** A project chain nobody trusted (no pin), or one that changed since it was pinned. */
  | { kind: 'untrusted'; pin?: TrustPin };

/**
 * Files inside a project `.sbx/` are trusted by pin, however they were named (`-p .sbx/profiles/x.yaml`
 * too), and so are files named by path inside an exposed tree.
 */
export function needsPin(link: Pick<ChainLink, 'source' | 'real'>, exposed: readonly string[] = []): boolean {
  return (
    link.source === 'project' ||
    link.real.split('/').includes('.sbx') ||
    (link.source === 'path' && exposed.some((tree) => isWithin(link.real, tree)))
  );
}

/** What pins or names this exact chain, if anything: a stale pin (same file, other hash) is returned as such. */
function pinOf(
  chain: readonly ChainLink[],
  hash: string,
  trust: TrustContext,
  uid: number,
): { by: 'pin' | 'hash' } | { stale: TrustPin } | undefined {
  if (trust.hashes.includes(hash)) return { by: 'hash' };
  const pin = readTrustStore(trust.storeFile, uid).pins[chain[chain.length - 1]!.real];
  if (pin?.hash === hash) return { by: 'pin' };
  return pin ? { stale: pin } : undefined;
}

export function judgeTrust(
  chain: readonly ChainLink[],
  hash: string,
  trust: TrustContext | undefined,
  uid: number,
): TrustState {
  if (chain.every((l) => l.source === 'builtin')) return { kind: 'builtin' };
  const exposed = trust?.exposed ?? [];
  if (!chain.some((l) => needsPin(l, exposed))) {
    // A file named by path outside the exposed trees may still lie in a tree this run writes: then
    // only a pin lets it through (pipeline/policy-stage.ts), so a pinned one says so here.
    const pinned = trust && chain.some((l) => l.source === 'path') ? pinOf(chain, hash, trust, uid) : undefined;
    return pinned && 'by' in pinned ? { kind: 'trusted', by: pinned.by } : { kind: 'owner-checked' };
  }
  // No context: nothing vouches for a project chain (fail closed).
  if (!trust) return { kind: 'untrusted' };
  const pinned = pinOf(chain, hash, trust, uid);
  if (pinned && 'by' in pinned) return { kind: 'trusted', by: pinned.by };
  return pinned ? { kind: 'untrusted', pin: pinned.stale } : { kind: 'untrusted' };
}

export interface FileChange {
  file: string;
  /** undefined: not in the trusted chain. */
  before?: string;
  /** undefined: no longer in the chain. */
  after?: string;
}

/** The files whose hash differs between a pin and the chain as it is now. */
export function changedFiles(chain: readonly ChainLink[], pin: TrustPin): FileChange[] {
  const before = new Map(pin.files.map((f) => [f.file, f.sha256]));
  const after = new Map(chain.map((l) => [l.real, l.sha256]));
  return [...new Set([...before.keys(), ...after.keys()])].flatMap((file) => {
    const b = before.get(file);
    const a = after.get(file);
    if (a === b) return [];
    return [{ file, ...(b ? { before: b } : {}), ...(a ? { after: a } : {}) }];
  });
}

const short = (sha: string | undefined) => (sha ? sha.slice(0, 12) : 'none');

/** PROFILE_UNTRUSTED: which file, new or changed (old → new hash), and the commands to review and trust it. */
export function untrustedError(
  name: string,
  chain: readonly ChainLink[],
  hash: string,
  pin: TrustPin | undefined,
  context: { shadows: boolean; ci: boolean; exposed?: readonly string[] } = { shadows: false, ci: false },
): SbxError {
  const top = chain[chain.length - 1]!;
  const pinned = chain.filter((l) => needsPin(l, context.exposed));
  const project = pinned.map((l) => l.real);
  const what = pinned.every((l) => l.source === 'path')
    ? `profile file "${name}" (${project.join(', ')}, in a tree a sandbox or the repository can write)`
    : `project profile "${name}" (${project.join(', ')})`;
  // In CI the project is usually a pull request: a file named like a built-in there is the
  // attacker's, and a hint naming its hash would invite trusting it. No hash, no trust command.
  if (context.shadows && context.ci) {
    return new SbxError(
      'PROFILE_UNTRUSTED',
      `${what} shadows the built-in "${name}" and is not trusted; in CI it is refused without an offer to trust it`,
      { hint: `run sbx's own profile with -p builtin:${name}` },
    );
  }
  const message = pin
    ? `${what} changed since you trusted it: ${changedFiles(chain, pin)
        .map((c) => `${c.file} ${short(c.before)} → ${short(c.after)}`)
        .join('; ')} (chain sha256 ${short(pin.hash)} → ${short(hash)})`
    : `${what} is not trusted: sbx has never been told to trust it (chain sha256 ${hash})`;
  const ref = name.includes('/') || name.endsWith('.yaml') || name.endsWith('.yml') ? top.real : name;
  const review = pin
    ? `see the change with \`sbx trust --dry-run ${ref}\``
    : `review it with \`sbx profiles show ${ref}\``;
  const builtin = context.shadows ? `; for sbx's own, -p builtin:${name}` : '';
  return new SbxError('PROFILE_UNTRUSTED', message, {
    hint: `${review}, then \`sbx trust ${ref}\` (CI: --trust-profile ${hash} or SBX_TRUST_PROFILE)${builtin}`,
  });
}
