// Whether a file named like a key (*.pem, *.crt, *.key, *.pub) holds only public material: PEM blocks
// of certificates, public keys and CRLs, or OpenSSH public keys. Those are published by design (a
// server's certificate, an authorized_keys line), so the sensitive-file scan shows them instead of
// masking them (ssh2's suite failed on its masked https_cert.pem). Anything else — a
// PRIVATE KEY block, an encrypted block with headers, text outside the blocks, a label this does not
// know, a body whose DER shape is not the one its label claims, or a file larger than the read bound
// — is "not public", and stays masked (fail closed). Pure: the runtime reads the bytes
// (sensitive/host/public-key-files.ts).

/** Basenames whose content may be checked: the key and certificate names of sensitive/sensitive-globs.ts, and *.pub. */
export const PUBLIC_CANDIDATE_NAME = /\.(?:pem|crt|cer|key|pub)$/i;

/** Read at most this much of a candidate; a larger file stays masked. A certificate chain of three is about 6 KiB. */
export const PUBLIC_CANDIDATE_MAX_BYTES = 8 * 1024;

export type PublicKind = 'certificate' | 'public key';

/**
 * The children a label's DER must have (top-level SEQUENCE, then the tags of its elements): a
 * private key relabelled CERTIFICATE starts with INTEGER, and an RSAPrivateKey has nine integers,
 * not the two of RSAPublicKey, so neither passes.
 */
const PEM_SHAPES: Record<string, { kind: PublicKind; children: readonly number[] }> = {
  CERTIFICATE: { kind: 'certificate', children: [0x30, 0x30, 0x03] },
  'X509 CRL': { kind: 'certificate', children: [0x30, 0x30, 0x03] },
  'PUBLIC KEY': { kind: 'public key', children: [0x30, 0x03] },
  'EC PUBLIC KEY': { kind: 'public key', children: [0x30, 0x03] },
  'RSA PUBLIC KEY': { kind: 'public key', children: [0x02, 0x02] },
};

const SSH_KEY_TYPES = new Set([
  'ssh-rsa',
  'ssh-dss',
  'ssh-ed25519',
  'ssh-ed448',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
]);

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

function decodeBase64(text: string): Uint8Array | undefined {
  if (text.length === 0 || text.length % 4 !== 0 || !BASE64.test(text)) return undefined;
  return Buffer.from(text, 'base64');
}

/** One DER element at `at`: its tag and where its content starts and ends; undefined when malformed. */
function derElement(der: Uint8Array, at: number): { tag: number; start: number; end: number } | undefined {
  const tag = der[at];
  let lengthByte = der[at + 1];
  // High-tag-number forms never occur in these structures.
  if (tag === undefined || lengthByte === undefined || (tag & 0x1f) === 0x1f) return undefined;
  let start = at + 2;
  let length = lengthByte;
  if (lengthByte & 0x80) {
    const count = lengthByte & 0x7f;
    if (count === 0 || count > 3) return undefined;
    length = 0;
    for (let i = 0; i < count; i++) {
      lengthByte = der[start + i];
      if (lengthByte === undefined) return undefined;
      length = length * 256 + lengthByte;
    }
    start += count;
  }
  const end = start + length;
  return end <= der.length ? { tag, start, end } : undefined;
}

