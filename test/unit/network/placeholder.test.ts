// The placeholder a credential's variable holds: never the value, random per call, and shaped like it
// where clients look (prefix, alphabet, length), with enough random characters never to turn up by chance.
import { randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { knownPrefix, MIN_RANDOM_CHARS, placeholderFor } from '../../../src/network/placeholder.js';

const pick = (n: number) => randomInt(n);

describe('placeholderFor', () => {
  it('keeps a known prefix, the length and the alphabet of the value', () => {
    const classic = `ghp_${'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'}`;
    expect(placeholderFor(classic, pick)).toMatch(/^ghp_[A-Za-z0-9]{36}$/);
    const fine = `github_pat_${'11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd'}`;
    const p = placeholderFor(fine, pick);
    expect(p.startsWith('github_pat_')).toBe(true);
    expect(p).toHaveLength(fine.length);
    // `_` is structure, kept in its place.
    expect(p.indexOf('_', 'github_pat_'.length)).toBe(fine.indexOf('_', 'github_pat_'.length));
    expect(placeholderFor('0123456789abcdef0123456789abcdef01234567', pick)).toMatch(/^[0-9a-f]{40}$/);
    expect(placeholderFor('AKIAIOSFODNN7EXAMPLE', pick)).toMatch(/^AKIA[0-9A-Z]{24}$/);
    expect(placeholderFor('sk-ant-api03-abc', pick).startsWith('sk-ant-')).toBe(true);
  });

  it('is never the value, and differs from one call to the next', () => {
    const value = `ghp_${'x'.repeat(36)}`;
    const seen = new Set(Array.from({ length: 20 }, () => placeholderFor(value, pick)));
    expect(seen.size).toBe(20);
    expect(seen.has(value)).toBe(false);
    // A pick that would rebuild the value exactly is drawn again (a forced first draw, then random ones).
    const digits = '12345678901234567890123456789';
    let call = 0;
    const replay = (n: number) => (call < digits.length ? Number(digits[call++]) % n : randomInt(n));
    expect(placeholderFor(digits, replay)).not.toBe(digits);
  });

  it('a short value gets at least MIN_RANDOM_CHARS random characters', () => {
    const p = placeholderFor('hunter2', pick);
    expect(p.length).toBeGreaterThanOrEqual(MIN_RANDOM_CHARS);
    expect(p).toMatch(/^[0-9a-z]+$/);
    expect(placeholderFor('ghp_', pick)).toMatch(new RegExp(`^ghp_[0-9A-Za-z]{${MIN_RANDOM_CHARS}}$`));
  });

  it('knownPrefix takes the longest', () => {
    expect(knownPrefix('sk-ant-x')).toBe('sk-ant-');
    expect(knownPrefix('sk-x')).toBe('sk-');
    expect(knownPrefix('plain')).toBe('');
  });
});
