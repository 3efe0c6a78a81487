// What goes over the layers, in order: the layers sorted parents first; git state and sbx's own policy
// bound read-only over themselves (and the directories above them pinned); the sensitive roots, the
// scan's secret-looking files and what the toolchains' scan found, masked; the git config views; root-only system files
// when the child keeps host uid 0; then the final read-only remounts. Masks come last: a bind placed
// after a mask would uncover it.
import { posix } from 'node:path';
import { SbxError } from '../../errors.js';
import type { Profile } from '../../profile/schema.js';
import type { Variables } from '../../profile/variables.js';
import { GIT_HOOKS_REASON, OWN_POLICY_REASON } from '../../host-state/guarded-state.js';
import type { Host } from '../host.js';
import { isWithin } from '../../path-within.js';
import { TOOLCHAIN_MASK_REASON, type ToolchainFacts } from '../../toolchains/toolchains.js';
import type { Identity, Mode, Mount, MountRole } from '../types.js';
import { normalizeTarget } from './bind-checks.js';
import { fact, type ProbePlan } from './probe-plan.js';

/** What the overlay is decided from. */
export interface OverlayInput {
  profile: Profile;
  host: Host;
  plan: ProbePlan;
  mode: Mode;
  identity: Identity;
  /** The toolchains shown (command-env.ts toolchainFactsOf): what their scan found is masked. */
  tools: ToolchainFacts | undefined;
}

/** Parents before children: a mount placed after a deeper one would hide it. Stable otherwise. */
function parentsFirst(layers: readonly Mount[]): Mount[] {
  const depth = (m: Mount) => (m.target === '/' ? 0 : m.target.split('/').length);
  return layers
    .map((m, i) => ({ m, i }))
    .sort((a, b) => depth(a.m) - depth(b.m) || a.i - b.i)
    .map(({ m }) => m);
}

type BindMount = Extract<Mount, { kind: 'bind' }>;

/** The mount list past the sorted layers, as the binds and masks over them are added in order. */
interface Overlay {
  mounts: Mount[];
  /** The binds of the sorted layers: where a host path shows up inside. */
  binds: BindMount[];
  /** The host path each mask or view hides: its mount point exists there (checkMountPoints). */
  hidden: Map<Mount, string>;
}

/** The layers, then what goes over them: read-only policy files, masks, and the final read-only remounts. */
export function mountsOf(layers: readonly Mount[], input: OverlayInput): Mount[] {
  const { host, mode } = input;
  const mounts = parentsFirst(layers);
  const overlay: Overlay = {
    mounts,
    binds: mounts.filter((m): m is BindMount => m.kind === 'bind'),
    hidden: new Map(),
  };
  bindReadOnly(overlay, input);
  maskSensitive(overlay, input);
  if (input.identity.hostRoot && input.profile.user !== 'root' && mode !== 'danger') {
    // sbx runs as root, so the child's files are still root's on the host (the workspace must stay
    // writable). Owner permissions would let it read /etc/shadow through the read-only bind: mask
    // everything under the system binds that the world may not read.
    for (const { path, dir } of host.rootOnly) mask(overlay, path, dir, 'root-only host file', 'mask');
  }
  if (mode !== 'danger') checkMountPoints(overlay.mounts, host, overlay.hidden);
  return [...overlay.mounts, ...finalRemounts(overlay.mounts, mode, input.plan.vars)];
}

/**
 * Every place a host path shows up inside: one per bind that contains it (the same tree may be
 * bound twice, e.g. HOME and one of its parents).
 */
function sandboxPathsOf(binds: readonly BindMount[], real: string): string[] {
  return [
    ...new Set(
      binds.filter((b) => isWithin(real, b.source)).map((b) => posix.join(b.target, posix.relative(b.source, real))),
    ),
  ];
}

