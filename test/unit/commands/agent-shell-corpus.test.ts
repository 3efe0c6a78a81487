// The agent profile's rules against the corpus of ordinary agent commands and the bypass corpus
// (test/helpers/agent-shell-corpus.ts): every string gets exactly its expected verdict, and the figures
// hold: at least 97% of ordinary commands allowed, every bypass refused, and the README says so (issue
// 33). Pure: the workspace, the sandbox's mounts and its environment are fixtures shaped like `sbx
// explain -p agent` shows them.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { CommandRules } from '../../../src/policy/types.js';
import { type Door, networkNotice, refusalHint, spell } from '../../../src/advice.js';
import { decideCommand, pathsToCheck, type CommandDecision } from '../../../src/commands/command-rules.js';
import { rootsOf } from '../../../src/commands/path-guards.js';
import { CommandsSchema } from '../../../src/profile/schema-command-rules.js';
import {
  AGENT_ISSUES,
  BYPASSES,
  type Entry,
  type Expected,
  MINI_SWE_AGENT,
  ORDINARY,
} from '../../helpers/agent-shell-corpus.js';

const AGENT: CommandRules = (() => {
  const c = CommandsSchema.parse(
    (parse(readFileSync(new URL('../../../profiles/agent.yaml', import.meta.url), 'utf8')) as { commands: unknown })
      .commands,
  );
  return { default: c.default!, allow: c.allow!, deny: c.deny!, paths: c.paths!, shellSyntax: c.shell_syntax! };
})();

