// The certificates around a run's credentials: the roots its proxy verifies upstreams with (the host's
// CA bundle and network.extra_ca_certs, read before anything starts), and the files the sandbox trusts
// the run's CA through (written into the session directory, network/credential-trust.ts says where).
import { X509Certificate } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { isSbxError, SbxError } from '../../errors.js';
import { readGuarded } from '../../host/guarded-read.js';
import { isWithin } from '../../path-within.js';
import type { Policy } from '../../policy/types.js';
import { CA_BUNDLE_FILE, CA_CERT_FILE, CA_SESSION_SUBDIR, JAVA_TRUST_STORE_FILE } from '../credential-trust.js';
import { trustStore } from '../pkcs12.js';
import type { CredentialPolicy } from '../credentials.js';

/** A CA bundle is a few hundred KiB (Mozilla's ~150 roots); more is not one. */
const MAX_BUNDLE_BYTES = 8 * 1024 * 1024;

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** PEM text's certificate blocks; anything else in the file (a key, comments) left out. */
function pemCertificates(text: string): string[] {
  return text.match(PEM_CERTIFICATE) ?? [];
}

/** The blocks Node parses as certificates: a file of the user's is checked; the system's bundle is OpenSSL's to read. */
function certificatesOf(text: string): string[] {
  return pemCertificates(text).filter((block) => {
    try {
      new X509Certificate(block);
      return true;
    } catch {
      return false;
    }
  });
}

/** A PEM block's DER, decoded rather than parsed (a hundred and fifty roots parsed would cost every run ~15 ms). */
function derOf(pem: string): Buffer {
  return Buffer.from(pem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s/g, ''), 'base64');
}

export interface TrustMaterial {
  /** The host's roots (its CA bundle, else Node's bundled ones), PEM. */
  roots: string;
  /** network.extra_ca_certs' certificates, PEM each. */
  extra: string[];
}

/**
 * Reads the roots. A private CA decides whom the proxy hands the user's credentials to: its file must
 * be the user's (or root's), writable by nobody else, and outside every tree the sandbox can write.
 */
export function readTrustMaterial(credentials: CredentialPolicy, policy: Policy, uid: number): TrustMaterial {
  const roots = credentials.systemBundle
    ? pemCertificates(readBundle(credentials.systemBundle)).join('\n')
    : rootCertificates.join('\n');
  const writable = policy.mounts.flatMap((m) => (m.kind === 'bind' && m.access === 'rw' ? [m.source] : []));
  const extra = credentials.extraCaCerts.flatMap((file, i) => {
    const key = `network.extra_ca_certs[${i}]`;
    let text: { real: string; text: string };
    try {
      text = readGuarded(file, { what: 'CA certificate file', maxBytes: MAX_BUNDLE_BYTES, checkOwner: true, uid });
    } catch (e) {
      if (!isSbxError(e)) throw e;
      throw new SbxError('SANDBOX_SETUP', `${key}: ${e.message}`, { hint: e.hint ?? 'fix the path', source: { key } });
    }
    if (writable.some((t) => isWithin(text.real, t)))
      throw new SbxError('SANDBOX_SETUP', `${key}: ${file} lies in a tree the sandbox can write`, {
        hint: 'keep the CA file outside the workspace and writable roots: the command could make the proxy trust its own CA',
        source: { key },
      });
    const certs = certificatesOf(text.text);
    if (certs.length === 0)
      throw new SbxError('SANDBOX_SETUP', `${key}: ${file} holds no PEM certificate`, {
        hint: 'name a file of -----BEGIN CERTIFICATE----- blocks (openssl x509 -outform PEM)',
        source: { key },
      });
    return certs;
  });
  return { roots, extra };
}

function readBundle(path: string): string {
  try {
    const text = readFileSync(path, 'utf8');
    if (text.length > MAX_BUNDLE_BYTES) throw new Error('too large');
    return text;
  } catch (cause) {
    throw new SbxError('SANDBOX_SETUP', `cannot read the system CA bundle ${path}: ${(cause as Error).message}`, {
      cause,
      hint: 'check the file (update-ca-certificates rebuilds it)',
    });
  }
}

/** The DER of each PEM certificate, each under an alias of its own, the run's CA first. */
function javaEntries(caPem: string, roots: string): { der: Uint8Array; alias: string }[] {
  const certificates = pemCertificates(roots).map((pem, i) => ({ der: derOf(pem), alias: `root-${i}` }));
  return [{ der: derOf(caPem), alias: 'sbx-run-ca' }, ...certificates];
}

/**
 * The session directory's `ca/`: the run's CA alone, the host's roots with it appended (what the trust
 * variables and the system bundle paths inside name), and with `java`, the same as a Java trust store.
 * Readable inside, never writable (the session directory is mounted read-only).
 */
export function writeTrustFiles(sessionDir: string, caPem: string, roots: string, java: boolean): void {
  const dir = join(sessionDir, CA_SESSION_SUBDIR);
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  const files: [string, string | Uint8Array][] = [
    [CA_CERT_FILE, caPem],
    [CA_BUNDLE_FILE, `${roots.trimEnd()}\n${caPem}`],
    ...(java ? [[JAVA_TRUST_STORE_FILE, trustStore(javaEntries(caPem, roots))] as [string, Uint8Array]] : []),
  ];
  for (const [name, content] of files) {
    writeFileSync(join(dir, name), content, { mode: 0o444, flag: 'wx' });
    chmodSync(join(dir, name), 0o444);
  }
}
