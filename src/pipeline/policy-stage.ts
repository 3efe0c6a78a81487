// Stage 3, policy: the host probed for exactly what the profile touches (each path pinned as it is
// probed, so every check runs on the descriptor that will be mounted; the mounted trees walked for
// secret-looking files), then the Policy derived from profile, request and host (policy/derive/). The
// core names what to probe in one plan (policy/derive/probe-plan.ts); this stage fills it.
import { createHash } from 'node:crypto';
import { mkdirSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { SbxError } from '../errors.js';
import { derivePolicy } from '../policy/derive/index.js';
import { fact, type ProbePlan, probePlanOf } from '../policy/derive/probe-plan.js';
import { requestedWorkspace, runVariables, workspaceRealPath } from '../policy/derive/workspace.js';
import { type HostStateFact, hostStatePaths, type PathChain, profileFileState } from '../host-state/host-state.js';
import type { Host, PathFact } from '../policy/host.js';
import { isWithin } from '../path-within.js';
import type { Policy } from '../policy/types.js';
import type { ResolvedProfile } from '../profile/host/load.js';
import type { Variables } from '../profile/variables.js';
import { readGitGlobalConfigs } from '../git/host/git-global-config-read.js';
import { findGitWorktree, protectCommonDir } from '../git/host/git-worktree.js';
import { probePath, scanRootOnly } from '../host/host-probe.js';
import { detectProjectRoot } from '../workspace/host/project-root-probe.js';
import { chainMemo, pathChain } from '../host/path-chain.js';
import { hostStateLinks } from '../host-state/host/host-state-links.js';
import { passwdHome } from '../host/invoking-user.js';
import type { Pins } from '../host/pins.js';
import { sessionBase } from '../host/session.js';
import { fitMasks } from '../sensitive/host/mask-fit.js';
import { loadSensitiveRules, type ScanReader, scanMountedTrees } from '../sensitive/host/sensitive-scan.js';
import type { SensitiveRules } from '../sensitive/sensitive-matcher.js';
import type { SensitiveRuleInput } from '../sensitive/sensitive-files.js';
import { packageRoot } from '../package-root.js';
import { compileEgressRules } from '../network/egress.js';
import { sensitivePaths } from '../sensitive/sensitive.js';
import { TOOLCHAIN_SECRET_FILES, TOOLCHAIN_SKIP_DIRS, type ToolchainFacts } from '../toolchains/toolchains.js';
import { probeToolchains } from '../toolchains/host/toolchain-probe.js';
import { keptScan, recordedScan } from '../sensitive/host/scan-cache.js';
import type { RunContext } from './context-stage.js';
import type { CompileOptions, Lifted } from './run-options.js';
import { type WalkWatch, WarmCache } from '../host/warm-cache.js';

export interface Derived {
  policy: Policy;
  host: Host;
  /** sha256 (16 hex) of the Policy: two runs with the same hash had the same sandbox. */
  hash: string;
}

type Sensitive = Host['sensitiveFiles'];

/**
 * A long-lived library caller's warm results (host/warm-cache.ts): the one piece of process-wide state,
 * kept only under exact invalidation. The CLI runs once per process and never fills it.
 */
const rootOnlyCache = new WarmCache<Host['rootOnly']>();

/** Root-only system files (masked when the sandbox keeps uid 0): walked once per change when warm. */
async function rootOnlyEntries(roots: readonly string[], warm: boolean): Promise<Host['rootOnly']> {
  if (!warm) return scanRootOnly(roots);
  // The roots' own identity is part of the key: a root replaced or re-linked is a new walk.
  const key = JSON.stringify(roots.map((root) => [root, probePath(root)]));
  return rootOnlyCache.get(key, (w) => scanRootOnly(roots, (dir) => w.watch(dir)));
}

/**
 * sbx's own directories that do not exist yet but lie in a tree the sandbox will mount: created now
 * (private, they are sbx's), so that they are masked or read-only inside instead of creatable by the
 * sandbox (a planted ~/.config/sbx/profiles/default.yaml would be the next run's policy).
 */
function createOwnDirs(dirs: string[], mountedTrees: string[], pins: Pins, paths: Host['paths']): void {
  for (const dir of dirs) {
    if (paths[dir]?.exists || !mountedTrees.some((tree) => isWithin(dir, tree))) continue;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (cause) {
      const message = `cannot create ${dir}, which the sandbox could otherwise create: ${(cause as Error).message}`;
      throw new SbxError('SESSION_DIR', message, { cause, hint: `create it yourself: mkdir -m 700 -p ${dir}` });
    }
    paths[dir] = pins.probe(dir);
  }
}

/**
 * The workspace's `.sbx` when it does not exist yet: created empty (0755, a project directory) before
 * the run, so that it is held read-only inside like an existing one (overlay.ts bindReadOnly; the
 * landlock backend guards it). Otherwise a sandbox plants `.sbx/profiles/agent.yaml`, and every later
 * call that resolves the name from here is refused until the user notices. It stays after the run,
 * empty, as `git init` leaves `.git/hooks`: removing it would detach the read-only bind of a
 * concurrent run in the same workspace that found it made (rmdir of a mount point in another mount
 * namespace detaches it), or fail that run's mount outright, and an export's engine binds it later.
 * One made meanwhile by a concurrent run (EEXIST) is probed as it is now. A `.sbx` that is a file or
 * a dangling link stays as it is: a profile found through it is a project profile, pinned. Where sbx
 * may not create it, neither may the sandbox, which runs as the same user.
 */
function createProjectPolicyDirs(plan: ProbePlan, mode: string, pins: Pins, paths: Host['paths']): void {
  if (mode === 'read-only' || mode === 'danger') return;
  // Only the workspace's: profiles are looked up from where sbx runs, a project. Another writable
  // root's existing `.sbx` is held read-only all the same (plan.ownPolicy), but none is made there.
  for (const dir of plan.ownPolicy.filter((p) => p === posix.join(plan.vars.workspace, '.sbx'))) {
    if (paths[dir]?.exists) continue;
    try {
      mkdirSync(dir, { mode: 0o755 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') continue;
    }
    paths[dir] = pins.probe(dir);
  }
}

const sensitiveCache = new WarmCache<Sensitive>();

/** The directory a pinned root's descriptor holds, by identity: a root replaced since is another key. */
function pinnedIdentity(root: string, pins: Pins): string | undefined {
  const fd = pins.fdOf(root);
  if (fd === undefined) return undefined;
  const st = statSync(`/proc/self/fd/${fd}`);
  return `${st.dev}:${st.ino}`;
}

/**
 * Every mounted tree walked for secret-looking files (.env, *.pem, .git/config, ...) to mask. Warm
 * (library): kept while nothing the walk read changes; never when it resolved a symlink, whose
 * target may lie in a directory nobody watches.
 */
async function scanSensitive(
  roots: string[],
  ruleInput: SensitiveRuleInput,
  rules: SensitiveRules,
  pins: Pins,
  warm: boolean,
): Promise<Sensitive> {
  if (roots.length === 0) return { masks: [], protect: [], views: [], unmasked: [] };
  // The tree that will be mounted, not whatever the path holds by the time it is walked.
  const walkVia = (root: string) => {
    const fd = pins.fdOf(root);
    return fd === undefined ? undefined : `/proc/self/fd/${fd}`;
  };
  const scan = (read?: ScanReader): Sensitive => {
    const opts = { walkVia, ...(read ? { read } : {}) };
    const found = scanMountedTrees(roots, rules, opts);
    // Thousands of masks would pass bubblewrap's argument limit: fitted first (sensitive/host/mask-fit.ts).
    return { ...found, masks: fitMasks(found.masks, roots, opts) };
  };
  if (!warm) return scan();
  const key = JSON.stringify([ruleInput, roots.map((root) => [root, pinnedIdentity(root, pins)])]);
  // Each directory is watched before the scan reads it or a file in it; a file whose link count the
  // scan read is watched itself (sensitive/host/hard-links.ts).
  return sensitiveCache.get(key, (w) => scan(watchingReader(w)));
}

/**
 * A scan's reads as the warm cache watches them: each directory before the scan lists it or reads a
 * file in it; a file whose link count was read, itself; a resolved symlink cannot be watched.
 */
function watchingReader(w: WalkWatch): ScanReader {
  return (path, what) =>
    what === 'link' ? w.unwatchable() : w.watch(what === 'dir' || what === 'inode' ? path : dirname(path));
}

/**
 * sbx's session directories hold every run's mask source (`empty`, bound by path) and egress sockets:
 * hidden wherever a bind would show them, so no sandbox can swap another run's files.
 */
function sessionMask(ctx: RunContext, pins: Pins): Sensitive['masks'] {
  const sessions = pins.probe(sessionBase(ctx.env, ctx.uid));
  return sessions.exists && sessions.type === 'dir' ? [{ path: sessions.real, dir: true }] : [];
}

/**
 * The user's host state (host-state/host-state.ts) and the writable binds' chains, by identity. A bind's
 * chain must end at the very directory that was pinned: one swapped since is refused.
 */
function probeHostState(input: PolicyInput, plan: ProbePlan, paths: Host['paths'], extra: readonly string[]) {
  const { ctx, pins } = input;
  const homes = [...new Set([ctx.dirs.home, passwdHome()].filter((h): h is string => h !== undefined))];
  const install = { packageRoot: realpathSync(packageRoot()), nodeDir: dirname(realpathSync(ctx.execPath)) };
  const { resolved } = input;
  const ownerChecked = resolved.trust.kind === 'owner-checked' ? resolved.chain.filter((l) => l.source === 'path') : [];
  const state = [
    ...hostStatePaths(homes, ctx.env, sessionBase(ctx.env, ctx.uid), install),
    ...profileFileState(
      ownerChecked.map((l) => l.real),
      resolved.hash,
    ),
  ];
  const memo = chainMemo(state.map((s) => s.path));
  const hostState: HostStateFact[] = state.map((s) => ({ ...s, chain: pathChain(s.path, memo) }));
  const chains: Record<string, PathChain> = {};
  const trees: { real: string; via: string }[] = [];
  for (const path of [...plan.writable, ...extra]) {
    const f = paths[path];
    const fd = f?.exists ? pins.fdOf(f.real) : undefined;
    if (!f?.exists || fd === undefined || chains[f.real]) continue;
    const chain = pathChain(f.real, memo);
    const st = statSync(`/proc/self/fd/${fd}`);
    if (chain.exists && chain.ids.at(-1) === `${st.dev}:${st.ino}`) {
      chains[f.real] = chain;
      trees.push({ real: f.real, via: `/proc/self/fd/${fd}` });
    } else
      throw new SbxError('BIND_SOURCE_CHANGED', `${path} (${f.real}) was replaced while sbx checked it`, {
        hint: 'run again; if it repeats, something is rewriting that directory',
      });
  }
  // Danger mode writes the host root by design: nothing to search (derivePolicy exempts it too).
  const links = resolved.profile.mode === 'danger' ? [] : hostStateLinks(state, trees);
  return { hostState, chains, ...(links.length > 0 ? { hostStateLinks: links } : {}) };
}

/** What the policy stage works from: the request, its resolved profile, and the run so far. */
export interface PolicyInput {
  ctx: RunContext;
  resolved: ResolvedProfile;
  pins: Pins;
}

/**
 * The workspace as requested; when neither --workspace nor workspace.path names one, the project's
 * top level above the cwd (workspace/project-root.ts), with the reason the CLI and explain show.
 */
function chooseWorkspace(input: PolicyInput, baseVars: Omit<Variables, 'workspace'>) {
  const { ctx, resolved } = input;
  const { options } = ctx;
  const workspace = requestedWorkspace(resolved.profile, options, baseVars);
  if (options.workspace !== undefined || resolved.profile.workspace?.path !== undefined) return { workspace };
  const root = detectProjectRoot(workspace, ctx.dirs.home, ctx.uid);
  return root ? { workspace: root.path, detected: root.reason } : { workspace };
}

/**
 * A worktree's shared git directory (git/host/git-worktree.ts), pinned like every bind source, with
 * what inside it is protected. Outside danger mode only (danger binds the host root anyway), and only
 * when it lies outside the workspace (inside, the workspace's own scan covers it).
 */
function probeWorktree(
  workspace: PathFact,
  profile: ResolvedProfile['profile'],
  pins: Pins,
  paths: Host['paths'],
): Host['gitWorktree'] {
  if (!workspace.exists || workspace.type !== 'dir' || profile.mode === 'danger') return undefined;
  const worktree = findGitWorktree(workspace.real);
  if (!worktree || isWithin(worktree.commonDir, workspace.real)) return undefined;
  const fact = pins.probe(worktree.commonDir);
  if (!fact.exists || fact.real !== worktree.commonDir || fact.type !== 'dir')
    throw new SbxError('BIND_SOURCE_CHANGED', `${worktree.commonDir} was replaced while sbx checked it`, {
      hint: 'run again; if it repeats, something is rewriting that directory',
    });
  paths[worktree.commonDir] = fact;
  return worktree;
}

/** The host as the core may know it: every path of the probe plan probed and pinned, the mounted trees scanned. */
async function probeHost(input: PolicyInput): Promise<{ host: Host; plan: ProbePlan }> {
  const { ctx, resolved, pins } = input;
  const { options, warm } = ctx;
  const profile = resolved.profile;
  const baseVars = { home: ctx.dirs.home, cwd: ctx.cwd, session: ctx.sessionId };
  const { workspace, detected } = chooseWorkspace(input, baseVars);
  const wsFact = pins.probe(workspace);
  // Refused before anything walks it: the secret scan below would read /proc (and fail part-way) or
  // all of / before derivePolicy, which checks it again, could refuse it.
  workspaceRealPath({ paths: { [workspace]: wsFact } }, { workspace }, profile.mode ?? 'workspace-write');
  const vars = runVariables(baseVars, workspace, wsFact);
  const plan = probePlanOf(profile, options, vars, ctx.env);
  const paths: Host['paths'] = Object.fromEntries(plan.paths.map((path) => [path, pins.probe(path)]));
  const worktree = probeWorktree(wsFact, profile, pins, paths);
  const scanRoots = plan.scanRoots.flatMap((path) => {
    // A scan root the plan missed would go unscanned, its secrets shown: that throws, as in derive.
    const f = fact({ paths }, path);
    return f.exists && f.type === 'dir' ? [f.real] : [];
  });
  const {
    hostState,
    chains,
    hostStateLinks: links,
  } = probeHostState(input, plan, paths, worktree ? [worktree.commonDir] : []);
  const own = plan.ownDirs;
  const mounted = profile.mode === 'danger' ? ['/'] : [...plan.scanRoots, ...scanRoots];
  createOwnDirs([own.config, own.state, own.cache], mounted, pins, paths);
  const toolchains = probeHostToolchains(input, plan);
  const needsRules = scanRoots.length > 0 || worktree !== undefined;
  // The run's --unmask globs are sensitive.except for this run only, kept apart so the report can say who let a file in.
  const unmask = options.unmask ?? [];
  const ruleInput = { ...(profile.sensitive ?? {}), ...(unmask.length > 0 ? { unmask } : {}) };
  const rules = needsRules ? await loadSensitiveRules(ruleInput, ctx.search.cacheDir) : undefined;
  const scanned = rules
    ? await scanSensitive(scanRoots, ruleInput, rules, pins, warm)
    : { masks: [], protect: [], views: [], unmasked: [] };
  const sensitive = worktree && rules ? withCommonDir(scanned, worktree.commonDir, rules, pins) : scanned;
  const toolRuleInput: SensitiveRuleInput = {
    ...ruleInput,
    files: [...(ruleInput.files ?? []), ...TOOLCHAIN_SECRET_FILES],
    skip: [...(ruleInput.skip ?? []), ...TOOLCHAIN_SKIP_DIRS],
  };
  // Compiled only for a walk: kept walks need no rules.
  let toolRules: Promise<SensitiveRules> | undefined;
  const loadToolRules = () => {
    toolRules ??= loadSensitiveRules(toolRuleInput, ctx.search.cacheDir);
    return toolRules;
  };
  const tools = toolchains?.roots.length
    ? await scanToolchains(
        toolchains,
        { input: toolRuleInput, rules: loadToolRules, cacheDir: ctx.search.cacheDir, uid: ctx.uid, warm },
        pins,
      )
    : toolchains;
  const sandboxKeepsRoot = ctx.uid === 0 && profile.user !== 'root' && profile.mode !== 'danger';
  const globalView = profile.git?.global_config ?? true;
  const host: Host = {
    uid: ctx.uid,
    gid: ctx.gid,
    home: ctx.dirs.home,
    cwd: ctx.cwd,
    stdinIsTty: ctx.tty,
    env: ctx.env,
    paths,
    hostState,
    chains,
    ...(links ? { hostStateLinks: links } : {}),
    rootOnly: sandboxKeepsRoot ? await rootOnlyEntries(plan.rootOnlyRoots, warm) : [],
    sensitiveFiles: { ...sensitive, masks: [...sensitive.masks, ...sessionMask(ctx, pins)] },
    bridge: { node: realpathSync(ctx.execPath), script: join(packageRoot(), 'dist', 'bridge.cjs') },
    ...(globalView && profile.mode !== 'danger'
      ? { gitGlobal: readGitGlobalConfigs(ctx.dirs.home, ctx.env, ctx.uid) }
      : {}),
    ...(worktree ? { gitWorktree: worktree } : {}),
    ...(tools ? { toolchains: tools } : {}),
    ...(detected !== undefined ? { workspaceDetected: detected } : {}),
  };
  return { host, plan };
}

function realOrEmpty(path: string): string[] {
  try {
    return [realpathSync(path)];
  } catch {
    return [];
  }
}

/**
 * The toolchains on the PATH inside HOME (toolchains/host/toolchain-probe.ts), when the profile shows them. No root
 * may overlap a credential store, sbx's own state or the session directories.
 */
function probeHostToolchains(input: PolicyInput, plan: ProbePlan): ToolchainFacts | undefined {
  const { resolved, ctx, pins } = input;
  if (resolved.profile.toolchains !== true || resolved.profile.mode === 'danger') return undefined;
  const own = plan.ownDirs;
  const forbidden = [
    ...sensitivePaths(ctx.dirs.home, ctx.env),
    own.config,
    own.state,
    own.cache,
    sessionBase(ctx.env, ctx.uid),
  ];
  // The workspace counts in every mode: the repository is the adversary even when nothing is writable.
  const requested = plan.writable;
  const adversarial = [...requested, ...requested.flatMap((path) => realOrEmpty(path))];
  return probeToolchains(
    { env: ctx.env, home: ctx.dirs.home, uid: ctx.uid, gid: ctx.gid, forbidden, adversarial },
    pins,
  );
}

/**
 * Each toolchain root walked for secrets (a registry token in a node prefix's etc/npmrc, a key),
 * through its pinned descriptor, with a budget of its own: a root too large to scan is not bound
 * (and explain says so) rather than refusing the run. A git config there is masked, not shown as a
 * view: the tool needs none, and a masked file is what the landlock backend can express.
 */
async function scanToolchains(facts: ToolchainFacts, scan: ToolchainScan, pins: Pins): Promise<ToolchainFacts> {
  const walkVia = (root: string) => {
    const fd = pins.fdOf(root);
    return fd === undefined ? undefined : `/proc/self/fd/${fd}`;
  };
  const masks: ToolchainFacts['masks'] = [];
  const roots: ToolchainFacts['roots'] = [];
  const skipped = [...facts.skipped];
  for (const root of facts.roots) {
    if (!root.dir) {
      roots.push(root);
      continue;
    }
    try {
      masks.push(...(await toolchainMasks(root.path, scan, pins, walkVia)));
      roots.push(root);
    } catch (error) {
      if (!(error instanceof SbxError) || error.code !== 'SENSITIVE_SCAN_LIMIT') throw error;
      skipped.push({ entry: root.entry, why: `${root.path} is too large to scan for secrets` });
    }
  }
  const bound = new Set(roots.map((r) => r.path));
  const env = Object.fromEntries(Object.entries(facts.env).filter(([, root]) => bound.has(root)));
  return { ...facts, roots, skipped, env, masks };
}

/** What a toolchain root's secret scan depends on besides the tree itself. */
interface ToolchainScan {
  input: SensitiveRuleInput;
  /** The compiled rules, loaded the first time a walk needs them. */
  rules: () => Promise<SensitiveRules>;
  cacheDir: string | undefined;
  uid: number;
  /** A library caller's: the scan is kept in memory while inotify reports no change. */
  warm: boolean;
}

type ToolchainMasks = ToolchainFacts['masks'];
const toolchainCache = new WarmCache<ToolchainMasks>();
/** Roots the warm cache could not keep (more directories than it may watch): the disk cache serves them. */
const unwatchableRoots = new Set<string>();

/**
 * One toolchain root's masks: its scan through the pinned descriptor (its git config masked too). A CLI
 * run keeps it in sbx's cache between runs while nothing the scan read has changed
 * (sensitive/host/scan-cache.ts); a library caller keeps it in memory while nothing is reported changed
 * (host/warm-cache.ts), which costs nothing per call, and falls back to the disk cache for a root
 * too large to watch.
 */
async function toolchainMasks(
  root: string,
  scan: ToolchainScan,
  pins: Pins,
  walkVia: (root: string) => string | undefined,
): Promise<ToolchainMasks> {
  const material = JSON.stringify(['toolchain', scan.input, root, pinnedIdentity(root, pins)]);
  const walkWith =
    (rules: SensitiveRules) =>
    (read: ScanReader): ToolchainMasks => {
      const found = scanMountedTrees([root], rules, { walkVia, read });
      return [
        ...found.masks.map((m) => ({ path: m.path, dir: m.dir })),
        ...found.views.map((v) => ({ path: v.path, dir: false })),
      ];
    };
  if (scan.warm && !unwatchableRoots.has(material)) {
    const walk = walkWith(await scan.rules());
    const masks = await toolchainCache.get(material, (w) => walk(watchingReader(w)));
    if (!toolchainCache.has(material)) unwatchableRoots.add(material);
    return masks;
  }
  const cache = { dir: scan.cacheDir, material, via: walkVia(root) ?? root, root, uid: scan.uid };
  return keptScan<ToolchainMasks>(cache) ?? recordedScan(cache, walkWith(await scan.rules()));
}

/** The workspace scan's findings plus the worktree's shared git directory's, walked through its pinned descriptor. */
function withCommonDir(scanned: Sensitive, commonDir: string, rules: SensitiveRules, pins: Pins): Sensitive {
  const fd = pins.fdOf(commonDir);
  const common = protectCommonDir(commonDir, fd === undefined ? commonDir : `/proc/self/fd/${fd}`, rules);
  return {
    masks: [...scanned.masks, ...common.masks],
    protect: [...scanned.protect, ...common.protect],
    views: [...scanned.views, ...common.views],
    ...(scanned.unmasked ? { unmasked: scanned.unmasked } : {}),
  };
}

export function policyHash(policy: Policy): string {
  return createHash('sha256').update(JSON.stringify(policy)).digest('hex').slice(0, 16);
}

/**
 * --allow-private checked as a flag before anything is probed: its entries are compiled with the
 * profile's allow_private (network/egress.ts), whose error would name a profile key the user never wrote.
 */
function checkAllowPrivate(given: readonly string[]): void {
  for (const entry of given) {
    try {
      compileEgressRules({ allow: [], deny: [], allowPrivate: [entry] });
    } catch {
      throw new SbxError('USAGE', `--allow-private ${entry}: not an IP address with optional port`, {
        hint: 'write 10.0.0.5, 10.0.0.5:5432, fd00::5 or [fd00::5]:5432 (host names are not accepted here)',
      });
    }
  }
}

/** An allow-list network is the only one whose proxy reads allow_private: elsewhere the flag would be silently dropped. */
function refuseIdleAllowPrivate(policy: Policy, given: readonly string[]): void {
  const net = policy.network;
  if (given.length === 0 || (net.kind === 'filtered' && net.rules.allow.length > 0)) return;
  // A filtered network without an allow list (only unix_sockets, host_ports or publish) runs no proxy either.
  const why =
    net.kind === 'host' ? 'shares the host network' : net.kind === 'filtered' ? 'has no allow list' : 'has no network';
  throw new SbxError('USAGE', `--allow-private ${given.join(' ')}: this run ${why}, so there is no proxy to allow it`, {
    hint: 'name the destination too, e.g. --allow-domain 10.0.0.5:5432 --allow-private 10.0.0.5:5432',
  });
}

/** What this run lets in that sbx keeps out by default (sbx explain and the report): files and private addresses, by whom. */
export function liftedOf(derived: Derived, options: CompileOptions): Lifted {
  const net = derived.policy.network;
  const given = new Set(options.allowPrivate ?? []);
  return {
    unmasked: derived.host.sensitiveFiles.unmasked ?? [],
    allowPrivate:
      net.kind === 'filtered'
        ? net.rules.allowPrivate.map((e) => ({ address: e.text, by: given.has(e.text) ? 'request' : 'profile' }))
        : [],
  };
}

/** The files a backend could not mask, let in by the run's --expose-workspace-secrets. */
export function withExposed(lifted: Lifted, exposed: readonly string[]): Lifted {
  return { ...lifted, unmasked: [...lifted.unmasked, ...exposed.map((path) => ({ path, by: 'exposed' as const }))] };
}

export async function derive(input: PolicyInput): Promise<Derived> {
  const { ctx, resolved, pins } = input;
  const { options } = ctx;
  checkAllowPrivate(options.allowPrivate ?? []);
  const { host, plan } = await probeHost(input);
  createProjectPolicyDirs(plan, resolved.profile.mode ?? 'workspace-write', pins, host.paths);
  const policy = derivePolicy({
    profileName: resolved.name,
    profileHash: resolved.hash,
    profile: resolved.profile,
    request: options,
    host,
    plan,
  });
  refuseIdleAllowPrivate(policy, options.allowPrivate ?? []);
  // The mount sources nothing probed (git hooks the scan found, the egress bridge's files): pinned
  // now, and refused if they no longer resolve to themselves.
  for (const m of policy.mounts) {
    if (m.kind === 'bind' && pins.fdOf(m.source) === undefined) pins.pinExact(m.source, m.reason);
  }
  return { policy, host, hash: policyHash(policy) };
}
