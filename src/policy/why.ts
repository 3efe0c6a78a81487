// `sbx why`: whether the sandbox a Policy describes lets in a path, a host or a command, and the rule
// that decides it, as a profile key path (the pipeline locates its line: profile/positions.ts) or sbx's
// own default. Pure. It decides nothing a second way: a path is looked up with the mount walk that
// finds commands (sandbox-path.ts), a host with the proxy's own decideHost and decideAddress
// (network/egress.ts), a command with the gate's verdict (commands/command-rules.ts, asked by the
// pipeline); what it adds is which entry of the profile the deciding mount or pattern came from.
import { posix } from 'node:path';
import type { CommandDecision } from '../commands/command-rules.js';
import { canonicalIp, decideAddress, decideHost, normaliseHost, splitHostPort } from '../network/egress.js';
import { isAskable, type NetworkRequest, withApproved } from '../network/network-asks.js';
import { isWithin } from '../path-within.js';
import type { Profile } from '../profile/schema.js';
import { ruleKey } from '../profile/positions.js';
import { compileSensitiveRules } from '../sensitive/sensitive-files.js';
import type { BindSpec } from './derive/bind-specs.js';
import type { ProbePlan } from './derive/probe-plan.js';
import type { Host } from './host.js';
import { hostPathOf, mountIndexOf, throughLink } from './sandbox-path.js';
import type { Mount, Policy } from './types.js';
import type { ViolationSource } from './violation.js';

/** What the command inside can do with a path, as the mounts decide it (the file's own mode applies on top). */
export type PathAccess = 'writable' | 'readable' | 'hidden' | 'absent';

/** The rule behind an answer: in words, and the profile key (located later) or sbx's default; no source when no key of any profile sets it. */
export interface WhyRule {
  because: string;
  source?: ViolationSource;
}

export type WhyAnswer =
  | ({
      kind: 'path';
      target: string;
      /** Where the command inside finds it. */
      path: string;
      access: PathAccess;
      allowed: boolean;
      /** The host file behind it, when a bind shows one. */
      host?: string;
      /** The other rules that also keep it out (a sensitive root behind a private HOME). */
      also: WhyRule[];
    } & WhyRule)
  | ({ kind: 'host'; target: string; host: string; port: number; allowed: boolean; also: WhyRule[] } & WhyRule)
  | {
      kind: 'command';
      argv: string[];
      verdict: CommandDecision['verdict'];
      allowed: boolean;
      /** Each rule that refused it, or that let it run or asked about it. */
      rules: (WhyRule & { rule: string })[];
    };

/** What a path answer reads besides the Policy: the probe plan and the facts the policy stage probed. */
export interface WhyFacts {
  policy: Policy;
  profile: Profile;
  plan: Pick<ProbePlan, 'binds' | 'keptOutBy'>;
  host: Pick<Host, 'paths'>;
}

const DEFAULT = 'default' as const;

/** The port a host target without one is asked about: what an HTTPS client dials. */
export const DEFAULT_WHY_PORT = 443;

/** A host path as the command inside names it: the workspace may be mounted elsewhere (workspace.mountAt). */
export function sandboxPathOf(policy: Policy, hostPath: string): string {
  const { host, sandbox } = policy.workspace;
  return isWithin(hostPath, host) ? posix.join(sandbox, posix.relative(host, hostPath)) : hostPath;
}

/** The bind entry (read_only[2], --bind, system[0]) whose probed source is `source`: the last, as the last is mounted on top. */
function specOf(specs: readonly BindSpec[], source: string, facts: WhyFacts): BindSpec | undefined {
  return specs.findLast((s) => {
    const f = facts.host.paths[s.path];
    return f?.exists === true && f.real === source;
  });
}

function bindSource(where: string): ViolationSource {
  return where.startsWith('--') ? { key: where, origin: 'flag' } : { key: where };
}

/** Which root of those kept out the hidden host path is (or lies under), and why it is kept out. */
function keptOutRule(hostPath: string, facts: WhyFacts): WhyRule | undefined {
  for (const [root, kept] of Object.entries(facts.plan.keptOutBy)) {
    const f = facts.host.paths[root];
    const real = f?.exists ? f.real : root;
    if (!isWithin(hostPath, real) && !isWithin(hostPath, root)) continue;
    const source: ViolationSource = kept.key ? { key: kept.key } : { key: 'sensitive.roots', origin: DEFAULT };
    return { because: `${root} is kept out of every sandbox: ${kept.what}`, source };
  }
  return undefined;
}

