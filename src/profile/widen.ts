// What a profile lets through that the built-in it extends or shadows does not: the summary `sbx
// trust` shows before pinning, so a reviewer sees "network: host" and "seccomp: off" in
// one place instead of finding them in a diff. Pure: two merged profiles in, lines out. Only keys
// that widen the sandbox are named; a key that narrows it (a tighter limit, more masks) is not.
import type { Profile } from './schema.js';

type Network = NonNullable<Profile['network']>;
type Bind = NonNullable<Profile['writable_roots']>[number];
type Commands = NonNullable<Profile['commands']>;

const pathOf = (b: Bind) => (typeof b === 'string' ? b : b.path);

/** Entries of `now` not in `before` (by their text). */
function added(now: readonly string[] | undefined, before: readonly string[] | undefined): string[] {
  const had = new Set(before ?? []);
  return (now ?? []).filter((x) => !had.has(x));
}

function networkWidening(now: Network | undefined, before: Network | undefined): string[] {
  const n = now ?? 'none';
  const b = before ?? 'none';
  if (n === 'host') return b === 'host' ? [] : ['network: host (shares the host network; nothing is filtered)'];
  if (n === 'none') return [];
  const bObj = typeof b === 'object' ? b : {};
  const lines: string[] = [];
  const allow = b === 'host' ? [] : added(n.allow, bObj.allow);
  if (allow.length > 0) lines.push(`network allow list: ${allow.join(' ')}`);
  const deny = (bObj.deny ?? []).filter((d) => !(n.deny ?? []).includes(d));
  if (deny.length > 0) lines.push(`network.deny entries removed: ${deny.join(' ')}`);
  const priv = added(n.allow_private, bObj.allow_private);
  if (priv.length > 0) lines.push(`private addresses the proxy may dial: ${priv.join(' ')}`);
  const sockets = added(n.unix_sockets, bObj.unix_sockets);
  if (sockets.length > 0) lines.push(`host unix sockets bound in: ${sockets.join(' ')}`);
  return lines;
}

function seccompWidening(now: Profile['seccomp'], before: Profile['seccomp']): string[] {
  const lines: string[] = [];
  const rank = { strict: 2, default: 1, off: 0 } as const;
  const n = now?.preset ?? 'default';
  const b = before?.preset ?? 'default';
  if (rank[n] < rank[b]) lines.push(`seccomp: ${n} (the built-in has ${b})${n === 'off' ? ': no syscall filter' : ''}`);
  const removed = added(now?.remove, before?.remove);
  if (removed.length > 0) lines.push(`seccomp lets through: ${removed.join(' ')}`);
  const undone = (before?.add ?? []).filter((s) => !(now?.add ?? []).includes(s));
  if (undone.length > 0) lines.push(`seccomp no longer denies: ${undone.join(' ')}`);
  if (now?.io_uring && !before?.io_uring) lines.push('seccomp allows io_uring');
  return lines;
}

/**
 * What the command rules stop doing (README "Command rules"): approvals (a default that no longer asks
 * or refuses), path guards, reading shell strings, deny entries, allowed commands and subcommands, and
 * blocked forms. A key left out takes its default: allow, paths any, shell_syntax full, nothing denied.
 */
function commandsWidening(now: Commands | undefined, before: Commands | undefined): string[] {
  const lines: string[] = [];
  const rank = { deny: 2, ask: 1, allow: 0 } as const;
  const nowDefault = now?.default ?? 'allow';
  const beforeDefault = before?.default ?? 'allow';
  if (rank[nowDefault] < rank[beforeDefault])
    lines.push(
      `commands.default: ${nowDefault} (the built-in has ${beforeDefault}): ${nowDefault === 'allow' ? 'commands no rule names run without approval' : 'commands no rule names are asked about, not refused'}`,
    );
  if ((before?.paths ?? 'any') === 'workspace' && (now?.paths ?? 'any') === 'any')
    lines.push('path guards off (commands.paths: any): arguments may name any path the sandbox shows');
  if ((before?.shell_syntax ?? 'full') === 'restricted' && (now?.shell_syntax ?? 'full') === 'full')
    lines.push('shell strings not read (commands.shell_syntax: full): the commands of a --shell string are not judged');
  const undenied = (before?.deny ?? []).filter((d) => !(now?.deny ?? []).includes(d));
  if (undenied.length > 0) lines.push(`commands.deny no longer refuses: ${undenied.join(' ')}`);
  // Allowed commands widen only where the built-in would ask or refuse them.
  const allowed =
    beforeDefault === 'allow' ? [] : added(Object.keys(now?.allow ?? {}), Object.keys(before?.allow ?? {}));
  if (allowed.length > 0) lines.push(`commands allowed without approval: ${allowed.join(' ')}`);
  for (const [name, rule] of Object.entries(before?.allow ?? {})) {
    const mine = now?.allow?.[name];
    if (mine === undefined) continue;
    if (rule?.allow && (mine?.allow === undefined || added(mine.allow, rule.allow).length > 0))
      lines.push(
        `${name} subcommands allowed: ${mine?.allow === undefined ? 'any' : added(mine.allow, rule.allow).join(' ')}`,
      );
    const unblocked = (rule?.block ?? []).filter((b) => !(mine?.block ?? []).includes(b));
    if (unblocked.length > 0) lines.push(`${name} no longer blocks: ${unblocked.join(', ')}`);
  }
  return lines;
}