const HOME = '/home/alice';
const TOOLS = `${HOME}/.config/sbx/tools`;
/** The agent's mounts, in order, as derivePolicy makes them (only what the guards look at). */
const ROOTS = rootsOf([
  {
    kind: 'bind',
    source: '/usr',
    target: '/usr',
    access: 'ro',
    optional: false,
    reason: 'system, read-only',
    role: 'system',
  },
  {
    kind: 'bind',
    source: '/etc',
    target: '/etc',
    access: 'ro',
    optional: false,
    reason: 'system, read-only',
    role: 'system',
  },
  { kind: 'proc', target: '/proc', reason: "the sandbox's own processes", role: 'kernel' },
  { kind: 'dev', target: '/dev', reason: 'minimal /dev', role: 'kernel' },
  { kind: 'tmpfs', target: '/tmp', sizeBytes: 1, mode: 0o1777, reason: 'private /tmp', role: 'private' },
  {
    kind: 'tmpfs',
    target: HOME,
    sizeBytes: 1,
    mode: 0o755,
    reason: 'private HOME, empty each session',
    role: 'private',
  },
  {
    kind: 'bind',
    source: '/testbed',
    target: '/testbed',
    access: 'rw',
    optional: false,
    reason: 'workspace (rw)',
    role: 'workspace',
  },
  { kind: 'bind', source: TOOLS, target: TOOLS, access: 'ro', optional: true, reason: 'read_only', role: 'user-ro' },
  {
    kind: 'bind',
    source: `${HOME}/.cache`,
    target: `${HOME}/.cache`,
    access: 'rw',
    optional: false,
    reason: 'writable_roots',
    role: 'user-rw',
  },
]);
/** SWE-bench's checkout, where the transcripts' agents worked (the corpus keeps their paths). */
const WS = { host: '/testbed', sandbox: '/testbed', roots: ROOTS };
const VALUES = {
  vars: { HOME, PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', SBX_WORKSPACE: WS.sandbox },
  secrets: ['API_TOKEN'],
};

function judge(script: string, network: 'none' | 'host' = 'none'): CommandDecision {
  const command = { kind: 'shell' as const, script };
  return decideCommand({
    rules: AGENT,
    command,
    mode: 'workspace-write',
    network,
    allowDenylisted: false,
    workspace: WS,
    base: WS.host,
    // Nothing exists: every path resolves lexically (symlinks have their own tests).
    paths: Object.fromEntries(
      pathsToCheck(command, AGENT, 'workspace-write', WS, WS.host, VALUES).map((p) => [p, { exists: false }]),
    ),
    values: VALUES,
  });
}

const verdictOf = (d: CommandDecision): Expected => (d.verdict === 'deny' ? d.violations[0]!.rule : d.verdict);

const cases = (entries: readonly Entry[]) =>
  entries.map(([script, expected, why]) => [JSON.stringify(script).slice(0, 120), script, expected, why] as const);

describe('the agent profile on ordinary agent commands (issues 24 and 33)', () => {
  it.each(cases(ORDINARY))('%s', (_, script, expected, why) => {
    const d = judge(script);
    expect(
      verdictOf(d),
      d.verdict === 'deny' ? JSON.stringify(d.violations) : d.verdict === 'ask' ? d.detail : '',
    ).toBe(expected);
    // A question or a refusal says why in the corpus.
    if (expected !== 'allow') expect(why, script).toBeTruthy();
  });
});

describe('the agent profile on bypass attempts: each is refused, for its reason', () => {
  it.each(cases(BYPASSES))('%s', (_, script, expected, why) => {
    const d = judge(script);
    expect(d.verdict, script).toBe('deny');
    expect(verdictOf(d)).toBe(expected);
    expect(why, script).toBeTruthy();
  });
});

/** The figures of the corpus, as the README states them. */
function figures() {
  const allowed = ORDINARY.filter(([s]) => judge(s).verdict === 'allow').length;
  const refused = BYPASSES.filter(([s]) => judge(s).verdict === 'deny').length;
  const percent = (n: number, of: number) => (Math.floor((n / of) * 1000) / 10).toFixed(1);
  return { allowed, ordinary: ORDINARY.length, refused, bypasses: BYPASSES.length, percent };
}

describe('the corpus figures (issue 33): at least 97% of ordinary commands run, every bypass is refused', () => {
  it('holds at least 300 commands from public agent transcripts, and the goal', () => {
    expect(MINI_SWE_AGENT.length + AGENT_ISSUES.length).toBeGreaterThanOrEqual(300);
    const f = figures();
    expect(f.allowed / f.ordinary).toBeGreaterThanOrEqual(0.97);
    expect(f.refused).toBe(f.bypasses);
  });

  it('the README states the measured figures', () => {
    const f = figures();
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    const stated =
      /allows (\d+) of (\d+) ordinary agent commands \(([\d.]+)%\) and refuses (\d+) of (\d+) bypass attempts \(([\d.]+)%\)/.exec(
        readme,
      );
    expect(stated?.slice(1)).toEqual([
      String(f.allowed),
      String(f.ordinary),
      f.percent(f.allowed, f.ordinary),
      String(f.refused),
      String(f.bypasses),
      f.percent(f.refused, f.bypasses),
    ]);
  });
});

describe('path guards: what the sandbox makes private, or the profile binds read-only, may be named', () => {
  it('the agent tools directory, /tmp and HOME are fine; system and other writable binds are not', () => {
    for (const script of [
      `ls ${TOOLS}`,
      `cat ${TOOLS}/a/b.md`,
      'ls ~/.config/sbx/tools',
      'echo x > /tmp/y',
      'echo x > ~/.bashrc',
    ])
      expect(judge(script).verdict, script).toBe('allow');
    for (const [script, rule] of [
      ['cat /usr/share/dict/words', 'paths.absolute'],
      ['echo x > ~/.cache/y', 'paths.absolute'],
      ['cat /proc/1/environ', 'paths.absolute'],
    ])
      expect(verdictOf(judge(script!)), script).toBe(rule);
  });

  it('after cd, relative paths are judged from every directory the shell may be in', () => {
    const command = { kind: 'shell' as const, script: 'cd sub; cat a/x' };
    const needed = pathsToCheck(command, AGENT, 'workspace-write', WS, WS.host, VALUES);
    expect(needed).toEqual(expect.arrayContaining([`${WS.host}/a/x`, `${WS.host}/sub/a/x`]));
    // A link in sub leading out is an escape even though cd may fail first.
    const paths = Object.fromEntries(needed.map((p) => [p, { exists: false } as const]));
    paths[`${WS.host}/sub/a`] = { exists: true, real: '/etc', type: 'dir', uid: 0 } as never;
    const d = decideCommand({
      rules: AGENT,
      command,
      mode: 'workspace-write',
      network: 'none',
      allowDenylisted: false,
      workspace: WS,
      base: WS.host,
      paths,
      values: VALUES,
    });
    expect(verdictOf(d)).toBe('paths.escape');
  });
});

describe('offline: an URL in an argument is data; a fetch is named once', () => {
  it('npm install is allowed and named; the URL-only commands are not named', () => {
    expect(judge('npm install && npm test').needsNetwork).toEqual([
      { command: 'npm install', domains: ['registry.npmjs.org'] },
    ]);
    expect(
      judge('git commit -m "see https://x.example/1"; grep -rn https://github.com src').needsNetwork,
    ).toBeUndefined();
    expect(judge('npm install', 'host').needsNetwork).toBeUndefined();
  });
});

describe('advice: one table words each fix for the door the run came through', () => {
  const doors: Door[] = ['cli', 'library'];
  it('the network notice, exactly', () => {
    const use = { command: 'npm install', domains: ['registry.npmjs.org'] };
    expect(networkNotice('cli', use)).toBe(
      'sbx: npm install needs the network, which this profile does not give (network: none); it will fail or hang. ' +
        'Allow its registry with --allow-domain registry.npmjs.org, or use -p network',
    );
    expect(networkNotice('library', use)).toBe(
      'sbx: npm install needs the network, which this profile does not give (network: none); it will fail or hang. ' +
        "Allow its registry with allowDomains: ['registry.npmjs.org'], or use profile: 'network'",
    );
  });

  it('a library hint never names a flag; a CLI hint never names an option', () => {
    const offline = { phase: 'preflight', kind: 'command', rule: 'commands.offline', detail: '' } as const;
    const deny = { ...offline, rule: 'commands.deny' };
    expect(refusalHint('cli', offline)).toContain('--allow-domain HOST or --network host');
    expect(refusalHint('library', offline)).toContain("allowDomains: ['HOST'] or network: 'host'");
    expect(refusalHint('library', deny)).toContain('allowDenylistedCommands: true');
    for (const v of [offline, deny]) {
      expect(refusalHint('library', v)).not.toMatch(/--[a-z]/);
      expect(refusalHint('cli', v)).not.toMatch(/allowDomains|allowDenylisted|network: '/);
    }
    for (const door of doors)
      expect(spell(door, 'approvalsOff')).toBe(
        door === 'cli' ? 'approvals are off (--approval never)' : 'no approve callback was given',
      );
  });
});