/** Puts `mount` over every place `real` shows up inside. */
function cover(overlay: Overlay, real: string, mount: (target: string) => Mount): void {
  for (const target of sandboxPathsOf(overlay.binds, real)) {
    // Already hidden (e.g. ~/.ssh/id_rsa under a masked ~/.ssh): a mount point inside the read-only
    // mask could not even be created.
    if (overlay.mounts.some((m) => m.kind === 'mask' && isWithin(target, m.target))) continue;
    const m = mount(target);
    overlay.hidden.set(m, real);
    overlay.mounts.push(m);
  }
}

function mask(overlay: Overlay, real: string, dir: boolean, reason: string, role: MountRole): void {
  cover(overlay, real, (target) => ({ kind: 'mask', target, what: dir ? 'dir' : 'file', reason, role }));
}

/** Binds each host path read-only over itself wherever a bind shows it: state to guard. */
function bindOverItself(overlay: Overlay, reals: Iterable<string>, reason: string): void {
  for (const real of reals) {
    for (const target of sandboxPathsOf(overlay.binds, real)) {
      overlay.mounts.push({ kind: 'bind', source: real, target, access: 'ro', optional: false, reason, role: 'guard' });
    }
  }
}

/**
 * A mount point cannot be renamed or removed (EBUSY), but the directory that holds one can: `mv .git
 * .gitold` in a writable workspace would carry the read-only hooks and the config view away and leave
 * room for a new `.git/hooks` that the host's next git command runs. Every directory between a
 * writable bind and such a path is bound over itself, writable as before, so none of them can move.
 */
function pinParents(overlay: Overlay, reals: readonly string[]): void {
  const placed = new Set(overlay.mounts.map((m) => m.target));
  for (const real of reals) {
    for (const bind of overlay.binds) {
      if (bind.access !== 'rw' || real === bind.source || !isWithin(real, bind.source)) continue;
      const parents: string[] = [];
      for (let dir = posix.dirname(real); dir !== bind.source; dir = posix.dirname(dir)) parents.unshift(dir);
      for (const dir of parents) {
        const target = posix.join(bind.target, posix.relative(bind.source, dir));
        if (placed.has(target)) continue;
        placed.add(target);
        const reason = 'pinned: holds protected git state, so it cannot be renamed';
        overlay.mounts.push({ kind: 'bind', source: dir, target, access: 'rw', optional: false, reason, role: 'pin' });
      }
    }
  }
}

/** Bound before the masks, which must come last (a bind placed after a mask would uncover it). */
function bindReadOnly(overlay: Overlay, input: OverlayInput): void {
  const { host, plan } = input;
  // Git hooks run on the host at the next commit: a sandboxed build must not be able to plant one.
  const gitState = [...host.sensitiveFiles.protect, ...host.sensitiveFiles.views.map((v) => v.path)];
  // In danger mode the host root is writable: there is nothing left to pin.
  if (input.mode !== 'danger') pinParents(overlay, gitState);
  bindOverItself(overlay, host.sensitiveFiles.protect, GIT_HOOKS_REASON);
  // Nothing a sandbox writes may become a later run's policy: the user's sbx config and the
  // project's .sbx are read-only wherever a bind shows them.
  const own = plan.ownPolicy.map((p) => fact(host, p));
  const ownDirs = new Set(own.flatMap((f) => (f.exists && f.type === 'dir' ? [f.real] : [])));
  bindOverItself(overlay, ownDirs, OWN_POLICY_REASON);
}

