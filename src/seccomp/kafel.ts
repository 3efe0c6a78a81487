// Rules → a Kafel policy for nsjail's --seccomp_string (google/kafel syntax).
//
// Syscalls are written as SYSCALL[nr] with the name in a comment: kafel resolves names with its
// own table, which lags the kernel (and cannot spell `_sysctl`, as identifiers start with a letter).
// kafel emits the arch check itself (KILL on a foreign arch) but has no way to refuse the whole
// x32 range the way the BPF filter does, so on x86_64 each denied syscall is also listed under its
// x32 number (nr | 0x40000000).
import { X32_RENUMBERED } from './syscalls-x86_64.js';
import { type NormalizedArgTest, type PlannedCheck, planForArch } from './rules.js';
import type { SeccompArch, SeccompRule } from './types.js';

const POLICY_NAME = 'sbx';
const X32_SYSCALL_BIT = 0x40000000;

interface KafelEntry {
  nr: number;
  comment: string;
  tests: NormalizedArgTest[];
}

/** The same rules as a Kafel policy string; argument conditions included. Deterministic. */
export function renderKafelPolicy(rules: readonly SeccompRule[], arch: SeccompArch): string {
  const byErrno = new Map<number, KafelEntry[]>();
  for (const syscall of planForArch(rules, arch)) {
    // Rules with the same errno merge into one entry: their tests are alternatives.
    const groups = new Map<number, PlannedCheck[]>();
    for (const check of syscall.checks) groups.set(check.errnoValue, [...(groups.get(check.errnoValue) ?? []), check]);
    for (const [errnoValue, checks] of groups) {
      const tests = checks.some((check) => check.when === undefined) ? [] : checks.map((check) => check.when!);
      const entries = byErrno.get(errnoValue) ?? [];
      entries.push({ nr: syscall.nr, comment: syscall.name, tests });
      const x32 = arch === 'x86_64' ? x32Number(syscall.name, syscall.nr) : undefined;
      if (x32 !== undefined)
        entries.push({ nr: (X32_SYSCALL_BIT | x32) >>> 0, comment: `${syscall.name} (x32)`, tests });
      byErrno.set(errnoValue, entries);
    }
  }
  const blocks = [...byErrno]
    .sort(([a], [b]) => a - b)
    .map(([errnoValue, entries]) => {
      const lines = entries
        .sort((a, b) => a.nr - b.nr)
        .map((entry, i) => `    ${renderEntry(entry)}${i === entries.length - 1 ? '' : ','} // ${entry.comment}`);
      return [`  ERRNO(${errnoValue}) {`, ...lines, '  }'].join('\n');
    });
  const body = blocks.length === 0 ? [] : [blocks.join(',\n')];
  return [
    `// sbx seccomp rules for ${arch}. Syscalls by number, names in comments.`,
    `POLICY ${POLICY_NAME} {`,
    ...body,
    '}',
    `USE ${POLICY_NAME} DEFAULT ALLOW`,
    '',
  ].join('\n');
}

function x32Number(name: string, nr: number): number | undefined {
  if (!Object.hasOwn(X32_RENUMBERED, name)) return nr;
  return X32_RENUMBERED[name] ?? undefined;
}

function renderEntry(entry: KafelEntry): string {
  const id = `SYSCALL[${entry.nr >= X32_SYSCALL_BIT ? hex(entry.nr) : entry.nr}]`;
  if (entry.tests.length === 0) return id;
  const lastArg = Math.max(...entry.tests.map((test) => test.arg));
  const params = Array.from({ length: lastArg + 1 }, (_, i) => `a${i}`).join(', ');
  const condition =
    entry.tests.length === 1
      ? renderTest(entry.tests[0]!)
      : entry.tests.map((test) => `(${renderTest(test)})`).join(' || ');
  return `${id}(${params}) { ${condition} }`;
}

/** Kafel compares 64-bit arguments; masking with 0xffffffff keeps the low-32-bit semantics of the BPF filter. */
function renderTest(test: NormalizedArgTest): string {
  const arg = `a${test.arg}`;
  const low32 = `(${arg} & 0xffffffff)`;
  switch (test.op) {
    case 'masked-any':
      return `(${arg} & ${hex(test.values[0]!)}) != 0`;
    case 'eq-low32':
      return test.values.map((value) => `${low32} == ${hex(value)}`).join(' || ');
    case 'ne-list':
      return test.values.map((value) => `${low32} != ${hex(value)}`).join(' && ');
  }
}

function hex(value: number): string {
  return `0x${value.toString(16)}`;
}
