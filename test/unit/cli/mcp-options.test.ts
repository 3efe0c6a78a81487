// `sbx mcp` compiles once before it answers (src/cli/mcp/mcp.ts fixSession), through the unchecked door
// when compile()'s option check (src/api-options.ts) would take its options anyway, so that zod stays
// unloaded: passesOptionCheck must agree with that check on every option the server's flags can give.
import { describe, expect, it } from 'vitest';
import { checkCompileOptions } from '../../../src/api-options.js';
import { passesOptionCheck } from '../../../src/cli/mcp/mcp.js';

const SHA = 'a'.repeat(64);

/** The options fixSession builds from these flags (its own shape). */
const optionsOf = (spec: string, trustProfiles: string[], workspace?: string, backend?: 'bwrap' | 'nsjail') => ({
  command: ['true'],
  cwd: '/somewhere',
  profile: spec,
  ...(workspace ? { workspace } : {}),
  ...(backend ? { backend } : {}),
  ...(trustProfiles.length > 0 ? { trustProfiles } : {}),
  onProfile: () => {},
});

describe('passesOptionCheck', () => {
  it.each([
    ['builtin:default', []],
    ['agent', [SHA]],
    ['./p.yaml', [SHA, 'b'.repeat(64)]],
    ['-', []],
  ] as const)('%s with %j: the check takes it, and so does compile()', (spec, trust) => {
    expect(passesOptionCheck(spec, trust)).toBe(true);
    expect(() => checkCompileOptions(optionsOf(spec, [...trust], '/w', 'nsjail'))).not.toThrow();
  });

  it.each([
    ['', []],
    ['agent', ['abc']],
    ['agent', [SHA.toUpperCase()]],
    ['agent', [SHA, '']],
    ['agent', [` ${SHA}`]],
  ] as const)('%j with %j: left to compile(), which refuses it (OPTIONS_INVALID)', (spec, trust) => {
    expect(passesOptionCheck(spec, trust)).toBe(false);
    expect(() => checkCompileOptions(optionsOf(spec, [...trust]))).toThrow(/compile\(\)/);
  });
});
