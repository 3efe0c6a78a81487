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
} satisfies Record<string, Record<Door, (value: string) => string>>;

/** `setting` as `door` spells it, with its value (a host, a profile name) where it takes one. */
export function spell(door: Door, setting: keyof typeof SPELLING, value = ''): string {
  return SPELLING[setting][door](value);
}

/** The fix for the first refusal of the command rules, in the words of the flag or option that changes it. */
export function refusalHint(door: Door, v: Violation): string {
  if (v.kind === 'path')
    return 'name paths inside the workspace (relative, without ..); a profile with commands.paths: any turns path guards off';
  if (v.rule === 'commands.deny')
    return `use another command, or lift the deny list ${spell(door, 'allowDenylisted')} (unsafe)`;
  if (v.rule === 'commands.offline') {
    const options = `${spell(door, 'allowDomain', 'HOST')} or ${spell(door, 'networkHost')}`;
    return `this profile has no network: pick a profile with network (${spell(door, 'profile', 'network')}), or pass ${options}`;
  }
  if (v.rule === 'commands.shell_syntax') {
    return (
      'join simple commands with | && || ; or newlines (no $(...), backticks, ( ), { }, & or eval; $VAR and globs ' +
      'only in arguments; cd DIR inside the workspace), or run COMMAND ARGS as an argv'
    );
  }
  if (v.rule === 'commands.default') return "add the command to the profile's commands.allow";
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
