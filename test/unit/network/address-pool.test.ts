import { describe, expect, it } from 'vitest';
import { createAddressPool, RESOLVER_ADDRESS } from '../../../src/network/address-pool.js';
import { classifyAddress } from '../../../src/network/egress.js';

describe('createAddressPool', () => {
  it('hands out addresses in order from 198.18.0.2, one per name, and maps them back', () => {
    const pool = createAddressPool();
    expect(pool.assign('a.test')).toBe('198.18.0.2');
    expect(pool.assign('b.test')).toBe('198.18.0.3');
    expect(pool.assign('a.test')).toBe('198.18.0.2');
    expect(pool.size).toBe(2);
    expect(pool.nameOf('198.18.0.2')).toBe('a.test');
    expect(pool.nameOf('198.18.0.3')).toBe('b.test');
    expect(pool.nameOf('::ffff:198.18.0.3')).toBe('b.test');
    expect(pool.nameOf('198.18.0.4')).toBeUndefined();
  });

  it('is deterministic: two pools asked the same names in the same order agree', () => {
    const names = Array.from({ length: 300 }, (_, i) => `n${i}.test`);
    const a = createAddressPool();
    const b = createAddressPool();
    expect(names.map((n) => a.assign(n))).toEqual(names.map((n) => b.assign(n)));
    expect(a.assign('n299.test')).toBe('198.18.1.45'); // 2 + 299 = 301 = 1 * 256 + 45
  });

  it('never gives out the network or the resolver address, and every address is a benchmarking one', () => {
    const pool = createAddressPool();
    expect(pool.nameOf('198.18.0.0')).toBeUndefined();
    expect(pool.nameOf(RESOLVER_ADDRESS)).toBeUndefined();
    expect(classifyAddress(RESOLVER_ADDRESS)).toBe('benchmarking');
    expect(classifyAddress(pool.assign('x.test') as string)).toBe('benchmarking');
  });

  it('says which addresses lie in 198.18.0.0/15, handed out or not', () => {
    const pool = createAddressPool();
    for (const a of ['198.18.0.0', '198.18.0.9', '198.19.255.255', '::ffff:198.19.0.1'])
      expect(pool.contains(a)).toBe(true);
    for (const a of ['198.17.255.255', '198.20.0.0', '127.0.0.1', '::1', 'fe80::1', 'not-an-ip', '198.018.0.1'])
      expect(pool.contains(a)).toBe(false);
  });

  it('is bounded: past its limit assign() gives nothing and earlier names keep theirs', () => {
    const pool = createAddressPool(3);
    expect(['a', 'b', 'c'].map((n) => pool.assign(`${n}.test`))).toEqual(['198.18.0.2', '198.18.0.3', '198.18.0.4']);
    expect(pool.assign('d.test')).toBeUndefined();
    expect(pool.assign('b.test')).toBe('198.18.0.3');
    expect(pool.size).toBe(3);
  });

  it('caps the limit at the size of the range and reaches its last address', () => {
    const pool = createAddressPool(1 << 20);
    let last: string | undefined;
    for (let i = 0; i < (1 << 17) - 2; i++) last = pool.assign(`n${i}.test`);
    expect(last).toBe('198.19.255.255');
    expect(pool.assign('one-more.test')).toBeUndefined();
    expect(pool.nameOf('198.19.255.255')).toBe(`n${(1 << 17) - 3}.test`);
  });
});