/** The DER is one SEQUENCE spanning all of it, whose elements have exactly these tags. */
function hasShape(der: Uint8Array, children: readonly number[]): boolean {
  const outer = derElement(der, 0);
  if (outer?.tag !== 0x30 || outer.end !== der.length) return false;
  const tags: number[] = [];
  for (let at = outer.start; at < outer.end; ) {
    const el = derElement(der, at);
    if (!el || el.end > outer.end) return false;
    tags.push(el.tag);
    at = el.end;
  }
  return tags.length === children.length && tags.every((t, i) => t === children[i]);
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([A-Za-z0-9+/=\r\n]*?)-----END \1-----/g;

/** Only public PEM blocks and whitespace between them; a header line (Proc-Type: encrypted) fails the body. */
function pemKind(text: string): PublicKind | undefined {
  let kind: PublicKind | undefined;
  let last = 0;
  for (const m of text.matchAll(PEM_BLOCK)) {
    if (text.slice(last, m.index).trim() !== '') return undefined;
    last = m.index + m[0].length;
    const shape = PEM_SHAPES[m[1]!];
    const der = shape && decodeBase64(m[2]!.replace(/\r?\n/g, ''));
    if (!shape || !der || !hasShape(der, shape.children)) return undefined;
    // A file with a certificate and its public key is reported as a certificate.
    kind = kind === 'certificate' ? kind : shape.kind;
  }
  return kind !== undefined && text.slice(last).trim() === '' ? kind : undefined;
}

/** An SSH wire-format key blob that starts with its own type name (RFC 4253 §6.6). */
function isSshBlob(blob: Uint8Array, type: string): boolean {
  if (blob.length < 4 + type.length) return false;
  const length = ((blob[0]! << 24) | (blob[1]! << 16) | (blob[2]! << 8) | blob[3]!) >>> 0;
  if (length !== type.length) return false;
  for (let i = 0; i < length; i++) if (blob[4 + i] !== type.charCodeAt(i)) return false;
  return true;
}

function isSshType(type: string): boolean {
  return SSH_KEY_TYPES.has(type) || SSH_KEY_TYPES.has(type.replace(/-cert-v01@openssh\.com$/, ''));
}

/** OpenSSH's one-line form (`ssh-ed25519 AAAA... comment`), one key per line. */
function opensshKind(text: string): PublicKind | undefined {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  if (lines.length === 0) return undefined;
  for (const line of lines) {
    const m = /^([a-z0-9@.-]+) ([A-Za-z0-9+/]+={0,2})(?: [^\x00-\x1f\x7f]*)?\r?$/.exec(line);
    const blob = m && isSshType(m[1]!) ? decodeBase64(m[2]!) : undefined;
    if (!blob || !isSshBlob(blob, m![1]!)) return undefined;
  }
  return 'public key';
}

/** RFC 4716's form: `---- BEGIN SSH2 PUBLIC KEY ----`, optional `Tag: value` headers, the base64 blob. */
function rfc4716Kind(text: string): PublicKind | undefined {
  const lines = text.trim().split(/\r?\n/);
  if (lines[0] !== '---- BEGIN SSH2 PUBLIC KEY ----' || lines.at(-1) !== '---- END SSH2 PUBLIC KEY ----')
    return undefined;
  let body = '';
  let continued = false;
  for (const line of lines.slice(1, -1)) {
    if (continued || (body === '' && /^[A-Za-z0-9-]{1,64}: /.test(line))) {
      continued = line.endsWith('\\');
      continue;
    }
    body += line.trim();
  }
  const blob = decodeBase64(body);
  if (!blob || blob.length < 4) return undefined;
  const length = ((blob[0]! << 24) | (blob[1]! << 16) | (blob[2]! << 8) | blob[3]!) >>> 0;
  const type = Buffer.from(blob.subarray(4, 4 + Math.min(length, 64))).toString('latin1');
  return isSshType(type) && isSshBlob(blob, type) ? 'public key' : undefined;
}

/**
 * What a key-named file holds, when it is only public material; undefined otherwise (masked).
 * `bytes` is the whole file (the caller refuses a file larger than PUBLIC_CANDIDATE_MAX_BYTES).
 */
export function publicKindOf(bytes: Uint8Array): PublicKind | undefined {
  // Text formats only: a NUL or invalid UTF-8 is DER, PKCS#12 or a binary key.
  const text = Buffer.from(bytes).toString('latin1');
  if (/[^\t\n\r\x20-\x7e]/.test(text)) return undefined;
  if (text.includes('-----BEGIN ')) return pemKind(text);
  if (text.startsWith('---- BEGIN SSH2')) return rfc4716Kind(text);
  return opensshKind(text);
}
