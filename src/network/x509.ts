// The X.509 certificates of a run's CA and of the leaves its proxy presents (RFC 5280), written as DER.
// Pure: the keys, dates, serials and the signature are the caller's (network/host/credential-ca.ts,
// with node:crypto); this file only lays out bytes. It writes, never parses: every certificate a peer
// sends is read by Node's TLS (OpenSSL). docs/DESIGN.md "Credentials" says why not a library.
import { createHash } from 'node:crypto';
import { bitString, explicit, integer, octets, oid, sequence, set, time, tlv, TRUE, utf8 } from './der.js';

// ---- certificates ----------------------------------------------------------------------------------

const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  nameConstraints: '2.5.29.30',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

/** The signature algorithm of every certificate here: ECDSA over P-256 with SHA-256 (RFC 5758 §3.2: no parameters). */
const ECDSA_SHA256 = sequence(oid(OID.ecdsaWithSha256));

function name(commonName: string): Buffer {
  return sequence(
    set(sequence(oid(OID.organization), utf8('sbx'))),
    set(sequence(oid(OID.commonName), utf8(commonName))),
  );
}

function extension(id: string, critical: boolean, value: Uint8Array): Buffer {
  return sequence(oid(id), ...(critical ? [TRUE] : []), octets(value));
}

/** A key's identifier: SHA-1 of its SubjectPublicKeyInfo (RFC 5280 §4.2.1.2 takes any method that gives unique values). */
export function keyIdentifier(spki: Uint8Array): Buffer {
  return createHash('sha1').update(spki).digest();
}

/** A destination a leaf is for, or a CA may vouch for: a DNS name or an IP address (network/egress.ts normal form). */
export type CertName = { dns: string } | { ip: Uint8Array };

function generalName(n: CertName, constraint: boolean): Buffer {
  if ('dns' in n) return tlv(0x82, Buffer.from(n.dns, 'ascii'));
  // In a name constraint an address comes with its mask (RFC 5280 §4.2.1.10): exactly this one.
  return tlv(0x87, constraint ? Buffer.concat([n.ip, Buffer.alloc(n.ip.length, 0xff)]) : Buffer.from(n.ip));
}

/** What a TBSCertificate is made of; `spki` is the subject's public key as DER SubjectPublicKeyInfo. */
export interface CertificateFields {
  serial: Uint8Array;
  issuer: string;
  subject: string;
  notBefore: Date;
  notAfter: Date;
  spki: Uint8Array;
  /** The issuer's key identifier (a leaf's authority key identifier). */
  issuerKeyId?: Uint8Array;
}

function tbs(fields: CertificateFields, extensions: Buffer[]): Buffer {
  return sequence(
    explicit(0, integer(Buffer.from([2]))), // v3
    integer(fields.serial),
    ECDSA_SHA256,
    name(fields.issuer),
    sequence(time(fields.notBefore), time(fields.notAfter)),
    name(fields.subject),
    Buffer.from(fields.spki),
    explicit(3, sequence(...extensions)),
  );
}

/**
 * A CA's TBSCertificate: it signs leaves only (path length 0), and only for `permitted` (a critical
 * name constraint), so that even its key could vouch for no other host.
 */
export function caTbs(fields: CertificateFields, permitted: readonly CertName[]): Buffer {
  const keyId = keyIdentifier(fields.spki);
  return tbs(fields, [
    extension(OID.basicConstraints, true, sequence(TRUE, integer(Buffer.from([0])))),
    extension(OID.keyUsage, true, bitString(Buffer.from([0x06]), 1)), // keyCertSign, cRLSign
    extension(OID.subjectKeyIdentifier, false, octets(keyId)),
    extension(
      OID.nameConstraints,
      true,
      sequence(explicit(0, Buffer.concat(permitted.map((n) => sequence(generalName(n, true)))))),
    ),
  ]);
}

/** A server leaf's TBSCertificate for `names` (subjectAltName; the subject's CN repeats the first). */
export function leafTbs(fields: CertificateFields, names: readonly CertName[]): Buffer {
  const ext = [
    extension(OID.basicConstraints, true, sequence()),
    extension(OID.keyUsage, true, bitString(Buffer.from([0x80]), 7)), // digitalSignature
    extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))),
    extension(OID.subjectAltName, false, sequence(...names.map((n) => generalName(n, false)))),
    extension(OID.subjectKeyIdentifier, false, octets(keyIdentifier(fields.spki))),
  ];
  // Python 3.13's strict verification refuses a leaf without it (RFC 5280 §4.2.1.1: MUST).
  if (fields.issuerKeyId)
    ext.push(extension(OID.authorityKeyIdentifier, false, sequence(tlv(0x80, fields.issuerKeyId))));
  return tbs(fields, ext);
}

/** The certificate: the TBSCertificate, the algorithm, the issuer's DER ECDSA signature over it. */
export function certificate(tbsDer: Uint8Array, signature: Uint8Array): Buffer {
  return sequence(Buffer.from(tbsDer), ECDSA_SHA256, bitString(signature));
}

/** DER as PEM (RFC 7468), 64 characters a line. */
export function pem(label: string, der: Uint8Array): string {
  const lines =
    Buffer.from(der)
      .toString('base64')
      .match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}
