// The tables of known commands agree with each other: what the judges assume of one table about another.
import { describe, expect, it } from 'vitest';
import { COMMAND_GROUPS, NETWORK_FETCHERS, PURE_WRAPPERS, WRAPPERS } from '../../../src/commands/known-commands.js';
import { COMMAND_GROUP_NAMES } from '../../../src/profile/schema-command-rules.js';

describe('known commands', () => {
  it('every group the schema accepts has members', () => {
    for (const name of COMMAND_GROUP_NAMES) expect(COMMAND_GROUPS[name].length, name).toBeGreaterThan(0);
  });

  it('a pure wrapper is a wrapper whose options are known, so the command it runs is found and judged', () => {
    for (const name of PURE_WRAPPERS) expect(Object.hasOwn(WRAPPERS, name), name).toBe(true);
  });

  it('a privilege wrapper is looked through but never pure: it needs an allow rule of its own', () => {
    for (const name of COMMAND_GROUPS['@privilege']) expect(PURE_WRAPPERS.has(name), name).toBe(false);
  });

  it('a package manager is noted offline, not refused: none is in @network', () => {
    for (const name of Object.keys(NETWORK_FETCHERS)) expect(COMMAND_GROUPS['@network'], name).not.toContain(name);
  });
});
