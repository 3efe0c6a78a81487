// A run's certificate authority: made when the proxy starts, held in sbx's memory only, gone with the
// proxy. Its certificate is what the sandbox trusts (network/credential-trust.ts); its key never leaves
// this process, is never written to a file, and can sign only for the hosts the run's credentials name
// (a critical name constraint, network/x509.ts). Leaves are made on first use, one key for all of them.
import { generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { canonicalIp, type HostPattern } from '../egress.js';
import { type CertName, caTbs, certificate, keyIdentifier, leafTbs, pem } from '../x509.js';

export interface RunCa {
  /** The CA certificate (PEM): the sandbox's extra root. */
  readonly certPem: string;
  /** A leaf for `host` (normal form): its certificate with the CA's after it, and the leaves' key (PEM). */
  leafFor(host: string): { cert: string; key: string };
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Certificates start an hour back: a client whose clock lags the host's must not see them as not yet valid. */
const BACKDATE_MS = HOUR_MS;
/** The CA outlives any run that uses it; leaves are re-made when they near their end. */
const CA_VALIDITY_MS = 365 * DAY_MS;
const LEAF_VALIDITY_MS = 30 * DAY_MS;
/** Leaves kept at once: the names come from the clients (`*.example.com` admits many). */
const LEAF_CACHE_LIMIT = 256;

function ecKeyPair(): { privateKey: KeyObject; spki: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { privateKey, spki: publicKey.export({ type: 'spki', format: 'der' }) };
}

/** 127 random bits: positive, unique enough that no client's cache mixes two runs' certificates up. */
function serial(): Buffer {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] as number) & 0x7f;
  return bytes;
}

function certName(host: string): CertName {
  const ip = canonicalIp(host);
  if (ip === undefined) return { dns: host };
  return { ip: ip.includes(':') ? ipv6Bytes(ip) : Buffer.from(ip.split('.').map(Number)) };
}

function ipv6Bytes(ip: string): Buffer {
  const [head, tail] = ip.split('::') as [string, string | undefined];
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  const h = groups(head);
  const t = groups(tail);
  const words = [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return Buffer.from(words.flatMap((w) => [Number.parseInt(w, 16) >> 8, Number.parseInt(w, 16) & 0xff]));
}

/** The names the CA may vouch for: each credential host, a `*.domain` as its domain (subdomains included). */
export function permittedNames(patterns: readonly HostPattern[]): CertName[] {
  const hosts = [...new Set(patterns.map((p) => p.host))];
  return hosts.map(certName);
}

export function createRunCa(permitted: readonly CertName[], now: Date): RunCa {
  const ca = ecKeyPair();
  const caKeyId = keyIdentifier(ca.spki);
  const start = new Date(now.getTime() - BACKDATE_MS);
  const caEnd = new Date(now.getTime() + CA_VALIDITY_MS);
  const caName = `sbx run CA ${serial().toString('hex').slice(0, 8)}`;
  const caTbsDer = caTbs(
    { serial: serial(), issuer: caName, subject: caName, notBefore: start, notAfter: caEnd, spki: ca.spki },
    permitted,
  );
  const certPem = pem('CERTIFICATE', certificate(caTbsDer, sign('sha256', caTbsDer, ca.privateKey)));
  const leafKey = ecKeyPair();
  const leafKeyPem = leafKey.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const leaves = new Map<string, { cert: string; notAfter: number }>();

  const mint = (host: string, at: Date): { cert: string; notAfter: number } => {
    const notAfter = Math.min(caEnd.getTime(), at.getTime() + LEAF_VALIDITY_MS);
    const tbsDer = leafTbs(
      {
        serial: serial(),
        issuer: caName,
        subject: host,
        notBefore: new Date(at.getTime() - BACKDATE_MS),
        notAfter: new Date(notAfter),
        spki: leafKey.spki,
        issuerKeyId: caKeyId,
      },
      [certName(host)],
    );
    const leafPem = pem('CERTIFICATE', certificate(tbsDer, sign('sha256', tbsDer, ca.privateKey)));
    return { cert: leafPem + certPem, notAfter };
  };

  return {
    certPem,
    leafFor(host) {
      const at = new Date();
      const cached = leaves.get(host);
      if (cached && cached.notAfter - at.getTime() > DAY_MS) {
        leaves.delete(host);
        leaves.set(host, cached);
        return { cert: cached.cert, key: leafKeyPem };
      }
      const made = mint(host, at);
      leaves.set(host, made);
      for (const oldest of leaves.keys()) {
        if (leaves.size <= LEAF_CACHE_LIMIT) break;
        leaves.delete(oldest);
      }
      return { cert: made.cert, key: leafKeyPem };
    },
  };
}