/** A file the sensitive-file scan masked: sbx's built-in globs, else the `sensitive.files` entry that matches it. */
function secretRule(mounts: readonly Mount[], at: number, target: string, facts: WhyFacts, dir: boolean): WhyRule {
  const tree = mounts[mountIndexOf(mounts.slice(0, at), target)];
  const rel = tree?.kind === 'bind' ? posix.relative(tree.target, target) : '';
  const files = facts.profile.sensitive?.files ?? [];
  const masks = (rules: ReturnType<typeof compileSensitiveRules>) =>
    rel !== '' && ['mask', 'hint'].includes(rules.classify(rel, dir) ?? '');
  const listed = masks(compileSensitiveRules())
    ? -1
    : files.findIndex((glob) => masks(compileSensitiveRules({ files: [glob] })));
  const fix = 'sensitive.except (or --unmask) lets one in';
  if (listed >= 0)
    return {
      because: `a secret-looking file: the profile's sensitive.files[${listed}] "${files[listed]}" matches it; ${fix}`,
      source: { key: `sensitive.files[${listed}]` },
    };
  return {
    because: `a secret-looking file: sbx's built-in sensitive-file globs (src/sensitive/sensitive-globs.ts) match it; ${fix}`,
    source: { key: 'sensitive.files', origin: DEFAULT },
  };
}

/** Why the mount at `at` is there: the profile entry (or flag, or default) that put it there. */
function mountRule(mounts: readonly Mount[], at: number, facts: WhyFacts): WhyRule {
  const m = mounts[at]!;
  const { policy, plan } = facts;
  const source = m.kind === 'bind' ? m.source : '';
  switch (m.role) {
    case 'system': {
      const spec = specOf(plan.binds.system, source, facts) ?? plan.binds.system.find((s) => s.path === m.target);
      if (spec && !spec.where.startsWith('system ('))
        return { because: `the profile's ${spec.where}, read-only`, source: { key: spec.where } };
      return {
        because: "sbx's default system directories, read-only (system)",
        source: { key: 'system', origin: DEFAULT },
      };
    }
    case 'workspace':
      return {
        because: `the workspace ${policy.workspace.host} (${policy.workspace.access}${policy.workspace.access === 'ro' ? `, mode ${policy.mode}` : ''})`,
        source: policy.workspace.access === 'ro' ? { key: 'mode' } : { key: 'workspace' },
      };
    case 'user-ro':
    case 'user-rw': {
      const specs =
        m.role === 'user-ro'
          ? [...plan.binds.readOnly, ...plan.binds.requestRo]
          : [...plan.binds.writableRoots, ...plan.binds.requestRw];
      const spec = specOf(specs, source, facts);
      const where = spec?.where ?? (m.role === 'user-ro' ? 'read_only' : 'writable_roots');
      const ro =
        m.kind === 'bind' && m.access === 'ro' && m.role === 'user-rw' ? ` (read-only: mode ${policy.mode})` : '';
      return { because: `${where} binds ${source}${ro}`, source: bindSource(where) };
    }
    case 'host-root':
      return { because: 'mode: danger shows the host root, writable', source: { key: 'mode' } };
    case 'private':
      if (m.kind === 'file')
        return {
          because: 'a view of your global git config without credentials or programs',
          source: { key: 'git.global_config' },
        };
      return { because: `sbx's private ${m.target === '/tmp' ? '/tmp' : 'HOME'}, empty each session` };
    case 'kernel':
      return {
        because: `the sandbox's own ${m.target}${m.kind === 'kernel' ? `: host kernel state, ${m.cover}` : ''}`,
      };
    case 'toolchain':
      return m.kind === 'mask'
        ? { because: 'a secret-looking file in a toolchain root (toolchains)', source: { key: 'toolchains' } }
        : { because: `a toolchain on your PATH, read-only (toolchains)`, source: { key: 'toolchains' } };
    case 'socket':
      return m.kind === 'session-dir'
        ? { because: 'the ssh-agent filter socket (ssh_agent)', source: { key: 'ssh_agent' } }
        : {
            because: 'a unix socket the profile lists (network.unix_sockets)',
            source: { key: 'network.unix_sockets' },
          };
    case 'bridge':
      return { because: "sbx's egress bridge to its proxy (network)", source: { key: 'network' } };
    case 'capture':
      return {
        because:
          "transparent capture: the network judge and the resolver that send every client to sbx's proxy (network)",
        source: { key: 'network' },
      };
    case 'trust':
      return { because: "the run's CA for the hosts credentials names (credentials)", source: { key: 'credentials' } };
    case 'guard':
      return { because: 'state the host acts on later (git hooks, sbx profiles), bound read-only over itself' };
    case 'pin':
      return { because: 'a directory above protected git state, pinned so it cannot be renamed' };
    case 'git-config':
      return { because: 'a .git/config view without credentials (the sensitive-file rules)' };
    case 'mask': {
      const behind = hostPathOf(mounts.slice(0, at), m.target) ?? m.target;
      return (
        keptOutRule(behind, facts) ?? { because: 'a file only root may read on the host, hidden (sbx runs as root)' }
      );
    }
    case 'secret':
      return secretRule(mounts, at, m.target, facts, m.kind === 'mask' && m.what === 'dir');
  }
}

