// Rules → the seccomp BPF program bwrap loads with `--seccomp FD`.
//
// Layout:
//   1. arch check: anything but the native ABI → KILL_PROCESS.
//   2. x86_64 only: nr ≥ 0x40000000 (x32 ABI) → KILL_PROCESS, except nr = -1.
//   3. a binary search over the denied syscall numbers (jge splits, then up to LEAF_SIZE jeqs),
//      each hit jumping to its errno return or to its argument checks.
//   4. default: ALLOW.
// A search tree keeps every syscall at ~log2(n) + 4 compares instead of n (~70 with strict), and
// the kernel runs this program on every syscall the sandbox makes.
//
// Why KILL_PROCESS for foreign ABIs rather than an errno: the tables here only name native numbers,
// so an i386 (int 0x80) or x32 call would slip past every rule. A foreign-ABI call inside sbx is
// either a filter-evasion attempt or a 32-bit binary. An errno for every call would leave the
// latter half-alive (it cannot even exit_group; glibc's _exit then falls through to a faulting
// instruction), so the process dies at once with SIGSYS, which names the cause in the exit status.
// bwrap loads the filter right before it execs the command, so bwrap itself makes only native
// calls under it. Kernels before 4.14 do not know KILL_PROCESS and treat it as
// KILL_THREAD (the action bits are masked), which still stops the call.
// nr = -1 is let through: it is what a tracer writes to skip a syscall, the kernel answers it with
// ENOSYS, and libseccomp makes the same exception.
import { SbxError } from '../errors.js';
import { archInfo } from './arch.js';
import { type AsmItem, BPF_MAX_INSTRUCTIONS, SECCOMP_DATA, SECCOMP_RET, assemble, encodeProgram } from './bpf.js';
import { type PlannedCheck, type PlannedSyscall, planForArch } from './rules.js';
import type { SeccompArch, SeccompRule } from './types.js';

const LEAF_SIZE = 4;
const NR_SKIPPED_BY_TRACER = 0xffffffff;
const ALLOW = 'allow';
const KILL = 'kill';
const X32 = 'x32';
const errnoLabel = (errnoValue: number) => `errno:${errnoValue}`;

/** Raw sock_filter program bytes for `bwrap --seccomp FD`. Deterministic: same rules, same bytes. */
export function assembleSeccompFilter(rules: readonly SeccompRule[], arch: SeccompArch): Uint8Array {
  const info = archInfo(arch);
  const plan = planForArch(rules, arch);
  const items: AsmItem[] = [
    { kind: 'load', offset: SECCOMP_DATA.arch },
    { kind: 'jump', op: 'jeq', k: info.auditArch, ifTrue: undefined, ifFalse: KILL },
    { kind: 'load', offset: SECCOMP_DATA.nr },
  ];
  if (info.x32Bit !== undefined)
    items.push({ kind: 'jump', op: 'jge', k: info.x32Bit, ifTrue: X32, ifFalse: undefined });
  dispatch(plan, 0, plan.length, items);
  for (const syscall of plan) if (needsBlock(syscall)) argumentChecks(syscall, items);
  if (info.x32Bit !== undefined) {
    items.push(
      { kind: 'label', name: X32 },
      { kind: 'jump', op: 'jeq', k: NR_SKIPPED_BY_TRACER, ifTrue: ALLOW, ifFalse: KILL },
    );
  }
  items.push({ kind: 'label', name: KILL }, { kind: 'ret', k: SECCOMP_RET.KILL_PROCESS });
  items.push({ kind: 'label', name: ALLOW }, { kind: 'ret', k: SECCOMP_RET.ALLOW });
  const errnos = new Set(plan.flatMap((syscall) => syscall.checks.map((check) => check.errnoValue)));
  for (const value of [...errnos].sort((a, b) => a - b)) {
    items.push({ kind: 'label', name: errnoLabel(value) }, { kind: 'ret', k: SECCOMP_RET.ERRNO | value });
  }
  const program = assemble(items);
  if (program.length > BPF_MAX_INSTRUCTIONS) {
    throw new SbxError(
      'SECCOMP_INVALID',
      `the seccomp filter needs ${program.length} BPF instructions; the kernel accepts ${BPF_MAX_INSTRUCTIONS}`,
      {
        hint: 'deny fewer syscalls in seccomp.add',
      },
    );
  }
  return encodeProgram(program);
}

function needsBlock(syscall: PlannedSyscall): boolean {
  return syscall.checks[0]?.when !== undefined;
}

/** Where a syscall's dispatch hit goes: straight to its errno, or to its argument checks. */
function entryLabel(syscall: PlannedSyscall): string {
  return needsBlock(syscall) ? `sys:${syscall.name}` : errnoLabel(syscall.checks[0]!.errnoValue);
}

/** Binary search over plan[lo, hi) by syscall number; A holds nr throughout. */
function dispatch(plan: readonly PlannedSyscall[], lo: number, hi: number, items: AsmItem[]): void {
  if (hi - lo <= LEAF_SIZE) {
    if (lo === hi) items.push({ kind: 'goto', target: ALLOW });
    for (let i = lo; i < hi; i++) {
      const syscall = plan[i]!;
      items.push({
        kind: 'jump',
        op: 'jeq',
        k: syscall.nr,
        ifTrue: entryLabel(syscall),
        ifFalse: i === hi - 1 ? ALLOW : undefined,
      });
    }
    return;
  }
  const mid = (lo + hi) >>> 1;
  const upper = `ge:${plan[mid]!.nr}`;
  items.push({ kind: 'jump', op: 'jge', k: plan[mid]!.nr, ifTrue: upper, ifFalse: undefined });
  dispatch(plan, lo, mid, items);
  items.push({ kind: 'label', name: upper });
  dispatch(plan, mid, hi, items);
}

/** The argument checks of one syscall, in order; the first that holds denies, none → ALLOW. */
function argumentChecks(syscall: PlannedSyscall, items: AsmItem[]): void {
  items.push({ kind: 'label', name: `sys:${syscall.name}` });
  syscall.checks.forEach((check, i) => {
    const last = i === syscall.checks.length - 1;
    const pass = last ? ALLOW : `sys:${syscall.name}:${i + 1}`;
    argumentCheck(check, errnoLabel(check.errnoValue), pass, items);
    if (!last) items.push({ kind: 'label', name: pass });
  });
}

function argumentCheck(check: PlannedCheck, deny: string, pass: string, items: AsmItem[]): void {
  const when = check.when!;
  // Low half only: see SeccompArgTest for why the kernel's truncation makes this the right test.
  items.push({ kind: 'load', offset: SECCOMP_DATA.argLow(when.arg) });
  const values = when.values;
  switch (when.op) {
    case 'masked-any':
      items.push({ kind: 'jump', op: 'jset', k: values[0]!, ifTrue: deny, ifFalse: pass });
      return;
    case 'eq-low32':
      values.forEach((value, j) => {
        items.push({
          kind: 'jump',
          op: 'jeq',
          k: value,
          ifTrue: deny,
          ifFalse: j === values.length - 1 ? pass : undefined,
        });
      });
      return;
    case 'ne-list':
      values.forEach((value, j) => {
        items.push({
          kind: 'jump',
          op: 'jeq',
          k: value,
          ifTrue: pass,
          ifFalse: j === values.length - 1 ? deny : undefined,
        });
      });
      return;
  }
}
