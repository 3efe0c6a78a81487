// Settings → rules (validated, sorted), and rules → the per-syscall checks one arch needs.
// Both compilers (BPF and Kafel) consume the same plan, so they cannot disagree about ordering.
import { SbxError } from '../errors.js';
import { closest } from '../suggest.js';
import { ERRNO_VALUES, isKnownSyscall, knownSyscallNames, syscallNumber } from './arch.js';
import { IO_URING_SYSCALLS, presetRules } from './sets.js';
import type { SeccompArch, SeccompArgTest, SeccompErrno, SeccompRule, SeccompSettings } from './types.js';

/**
 * The preset's rules, minus io_uring when allowed, minus `remove`, plus `add` as plain EPERM
 * denials. `add` wins over `remove` (fail closed). A syscall the preset already denies outright
 * keeps its rule, so adding clone3 leaves its ENOSYS alone. Output is sorted: the same settings
 * give the same JSON, and so the same filter bytes.
 */
export function resolveSeccompRules(settings: SeccompSettings): SeccompRule[] {
  checkNames(settings.add, 'seccomp.add');
  checkNames(settings.remove, 'seccomp.remove');
  const removed = new Set(settings.remove);
  let rules = presetRules(settings.preset).filter(
    (rule) => !removed.has(rule.syscall) && !(settings.allowIoUring && IO_URING_SYSCALLS.includes(rule.syscall)),
  );
  for (const syscall of new Set(settings.add)) {
    if (rules.some((rule) => rule.syscall === syscall && rule.when === undefined)) continue;
    rules = [...rules.filter((rule) => rule.syscall !== syscall), { syscall, errno: 'EPERM' }];
  }
  return sortRules(rules);
}

function sortRules(rules: readonly SeccompRule[]): SeccompRule[] {
  // Code-unit order, not localeCompare: the result must not depend on the host's locale.
  const key = (rule: SeccompRule) => `${rule.syscall}\u0000${rule.errno}\u0000${JSON.stringify(rule.when ?? null)}`;
  return [...rules].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

function checkNames(names: readonly string[], key: string): void {
  const unknown = names.filter((name) => !isKnownSyscall(name));
  if (unknown.length === 0) return;
  const [first, ...rest] = unknown.map((name) => describeUnknown(name));
  throw new SbxError('SECCOMP_INVALID', first!, {
    hint: `fix or drop the name in ${key}; names are the kernel's syscall names (man 2 syscalls)`,
    details: rest,
  });
}

function describeUnknown(name: string): string {
  const suggestion = closest(name, knownSyscallNames());
  return `unknown syscall ${JSON.stringify(name)}${suggestion === undefined ? '' : ` (did you mean ${JSON.stringify(suggestion)}?)`}`;
}

/** One check in a syscall's chain: deny with `errno` when `when` holds (always, if absent). */
export interface PlannedCheck {
  errno: SeccompErrno;
  errnoValue: number;
  when: NormalizedArgTest | undefined;
}

export interface NormalizedArgTest {
  arg: number;
  op: SeccompArgTest['op'];
  values: number[];
}

export interface PlannedSyscall {
  name: string;
  nr: number;
  checks: PlannedCheck[];
}

/**
 * Groups rules by syscall for one arch, sorted by number. Names the arch lacks are skipped
 * (ioperm on aarch64). Within a syscall, an unconditional denial comes first and ends the chain;
 * otherwise the argument tests run in rule order and the first that holds decides.
 */
export function planForArch(rules: readonly SeccompRule[], arch: SeccompArch): PlannedSyscall[] {
  const bySyscall = new Map<string, SeccompRule[]>();
  for (const rule of sortRules(rules)) {
    checkRule(rule);
    if (syscallNumber(arch, rule.syscall) === undefined) continue;
    bySyscall.set(rule.syscall, [...(bySyscall.get(rule.syscall) ?? []), rule]);
  }
  const planned = [...bySyscall].map(([name, group]): PlannedSyscall => {
    const unconditional = group.find((rule) => rule.when === undefined);
    const chain = unconditional === undefined ? group : [unconditional];
    return {
      name,
      nr: syscallNumber(arch, name)!,
      checks: chain.map((rule) => ({
        errno: rule.errno,
        errnoValue: ERRNO_VALUES[rule.errno],
        when: normalizeTest(rule.when),
      })),
    };
  });
  return planned.sort((a, b) => a.nr - b.nr);
}

/** Rules may come from a hand-written or cached Policy, so the compilers re-check what they rely on. */
function checkRule(rule: SeccompRule): void {
  const invalid = (message: string) =>
    new SbxError('SECCOMP_INVALID', `seccomp rule for ${JSON.stringify(rule.syscall)}: ${message}`, {
      hint: "derive seccomp rules with resolveSeccompRules from the profile's seccomp settings",
    });
  if (!isKnownSyscall(rule.syscall)) {
    throw new SbxError('SECCOMP_INVALID', describeUnknown(rule.syscall), {
      hint: 'fix or drop the name in seccomp.add',
    });
  }
  if (!Object.hasOwn(ERRNO_VALUES, rule.errno)) throw invalid(`unknown errno ${JSON.stringify(rule.errno)}`);
  const when = rule.when;
  if (when === undefined) return;
  if (!['masked-any', 'eq-low32', 'ne-list'].includes(when.op)) throw invalid(`unknown op ${JSON.stringify(when.op)}`);
  if (!Number.isInteger(when.arg) || when.arg < 0 || when.arg > 5)
    throw invalid(`argument index ${when.arg} is not 0..5`);
  const values = Array.isArray(when.value) ? when.value : [when.value];
  if (values.length === 0) throw invalid(`${when.op} needs at least one value`);
  if (!values.every((v) => Number.isInteger(v) && v >= 0 && v <= 0xffffffff))
    throw invalid('argument values must be 32-bit unsigned integers');
  if (when.op === 'masked-any' && (values.length !== 1 || values[0] === 0))
    throw invalid('masked-any takes one non-zero mask');
}

function normalizeTest(when: SeccompArgTest | undefined): NormalizedArgTest | undefined {
  if (when === undefined) return undefined;
  const values = Array.isArray(when.value) ? [...when.value] : [when.value];
  return { arg: when.arg, op: when.op, values };
}
