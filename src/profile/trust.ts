// Whether a resolved profile chain may be used: a chain with a project file in it (a `.sbx/` found from
// the working directory up, or anything such a file extends) is used only when the user pinned that
// exact chain hash with `sbx trust`, or names it for this invocation (--trust-profile,
// SBX_TRUST_PROFILE). Location grants nothing: a cloned repository or a sandboxed command that wrote
// `.sbx/profiles/default.yaml` would otherwise choose the next run's sandbox.
import { SbxError } from '../errors.js';
import type { ChainLink } from './load.js';
import { readTrustStore, type TrustPin } from './trust-store.js';

export interface TrustContext {
  /** $XDG_STATE_HOME/sbx/trust.json */
  storeFile: string;
  /** Chain hashes trusted for this invocation only (CI): --trust-profile, SBX_TRUST_PROFILE. */
  hashes: readonly string[];
  /** Running in CI (CI=true or GITHUB_ACTIONS=true): a refusal never offers to trust a file that shadows a built-in. */
  ci?: boolean;
}

/** CI=true or GITHUB_ACTIONS=true, as GitHub Actions, GitLab CI, CircleCI and others set them. */
export function isCi(env: Record<string, string | undefined>): boolean {
  return env.CI === 'true' || env.GITHUB_ACTIONS === 'true';
}

export type TrustState =
  /** Only sbx's own profiles. */
  | { kind: 'builtin' }
  /** User or explicitly named files: they passed the owner and mode checks, which is their trust. */
  | { kind: 'owner-checked' }
  | { kind: 'trusted'; by: 'pin' | 'hash' }
  /** A project chain nobody trusted (no pin), or one that changed since it was pinned. */
  | { kind: 'untrusted'; pin?: TrustPin };

/** Files inside a project `.sbx/` are trusted by pin, however they were named (`-p .sbx/profiles/x.yaml` too). */
export function needsPin(link: Pick<ChainLink, 'source' | 'real'>): boolean {
  return link.source === 'project' || link.real.split('/').includes('.sbx');
}

export function judgeTrust(
  chain: readonly ChainLink[],
  hash: string,
  trust: TrustContext | undefined,
  uid: number,
): TrustState {
  if (!chain.some(needsPin))
    return chain.every((l) => l.source === 'builtin') ? { kind: 'builtin' } : { kind: 'owner-checked' };
  if (trust?.hashes.includes(hash)) return { kind: 'trusted', by: 'hash' };
  // No context: nothing vouches for a project chain (fail closed).
  if (!trust) return { kind: 'untrusted' };
  const pin = readTrustStore(trust.storeFile, uid).pins[chain[chain.length - 1]!.real];
  if (pin?.hash === hash) return { kind: 'trusted', by: 'pin' };
  return pin ? { kind: 'untrusted', pin } : { kind: 'untrusted' };
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
  context: { shadows: boolean; ci: boolean } = { shadows: false, ci: false },
): SbxError {
  const top = chain[chain.length - 1]!;
  const project = chain.filter(needsPin).map((l) => l.real);
  const what = `project profile "${name}" (${project.join(', ')})`;
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
