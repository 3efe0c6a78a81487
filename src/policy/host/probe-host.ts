// The host as the core may know it (policy/host.ts), for one run: every path of the probe plan
// (policy/derive/probe-plan.ts) probed and pinned, so every check runs on the descriptor that will be
// mounted, and the subsystems' host halves asked for their facts: the workspace chosen, the git
// worktree's shared directory, the host state, sbx's own directories, the toolchains, the mounted
// trees' secret-looking files. The policy stage (pipeline/policy-stage.ts) derives the Policy from it.
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { isWithin } from '../../path-within.js';
import { readGitGlobalConfigs } from '../../git/host/git-global-config-read.js';
import { probeWorktree, withCommonDir } from '../../git/host/git-worktree.js';
import type { Pins } from '../../host/pins.js';
import { probeHostState } from '../../host-state/host/host-state-probe.js';
import { createOwnDirs } from '../../host-state/host/own-dirs.js';
import { packageRoot } from '../../package-root.js';
import type { ResolvedProfile } from '../../profile/host/load.js';
import type { Variables } from '../../profile/variables.js';
import { rootOnlyEntries, scanSensitive, sessionMask } from '../../sensitive/host/policy-scan.js';
import { loadSensitiveRules } from '../../sensitive/host/rules-cache.js';
import type { SensitiveRuleInput } from '../../sensitive/sensitive-files.js';
import type { SensitiveRules } from '../../sensitive/sensitive-matcher.js';
import { probeHostToolchains, scanToolchains } from '../../toolchains/host/toolchain-scan.js';
import { TOOLCHAIN_SECRET_FILES, TOOLCHAIN_SKIP_DIRS } from '../../toolchains/toolchains.js';
import { detectProjectRoot } from '../../workspace/host/project-root-probe.js';
import { fact, type ProbePlan, probePlanOf } from '../derive/probe-plan.js';
import type { RunRequest } from '../derive/request.js';
import { requestedWorkspace, runVariables, workspaceRealPath } from '../derive/workspace.js';
import type { Host } from '../host.js';

/** What the probe needs of the run (pipeline/context-stage.ts's RunContext has it all). */
export interface ProbeContext {
  /** The request, and the run's `--unmask` globs (pipeline/run-options.ts). */
  readonly options: Readonly<RunRequest & { unmask?: readonly string[] }>;
  /** Keep host walks warm between runs (a library caller: host/warm-cache.ts). */
  readonly warm: boolean;
  readonly sessionId: string;
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly uid: number;
  readonly gid: number;
  readonly dirs: { readonly home: string };
  readonly tty: boolean;
  readonly execPath: string;
  readonly search: { readonly cacheDir?: string | undefined };
}

/** The run, its resolved profile, and the pins every probed path is opened through. */
export interface HostProbeInput {
  ctx: ProbeContext;
  resolved: ResolvedProfile;
  pins: Pins;
}

/**
 * The workspace as requested; when neither --workspace nor workspace.path names one, the project's
 * top level above the cwd (workspace/project-root.ts), with the reason the CLI and explain show.
 */
function chooseWorkspace(input: HostProbeInput, baseVars: Omit<Variables, 'workspace'>) {
  const { ctx, resolved } = input;
  const { options } = ctx;
  const workspace = requestedWorkspace(resolved.profile, options, baseVars);
  if (options.workspace !== undefined || resolved.profile.workspace?.path !== undefined) return { workspace };
  const root = detectProjectRoot(workspace, ctx.dirs.home, ctx.uid);
  return root ? { workspace: root.path, detected: root.reason } : { workspace };
}

/**
 * The toolchain directories outside HOME (a tool cache, /opt/TOOL): like the system binds, they may
 * hold files only root may read, which a root caller's sandbox (kuid 0) must not. What a root caller
 * keeps in its own HOME is its own.
 */
function machineToolRoots(tools: Host['toolchains'], home: string): string[] {
  return (tools?.roots ?? []).filter((r) => r.dir && !isWithin(r.path, home)).map((r) => r.path);
}

/** The host as the core may know it: every path of the probe plan probed and pinned, the mounted trees scanned. */
export async function probeHost(input: HostProbeInput): Promise<{ host: Host; plan: ProbePlan }> {
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
  const toolchains = probeHostToolchains(
    { profile, env: ctx.env, home: ctx.dirs.home, uid: ctx.uid, gid: ctx.gid, pins },
    plan,
  );
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
    rootOnly: sandboxKeepsRoot
      ? await rootOnlyEntries([...plan.rootOnlyRoots, ...machineToolRoots(tools, ctx.dirs.home)], warm)
      : [],
    sensitiveFiles: { ...sensitive, masks: [...sensitive.masks, ...sessionMask(ctx.env, ctx.uid, pins)] },
    bridge: bridgeFiles(ctx.execPath),
    ...(globalView && profile.mode !== 'danger'
      ? { gitGlobal: readGitGlobalConfigs(ctx.dirs.home, ctx.env, ctx.uid) }
      : {}),
    ...(worktree ? { gitWorktree: worktree } : {}),
    ...(tools ? { toolchains: tools } : {}),
    ...(detected !== undefined ? { workspaceDetected: detected } : {}),
  };
  return { host, plan };
}

/** The egress bridge's files, the network judge when it was built, and where /etc/resolv.conf leads. */
function bridgeFiles(execPath: string): Host['bridge'] {
  const judge = join(packageRoot(), 'dist', 'sbx-landlock');
  const resolvConf = resolvConfTarget();
  return {
    node: realpathSync(execPath),
    script: join(packageRoot(), 'dist', 'bridge.cjs'),
    ...(existsSync(judge) ? { judge } : {}),
    ...(resolvConf !== undefined ? { resolvConf } : {}),
  };
}

/**
 * Where /etc/resolv.conf leads when it is a symbolic link (systemd-resolved's stub, resolvconf's run
 * directory), even a dangling one: a bind at the link itself would be followed into a directory the
 * sandbox does not have.
 */
function resolvConfTarget(): string | undefined {
  const path = '/etc/resolv.conf';
  try {
    if (!lstatSync(path).isSymbolicLink()) return undefined;
    try {
      return realpathSync(path);
    } catch {
      return resolve(dirname(path), readlinkSync(path));
    }
  } catch {
    return undefined;
  }
}