/**
 * Each credential the built-in does not have as it is: where its value goes, and where sbx reads it (a
 * command runs on the host at every start; a private CA decides which servers get the values).
 */
function credentialWidening(profile: Profile, builtin: Profile): string[] {
  const lines = Object.entries(profile.credentials ?? {})
    .filter(([name, c]) => JSON.stringify(builtin.credentials?.[name]) !== JSON.stringify(c))
    .map(([name, c]) => {
      const from = c.from as { env?: string; file?: string; command?: string[] };
      const source = from.command
        ? `the host command ${from.command.join(' ')}`
        : from.file
          ? `the file ${from.file}`
          : `$${from.env}`;
      return `credential ${name} (from ${source}) sent to ${c.hosts.join(' ')}`;
    });
  const network = (p: Profile) => (typeof p.network === 'object' ? p.network : {});
  const cas = added(network(profile).extra_ca_certs, network(builtin).extra_ca_certs);
  if (cas.length > 0) lines.push(`private CAs the proxy trusts for credential hosts: ${cas.join(' ')}`);
  return lines;
}

/** Lines naming each widening of `profile` over `builtin` (its merged form); empty when none. */
export function widenings(profile: Profile, builtin: Profile): string[] {
  const lines: string[] = [];
  if (profile.mode === 'danger' && builtin.mode !== 'danger')
    lines.push('mode: danger (the host filesystem, writable; needs --danger at run time)');
  else if (profile.mode === 'workspace-write' && builtin.mode === 'read-only')
    lines.push('mode: workspace-write (the built-in is read-only)');
  lines.push(...networkWidening(profile.network, builtin.network));
  const writable = added(profile.writable_roots?.map(pathOf), builtin.writable_roots?.map(pathOf));
  if (writable.length > 0) lines.push(`writable roots: ${writable.join(' ')}`);
  lines.push(...seccompWidening(profile.seccomp, builtin.seccomp));
  const secrets = (profile.secrets ?? []).filter(
    (s) => !(builtin.secrets ?? []).some((t) => JSON.stringify(t) === JSON.stringify(s)),
  );
  if (secrets.length > 0) lines.push(`secrets injected: ${secrets.map((s) => s.name).join(' ')}`);
  const except = added(profile.sensitive?.except, builtin.sensitive?.except);
  if (except.length > 0) lines.push(`sensitive files shown (sensitive.except): ${except.join(' ')}`);
  if (profile.user === 'root' && builtin.user !== 'root') lines.push('user: root (uid 0 inside)');
  const lifted = Object.entries(builtin.limits ?? {}).filter(
    ([k, v]) =>
      k !== 'required' &&
      v !== 'none' &&
      [undefined, 'none'].includes(profile.limits?.[k as keyof typeof profile.limits] as string | undefined),
  );
  if (lifted.length > 0)
    lines.push(`limits lifted: ${lifted.map(([k, v]) => `${k} (built-in ${String(v)})`).join(' ')}`);
  lines.push(...credentialWidening(profile, builtin));
  const agentKeys = added(profile.ssh_agent?.keys, builtin.ssh_agent?.keys);
  if (agentKeys.length > 0) lines.push(`ssh-agent keys the sandbox may sign with: ${agentKeys.join(' ')}`);
  const keep = added(profile.env?.keep, builtin.env?.keep);
  if (keep.length > 0) lines.push(`host variables passed in: ${keep.join(' ')}`);
  lines.push(...commandsWidening(profile.commands, builtin.commands));
  return lines;
}
