// How a fix is spelled for the door a run came through (docs/ARCHITECTURE.md: the CLI and the library
// are two doors onto one pipeline): `--allow-domain HOST` at a terminal, `allowDomains: ['HOST']` in
// code. Every hint and notice of the command gate names its fix through this one table, so the two
// spellings cannot drift apart, and a library caller is never told about a flag it cannot pass. Pure.
import type { Violation } from '../policy/violation.js';
import type { NetworkUse } from './command-rules.js';

/** Which door a run came through: sbx's CLI, or the library's run()/compile(). */
export type Door = 'cli' | 'library';

/** Each setting a hint may name, as each door spells it. */
const SPELLING = {
  allowDomain: {
    cli: (host: string) => `--allow-domain ${host}`,
    library: (host: string) => `allowDomains: ['${host}']`,
  },
  networkHost: { cli: () => '--network host', library: () => "network: 'host'" },
  profile: { cli: (name: string) => `-p ${name}`, library: (name: string) => `profile: '${name}'` },
  allowDenylisted: { cli: () => '--allow-denylisted-commands', library: () => 'allowDenylistedCommands: true' },
  approvalsOff: { cli: () => 'approvals are off (--approval never)', library: () => 'no approve callback was given' },
  askSomeone: {
    cli: () => 'run sbx on a terminal with --approval prompt',
    library: () => "pass an approve callback that answers 'once' or 'always'",
  },
  allReasons: { cli: () => 'the report (--report-fd)', library: () => "the error's violations" },
} satisfies Record<string, { cli: (value: string) => string; library: (value: string) => string }>;

/** `setting` as `door` spells it, with its value (a host, a profile name) where it takes one. */
export function spell(door: Door, setting: keyof typeof SPELLING, value = ''): string {
  return SPELLING[setting][door](value);
}

/** The fix for the first refusal of the command rules, in the words of the flag or option that changes it. */
export function refusalHint(door: Door, v: Violation): string {
  if (v.kind === 'path')
    return 'name paths inside the workspace (relative, without ..); a profile with commands.paths: any turns path guards off';
  if (v.rule === 'commands.deny')
    return `use another command, or lift the deny list for this run with ${spell(door, 'allowDenylisted')} (unsafe)`;
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
  const allow = door === 'cli' ? domains.join(' ') : `allowDomains: [${use.domains.map((d) => `'${d}'`).join(', ')}]`;
  return (
    `sbx: ${use.command} needs the network, which this profile does not give (network: none); it will fail or hang. ` +
    `Allow its registry with ${allow}, or use ${spell(door, 'profile', 'network')}`
  );
}
