// A command refusal names the very profile entry behind it: the deny entry (the command or its
// group), the blocked pattern, the subcommand allow-list; the rule id alone names the rest.
import { describe, expect, it } from 'vitest';
import type { CommandRules } from '../../../src/policy/types.js';
import { decideCommand, type CommandDecision } from '../../../src/commands/command-rules.js';

const WS = { host: '/home/alice/proj', sandbox: '/home/alice/proj' };

function decide(argv: string[], over: Partial<CommandRules>): CommandDecision {
  return decideCommand({
    rules: { default: 'allow', allow: {}, deny: [], paths: 'any', shellSyntax: 'full', ...over },
    command: { kind: 'argv', argv },
    mode: 'workspace-write',
    network: 'host',
    allowDenylisted: false,
    workspace: WS,
    base: WS.host,
    paths: {},
  });
}

const sources = (d: CommandDecision) => (d.verdict === 'deny' ? d.violations.map((v) => v.source) : []);

describe('command refusals name their entry', () => {
  it('the deny entry naming the command, else the group holding it', () => {
    expect(sources(decide(['wget', 'x'], { deny: ['rm', '@network', 'wget'] }))).toEqual([{ key: 'commands.deny[2]' }]);
    expect(sources(decide(['curl', 'x'], { deny: ['rm', '@network'] }))).toEqual([{ key: 'commands.deny[1]' }]);
  });

  it('the blocked pattern that matched, and the subcommand allow-list', () => {
    const git = { allow: { git: { allow: ['status', 'push'], block: ['commit --amend', 'push --force'] } } };
    expect(sources(decide(['git', 'push', '-f'], git))).toEqual([{ key: 'commands.allow.git.block[1]' }]);
    expect(sources(decide(['git', 'rebase'], git))).toEqual([{ key: 'commands.allow.git.allow' }]);
  });

  it('commands.default needs no entry: its rule id is its key (control: no source set here)', () => {
    const d = decide(['make'], { default: 'deny' });
    expect(d).toMatchObject({ verdict: 'deny', violations: [{ rule: 'commands.default' }] });
    expect(sources(d)).toEqual([undefined]);
  });
});
