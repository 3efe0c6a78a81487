// A DER writer (X.690 §8, §10): the few types the run CA's certificates (x509.ts) and the Java trust
// store (pkcs12.ts) are made of. Pure; writes only, with definite lengths, as DER requires.

export function tlv(tag: number, content: Uint8Array): Buffer {
  const n = content.length;
  let length: number[];
  if (n < 0x80) length = [n];
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    length = [0x80 | bytes.length, ...bytes];
  }
  return Buffer.concat([Buffer.from([tag, ...length]), content]);
}

export const sequence = (...items: Uint8Array[]) => tlv(0x30, Buffer.concat(items));
export const set = (...items: Uint8Array[]) => tlv(0x31, Buffer.concat(items));
export const explicit = (n: number, content: Uint8Array) => tlv(0xa0 + n, content);
export const octets = (bytes: Uint8Array) => tlv(0x04, bytes);
export const utf8 = (text: string) => tlv(0x0c, Buffer.from(text, 'utf8'));
export const TRUE = tlv(0x01, Buffer.from([0xff]));

/** A non-negative INTEGER from big-endian bytes: minimal, with a 0x00 first when the top bit is set. */
export function integer(bytes: Uint8Array): Buffer {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  const trimmed = Buffer.from(bytes.subarray(i));
  return tlv(0x02, (trimmed[0] as number) & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

/** A BIT STRING of whole bytes, or of `bits` leading bits of one byte (key usage). */
export function bitString(bytes: Uint8Array, unusedBits = 0): Buffer {
  return tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), bytes]));
}

export function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const out = [40 * a + b];
  for (const arc of rest) {
    const groups: number[] = [];
    for (let v = arc; ; v = Math.floor(v / 128)) {
      groups.unshift((v % 128) | (groups.length > 0 ? 0x80 : 0));
      if (v < 128) break;
    }
    out.push(...groups);
  }
  return tlv(0x06, Buffer.from(out));
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/** UTCTime before 2050, GeneralizedTime from then on (RFC 5280 §4.1.2.5). */
export function time(d: Date): Buffer {
  const rest = `${pad2(d.getUTCMonth() + 1)}${pad2(d.getUTCDate())}${pad2(d.getUTCHours())}${pad2(d.getUTCMinutes())}${pad2(d.getUTCSeconds())}Z`;
  const year = d.getUTCFullYear();
  return year < 2050 ? tlv(0x17, Buffer.from(`${pad2(year % 100)}${rest}`)) : tlv(0x18, Buffer.from(`${year}${rest}`));
}