function maskSensitive(overlay: Overlay, input: OverlayInput): void {
  const { host, plan } = input;
  // Credential stores (and the agent sockets they come with) reachable through any bind are masked.
  for (const root of plan.keepOut) {
    const f = fact(host, root);
    if (f.exists) mask(overlay, f.real, f.type === 'dir', 'sensitive root', 'mask');
  }
  // Secret-looking files in the mounted trees (.env, *.pem, ...): hidden wherever they appear. A
  // file git tracks with other content gets a stand-in nobody can read: `git add` inside then fails
  // on it instead of committing an empty file in its place.
  for (const { path, dir, tracked } of host.sensitiveFiles.masks) {
    const reason = 'sensitive file';
    if (tracked)
      cover(overlay, path, (target) => ({ kind: 'file', target, content: '', mode: 0, reason, role: 'secret' }));
    else mask(overlay, path, dir, reason, 'secret');
  }
  // What the toolchain roots' scan found (toolchains/host/toolchain-probe.ts), wherever a toolchain bind shows it.
  for (const { path, dir } of input.tools?.masks ?? []) mask(overlay, path, dir, TOOLCHAIN_MASK_REASON, 'toolchain');
  // .git/config without credentials, exclude lists naming the masked files: generated content.
  for (const view of host.sensitiveFiles.views) {
    cover(overlay, view.path, (target) => ({
      kind: 'file',
      target,
      content: view.content,
      mode: 0o444,
      reason: view.reason,
      role: view.role,
      ...(view.withheld?.length ? { withheld: view.withheld } : {}),
    }));
  }
}

/**
 * Once everything is in place: /dev (an unsized tmpfs that would hold whatever the command wrote there
 * beyond every memory count: its sized /dev/shm and devpts are mounts of their own and stay writable),
 * HOME read-only in read-only mode, and the sandbox root itself.
 */
function finalRemounts(mounts: readonly Mount[], mode: Mode, vars: Variables): Mount[] {
  const dev: Mount[] = mounts.some((m) => m.kind === 'dev' && m.target === '/dev')
    ? [
        {
          kind: 'remount-ro',
          target: '/dev',
          reason: '/dev: device nodes and mount points only, nothing new',
          role: 'kernel',
        },
      ]
    : [];
  if (mode === 'danger') return dev;
  const root: Mount = {
    kind: 'remount-ro',
    target: '/',
    reason: 'the sandbox root itself is not writable',
    role: 'system',
  };
  if (mode !== 'read-only') return [...dev, root];
  const home: Mount = {
    kind: 'remount-ro',
    target: normalizeTarget(vars.home, 'HOME'),
    reason: 'read-only mode: HOME is not writable',
    role: 'private',
  };
  return [...dev, home, root];
}

/**
 * bwrap creates each mount's mount point inside whatever is already mounted there; inside a writable
 * host bind that is a directory or an empty file created on the host (workspace.mountAt: / left bin,
 * usr, ... in the workspace). So a mount inside a writable host bind must land on a path that exists
 * there: the very path it binds or masks, or a probed directory (HOME inside a workspace). Danger
 * mode is not checked: it writes to the host by design.
 */
function checkMountPoints(mounts: readonly Mount[], host: Host, maskedPaths: ReadonlyMap<Mount, string>): void {
  const placed: Mount[] = [];
  for (const m of mounts) {
    if (m.kind === 'remount-ro') continue;
    const parent = placed.findLast((p) => p.kind !== 'symlink' && isWithin(m.target, p.target));
    placed.push(m);
    if (parent?.kind !== 'bind' || parent.access !== 'rw' || parent.target === m.target) continue;
    const mountPoint = posix.join(parent.source, posix.relative(parent.target, m.target));
    const lands = m.kind === 'bind' ? m.source : maskedPaths.get(m);
    if (lands === mountPoint) continue;
    // Any other path inside the bind may come up here, most never probed: only one known to exist
    // passes, so not knowing refuses (fails closed) instead of calling fact(), which treats it as a bug.
    const existing = host.paths[mountPoint];
    if (existing?.exists && existing.real === mountPoint) continue;
    const where = `${m.target} (${m.reason}) lies inside the writable bind of ${parent.source}`;
    throw new SbxError('BIND_TARGET_INVALID', `${where}: its mount point ${mountPoint} would be created on the host`, {
      hint: 'mount it outside writable binds (e.g. under /work or /opt), or pick another workspace.mountAt / mountAt',
    });
  }
}
