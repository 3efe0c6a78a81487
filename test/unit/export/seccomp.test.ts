// The exported seccomp profile must deny exactly what sbx's own filter denies. Each entry is
// evaluated here as libseccomp does (every condition of an entry must hold; entries are OR'd) and
// compared with sbx's rule semantics (src/seccomp/types.ts) on values chosen at every edge.
import { describe, expect, it } from 'vitest';
import { type SeccompEntry, seccompProfileOf } from '../../../src/export/seccomp.js';
import { resolveSeccompRules, type SeccompRule } from '../../../src/seccomp/index.js';
import { ERRNO_VALUES } from '../../../src/seccomp/arch.js';

/** libseccomp's verdict for one call: the errno of the first matching entry, or undefined (allowed). */
function exportedVerdict(entries: readonly SeccompEntry[], syscall: string, args: bigint[]): number | undefined {
  const hit = entries.find(
    (e) =>
      e.names.includes(syscall) &&
      (e.args ?? []).every((a) => (args[a.index]! & BigInt(a.value)) === BigInt(a.valueTwo)),
  );
  return hit?.errnoRet;
}

/** sbx's own semantics: low 32 bits only. */
function sbxVerdict(rules: readonly SeccompRule[], syscall: string, args: bigint[]): number | undefined {
  const hit = rules.find((r) => {
    if (r.syscall !== syscall) return false;
    if (r.when === undefined) return true;
    const low = Number(args[r.when.arg]! & 0xffffffffn);
    const values = Array.isArray(r.when.value) ? r.when.value : [r.when.value];
    switch (r.when.op) {
      case 'masked-any':
        return (low & values[0]!) !== 0;
      case 'eq-low32':
        return values.includes(low);
      case 'ne-list':
        return !values.includes(low);
      default:
        throw new Error(`unknown op ${r.when.op}`);
    }
  });
  return hit === undefined ? undefined : ERRNO_VALUES[hit.errno];
}

/** Every value a test could turn on: each rule value, its neighbours, each bit, the extremes, with junk high bits too. */
function probes(rules: readonly SeccompRule[]): bigint[] {
  const base = new Set<number>([0, 1, 2, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff]);
  for (let bit = 0; bit < 32; bit++) base.add((1 << bit) >>> 0);
  for (const r of rules) {
    const values = r.when === undefined ? [] : Array.isArray(r.when.value) ? r.when.value : [r.when.value];
    for (const v of values) for (const d of [-1, 0, 1]) if (v + d >= 0 && v + d <= 0xffffffff) base.add(v + d);
  }
  return [...base].flatMap((v) => [BigInt(v), BigInt(v) | 0xdead_0000_0000_0000n]);
}

describe.each(['default', 'strict'] as const)('preset %s', (preset) => {
  const rules = resolveSeccompRules({ preset, add: [], remove: [], allowIoUring: false });
  const profile = seccompProfileOf(rules, 'x86_64');

  it('allows by default, on the native architecture only', () => {
    expect(profile.defaultAction).toBe('SCMP_ACT_ALLOW');
    expect(profile.architectures).toEqual(['SCMP_ARCH_X86_64']);
  });

  it('gives each entry at most one condition per argument (runc ORs repeated ones)', () => {
    for (const e of profile.syscalls) {
      const indexes = (e.args ?? []).map((a) => a.index);
      expect(new Set(indexes).size).toBe(indexes.length);
    }
  });

  it('denies exactly what sbx denies, with the same errno', () => {
    const values = probes(rules);
    for (const syscall of new Set(rules.map((r) => r.syscall))) {
      const arg = rules.find((r) => r.syscall === syscall && r.when)?.when?.arg ?? 0;
      for (const v of values) {
        const args = [0n, 0n, 0n, 0n, 0n, 0n];
        args[arg] = v;
        expect(exportedVerdict(profile.syscalls, syscall, args), `${syscall}(arg${arg}=0x${v.toString(16)})`).toBe(
          sbxVerdict(rules, syscall, args),
        );
      }
    }
  });

  it('leaves every other syscall alone', () => {
    expect(exportedVerdict(profile.syscalls, 'read', [0n, 0n, 0n, 0n, 0n, 0n])).toBeUndefined();
  });
});

it('breaks the control: a filter that forgets a condition is caught', () => {
  const rules: SeccompRule[] = [
    { syscall: 'personality', errno: 'EPERM', when: { arg: 0, op: 'ne-list', value: [0, 8] } },
  ];
  const entries = seccompProfileOf(rules, 'x86_64').syscalls.slice(1);
  const args = [1n, 0n, 0n, 0n, 0n, 0n];
  const missing = [1n, 2n, 3n, 4n, 7n, 9n, 0x100n].filter((v) => {
    args[0] = v;
    return exportedVerdict(entries, 'personality', args) !== sbxVerdict(rules, 'personality', args);
  });
  expect(missing.length).toBeGreaterThan(0);
});
