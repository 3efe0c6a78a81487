// `sbx hook`'s commander-free reader (cli/hook/hook.ts parseHookArgv): the plain forms an agent's settings
// use are read as commander reads them; everything else is left to commander (undefined), which prints
// help or the usage error (gemini-cli --approve among them).
import { describe, expect, it } from 'vitest';
import { parseHookArgv } from '../../../src/cli/hook/hook.js';

describe('parseHookArgv', () => {
  it.each([
    [['claude-code'], 'claude-code', 'builtin:agent'],
    [['gemini-cli'], 'gemini-cli', 'builtin:agent'],
    [['claude-code', '-p', 'mine'], 'claude-code', 'mine'],
    [['-p', 'mine', 'claude-code'], 'claude-code', 'mine'],
    [['claude-code', '--profile', './p.yaml'], 'claude-code', './p.yaml'],
    [['claude-code', '--profile=mine'], 'claude-code', 'mine'],
  ])('%j → %s under %s', (args, agent, profile) => {
    expect(parseHookArgv(args)).toEqual({ agent, flags: { profile } });
  });

  it.each([
    [['claude-code', '--approve'], 'builtin:agent'],
    [['--approve', 'claude-code', '-p', 'mine'], 'mine'],
  ])('%j approves', (args, profile) => {
    expect(parseHookArgv(args)).toEqual({ agent: 'claude-code', flags: { profile, approve: true } });
  });

  it.each([
    [['claude-code', '--warm'], { profile: 'builtin:agent', warm: true }],
    [['--warm', 'gemini-cli', '-p', 'mine'], { profile: 'mine', warm: true }],
    [['claude-code', '--approve', '--warm'], { profile: 'builtin:agent', approve: true, warm: true }],
  ])('%j asks the hook server', (args, flags) => {
    expect(parseHookArgv(args)?.flags).toEqual(flags);
  });

  it.each([
    [[]],
    [['claude-code', '--warm', '--warm']],
    [['claude-code', '--warm=1']],
    [['--help']],
    [['claude-code', '--help']],
    [['codex']],
    [['claude-code', 'gemini-cli']],
    [['claude-code', '-p']],
    [['claude-code', '-p', '--help']],
    [['claude-code', '--profile=']],
    [['claude-code', '-p', 'a', '-p', 'b']],
    [['claude-code', '-pmine']],
    [['claude-code', '--']],
    [['claude-code', '--unknown']],
    [['claude-code', '--approve', '--approve']],
    [['claude-code', '--approve=yes']],
    // Gemini CLI's policy engine ignores a hook's allow: commander refuses the flag, naming why.
    [['gemini-cli', '--approve']],
  ])('%j is left to commander', (args) => {
    expect(parseHookArgv(args)).toBeUndefined();
  });
});
