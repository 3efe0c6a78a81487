// sbx's seccomp rules → the JSON profile Docker, Podman, containerd (Kubernetes `Localhost`) and the
// OCI runtime spec (`linux.seccomp`) read: one shape, libseccomp's names. Pure.
//
// sbx's filter is a deny-list over an allowed default (src/seccomp/sets.ts), so this one is too:
// defaultAction ALLOW, one ERRNO entry per rule. libseccomp compares whole 64-bit arguments, and runc
// joins the conditions of one entry with AND but splits two conditions on the same argument into
// separate (OR'd) entries, so every sbx test becomes entries of single conditions that read only the
// low 32 bits, as src/seccomp/types.ts SeccompArgTest requires:
// - masked-any (any bit of MASK set) → one MASKED_EQ entry per bit: (arg & bit) == bit;
// - eq-low32 (low32 == V) → MASKED_EQ (arg & 0xffffffff) == V, per value;
// - ne-list (low32 not in S) → the complement of S in 0..2^32-1, cut into aligned power-of-two
//   blocks, each one MASKED_EQ (arg & blockmask) == blockstart.
import { SbxError } from '../errors.js';
import { ERRNO_VALUES, syscallNumber } from '../seccomp/arch.js';
import type { SeccompArch, SeccompRule } from '../seccomp/index.js';

export interface SeccompArg {
  index: number;
  value: number;
  valueTwo: number;
  op: 'SCMP_CMP_MASKED_EQ';
}

export interface SeccompEntry {
  names: string[];
  action: 'SCMP_ACT_ERRNO';
  errnoRet: number;
  args?: SeccompArg[];
}

export interface SeccompProfile {
  defaultAction: 'SCMP_ACT_ALLOW';
  architectures: string[];
  syscalls: SeccompEntry[];
}

/**
 * The native architecture only. libseccomp answers a syscall made under any other ABI (i386's int
 * 0x80, x32) with the filter's bad-arch action, a kill, as sbx's own filter does (src/seccomp/filter.ts);
 * test/integration/export/engines.test.ts sees an x32 call under runc end in SIGSYS.
 */
const SCMP_ARCH: Readonly<Record<SeccompArch, string>> = {
  x86_64: 'SCMP_ARCH_X86_64',
  aarch64: 'SCMP_ARCH_AARCH64',
};

const LOW32 = 0xffffffff;

const maskedEq = (index: number, mask: number, datum: number): SeccompArg => ({
  index,
  value: mask >>> 0,
  valueTwo: datum >>> 0,
  op: 'SCMP_CMP_MASKED_EQ',
});

/** The set bits of a 32-bit mask, low to high. */
function bitsOf(mask: number): number[] {
  const out: number[] = [];
  for (let bit = 0; bit < 32; bit++) if ((mask >>> bit) & 1) out.push((1 << bit) >>> 0);
  return out;
}

/** [lo, hi] (inclusive, 32-bit) as aligned blocks: each is `start` with the low `size` bits free. */
function blocksOf(lo: number, hi: number): { start: number; size: number }[] {
  const out: { start: number; size: number }[] = [];
  let at = lo;
  while (at <= hi) {
    // The largest power of two that `at` is aligned to and that still fits in the range.
    let size = 1;
    while (size < 2 ** 32 && at % (size * 2) === 0 && at + size * 2 - 1 <= hi) size *= 2;
    out.push({ start: at, size });
    at += size;
  }
  return out;
}

/** The 32-bit values outside `allowed`, as inclusive ranges. */
function complementOf(allowed: readonly number[]): [number, number][] {
  const sorted = [...new Set(allowed)].sort((a, b) => a - b);
  const out: [number, number][] = [];
  let next = 0;
  for (const value of sorted) {
    if (value > next) out.push([next, value - 1]);
    next = value + 1;
  }
  if (next <= LOW32) out.push([next, LOW32]);
  return out;
}

/** One sbx rule → the single-condition argument lists whose union is exactly its test (none: always). */
function conditionsOf(rule: SeccompRule): SeccompArg[][] {
  const when = rule.when;
  if (when === undefined) return [[]];
  const values = Array.isArray(when.value) ? when.value : [when.value];
  switch (when.op) {
    case 'masked-any':
      return bitsOf(values[0]!).map((bit) => [maskedEq(when.arg, bit, bit)]);
    case 'eq-low32':
      return values.map((value) => [maskedEq(when.arg, LOW32, value)]);
    case 'ne-list':
      return complementOf(values).flatMap(([lo, hi]) =>
        blocksOf(lo, hi).map(({ start, size }) => [maskedEq(when.arg, LOW32 - (size - 1), start)]),
      );
  }
}

/**
 * The policy's rules as a libseccomp JSON profile for `arch`. Unconditional denials are grouped by
 * errno (one entry naming them all); conditional ones follow, one entry per condition. Names the
 * arch lacks (ioperm on aarch64) are left out, as the BPF filter leaves them out. Deterministic.
 */
export function seccompProfileOf(rules: readonly SeccompRule[], arch: SeccompArch): SeccompProfile {
  const plain = new Map<number, string[]>();
  const conditional: SeccompEntry[] = [];
  for (const rule of rules) {
    if (syscallNumber(arch, rule.syscall) === undefined) continue;
    if (!Object.hasOwn(ERRNO_VALUES, rule.errno))
      throw new SbxError('SECCOMP_INVALID', `seccomp rule for ${rule.syscall}: unknown errno ${rule.errno}`, {
        hint: "derive seccomp rules with resolveSeccompRules from the profile's seccomp settings",
      });
    const errnoRet = ERRNO_VALUES[rule.errno];
    // An unconditional denial of the same syscall makes its conditional ones moot (src/seccomp/rules.ts planForArch).
    const always = rules.some((r) => r.syscall === rule.syscall && r.when === undefined);
    if (rule.when === undefined) plain.set(errnoRet, [...(plain.get(errnoRet) ?? []), rule.syscall]);
    else if (!always)
      for (const args of conditionsOf(rule))
        conditional.push({ names: [rule.syscall], action: 'SCMP_ACT_ERRNO', errnoRet, args });
  }
  const grouped = [...plain]
    .sort(([a], [b]) => a - b)
    .map(
      ([errnoRet, names]): SeccompEntry => ({ names: [...new Set(names)].sort(), action: 'SCMP_ACT_ERRNO', errnoRet }),
    );
  return { defaultAction: 'SCMP_ACT_ALLOW', architectures: [SCMP_ARCH[arch]], syscalls: [...grouped, ...conditional] };
}
