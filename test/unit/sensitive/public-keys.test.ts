// publicKindOf: only public PEM blocks (certificates, public keys, CRLs) and OpenSSH public keys are
// public; a private key, however it is labelled or wrapped, and anything unparseable, is not (masked).
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PUBLIC_CANDIDATE_NAME, publicKindOf } from '../../../src/sensitive/public-keys.js';
import { REPO_ROOT } from '../../helpers/paths.js';

const CERT = readFileSync(join(REPO_ROOT, 'test/fixtures/keys/cert.pem'), 'utf8');
const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 });
const ed = generateKeyPairSync('ed25519');
const SPKI = rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string;
const PKCS1_PUBLIC = rsa.publicKey.export({ type: 'pkcs1', format: 'pem' }) as string;
const PKCS8 = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const PKCS1_PRIVATE = rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }) as string;
const ENCRYPTED = rsa.privateKey.export({
  type: 'pkcs1',
  format: 'pem',
  cipher: 'aes-128-cbc',
  passphrase: 'x',
}) as string;

/** `ssh-ed25519 BASE64 comment` from the raw public key (RFC 8709 wire format). */
function opensshEd25519(comment = 'user@host'): string {
  const raw = (ed.publicKey.export({ format: 'jwk' }) as { x: string }).x;
  const key = Buffer.from(raw, 'base64url');
  const type = Buffer.from('ssh-ed25519');
  const len = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
  const blob = Buffer.concat([len(type.length), type, len(key.length), key]);
  return `ssh-ed25519 ${blob.toString('base64')} ${comment}\n`;
}

const kind = (text: string) => publicKindOf(Buffer.from(text));
/** A block's body under another label: a private key relabelled as public must not pass. */
const relabel = (pem: string, label: string) => pem.replace(/-----(BEGIN|END) [A-Z ]+-----/g, `-----$1 ${label}-----`);

describe('publicKindOf', () => {
  it('shows certificates, public keys, and a certificate with its public key', () => {
    expect(kind(CERT)).toBe('certificate');
    expect(kind(SPKI)).toBe('public key');
    expect(kind(PKCS1_PUBLIC)).toBe('public key');
    expect(kind(`${CERT}\n${SPKI}`)).toBe('certificate');
    expect(kind(CERT.replace(/\n/g, '\r\n'))).toBe('certificate');
  });

  it('masks every private key, alone or beside a certificate', () => {
    for (const pem of [PKCS8, PKCS1_PRIVATE, ENCRYPTED, `${CERT}${PKCS8}`, `${PKCS8}${CERT}`]) {
      expect(kind(pem)).toBeUndefined();
    }
  });

  it('masks a private key relabelled CERTIFICATE, PUBLIC KEY or RSA PUBLIC KEY (its DER shape is checked)', () => {
    for (const label of ['CERTIFICATE', 'PUBLIC KEY', 'RSA PUBLIC KEY', 'X509 CRL']) {
      expect(kind(relabel(PKCS8, label))).toBeUndefined();
      expect(kind(relabel(PKCS1_PRIVATE, label))).toBeUndefined();
    }
  });

  it('masks what does not parse: text beside the blocks, bad base64, a truncated body, unknown labels, binary, empty', () => {
    expect(kind(`password=hunter2\n${CERT}`)).toBeUndefined();
    expect(kind(`${CERT}# note\n`)).toBeUndefined();
    expect(kind(CERT.replace(/\n[A-Za-z0-9+/]{8}/, '\n!!!!!!!!'))).toBeUndefined();
    const lines = CERT.trim().split('\n');
    expect(kind([...lines.slice(0, 3), lines.at(-1)].join('\n'))).toBeUndefined();
    expect(kind(relabel(CERT, 'OPENSSH PRIVATE KEY'))).toBeUndefined();
    expect(publicKindOf(Buffer.from([0x30, 0x82, 0x01, 0x00]))).toBeUndefined();
    expect(kind('')).toBeUndefined();
    expect(kind('\n\n')).toBeUndefined();
  });

  it('shows OpenSSH public key lines (one or more), masks anything else in a .pub', () => {
    expect(kind(opensshEd25519())).toBe('public key');
    expect(kind(opensshEd25519('a') + opensshEd25519('b'))).toBe('public key');
    expect(kind(opensshEd25519().replace('ssh-ed25519 ', 'ssh-rsa '))).toBeUndefined();
    expect(kind(`${opensshEd25519()}AWS_SECRET=abc\n`)).toBeUndefined();
    expect(kind('ssh-ed25519 AAAA\n')).toBeUndefined();
    expect(
      kind('-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n'),
    ).toBeUndefined();
  });

  it('shows an RFC 4716 public key, with headers', () => {
    const blob = opensshEd25519().split(' ')[1]!;
    const text = `---- BEGIN SSH2 PUBLIC KEY ----\nComment: "a \\\n  b"\n${blob.slice(0, 40)}\n${blob.slice(40)}\n---- END SSH2 PUBLIC KEY ----\n`;
    expect(kind(text)).toBe('public key');
  });

  it('is asked only of key and certificate names', () => {
    for (const name of ['cert.pem', 'server.key', 'ca.crt', 'ca.CER', 'id_rsa.pub'])
      expect(PUBLIC_CANDIDATE_NAME.test(name)).toBe(true);
    for (const name of ['id_rsa', '.env', 'key.p12', 'pem.txt']) expect(PUBLIC_CANDIDATE_NAME.test(name)).toBe(false);
  });
});
