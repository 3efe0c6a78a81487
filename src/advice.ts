// How a fix is spelled for the door a run came through (docs/ARCHITECTURE.md: the CLI and the library
// are two doors onto one pipeline): `--allow-domain HOST` at a terminal, `allowDomains: ['HOST']` in
// code. Every hint and notice of the command gate names its fix through this one table, so the two
// spellings cannot drift apart, and a library caller is never told about a flag it cannot pass. Pure.
import type { Violation } from './policy/violation.js';
import type { NetworkUse } from './commands/command-rules.js';

/**
 * Which door a run came through: sbx's CLI, the library's run()/compile(), or a tool call of `sbx mcp`,
 * whose caller can change nothing but the command (the server's profile is fixed: cli/mcp/mcp.ts).
 */
export type Door = 'cli' | 'library' | 'mcp';

/** Each setting a hint may name, as each door spells it. */
const SPELLING = {
  allowDomain: {
    cli: (host: string) => `--allow-domain ${host}`,
    library: (host: string) => `allowDomains: ['${host}']`,
    mcp: (host: string) => `network.allow: [${host}] in the server's profile`,
  },
  networkHost: {
    cli: () => '--network host',
    library: () => "network: 'host'",
    mcp: () => "network: host in the server's profile",
  },
  profile: {
    cli: (name: string) => `-p ${name}`,
    library: (name: string) => `profile: '${name}'`,
    mcp: (name: string) => `sbx mcp -p ${name}`,
  },
  allowDenylisted: {
    cli: () => 'for this run with --allow-denylisted-commands',
    library: () => 'for this run with allowDenylistedCommands: true',
    mcp: () => "in the server's profile (a tool call cannot)",
  },
  approvalsOff: {
    cli: () => 'approvals are off (--approval never)',
    library: () => 'no approve callback was given',
    mcp: () => 'sbx mcp asks no one',
  },
  askSomeone: {
    cli: () => 'run sbx on a terminal with --approval prompt',
    library: () => "pass an approve callback that answers 'once' or 'always'",
    mcp: () => 'ask the user to run it with sbx run on a terminal',
  },
  allReasons: {
    cli: () => 'the report (--report-fd)',
    library: () => "the error's violations",
    mcp: () => "the result's structuredContent.violations",
  },
  shellString: {
    cli: (script: string) => `--shell '${script}'`,
    library: (script: string) => `shell: '${script}'`,
    mcp: (script: string) => `{"shell": "${script}"}`,
  },
} satisfies Record<string, Record<Door, (value: string) => string>>;

/** `setting` as `door` spells it, with its value (a host, a profile name) where it takes one. */
export function spell(door: Door, setting: keyof typeof SPELLING, value = ''): string {
  return SPELLING[setting][door](value);
}

/** What to do instead of a command a deny group refuses: something the caller (a model, often) can do. */
const INSTEAD: Record<string, (door: Door) => string> = {
  '@shells': (door) =>
    `run the commands themselves: sbx reads a shell string and judges each command (${spell(door, 'shellString', 'a && b | c')})`,
  '@delete': () => 'leave the files, or move them aside with mv (deleting is refused by this profile)',
  '@network': () => 'work with what the workspace has: this profile has no network tools',
  '@privilege': () => 'run the command without it: there is no privilege to gain in the sandbox',
};

/**
 * The fix for the first refusal of the command rules, in the words of the flag or option that changes
 * it, and first what the caller can change in the command itself: a model reading a refusal can act
 * on a command, rarely on a profile.
 */
export function refusalHint(door: Door, v: Violation): string {
  if (v.kind === 'path')
    return (
      "name paths inside the workspace (relative, without .. out of it), or in the sandbox's private /tmp or HOME; " +
      'a profile with commands.paths: any turns path guards off'
    );
  if (v.rule === 'commands.deny' && v.detail.includes('the rules cannot see what it runs'))
    return (
      'run that program as a command of its own, where the rules judge it (not through --eval, an alias, -c, ' +
      `a program option or a variable such as PATH); or lift the deny list ${spell(door, 'allowDenylisted')} (unsafe)`
    );
  if (v.rule === 'commands.deny') {
    const group = /\((@[a-z]+)\)/.exec(v.detail)?.[1];
    const instead = group && INSTEAD[group] ? `${INSTEAD[group](door)}; or ` : 'use another command, or ';
    return `${instead}lift the deny list ${spell(door, 'allowDenylisted')} (unsafe)`;
  }
  if (v.rule === 'commands.offline') {
    const options = `${spell(door, 'allowDomain', 'HOST')} or ${spell(door, 'networkHost')}`;
    return `this profile has no network: work offline, or pick a profile with network (${spell(door, 'profile', 'network')}), or pass ${options}`;
  }
  if (v.rule === 'commands.shell_syntax') {
    return (
      'write simple commands joined by | && || ; or newlines, with if/for/while, { }, ( ), $(...), NAME=value, ' +
      'export and cd DIR inside the workspace (no backticks, &, &>, case, eval or source); a command, its ' +
      'subcommand or an option of a tool that runs programs must be written out, not come from $VAR or a glob ' +
      '(write ./* for files); or run COMMAND ARGS as an argv'
    );
  }
  if (v.rule === 'commands.default') return 'use a command the profile allows, or add this one to its commands.allow';
  if (v.rule.endsWith('.block')) return 'use a form of the command the profile does not block';
  return `the profile's ${v.rule} refuses it; change the command or the profile`;
}

/**
 * The line that names why a run will fail or hang before it does: a package manager's fetch in a
 * sandbox without network (README "Command rules"). One line, on stderr at the CLI.
 */
export function networkNotice(door: Door, use: NetworkUse): string {
  const domains = use.domains.map((d) => spell(door, 'allowDomain', d));
  const allow =
    door === 'library' ? `allowDomains: [${use.domains.map((d) => `'${d}'`).join(', ')}]` : domains.join(' ');
  return (
    `sbx: ${use.command} needs the network, which this profile does not give (network: none); it will fail or hang. ` +
    `Allow its registry with ${allow}, or use ${spell(door, 'profile', 'network')}`
  );
}
