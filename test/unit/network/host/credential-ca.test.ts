// The run's CA and its leaves, read back by Node's own X.509 parser (OpenSSL): what network/x509.ts
// writes is what a client reads. TLS verification with them is in test/integration/network/credential-ca.test.ts.
import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { compileEgressRules } from '../../../../src/network/egress.js';
import { createRunCa, permittedNames } from '../../../../src/network/host/credential-ca.js';

const patterns = compileEgressRules({
  allow: ['api.github.com', '*.example.com', '10.1.2.3'],
  deny: [],
  allowPrivate: [],
}).allow;
const now = new Date('2030-06-01T12:00:00Z');

describe('createRunCa', () => {
  const ca = createRunCa(permittedNames(patterns), now);
  const caCert = new X509Certificate(ca.certPem);

  it('is a CA limited to the credentials’ hosts, valid from an hour back', () => {
    expect(caCert.ca).toBe(true);
    expect(caCert.subject).toBe(caCert.issuer);
    expect(caCert.checkIssued(caCert)).toBe(true);
    expect(caCert.verify(caCert.publicKey)).toBe(true);
    expect(new Date(caCert.validFrom).getTime()).toBe(now.getTime() - 3_600_000);
    expect(caCert.publicKey.asymmetricKeyType).toBe('ec');
  });

  it('mints a leaf for a host, signed by the CA, naming the host (DNS or IP), for server auth', () => {
    const { cert, key } = ca.leafFor('api.github.com');
    const [leafPem, chainPem] = cert.split(/(?<=-----END CERTIFICATE-----\n)/);
    expect(chainPem).toBe(ca.certPem);
    expect(key).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const leaf = new X509Certificate(leafPem!);
    expect(leaf.ca).toBe(false);
    expect(leaf.verify(caCert.publicKey)).toBe(true);
    expect(leaf.checkIssued(caCert)).toBe(true);
    expect(leaf.checkHost('api.github.com')).toBe('api.github.com');
    expect(leaf.checkHost('github.com')).toBeUndefined();
    expect(leaf.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    const ip = new X509Certificate(ca.leafFor('10.1.2.3').cert.split(/(?<=-----END CERTIFICATE-----\n)/)[0]!);
    expect(ip.checkIP('10.1.2.3')).toBe('10.1.2.3');
    expect(ip.subjectAltName).toBe('IP Address:10.1.2.3');
  });

  it('keeps a leaf per host, and one key for all of them', () => {
    const a = ca.leafFor('a.example.com');
    expect(ca.leafFor('a.example.com')).toEqual(a);
    expect(ca.leafFor('b.example.com').key).toBe(a.key);
    expect(ca.leafFor('b.example.com').cert).not.toBe(a.cert);
  });

  it('another run gets another CA', () => {
    const other = createRunCa(permittedNames(patterns), now);
    expect(other.certPem).not.toBe(ca.certPem);
    expect(new X509Certificate(other.certPem).serialNumber).not.toBe(caCert.serialNumber);
  });
});