/** Whether the mount at `at` is writable: a rw bind or a tmpfs, not made read-only at its own target afterwards. */
function accessOf(mounts: readonly Mount[], at: number): PathAccess {
  const m = mounts[at]!;
  switch (m.kind) {
    case 'mask':
      return 'hidden';
    case 'file':
      return m.mode === 0 ? 'hidden' : 'readable';
    case 'kernel':
      return m.cover === 'masked' ? 'hidden' : 'readable';
    case 'bind':
    case 'tmpfs': {
      if (m.kind === 'bind' && m.access === 'ro') return 'readable';
      const remounted = mounts.slice(at + 1).some((r) => r.kind === 'remount-ro' && r.target === m.target);
      return remounted ? 'readable' : 'writable';
    }
    default:
      return 'readable';
  }
}

/** What the sandbox makes of a host path, and the rule that decides it. */
export function whyPath(facts: WhyFacts, target: string, hostPath: string): WhyAnswer {
  const { mounts } = facts.policy;
  let path = sandboxPathOf(facts.policy, hostPath);
  let at = mountIndexOf(mounts, path);
  for (let hops = 0; mounts[at]?.kind === 'symlink' && hops < 8; hops++) {
    path = throughLink(mounts[at] as Extract<Mount, { kind: 'symlink' }>, path);
    at = mountIndexOf(mounts, path);
  }
  const kept = keptOutRule(hostPath, facts);
  const base = { kind: 'path' as const, target, path };
  if (at < 0) {
    // The sandbox's root is an empty read-only tmpfs: only the directories its mounts need exist on it.
    const holdsMount = mounts.some((m) => m.kind !== 'remount-ro' && isWithin(m.target, path));
    if (holdsMount)
      return {
        ...base,
        access: 'readable',
        allowed: true,
        because: "a directory of the sandbox's read-only root that holds mount points",
        also: [],
      };
    const rule = kept ?? {
      because:
        'no mount shows it: the sandbox sees only its system directories, the workspace and what the profile binds',
    };
    return { ...base, access: 'absent', allowed: false, ...rule, also: [] };
  }
  const m = mounts[at]!;
  // A tmpfs below its own mount point is the sandbox's scratch space: the host's file there is not shown.
  const scratch = m.kind === 'tmpfs' && path !== m.target;
  const access = scratch ? 'absent' : accessOf(mounts, at);
  const rule = mountRule(mounts, at, facts);
  const hostFile = hostPathOf(mounts, path);
  return {
    ...base,
    access,
    allowed: access === 'readable' || access === 'writable',
    ...(hostFile !== undefined ? { host: hostFile } : {}),
    ...rule,
    ...(scratch ? { because: `${rule.because}: the host's file is not shown (the command may write its own)` } : {}),
    also: kept && kept.because !== rule.because ? [kept] : [],
  };
}

/** What the network lets the command reach at `target` (`host`, `host:port`, `[v6]:port`), and the rule that decides. */
/**
 * `remembered`: the destinations the user answered `always` for this profile (network-asks.ts): a run's
 * proxy adds them after the profile's allow entries, so a name they let in is answered as theirs.
 */
