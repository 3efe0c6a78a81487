// `sbx explain`: the resolved policy and the exact launcher argv. Runs nothing.
import { compile, type CommandDecision, type Compiled, type Launch } from '../api.js';
import type { Verdict } from '../commands/command-rules.js';
import { isSbxError } from '../errors.js';
import { backendOf } from '../backend/host/registry.js';
import { SHELL } from '../limits/host/cgroup/trampoline.js';
import type { Mount, Policy } from '../policy/types.js';
import type { Lifted } from '../report/outcome.js';
import { shellJoin } from './quote.js';

/** Unmasked paths listed by `sbx explain`; --json has them all. */
const UNMASKED_SHOWN = 20;

/** A path from the workspace may hold control characters: quoted then, so it cannot repaint the terminal. */
const quotePath = (p: string) => (/[\x00-\x1f\x7f-\x9f]/.test(p) ? JSON.stringify(p) : p);
import { toRunOptions, type RunFlags } from './run-flags.js';

function describeMount(m: Mount): string {
  switch (m.kind) {
    case 'bind':
      return `${m.access === 'rw' ? 'rw  ' : 'ro  '} ${m.target}${m.source !== m.target ? ` <- ${m.source}` : ''}`;
    case 'tmpfs':
      return `tmpfs ${m.target} (${Math.round(m.sizeBytes / 1048576)} MiB)`;
    case 'proc':
    case 'dev':
      return `${m.kind.padEnd(5)} ${m.target}`;
    case 'kernel':
      return `${m.cover === 'read-only' ? 'ro   ' : 'mask '} ${m.target} (kernel state)`;
    case 'symlink':
      return `link  ${m.target} -> ${m.linkTo}`;
    case 'mask':
      return `mask  ${m.target}`;
    case 'file':
      return `file  ${m.target} (${m.mode === 0 ? 'unreadable' : 'generated'})`;
    case 'session-dir':
      return `ro    ${m.target} <- session dir${m.subdir === undefined ? '' : `/${m.subdir}`}`;
    case 'remount-ro':
      return `ro    ${m.target} (remount)`;
  }
}

/** Each credential: its variable, where sbx reads the value, the hosts it goes to. Never a value. */
function describeCredentials(c: Policy['credentials']): string[] {
  if (!c) return [];
  const from = (r: NonNullable<Policy['credentials']>['rules'][number]) =>
    'env' in r.from ? `$${r.from.env}` : 'file' in r.from ? r.from.file : `the output of ${shellJoin(r.from.command)}`;
  return [
    ...c.rules.map(
      (r) =>
        `credential ${r.name}: a placeholder inside; the value (${from(r)}, read at run time) goes only to ${r.hosts.map((h) => h.text).join(' ')}${r.header ? `, in ${r.header}` : ', in any request header'} (HTTPS terminated by sbx's proxy for those hosts)`,
    ),
    ...(c.extraCaCerts.length > 0
      ? [`          upstream certificates also checked against ${c.extraCaCerts.join(' ')}`]
      : []),
  ];
}

/** The launch's pinned mount sources: `fd N  path`. */
function describePins(launch: Launch): string[] {
  return launch.fds.flatMap((fd, i) => (fd.purpose === 'bind' ? [`  fd ${i + 3}  ${fd.source}`] : []));
}

/**
 * `none` and an allow list as the backend enforces them: a namespace of its own, or (landlock) rules
 * and the helper's network judge on the host's network.
 */
function describeNetwork(n: Policy['network'], none: string, filteredWhere: string): string {
  switch (n.kind) {
    case 'host':
      return 'HOST NETWORK (shared with the host, not isolated)';
    case 'none':
      return none;
    case 'filtered': {
      // Each compiled entry as the profile wrote it.
      const [allow, deny, allowPrivate] = [n.rules.allow, n.rules.deny, n.rules.allowPrivate].map((entries) =>
        entries.map((e) => e.text).join(' '),
      );
      return [
        `filtered: ${filteredWhere}; TCP only through sbx's proxy to ${allow || 'nothing'}`,
        captureOf(n),
        deny ? `; denied: ${deny}` : '',
        allowPrivate ? `; private addresses allowed: ${allowPrivate}` : '',
        n.unixSockets.length ? `; unix sockets: ${n.unixSockets.join(' ')}` : '',
        ...n.hostPorts.map((p) => `; host port ${p}: 127.0.0.1:${p} inside -> the host's 127.0.0.1:${p}`),
        ...n.publish.map((p) => `; published ${p}: the host's 127.0.0.1:${p} -> 127.0.0.1:${p} inside`),
      ].join('');
    }
  }
}

/** Whether a client that ignores the proxy variables gets through too (docs/DESIGN.md "Transparent capture"). */
function captureOf(n: Extract<Policy['network'], { kind: 'filtered' }>): string {
  if (n.capture === undefined) return '';
  return n.capture.kind === 'off'
    ? `; capture off (${n.capture.why}): proxy-aware clients only`
    : '; every TCP client captured: names answered by sbx, connects taken into the proxy, UDP refused';
}

