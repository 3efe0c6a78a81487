// A classic-BPF interpreter for seccomp programs, written independently of src/seccomp/bpf.ts so the
// tests check the assembler's bytes rather than trusting its data structures. It implements the
// kernel's rules that matter here: 8-byte little-endian sock_filter, A-register loads from
// struct seccomp_data, forward-only jumps, and a program must end in RET on every path.

export interface SeccompData {
  nr: number;
  arch: number;
  instructionPointer?: bigint;
  /** Up to six 64-bit arguments; missing ones are 0. */
  args?: (bigint | number)[];
}

export type Verdict =
  | { action: 'allow' }
  | { action: 'errno'; errno: number }
  | { action: 'kill_process' }
  | { action: 'kill_thread' }
  | { action: 'other'; value: number };

export const AUDIT_ARCH = { x86_64: 0xc000003e, aarch64: 0xc00000b7, i386: 0x40000003, arm: 0x40000028 } as const;

function seccompDataBytes(data: SeccompData): DataView {
  const view = new DataView(new ArrayBuffer(64));
  view.setInt32(0, data.nr | 0, true);
  view.setUint32(4, data.arch >>> 0, true);
  view.setBigUint64(8, data.instructionPointer ?? 0n, true);
  const args = data.args ?? [];
  for (let i = 0; i < 6; i++) view.setBigUint64(16 + 8 * i, BigInt.asUintN(64, BigInt(args[i] ?? 0)), true);
  return view;
}

/** Runs the program; returns the raw 32-bit return value. Throws on anything the kernel would reject. */
export function runBpf(program: Uint8Array, data: SeccompData): number {
  return execute(program, data).value;
}

/** Like runBpf, also counting the instructions executed. */
export function execute(program: Uint8Array, data: SeccompData): { value: number; steps: number } {
  if (program.length === 0 || program.length % 8 !== 0)
    throw new Error(`program length ${program.length} is not a multiple of 8`);
  const code = new DataView(program.buffer, program.byteOffset, program.byteLength);
  const count = program.length / 8;
  if (count > 4096) throw new Error('program longer than BPF_MAXINSNS');
  const mem = seccompDataBytes(data);
  let a = 0;
  let pc = 0;
  for (let steps = 0; steps <= count; steps++) {
    if (pc >= count) throw new Error(`fell off the end of the program at ${pc}`);
    const op = code.getUint16(pc * 8, true);
    const jt = code.getUint8(pc * 8 + 2);
    const jf = code.getUint8(pc * 8 + 3);
    const k = code.getUint32(pc * 8 + 4, true);
    pc += 1;
    switch (op) {
      case 0x20: // ld [k]
        if (k % 4 !== 0 || k + 4 > 64) throw new Error(`bad load offset ${k}`);
        a = mem.getUint32(k, true);
        break;
      case 0x05: // ja
        pc += k;
        break;
      case 0x15: // jeq
        pc += a === k ? jt : jf;
        break;
      case 0x25: // jgt
        pc += a > k ? jt : jf;
        break;
      case 0x35: // jge
        pc += a >= k ? jt : jf;
        break;
      case 0x45: // jset
        pc += (a & k) >>> 0 !== 0 ? jt : jf;
        break;
      case 0x06: // ret k
        return { value: k, steps: steps + 1 };
      default:
        throw new Error(`unsupported opcode 0x${op.toString(16)} at ${pc - 1}`);
    }
  }
  throw new Error('program did not terminate');
}

export function verdict(program: Uint8Array, data: SeccompData): Verdict {
  const value = runBpf(program, data);
  const action = (value & 0xffff0000) >>> 0;
  if (value === 0x7fff0000) return { action: 'allow' };
  if (action === 0x00050000) return { action: 'errno', errno: value & 0xffff };
  if (value === 0x80000000) return { action: 'kill_process' };
  if (value === 0) return { action: 'kill_thread' };
  return { action: 'other', value };
}

export const ALLOW: Verdict = { action: 'allow' };
export const KILL: Verdict = { action: 'kill_process' };
export const EPERM: Verdict = { action: 'errno', errno: 1 };
export const ENOSYS: Verdict = { action: 'errno', errno: 38 };
export const EAFNOSUPPORT: Verdict = { action: 'errno', errno: 97 };
export const EOPNOTSUPP: Verdict = { action: 'errno', errno: 95 };
