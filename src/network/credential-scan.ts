// What the proxy does with a request's bytes once credentials are in play: the placeholder replaced by
// the value in the headers of a request to a host listed for it, and every trace of a credential
// found where it does not belong (a request to a host not listed for it, or a plain-HTTP one), raw,
// percent-encoded or base64-encoded. Pure: the live values are arguments (network/host/credential-broker.ts
// holds them for one run), and nothing here reports, logs or returns a value; a finding names the
// variable only.
import type { HostPattern } from './egress.js';
import { isListedFor } from './credentials.js';

/** One credential while its run lasts. Never in the Policy, a report, a ledger or a log. */
export interface LiveCredential {
  name: string;
  hosts: HostPattern[];
  header?: string;
  placeholder: string;
  value: string;
}

/** A credential found in a request, and whether the command sent its placeholder or (learnt somehow) its value. */
export interface Carried {
  credential: LiveCredential;
  what: 'placeholder' | 'value';
}

/**
 * A value shorter than this is not looked for: it would turn up in ordinary bytes by chance and refuse
 * honest requests. Placeholders are always longer (placeholder.ts MIN_RANDOM_CHARS).
 */
export const MIN_TRACED_LENGTH = 16;
/** Nor is one longer than this (a bundle, not a token): every body would be searched with this much carried over. */
export const MAX_TRACED_LENGTH = 4096;

/**
 * The byte strings any encoding of `secret` in a request contains: itself, and for base64 and base64url
 * the characters that stay the same wherever it starts (three alignments: each 3-byte group of the
 * secret's own bytes encodes alone, whatever surrounds it). Percent-encoding is undone before the search.
 */
export function tracesOf(secret: string): Buffer[] {
  const raw = Buffer.from(secret, 'utf8');
  const out = [raw];
  for (const shift of [0, 1, 2]) {
    const padded = Buffer.concat([Buffer.alloc(shift), raw]);
    const start = shift === 0 ? 0 : 3;
    const end = Math.floor(padded.length / 3) * 3;
    // Under 12 bytes (16 characters) a core could match by chance.
    if (end - start < 12) continue;
    const core = padded.subarray(start, end);
    out.push(Buffer.from(core.toString('base64')), Buffer.from(core.toString('base64url')));
  }
  return out.filter((t, i) => out.findIndex((u) => u.equals(t)) === i);
}

const HEX = /^[0-9a-fA-F]{2}$/;

/** `buf` with every %XX decoded once, or undefined when it holds none. */
function percentDecodedOnce(buf: Buffer): Buffer | undefined {
  if (!buf.includes(0x25)) return undefined;
  const out = Buffer.alloc(buf.length);
  let n = 0;
  let decoded = false;
  for (let i = 0; i < buf.length; i++) {
    const hex = buf[i] === 0x25 && i + 2 < buf.length ? buf.toString('latin1', i + 1, i + 3) : '';
    if (HEX.test(hex)) {
      out[n++] = Number.parseInt(hex, 16);
      i += 2;
      decoded = true;
    } else out[n++] = buf[i] as number;
  }
  return decoded ? out.subarray(0, n) : undefined;
}

/** Percent-encoding undone, then undone again where a client (or a hider) encoded twice: each distinct form. */
const PERCENT_ROUNDS = 3;

/** `buf` with every %XX decoded, as often as it still holds one (up to three times), or undefined when it holds none. */
export function percentDecoded(buf: Buffer): Buffer | undefined {
  let out: Buffer | undefined;
  for (let round = 0, next = percentDecodedOnce(buf); next && round < PERCENT_ROUNDS; round++) {
    out = next;
    next = percentDecodedOnce(next);
  }
  return out;
}

interface Trace {
  carried: Carried;
  bytes: Buffer;
}

/** Finds credentials in bytes. Built once per run from its credentials. */
export interface Tracer {
  /** The first credential `accept`s whose trace `text` holds (raw or percent-decoded). */
  find(text: Buffer, accept: (c: LiveCredential) => boolean): Carried | undefined;
  /** The most raw bytes one trace can span (percent-encoded twice: nine per byte): what a stream must carry over. */
  readonly span: number;
}

