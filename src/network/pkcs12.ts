// A Java trust store: PKCS#12 (RFC 7292) holding certificates only, each marked trusted for any
// purpose the way keytool marks an imported CA (Oracle's trusted-key-usage attribute, which Java's
// PKCS12KeyStore requires before it counts a certificate as a trust anchor). No key, so nothing to
// encrypt and no integrity MAC: Java loads such a store with any password, and keytool lists it.
// Pure; network/host/trust-files.ts writes it for the sandbox's Java (network/credential-trust.ts).
import { explicit, integer, octets, oid, sequence, set, tlv } from './der.js';

const OID = {
  data: '1.2.840.113549.1.7.1',
  certBag: '1.2.840.113549.1.12.10.1.3',
  x509Certificate: '1.2.840.113549.1.9.22.1',
  friendlyName: '1.2.840.113549.1.9.20',
  /** Oracle's trusted key usage (what `keytool -importcert` sets); its value: anyExtendedKeyUsage. */
  trustedKeyUsage: '2.16.840.1.113894.746875.1.1',
  anyExtendedKeyUsage: '2.5.29.37.0',
} as const;

/** BMPString: UTF-16 big-endian, as PKCS#9 friendlyName is. */
function bmp(text: string): Buffer {
  const le = Buffer.from(text, 'utf16le');
  for (let i = 0; i < le.length; i += 2) [le[i], le[i + 1]] = [le[i + 1] as number, le[i] as number];
  return tlv(0x1e, le);
}

/** ContentInfo of type data around `content`. */
function data(content: Uint8Array): Buffer {
  return sequence(oid(OID.data), explicit(0, octets(content)));
}

function certBag(der: Uint8Array, alias: string): Buffer {
  return sequence(
    oid(OID.certBag),
    explicit(0, sequence(oid(OID.x509Certificate), explicit(0, octets(der)))),
    set(
      sequence(oid(OID.friendlyName), set(bmp(alias))),
      sequence(oid(OID.trustedKeyUsage), set(oid(OID.anyExtendedKeyUsage))),
    ),
  );
}

/** A trust store of `certificates` (DER), each under its alias (unique: Java keys entries by it). */
export function trustStore(certificates: readonly { der: Uint8Array; alias: string }[]): Buffer {
  const safeContents = sequence(...certificates.map((c) => certBag(c.der, c.alias)));
  return sequence(integer(Buffer.from([3])), data(sequence(data(safeContents))));
}
