// The run record (pipeline/record.ts): what each stage learnt, appended, never rewritten. A refusal's
// SbxError.run is its fold, so it names the facts in the order the stages learnt them.
import { describe, expect, it } from 'vitest';
import { RunRecord } from '../../../src/pipeline/record.js';

const PROFILE = { name: 'default', file: 'builtin:default', hash: 'h', source: 'builtin' as const };

describe('the run record', () => {
  it('starts with the session and no profile, as a refusal in the first stage reports it', () => {
    expect(new RunRecord('s-1').known()).toEqual({ sessionId: 's-1', profile: null });
  });

  it('folds what the stages appended, in their order', () => {
    const record = new RunRecord('s-1');
    record.append({ profile: PROFILE });
    record.append({ backend: 'bwrap' });
    record.append({ policyHash: 'abc' });
    record.append({ command: ['true'] });
    const known = record.known();
    expect(known).toEqual({
      sessionId: 's-1',
      profile: PROFILE,
      backend: 'bwrap',
      policyHash: 'abc',
      command: ['true'],
    });
    expect(Object.keys(known)).toEqual(['sessionId', 'profile', 'backend', 'policyHash', 'command']);
  });

  it('refuses a fact learnt twice: a stage cannot rewrite what an earlier one recorded', () => {
    const record = new RunRecord('s-1');
    record.append({ backend: 'bwrap' });
    expect(() => record.append({ backend: 'nsjail' })).toThrow(/backend was learnt twice/);
    expect(record.known().backend).toBe('bwrap');
  });

  it('hands out copies: changing what known() returned changes no record', () => {
    const record = new RunRecord('s-1');
    record.append({ policyHash: 'abc' });
    const known = record.known();
    known.policyHash = 'forged';
    expect(record.known().policyHash).toBe('abc');
  });
});