export function tracerOf(credentials: readonly LiveCredential[]): Tracer {
  const traces: Trace[] = credentials.flatMap((credential) => [
    ...tracesOf(credential.placeholder).map((bytes) => ({
      carried: { credential, what: 'placeholder' as const },
      bytes,
    })),
    ...(credential.value.length >= MIN_TRACED_LENGTH && credential.value.length <= MAX_TRACED_LENGTH
      ? tracesOf(credential.value).map((bytes) => ({ carried: { credential, what: 'value' as const }, bytes }))
      : []),
  ]);
  const longest = Math.max(0, ...traces.map((t) => t.bytes.length));
  return {
    span: longest * 9,
    find(text, accept) {
      const forms = [text, percentDecoded(text)].filter((b): b is Buffer => b !== undefined);
      for (const t of traces) {
        if (!accept(t.carried.credential)) continue;
        if (forms.some((f) => f.includes(t.bytes))) return t.carried;
      }
      return undefined;
    },
  };
}

/**
 * A credential spelled in a host name (`ghp_x.evil.example`, or split into labels): resolving that name
 * would carry it to the domain's DNS servers. Names are case-insensitive, so the search is too.
 */
export function carriedInName(credentials: readonly LiveCredential[], host: string): Carried | undefined {
  const name = host.toLowerCase().replaceAll('.', '');
  for (const credential of credentials) {
    if (name.includes(credential.placeholder.toLowerCase())) return { credential, what: 'placeholder' };
    if (credential.value.length >= MIN_TRACED_LENGTH && name.includes(credential.value.toLowerCase()))
      return { credential, what: 'value' };
  }
  return undefined;
}

/**
 * A body, chunk by chunk: each chunk is searched with what came before it that a trace could still
 * straddle, so a placeholder split across two chunks is found in the second.
 */
export function bodyScanner(
  tracer: Tracer,
  accept: (c: LiveCredential) => boolean,
): (chunk: Buffer) => Carried | undefined {
  let carry = Buffer.alloc(0);
  return (chunk) => {
    const work = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
    const found = tracer.find(work, accept);
    carry = Buffer.from(work.subarray(Math.max(0, work.length - tracer.span + 1)));
    return found;
  };
}

const BASIC = /^(basic\s+)([A-Za-z0-9+/=]+)\s*$/i;

/** `text` with each placeholder of `credentials` replaced by its value. */
function replaced(text: string, credentials: readonly LiveCredential[]): string {
  let out = text;
  for (const c of credentials) if (out.includes(c.placeholder)) out = out.split(c.placeholder).join(c.value);
  return out;
}

/**
 * A request's raw header list (name, value, name, value, ...) to `host:port` with the placeholder of
 * every credential listed there replaced by its value: in any header, or only in the one it names;
 * inside HTTP basic auth too (decoded, replaced, encoded again).
 */
export function substituteHeaders(
  raw: readonly string[],
  credentials: readonly LiveCredential[],
  host: string,
  port: number,
): string[] {
  const listed = credentials.filter((c) => isListedFor(c, host, port));
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const here = listed.filter((c) => c.header === undefined || c.header.toLowerCase() === name.toLowerCase());
    let value = replaced(raw[i + 1] as string, here);
    const basic = name.toLowerCase() === 'authorization' ? BASIC.exec(value) : null;
    if (basic) {
      const decoded = Buffer.from(basic[2] as string, 'base64').toString('utf8');
      const swapped = replaced(decoded, here);
      if (swapped !== decoded) value = `${basic[1]}${Buffer.from(swapped, 'utf8').toString('base64')}`;
    }
    out.push(name, value);
  }
  return out;
}

/** `user:password` of a URL's userinfo (percent-decoded, as a client sends it) as an Authorization value. */
export function userinfoAuthorization(userinfo: string): string {
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  const at = userinfo.indexOf(':');
  const user = decode(at < 0 ? userinfo : userinfo.slice(0, at));
  const password = at < 0 ? '' : decode(userinfo.slice(at + 1));
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}
