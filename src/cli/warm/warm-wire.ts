// The warm hook's wire format, between native/sbx-warm.c (the client bin/sbx.js execs for
// `sbx hook AGENT --warm`) and cli/warm/warm-server.ts. Pure: bytes in, values out. Every integer is a
// u32 little-endian, a string its length then its bytes:
//   server hello:   "SBX1" nonce (15 bytes, [a-z0-9])
//   client call:    "SBX1" pid build node cwd nargs arg... nenv "NAME=VALUE"...
//   server go:      "Y" (anything else, or the connection closed: the client answers without a server)
//   client input:   input (at most the hook's bound plus one byte: one more says it was larger)
//   server reply:   "SBX1" status stdout on_stdout_failure

export const MAGIC = 'SBX1';
export const NONCE_LENGTH = 15;
/** A call's arguments and environment: far above any real one (Linux caps argv plus environ at a few MiB). */
export const MAX_CALL_BYTES = 8 * 1024 * 1024;

export interface HookCall {
  pid: number;
  build: string;
  /** The real path of the Node.js the client would start: the server's own, or the client refused it. */
  node: string;
  /** The client's working directory: error messages show paths from there, as `sbx hook` does. */
  cwd: string;
  args: string[];
  env: Record<string, string>;
}

/** A prefix that is not yet a whole message. */
const MORE = Symbol('more');

class Reader {
  offset = 0;
  constructor(private readonly buf: Buffer) {}

  u32(): number | typeof MORE {
    if (this.offset + 4 > this.buf.length) return MORE;
    const v = this.buf.readUInt32LE(this.offset);
    this.offset += 4;
    return v;
  }

  bytes(): Buffer | typeof MORE {
    const length = this.u32();
    if (length === MORE || this.offset + length > this.buf.length) return MORE;
    const out = this.buf.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  strings(count: number): string[] | typeof MORE {
    const out: string[] = [];
    for (let i = 0; i < count; i++) {
      const s = this.bytes();
      if (s === MORE) return MORE;
      out.push(s.toString('utf8'));
    }
    return out;
  }
}

/**
 * The client's call from the bytes received so far: `more` while it is incomplete, `bad` when it can
 * never be one (a wrong magic, too large, bytes after it), else the call.
 */
export function parseCall(buf: Buffer): HookCall | 'more' | 'bad' {
  if (buf.length > MAX_CALL_BYTES) return 'bad';
  if (buf.subarray(0, Math.min(4, buf.length)).toString('latin1') !== MAGIC.slice(0, Math.min(4, buf.length)))
    return 'bad';
  const r = new Reader(buf);
  r.offset = 4;
  const pid = r.u32();
  const build = r.bytes();
  const node = r.bytes();
  const cwd = r.bytes();
  const nargs = r.u32();
  if (pid === MORE || build === MORE || node === MORE || cwd === MORE || nargs === MORE) return 'more';
  const args = r.strings(nargs);
  if (args === MORE) return 'more';
  const nenv = r.u32();
  if (nenv === MORE) return 'more';
  const entries = r.strings(nenv);
  if (entries === MORE) return 'more';
  if (r.offset !== buf.length) return 'bad';
  const env: Record<string, string> = {};
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    // As Node builds process.env from environ: an entry without "=" is not a variable; the first wins.
    if (eq > 0 && !Object.hasOwn(env, entry.slice(0, eq))) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return { pid, build: build.toString('utf8'), node: node.toString('utf8'), cwd: cwd.toString('utf8'), args, env };
}

/** The hook input from the bytes received after the go: `more` while incomplete, `bad` past `limit` or with bytes after it. */
export function parseInput(buf: Buffer, limit: number): Buffer | 'more' | 'bad' {
  const r = new Reader(buf);
  const input = r.bytes();
  if (input === MORE) return buf.length >= 4 && buf.readUInt32LE(0) > limit ? 'bad' : 'more';
  if (input.length > limit || r.offset !== buf.length) return 'bad';
  return input;
}

export function encodeHello(nonce: string): Buffer {
  return Buffer.from(MAGIC + nonce, 'latin1');
}

function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
}

function str(s: string): Buffer {
  const bytes = Buffer.from(s, 'utf8');
  return Buffer.concat([u32(bytes.length), bytes]);
}

export function encodeReply(status: number, stdout: string, onStdoutFailure: string): Buffer {
  return Buffer.concat([Buffer.from(MAGIC, 'latin1'), u32(status), str(stdout), str(onStdoutFailure)]);
}

/** A call as native/sbx-warm.c sends it: for tests, and for sbx's own tools that speak to the server. */
export function encodeCall(call: HookCall): Buffer {
  const env = Object.entries(call.env).map(([k, v]) => `${k}=${v}`);
  return Buffer.concat([
    Buffer.from(MAGIC, 'latin1'),
    u32(call.pid),
    str(call.build),
    str(call.node),
    str(call.cwd),
    u32(call.args.length),
    ...call.args.map(str),
    u32(env.length),
    ...env.map(str),
  ]);
}

export function encodeInput(input: Buffer): Buffer {
  return Buffer.concat([u32(input.length), input]);
}
