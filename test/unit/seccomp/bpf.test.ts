import { describe, expect, it } from 'vitest';
import { type AsmItem, SECCOMP_DATA, SECCOMP_RET, assemble, encodeProgram } from '../../../src/seccomp/bpf.js';
import { runBpf } from './bpf-interpreter.js';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const bytesOf = (items: AsmItem[]) => encodeProgram(assemble(items));

describe('instruction encoding (struct sock_filter, little-endian)', () => {
  it.each([
    ['ld [arch]', { kind: 'load', offset: SECCOMP_DATA.arch }, '2000000004000000'],
    ['ld [nr]', { kind: 'load', offset: SECCOMP_DATA.nr }, '2000000000000000'],
    ['ld [args[1] low]', { kind: 'load', offset: SECCOMP_DATA.argLow(1) }, '2000000018000000'],
    ['ld [args[5] high]', { kind: 'load', offset: SECCOMP_DATA.argHigh(5) }, '200000003c000000'],
    ['ret ALLOW', { kind: 'ret', k: SECCOMP_RET.ALLOW }, '060000000000ff7f'],
    ['ret ERRNO(EPERM)', { kind: 'ret', k: SECCOMP_RET.ERRNO | 1 }, '0600000001000500'],
    ['ret KILL_PROCESS', { kind: 'ret', k: SECCOMP_RET.KILL_PROCESS }, '0600000000000080'],
  ] as const)('%s', (_name, item, expected) => {
    expect(hex(bytesOf([item]))).toBe(expected);
  });

  it('jeq with both arms resolved to labels', () => {
    const program = bytesOf([
      { kind: 'jump', op: 'jeq', k: 0xc000003e, ifTrue: 'yes', ifFalse: 'no' },
      { kind: 'label', name: 'no' },
      { kind: 'ret', k: 0 },
      { kind: 'label', name: 'yes' },
      { kind: 'ret', k: SECCOMP_RET.ALLOW },
    ]);
    // code 0x15, jt 1 (skip the ret), jf 0, k = AUDIT_ARCH_X86_64
    expect(hex(program.subarray(0, 8))).toBe('150001003e0000c0');
  });

  it('jge, jgt and jset opcodes', () => {
    const items = (op: 'jge' | 'jgt' | 'jset'): AsmItem[] => [
      { kind: 'jump', op, k: 0x40000000, ifTrue: undefined, ifFalse: undefined },
      { kind: 'ret', k: 0 },
    ];
    expect(hex(bytesOf(items('jge')).subarray(0, 8))).toBe('3500000000000040');
    expect(hex(bytesOf(items('jgt')).subarray(0, 8))).toBe('2500000000000040');
    expect(hex(bytesOf(items('jset')).subarray(0, 8))).toBe('4500000000000040');
  });

  it('goto becomes ja with a 32-bit offset', () => {
    const filler: AsmItem[] = Array.from({ length: 300 }, () => ({ kind: 'ret', k: 0 }));
    const program = bytesOf([
      { kind: 'goto', target: 'end' },
      ...filler,
      { kind: 'label', name: 'end' },
      { kind: 'ret', k: 1 },
    ]);
    expect(hex(program.subarray(0, 8))).toBe('050000002c010000');
  });

  it('refuses constants that are not u32', () => {
    expect(() => bytesOf([{ kind: 'ret', k: 2 ** 32 }])).toThrow(/u32/);
    expect(() => bytesOf([{ kind: 'ret', k: -1 }])).toThrow(/u32/);
  });
});

describe('labels', () => {
  it('undefined targets fall through to the next item', () => {
    const program = bytesOf([
      { kind: 'load', offset: SECCOMP_DATA.nr },
      { kind: 'jump', op: 'jeq', k: 7, ifTrue: undefined, ifFalse: 'other' },
      { kind: 'ret', k: 111 },
      { kind: 'label', name: 'other' },
      { kind: 'ret', k: 222 },
    ]);
    expect(hex(program.subarray(8, 16))).toBe('1500000107000000');
    expect(runBpf(program, { nr: 7, arch: 0 })).toBe(111);
    expect(runBpf(program, { nr: 8, arch: 0 })).toBe(222);
  });

  it('rejects backward, undefined and duplicate labels', () => {
    expect(() =>
      assemble([
        { kind: 'label', name: 'a' },
        { kind: 'goto', target: 'a' },
      ]),
    ).toThrow(/backwards/);
    expect(() => assemble([{ kind: 'goto', target: 'nowhere' }])).toThrow(/not defined/);
    expect(() =>
      assemble([
        { kind: 'label', name: 'a' },
        { kind: 'label', name: 'a' },
      ]),
    ).toThrow(/twice/);
  });

  // A conditional jump has 8-bit offsets; targets further than 255 instructions need a ja.
  it.each([
    ['true arm far', 'far', 'near'],
    ['false arm far', 'near', 'far'],
    ['both arms far', 'far', 'far2'],
  ] as const)('widens a jump whose %s', (_name, ifTrue, ifFalse) => {
    const filler = (n: number): AsmItem[] => Array.from({ length: n }, () => ({ kind: 'ret', k: 0xdead }));
    const items: AsmItem[] = [
      { kind: 'load', offset: SECCOMP_DATA.nr },
      { kind: 'jump', op: 'jeq', k: 1, ifTrue, ifFalse },
      { kind: 'label', name: 'near' },
      { kind: 'ret', k: 10 },
      ...filler(400),
      { kind: 'label', name: 'far' },
      { kind: 'ret', k: 20 },
      ...filler(300),
      { kind: 'label', name: 'far2' },
      { kind: 'ret', k: 30 },
    ];
    const program = bytesOf(items);
    const expected = (target: string) => ({ near: 10, far: 20, far2: 30 })[target];
    expect(runBpf(program, { nr: 1, arch: 0 })).toBe(expected(ifTrue));
    expect(runBpf(program, { nr: 2, arch: 0 })).toBe(expected(ifFalse));
    // The short form would have needed an offset over 255; the widened one is 3 instructions.
    expect(program.length / 8).toBe(items.filter((i) => i.kind !== 'label').length + 2);
  });

  it('widening one jump can push another out of range, and both get fixed', () => {
    // Jump A's target is in range (offset 254) until jump B, in between, widens by two.
    const filler = (n: number): AsmItem[] => Array.from({ length: n }, () => ({ kind: 'ret', k: 0xdead }));
    const items: AsmItem[] = [
      { kind: 'load', offset: SECCOMP_DATA.nr },
      { kind: 'jump', op: 'jeq', k: 1, ifTrue: 'a', ifFalse: undefined },
      { kind: 'jump', op: 'jeq', k: 2, ifTrue: 'b', ifFalse: undefined },
      ...filler(253),
      { kind: 'label', name: 'a' },
      { kind: 'ret', k: 1 },
      ...filler(10),
      { kind: 'label', name: 'b' },
      { kind: 'ret', k: 2 },
    ];
    const program = bytesOf(items);
    expect(runBpf(program, { nr: 1, arch: 0 })).toBe(1);
    expect(runBpf(program, { nr: 2, arch: 0 })).toBe(2);
    expect(runBpf(program, { nr: 3, arch: 0 })).toBe(0xdead);
  });
});