/** What the run lets in that sbx keeps out by default, one line each, with who asked (README "Sensitive files"). */
export function describeLifted(lifted: Lifted): string[] {
  const lines: string[] = [];
  const shown = lifted.unmasked.slice(0, UNMASKED_SHOWN);
  if (lifted.unmasked.length > 0)
    lines.push(
      `unmasked  ${lifted.unmasked.length} file${lifted.unmasked.length === 1 ? '' : 's'} a sensitive-file rule matched, shown as they are:`,
    );
  for (const u of shown) {
    const by =
      u.by === 'content'
        ? `by its content (${u.what})`
        : u.by === 'request'
          ? 'by --unmask'
          : u.by === 'exposed'
            ? 'by --expose-workspace-secrets (this backend cannot mask it)'
            : "by the profile's sensitive.except";
    lines.push(`  ${quotePath(u.path)}  ${by}`);
  }
  if (lifted.unmasked.length > shown.length)
    lines.push(`  ... and ${lifted.unmasked.length - shown.length} more (--json lists them all)`);
  for (const a of lifted.allowPrivate)
    lines.push(
      `private   ${a.address} may be dialled by the proxy (${a.by === 'request' ? '--allow-private' : "the profile's network.allow_private"})`,
    );
  return lines;
}

function describeRules(c: Policy['commands']): string {
  const allow = Object.keys(c.allow);
  return [
    `default ${c.default}`,
    allow.length ? `allow ${allow.join(' ')}` : '',
    c.deny.length ? `deny ${c.deny.join(' ')}` : '',
    `paths ${c.paths}`,
    `shell syntax ${c.shellSyntax}`,
  ]
    .filter(Boolean)
    .join('; ');
}

function describeDecision(d: Verdict): string {
  if (d.verdict === 'allow') return 'allowed';
  if (d.verdict === 'ask') return `needs approval: ${d.detail}`;
  return `REFUSED: ${d.violations.map((v) => `${v.rule}: ${v.detail}`).join('; ')}`;
}

/** A shell string's commands, one line each with its own verdict. */
function describeCommands(d: CommandDecision): string[] {
  return (d.commands ?? []).map((c) => {
    const redirects = c.redirects.map((r) => {
      const fd = r.fd === (r.op.startsWith('<') ? 0 : 1) ? '' : String(r.fd);
      return `${fd}${r.op}${r.op === '>&' ? r.target : shellJoin([r.target])}`;
    });
    return `  ${[shellJoin(c.argv), ...redirects].join(' ')}: ${describeDecision(c.decision)}`;
  });
}

export async function explainCommand(command: string[], flags: RunFlags & { json?: boolean }): Promise<void> {
  const compiled = await compile(toRunOptions(flags, command));
  if (flags.json) {
    const { launch, launcher } = compiled;
    const backend = backendOf(launcher);
    // `argv` is the launcher's, expanded; `wrapper` what starts it, when limits apply.
    const argv = await backend.expand(compiled.launcherLaunch ?? launch);
    const wrapper = wrapperOf(compiled);
    const fds = launch.fds.map((f) => ({
      purpose: f.purpose,
      ...('data' in f ? { base64: Buffer.from(f.data).toString('base64') } : {}),
      ...('source' in f ? { source: f.source } : {}),
    }));
    process.stdout.write(
      JSON.stringify(
        {
          profile: compiled.profile,
          policy: compiled.policy,
          launch: { file: launch.file, args: launch.args, argv, env: launch.env, fds, ...(wrapper ? { wrapper } : {}) },
          launcher: { backend: launcher.backend, path: launcher.path, version: launcher.version },
          commandDecision: compiled.commandDecision,
          lifted: compiled.lifted,
          remembered: compiled.remembered,
          gaps: await backend.gaps(compiled.policy),
        },
        null,
        2,
      ) + '\n',
    );
    return;
  }
  process.stdout.write((await explainLines(compiled)).join('\n') + '\n');
}

/** What would enforce each limit on this host, as `sbx doctor` says it, or why a run would be refused (stage 6). */
async function describeLimits(policy: Policy): Promise<string[]> {
  const { planLimitsOn } = await import('../pipeline/limits-stage.js');
  const { describePlan } = await import('../limits/plan.js');
  try {
    const planned = await planLimitsOn(policy, { env: process.env, uid: process.getuid?.() ?? 0 });
    return planned ? describePlan(planned.plan).map((line) => `limits    ${line}`) : [];
  } catch (error) {
    if (!isSbxError(error)) throw error;
    return [`limits    refused: ${error.message}`];
  }
}

/** The limits wrapper's own argv (its file and the args before the launcher's file), when `launch` has one. */
function wrapperOf(compiled: Compiled): string[] | undefined {
  const inner = compiled.launcherLaunch;
  if (!inner) return undefined;
  const { file, args } = compiled.launch;
  return [file, ...args.slice(0, args.length - inner.args.length - 1)];
}

