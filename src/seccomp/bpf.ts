// A tiny classic-BPF assembler for seccomp programs: the few opcodes a deny-list needs, forward
// labels, and long jumps. Pure and deterministic: the same items always give the same bytes.

/** struct sock_filter (linux/filter.h): u16 code, u8 jt, u8 jf, u32 k. */
export interface BpfInstruction {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

/** Opcodes used here (linux/bpf_common.h): class | size | mode, or class | op | source. */
export const BPF_OP = {
  /** BPF_LD | BPF_W | BPF_ABS: A = 32-bit word at offset k of seccomp_data. */
  LD_W_ABS: 0x20,
  /** BPF_JMP | BPF_JA: pc += k (32-bit offset, the only way past 255 instructions). */
  JA: 0x05,
  /** BPF_JMP | BPF_JEQ | BPF_K */
  JEQ: 0x15,
  /** BPF_JMP | BPF_JGT | BPF_K */
  JGT: 0x25,
  /** BPF_JMP | BPF_JGE | BPF_K */
  JGE: 0x35,
  /** BPF_JMP | BPF_JSET | BPF_K: jump if A & k is non-zero. */
  JSET: 0x45,
  /** BPF_RET | BPF_K */
  RET: 0x06,
} as const;

/** SECCOMP_RET_* (linux/seccomp.h). */
export const SECCOMP_RET = {
  KILL_PROCESS: 0x80000000,
  KILL_THREAD: 0x00000000,
  ERRNO: 0x00050000,
  ALLOW: 0x7fff0000,
} as const;

/**
 * Offsets into struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
 * Both supported arches are little-endian, so an argument's low half comes first.
 */
export const SECCOMP_DATA = {
  nr: 0,
  arch: 4,
  argLow: (index: number): number => 16 + 8 * index,
  argHigh: (index: number): number => 20 + 8 * index,
} as const;

/** BPF_MAXINSNS (linux/bpf_common.h): the kernel refuses longer classic programs. */
export const BPF_MAX_INSTRUCTIONS = 4096;

export type JumpOp = 'jeq' | 'jgt' | 'jge' | 'jset';

/** A jump target: a label defined later in the program, or `undefined` for the next item. */
export type Target = string | undefined;

export type AsmItem =
  | { kind: 'label'; name: string }
  | { kind: 'load'; offset: number }
  | { kind: 'jump'; op: JumpOp; k: number; ifTrue: Target; ifFalse: Target }
  | { kind: 'goto'; target: string }
  | { kind: 'ret'; k: number };

const JUMP_CODES: Readonly<Record<JumpOp, number>> = {
  jeq: BPF_OP.JEQ,
  jgt: BPF_OP.JGT,
  jge: BPF_OP.JGE,
  jset: BPF_OP.JSET,
};
const MAX_SHORT_OFFSET = 0xff;

/**
 * Resolves labels and emits instructions. Conditional jumps carry 8-bit offsets; one whose target is
 * more than 255 instructions ahead is rewritten as `jcc 0,1; ja T; ja F` (ja has a 32-bit offset).
 * Widening only moves code further apart, so the loop widens until nothing changes; it ends because
 * each jump widens at most once.
 */
export function assemble(items: readonly AsmItem[]): BpfInstruction[] {
  const wide = new Set<number>();
  for (;;) {
    const { addresses, labels } = layout(items, wide);
    let widened = false;
    items.forEach((item, i) => {
      if (item.kind !== 'jump' || wide.has(i)) return;
      const next = addresses[i]! + 1;
      const far = [item.ifTrue, item.ifFalse].some((t) => resolve(t, next, labels, i) - next > MAX_SHORT_OFFSET);
      if (far) {
        wide.add(i);
        widened = true;
      }
    });
    if (!widened) return emit(items, wide, addresses, labels);
  }
}

function layout(items: readonly AsmItem[], wide: ReadonlySet<number>) {
  const addresses: number[] = [];
  const labels = new Map<string, number>();
  let pc = 0;
  items.forEach((item, i) => {
    addresses.push(pc);
    if (item.kind === 'label') {
      if (labels.has(item.name)) throw new Error(`BPF label ${item.name} defined twice`);
      labels.set(item.name, pc);
    } else {
      pc += item.kind === 'jump' && wide.has(i) ? 3 : 1;
    }
  });
  return { addresses, labels };
}

/** Absolute address of a target; `next` is where fall-through lands. Seccomp BPF only jumps forward. */
function resolve(target: Target, next: number, labels: ReadonlyMap<string, number>, at: number): number {
  if (target === undefined) return next;
  const address = labels.get(target);
  if (address === undefined) throw new Error(`BPF label ${target} is not defined`);
  if (address < next) throw new Error(`BPF jump from item ${at} to ${target} goes backwards`);
  return address;
}

function emit(
  items: readonly AsmItem[],
  wide: ReadonlySet<number>,
  addresses: readonly number[],
  labels: ReadonlyMap<string, number>,
): BpfInstruction[] {
  const out: BpfInstruction[] = [];
  items.forEach((item, i) => {
    const pc = addresses[i]!;
    switch (item.kind) {
      case 'label':
        return;
      case 'load':
        out.push({ code: BPF_OP.LD_W_ABS, jt: 0, jf: 0, k: item.offset });
        return;
      case 'ret':
        out.push({ code: BPF_OP.RET, jt: 0, jf: 0, k: item.k });
        return;
      case 'goto':
        out.push({ code: BPF_OP.JA, jt: 0, jf: 0, k: resolve(item.target, pc + 1, labels, i) - (pc + 1) });
        return;
      case 'jump': {
        const code = JUMP_CODES[item.op];
        if (wide.has(i)) {
          // Both halves become long jumps: the true arm lands on the first ja, the false arm on the second.
          out.push({ code, jt: 0, jf: 1, k: item.k });
          out.push({ code: BPF_OP.JA, jt: 0, jf: 0, k: resolve(item.ifTrue, pc + 3, labels, i) - (pc + 2) });
          out.push({ code: BPF_OP.JA, jt: 0, jf: 0, k: resolve(item.ifFalse, pc + 3, labels, i) - (pc + 3) });
        } else {
          const next = pc + 1;
          out.push({
            code,
            jt: resolve(item.ifTrue, next, labels, i) - next,
            jf: resolve(item.ifFalse, next, labels, i) - next,
            k: item.k,
          });
        }
        return;
      }
    }
  });
  return out;
}

/** The raw bytes of a program (an array of struct sock_filter), as `bwrap --seccomp FD` reads them. */
export function encodeProgram(program: readonly BpfInstruction[]): Uint8Array {
  const bytes = new Uint8Array(program.length * 8);
  const view = new DataView(bytes.buffer);
  program.forEach((insn, i) => {
    if (!Number.isInteger(insn.k) || insn.k < 0 || insn.k > 0xffffffff)
      throw new RangeError(`BPF constant ${insn.k} is not a u32`);
    if (insn.jt > MAX_SHORT_OFFSET || insn.jf > MAX_SHORT_OFFSET) throw new RangeError('BPF jump offset over 255');
    // Both supported arches are little-endian; the kernel reads the struct in host order.
    view.setUint16(i * 8, insn.code, true);
    view.setUint8(i * 8 + 2, insn.jt);
    view.setUint8(i * 8 + 3, insn.jf);
    view.setUint32(i * 8 + 4, insn.k, true);
  });
  return bytes;
}
