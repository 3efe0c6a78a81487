// The warm server's wire format, between native/sbx-warm.c (the client bin/sbx.js execs for
// `sbx hook AGENT --warm` and `sbx run --warm`) and cli/warm/warm-server.ts. Pure: bytes in, values out.
// Every integer is a u32 little-endian, a string its length then its bytes:
//   server hello:   "SBX1" nonce (15 bytes, [a-z0-9])
//   client call:    "SBX1" pid build node cwd ttys nargs arg... nenv "NAME=VALUE"...
//                   (ttys: bit N set when descriptor N, of 0 to 2, is a terminal; the args begin with
//                   the command, hook or run)
//   server go:      "Y" (anything else, or the connection closed: the client goes on without a server)
// then for hook:
//   client input:   input (at most the hook's bound plus one byte: one more says it was larger)
//   server reply:   "SBX1" status stdout on_stdout_failure
// and for run (cli/warm/warm-run.ts):
//   server:         stdio_path: a socket the server listens on for this run only
//   client:         connects there and sends one byte with its descriptors 0, 1 and 2 (SCM_RIGHTS), which
//                   only the launch's taker reads (native/sbx-warm.c --take-stdio); the client can still
//                   go on without the server until it has sent them
//   server:         any of "E" text (for stderr), "O" bytes before after (the report for stdout; if the
//                   write fails, before ERRNO-NAME after on stderr), "L" (the launch is starting: the
//                   client writes "G" on the descriptors' connection once it has written all before,
//                   and the taker waits for it), then "X" status, the last
//   client:         "S" and one byte, a signal's number, for each SIGINT, SIGTERM, SIGHUP, SIGQUIT

export const MAGIC = 'SBX1';
export const NONCE_LENGTH = 15;
/** A call's arguments and environment: far above any real one (Linux caps argv plus environ at a few MiB). */
export const MAX_CALL_BYTES = 8 * 1024 * 1024;

export interface WarmCall {
  pid: number;
  build: string;
  /** The real path of the Node.js the client would start: the server's own, or the client refused it. */
  node: string;
  /** The client's working directory: error messages show paths from there, as `sbx hook` does. */
  cwd: string;
  /** Bit N: the client's descriptor N (0, 1, 2) is a terminal. */
  ttys: number;
  /** The command line after `sbx`: `hook ...` or `run ...`. */
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
export function parseCall(buf: Buffer): WarmCall | 'more' | 'bad' {
  if (buf.length > MAX_CALL_BYTES) return 'bad';
  if (buf.subarray(0, Math.min(4, buf.length)).toString('latin1') !== MAGIC.slice(0, Math.min(4, buf.length)))
    return 'bad';
  const r = new Reader(buf);
  r.offset = 4;
  const pid = r.u32();
  const build = r.bytes();
  const node = r.bytes();
  const cwd = r.bytes();
  const ttys = r.u32();
  const nargs = r.u32();
  if (pid === MORE || build === MORE || node === MORE || cwd === MORE || ttys === MORE || nargs === MORE) return 'more';
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
  return {
    pid,
    build: build.toString('utf8'),
    node: node.toString('utf8'),
    cwd: cwd.toString('utf8'),
    ttys,
    args,
    env,
  };
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
export function encodeCall(call: WarmCall): Buffer {
  const env = Object.entries(call.env).map(([k, v]) => `${k}=${v}`);
  return Buffer.concat([
    Buffer.from(MAGIC, 'latin1'),
    u32(call.pid),
    str(call.build),
    str(call.node),
    str(call.cwd),
    u32(call.ttys),
    u32(call.args.length),
    ...call.args.map(str),
    u32(env.length),
    ...env.map(str),
  ]);
}

export function encodeInput(input: Buffer): Buffer {
  return Buffer.concat([u32(input.length), input]);
}

/** A run's go: "Y" and where to send the caller's descriptors. */
export function encodeRunGo(stdioPath: string): Buffer {
  return Buffer.concat([Buffer.from('Y', 'latin1'), str(stdioPath)]);
}

/** A line or more for the caller's stderr. */
export function encodeStderr(text: string): Buffer {
  return Buffer.concat([Buffer.from('E', 'latin1'), str(text)]);
}

/** The report for the caller's stdout, and what to say on stderr if it cannot be written (around the errno's name). */
export function encodeStdout(bytes: Buffer, failure: { before: string; after: string }): Buffer {
  const length = u32(bytes.length);
  return Buffer.concat([Buffer.from('O', 'latin1'), length, bytes, str(failure.before), str(failure.after)]);
}

/** The launch is about to start: the client says go to the taker once everything before is written. */
export function encodeLaunching(): Buffer {
  return Buffer.from('L', 'latin1');
}

/** The run's exit status: the last message. */
export function encodeExit(status: number): Buffer {
  return Buffer.concat([Buffer.from('X', 'latin1'), u32(status)]);
}

/**
 * The signals in the client's messages so far ("S" and a signal number each), and how many bytes they
 * took; 'bad' for anything else, after which nothing the client sends is read.
 */
export function parseSignals(buf: Buffer): { signals: number[]; used: number } | 'bad' {
  const signals: number[] = [];
  let at = 0;
  for (; at + 2 <= buf.length; at += 2) {
    if (buf[at] !== 0x53) return 'bad';
    signals.push(buf[at + 1]!);
  }
  if (at < buf.length && buf[at] !== 0x53) return 'bad';
  return { signals, used: at };
}