/**
 * `flagDomains`: how many entries at the end of the allow list this run's --allow-domain (the library's
 * `allowDomains`) put there (policy/derive/network.ts appends them): an answer they decide names the
 * flag, not a profile line.
 */
export function whyHost(
  policy: Policy,
  target: string,
  remembered: readonly NetworkRequest[] = [],
  flagDomains = 0,
): WhyAnswer {
  const split = splitHostPort(target);
  const port = split?.port ?? DEFAULT_WHY_PORT;
  const host = (split && normaliseHost(split.host)) ?? target;
  const base = { kind: 'host' as const, target, host, port, also: [] };
  const net = policy.network;
  if (net.kind === 'none')
    return {
      ...base,
      allowed: false,
      because: 'network: none, the sandbox has no network (loopback only)',
      source: { key: 'network' },
    };
  if (net.kind === 'host')
    return {
      ...base,
      allowed: true,
      because: "network: host, the sandbox shares the host's network",
      source: { key: 'network' },
    };
  // 127.0.0.1:PORT inside is relayed to the host's, past the proxy (network.host_ports).
  const relayed =
    (host === '127.0.0.1' || host === 'localhost') && split?.port !== undefined ? net.hostPorts.indexOf(port) : -1;
  if (relayed >= 0)
    return {
      ...base,
      allowed: true,
      because: `the host's 127.0.0.1:${port} is relayed inside`,
      source: { key: `network.host_ports[${relayed}]` },
    };
  const own = decideHost(net.rules, host, port);
  const rules = isAskable(own) ? withApproved(net.rules, remembered) : net.rules;
  const byName = rules === net.rules ? own : decideHost(rules, host, port);
  const answered = !own.allowed && byName.allowed;
  // The proxy checks each address a name resolves to next; an IP literal resolves to itself.
  const decision = byName.allowed && canonicalIp(host) !== undefined ? decideAddress(rules, host, port) : byName;
  if (!decision.allowed) {
    const key = decision.key ?? ruleKey(decision.rule);
    return { ...base, allowed: false, because: decision.detail, ...(key ? { source: { key } } : {}) };
  }
  const pattern = byName.key && rules.allow[Number(/\[(\d+)\]$/.exec(byName.key)?.[1])]?.text;
  const index = Number(/^network\.allow\[(\d+)\]$/.exec(byName.key ?? '')?.[1] ?? -1);
  const byFlag = index >= 0 && index >= net.rules.allow.length - flagDomains;
  const via = decision !== byName && decision.key ? `; ${host} is listed in network.allow_private` : '';
  const because = answered
    ? `${host}:${port} is in no network.allow entry, and you answered "always" for it (sbx approvals list)${via}`
    : `${host}:${port} matches ${byFlag ? '--allow-domain' : 'network.allow'} "${pattern}"${via}`;
  const addresses =
    canonicalIp(host) === undefined
      ? [
          {
            because:
              'each address the name resolves to is checked when the proxy dials it: private ones only through network.allow_private',
            source: { key: 'network.allow_private' },
          },
        ]
      : [];
  const source =
    byName.key && !answered
      ? { source: byFlag ? { key: '--allow-domain', origin: 'flag' as const } : { key: byName.key } }
      : {};
  return { ...base, allowed: true, because, ...source, also: addresses };
}

/** The command rules' verdict as `sbx why` shows it: each refusing rule, else the rules that let it run or asked. */
export function whyCommand(argv: string[], decision: CommandDecision): WhyAnswer {
  const base = { kind: 'command' as const, argv, verdict: decision.verdict, allowed: decision.verdict === 'allow' };
  if (decision.verdict === 'deny') {
    const rules = decision.violations.map((v) => {
      const key = v.source?.key ?? ruleKey(v.rule);
      return { rule: v.rule, because: v.detail, ...(v.source ? { source: v.source } : key ? { source: { key } } : {}) };
    });
    return { ...base, rules };
  }
  const keys = decision.rules?.length ? decision.rules : ['commands.default'];
  const ask = decision.verdict === 'ask' ? decision.detail : undefined;
  const rules = keys.map((key) => ({
    rule: key,
    because:
      ask ?? (key === 'commands.default' ? 'no rule names it, and commands.default allows it' : `${key} allows it`),
    source: { key },
  }));
  return { ...base, rules };
}
