// Profile + request + Host → Policy, one subsystem at a time. Pure: all it knows of the disk is what
// the shell probed from the plan (probe-plan.ts), read through `fact()`. The order of the calls is
// the order of the refusals a run can meet, and the mounts come out in application order.
import { parseLimits } from '../../limits/parse-limits.js';
import type { Profile } from '../../profile/schema.js';
import { requestedArgv } from '../command-line.js';
import type { Host } from '../host.js';
import { refuseLinkedHostState, refuseWritableHostState } from '../../host-state/host-state.js';
import { toolchainMounts } from '../../toolchains/toolchains.js';
import type { Policy } from '../types.js';
import { bindChecksOf } from './bind-checks.js';
import { envOf, toolchainFactsOf } from './command-env.js';
import { commandRulesOf, seccompOf } from './confinement.js';
import { credentialEnv, deriveCredentials } from './credentials.js';
import { hostnameOf, identityOf, namespacesOf } from './identity.js';
import {
  dangerLayers,
  gitGlobalLayers,
  isolatedLayers,
  requestBindLayers,
  sshAgentLayers,
  tmpSizeOf,
  worktreeLayers,
  writableBinds,
} from './layers.js';
import { bridgeLayers, deriveNetwork, unixSocketLayers } from './network.js';
import { mountsOf } from './overlay.js';
import type { ProbePlan } from './probe-plan.js';
import type { RunRequest } from './request.js';
import { modeOf, placeWorkspace, startDirOf, workspaceRealPath } from './workspace.js';

export interface DeriveInput {
  profileName: string;
  profileHash: string;
  profile: Profile;
  request: RunRequest;
  /** The host as the shell found it: every path of `plan.paths` probed. */
  host: Host;
  /** The plan `host` was probed from (probePlanOf on the same profile and request). */
  plan: ProbePlan;
}

export function derivePolicy(input: DeriveInput): Policy {
  const { profile, request, host, plan } = input;
  const { vars, binds } = plan;
  const mode = modeOf(profile, request, input.profileName);
  const workspaceReal = workspaceRealPath(host, vars, mode);
  const checks = bindChecksOf(host, plan.keepOut);
  const workspace = placeWorkspace(profile, vars, host, mode, workspaceReal, checks.keepOut);
  const tmpSize = tmpSizeOf(profile, request);
  const limits = parseLimits(profile.limits ?? {}, request.limits);
  const seccomp = seccompOf(profile);
  const tools = toolchainFactsOf(profile, host, mode);
  const profileEnv = envOf(profile, request, {
    vars,
    hostEnv: host.env,
    profileName: input.profileName,
    workspaceSandbox: workspace.sandbox,
    tools,
  });
  const toolchains = toolchainMounts(tools, checks.keepOut, workspace.host);
  const layers = [
    ...(mode === 'danger'
      ? dangerLayers(host)
      : [
          ...isolatedLayers(binds, vars, mode, workspace, tmpSize, checks),
          ...toolchains.mounts,
          ...gitGlobalLayers(host, vars, profileEnv.vars),
          ...worktreeLayers(host, workspace, checks),
        ]),
    ...requestBindLayers(binds, checks),
  ];
  // Danger mode writes the whole host by design (docs/SECURITY.md says what that leaves open).
  if (mode !== 'danger') {
    const writable = writableBinds(binds, host, mode, workspace, vars);
    refuseWritableHostState(writable, host.hostState, host.chains);
    refuseLinkedHostState(host.hostStateLinks ?? [], writable);
  }
  const network = deriveNetwork(profile, request, host);
  const credentials = deriveCredentials(profile, request, network, host, vars);
  const env = credentialEnv(profileEnv, credentials.credentials);
  layers.push(
    ...unixSocketLayers(network, mode, checks),
    ...bridgeLayers(network, hostnameOf(profile)),
    ...credentials.mounts,
    ...sshAgentLayers(profile, mode),
  );
  const identity = identityOf(profile, host);
  return {
    profile: { name: input.profileName, hash: input.profileHash },
    mode,
    workspace,
    mounts: mountsOf(layers, { profile, host, plan, mode, identity, tools }),
    env,
    cwd: startDirOf(mode, request, host.cwd, workspace),
    hostname: hostnameOf(profile),
    identity,
    namespaces: namespacesOf(network),
    network,
    limits,
    seccomp,
    command: requestedArgv(request),
    ...(request.shell !== undefined ? { shell: request.shell } : {}),
    ...(request.exposeWorkspaceSecrets ? { exposeWorkspaceSecrets: true as const } : {}),
    commands: commandRulesOf(profile),
    ...(profile.ssh_agent ? { sshAgent: { keys: [...new Set(profile.ssh_agent.keys)] } } : {}),
    ...(credentials.credentials ? { credentials: credentials.credentials } : {}),
    ...(toolchains.skipped.length > 0 ? { toolchainsSkipped: toolchains.skipped } : {}),
  };
}
