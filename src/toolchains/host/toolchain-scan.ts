// The user's toolchains as the policy stage shows them (pipeline/policy-stage.ts, through
// policy/host/probe-host.ts): the PATH entries the profile shows probed and pinned (toolchain-probe.ts),
// then each root walked for secrets through its pinned descriptor, the walk kept between runs while
// nothing it read changed (sensitive/host/scan-cache.ts) or, for a library caller, in memory.
import { realpathSync } from 'node:fs';
import { SbxError } from '../../errors.js';
import type { ProbePlan } from '../../policy/derive/probe-plan.js';
import type { Pins } from '../../host/pins.js';
import { sessionBase } from '../../host/session.js';
import { WarmCache } from '../../host/warm-cache.js';
import type { Profile } from '../../profile/schema.js';
import { sensitivePaths } from '../../sensitive/sensitive.js';
import type { SensitiveRuleInput } from '../../sensitive/sensitive-files.js';
import type { SensitiveRules } from '../../sensitive/sensitive-matcher.js';
import { pinnedIdentity, watchingReader } from '../../sensitive/host/policy-scan.js';
import { keptScan, recordedScan } from '../../sensitive/host/scan-cache.js';
import { scanMountedTrees } from '../../sensitive/host/sensitive-scan.js';
import type { ScanReader } from '../../sensitive/scan-result.js';
import { reachOf, type ToolchainFacts } from '../toolchains.js';
import { probeToolchains } from './toolchain-probe.js';

/** Who runs, and what the run's profile and plan say about toolchains. */
export interface ToolchainRun {
  profile: Profile;
  env: Record<string, string>;
  home: string;
  uid: number;
  gid: number;
  pins: Pins;
}

function realOrEmpty(path: string | undefined): string[] {
  if (!path?.startsWith('/')) return [];
  try {
    return [realpathSync(path)];
  } catch {
    return [];
  }
}

/**
 * The runner's file commands ($GITHUB_ENV, $GITHUB_OUTPUT, ...): what earlier steps exported, tokens
 * included. A PATH entry holding them ($RUNNER_TEMP, the runner's work directory) is never bound.
 */
const RUNNER_FILE_VARS = ['GITHUB_ENV', 'GITHUB_PATH', 'GITHUB_OUTPUT', 'GITHUB_STATE', 'GITHUB_STEP_SUMMARY'];

/**
 * The toolchains on the PATH (toolchains/host/toolchain-probe.ts), when the profile shows them: in HOME
 * with `toolchains: true`, outside it with `true` or `machine`. No root may overlap a credential store,
 * sbx's own state, the session directories or the runner's files.
 */
export function probeHostToolchains(run: ToolchainRun, plan: ProbePlan): ToolchainFacts | undefined {
  const { profile, env, home, uid, gid, pins } = run;
  const reach = reachOf(profile.toolchains);
  if (reach === undefined || profile.mode === 'danger') return undefined;
  const own = plan.ownDirs;
  const runnerFiles = RUNNER_FILE_VARS.flatMap((name) => realOrEmpty(env[name]));
  const forbidden = [
    ...sensitivePaths(home, env),
    own.config,
    own.state,
    own.cache,
    sessionBase(env, uid),
    ...runnerFiles,
  ];
  // The workspace counts in every mode: the repository is the adversary even when nothing is writable.
  const requested = plan.writable;
  const adversarial = [...requested, ...requested.flatMap((path) => realOrEmpty(path))];
  const systemSpecs = plan.binds.system.map((b) => b.path);
  const system = [...systemSpecs, ...systemSpecs.flatMap((path) => realOrEmpty(path))];
  const toolCache = realOrEmpty(env.RUNNER_TOOL_CACHE)[0];
  const jobToolCache = env.GITHUB_ACTIONS === 'true' ? toolCache : undefined;
  const scope = { home, reach, system, toolCache };
  const virtualEnv = realOrEmpty(env.VIRTUAL_ENV)[0];
  return probeToolchains({ env, scope, jobToolCache, virtualEnv, uid, gid, forbidden, adversarial }, pins);
}

/**
 * Each toolchain root walked for secrets (a registry token in a node prefix's etc/npmrc, a key),
 * through its pinned descriptor, with a budget of its own: a root too large to scan is not bound
 * (and explain says so) rather than refusing the run. A git config there is masked, not shown as a
 * view: the tool needs none, and a masked file is what the landlock backend can express.
 */
export async function scanToolchains(facts: ToolchainFacts, scan: ToolchainScan, pins: Pins): Promise<ToolchainFacts> {
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
export interface ToolchainScan {
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