/** What explain prints of the limits wrapper: why it is there, then its argv, which the launcher's follows. */
function describeWrapper(wrapper: string[], launcherApplies: boolean): string[] {
  // Issue 30: a launcher that limits the command alone has those limits in its own configuration.
  const own = launcherApplies
    ? "; what the launcher applies to the command alone is in its own configuration, so that its supervising process keeps sbx's limits"
    : '';
  const how =
    wrapper[0] === SHELL
      ? "sbx's trampoline (a shell: builtins only) moves itself into this run's cgroup, sets the rlimits, then execs the launcher"
      : 'a transient systemd scope holds the cgroup limits; the shell in it sets the rlimits, then execs the launcher';
  return [
    `# limits: what sbx spawns is this wrapper, so that nothing the command runs is ever outside the limits: ${how} below${own}.`,
    "# (the cgroup is named after this explain's session id; a run gets its own)",
    shellJoin(wrapper),
  ];
}

/** `sbx explain`'s text: also what the `explain` tool of `sbx mcp` answers (cli/mcp/mcp.ts). */
export async function explainLines(compiled: Compiled): Promise<string[]> {
  const p = compiled.policy;
  const backend = backendOf(compiled.launcher);
  const launch = compiled.launcherLaunch ?? compiled.launch;
  const described = await backend.describe(p, launch, shellJoin);
  const out: string[] = [];
  out.push(
    `profile   ${compiled.profile.name} (${compiled.profile.source}: ${compiled.profile.file})${compiled.profile.shadows ? ', shadows the built-in' : ''}`,
  );
  out.push(
    `backend   ${compiled.launcher.backend}${compiled.launcher.chosenBy === 'auto' ? ' (chosen by --backend auto)' : ''}`,
  );
  out.push(`mode      ${p.mode}`);
  out.push(
    `workspace ${p.workspace.host}${p.workspace.sandbox !== p.workspace.host ? ` at ${p.workspace.sandbox}` : ''} (${p.workspace.access})${p.workspace.detected ? `: ${p.workspace.detected}` : ''}`,
  );
  out.push(`network   ${describeNetwork(p.network, described.networkNone, described.networkFilteredWhere)}`);
  if (compiled.remembered.length > 0)
    out.push(
      `remembered ${compiled.remembered.map((r) => `${r.host}:${r.port}`).join(' ')}: answered "always" in earlier runs of this profile, let in too (sbx approvals list, sbx approvals revoke)`,
    );
  if (p.sshAgent)
    out.push(
      `ssh-agent ${p.sshAgent.keys.join(' ')}: listed and signed with through SSH_AUTH_SOCK; no other key, nothing added, removed or locked`,
    );
  out.push(...describeCredentials(p.credentials));
  out.push(
    `user      uid ${p.identity.uid}, gid ${p.identity.gid} inside${p.identity.hostRoot ? ' (host uid 0: root-only files masked)' : ''}`,
  );
  out.push(`cwd       ${p.cwd}`);
  out.push(...describeLifted(compiled.lifted));
  out.push('mounts (in order):');
  for (const m of p.mounts) out.push(`  ${describeMount(m).padEnd(48)} ${m.reason}`);
  for (const s of p.toolchainsSkipped ?? []) out.push(`toolchain not shown: ${s.entry}: ${s.why}`);
  out.push(`env       ${Object.keys(p.env.vars).sort().join(' ')}`);
  if (p.env.secrets.length > 0)
    out.push(`secrets   ${p.env.secrets.join(' ')} (values read from the secret store at run time; not shown below)`);
  if (p.env.dropped.length > 0)
    out.push(
      `dropped   ${p.env.dropped.map((d) => `${d.name}${d.reason === 'not-allowed' ? '' : ` (${d.reason})`}`).join(' ')}`,
    );
  out.push(`commands  ${describeRules(p.commands)}`);
  out.push(`verdict   ${describeDecision(compiled.commandDecision)}`, ...describeCommands(compiled.commandDecision));
  // A backend's own rules (landlock's) are in its filter whatever the preset: never print "no filter" then.
  const own = described.seccompAdded;
  const profileRules = [...new Set(p.seccomp.rules.map((r) => r.syscall))].join(' ');
  out.push(
    `seccomp   ${p.seccomp.preset}: ${profileRules || (own.length > 0 ? 'none from the profile' : 'no filter')}` +
      (own.length > 0 ? `; ${backend.name}'s own: ${own.join(' ')}` : ''),
  );
  out.push(...(await describeLimits(p)));
  const pins = describePins(launch);
  if (pins.length > 0) out.push('mount sources, opened and checked once; the launcher mounts these descriptors:');
  out.push(...pins);
  out.push('');
  const gaps = await backend.gaps(p);
  if (gaps.length > 0) out.push(`${backend.name} differs from bwrap here:`, ...gaps.map((g) => `  ${g}`), '');
  const wrapper = wrapperOf(compiled);
  if (wrapper) out.push(...describeWrapper(wrapper, backend.commandLimits !== null));
  out.push(...described.lines);
  return out;
}
