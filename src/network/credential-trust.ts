// Where the run's CA shows up inside the sandbox, so that the common clients trust the certificates
// sbx's proxy presents for the hosts a credential names (docs/DESIGN.md "Credentials"). Pure: paths
// and variables. The files are written by network/host/credential-ca.ts into the session directory's
// `ca/` subdirectory; the Policy mounts that directory read-only, and its bundle over the system's.

/** The session directory's subdirectory the CA files are written to. */
export const CA_SESSION_SUBDIR = 'ca';
/** Where it appears inside. */
export const SANDBOX_CA_DIR = '/run/sbx/ca';
/** The run's CA certificate alone (for a client that adds it to its own roots). */
export const CA_CERT_FILE = 'ca.pem';
/** The host's trust (its CA bundle) with the run's CA appended: for clients whose variable replaces their roots. */
export const CA_BUNDLE_FILE = 'bundle.pem';
/** The same certificates as a Java trust store (PKCS#12), for Java's default trust store path. */
export const JAVA_TRUST_STORE_FILE = 'java-cacerts.p12';

/**
 * The system CA bundles OpenSSL, GnuTLS and the distributions' curl, git, Python and Go read by default
 * (Debian/Ubuntu/Alpine/Arch, Fedora/RHEL, openSUSE, older RHEL, RHEL's extracted store, Alpine/BSD).
 * Each that exists on the host is covered inside by the bundle; the first that exists is what it starts from.
 */
export const SYSTEM_BUNDLE_PATHS: readonly string[] = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
  '/etc/ssl/ca-bundle.pem',
  '/etc/pki/tls/cacert.pem',
  '/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem',
  '/etc/ssl/cert.pem',
];

/** Java's default trust store as the distributions install it (Debian's ca-certificates-java, Fedora's p11-kit). */
export const JAVA_TRUST_STORE_PATHS: readonly string[] = [
  '/etc/ssl/certs/java/cacerts',
  '/etc/pki/ca-trust/extracted/java/cacerts',
];

/**
 * The variables the common clients read their trust from. Each but Node's replaces the client's roots,
 * so it names the whole bundle; NODE_EXTRA_CA_CERTS adds to Node's bundled roots, so it names the CA.
 * They override a kept or set variable of the same name: one pointing elsewhere would make the client
 * refuse the proxy's certificate for a credential's host.
 */
export function trustVariables(): Record<string, string> {
  const bundle = `${SANDBOX_CA_DIR}/${CA_BUNDLE_FILE}`;
  return {
    SSL_CERT_FILE: bundle, // OpenSSL (curl, Python's ssl, Ruby), Go, Rust's native-tls and rustls-native-certs
    REQUESTS_CA_BUNDLE: bundle, // Python requests (certifi otherwise)
    CURL_CA_BUNDLE: bundle, // curl, and requests when REQUESTS_CA_BUNDLE is unset
    GIT_SSL_CAINFO: bundle, // git's http.sslCAInfo
    PIP_CERT: bundle, // pip (its vendored certifi otherwise)
    CARGO_HTTP_CAINFO: bundle, // cargo's http.cainfo
    AWS_CA_BUNDLE: bundle, // the AWS CLI and SDKs
    NODE_EXTRA_CA_CERTS: `${SANDBOX_CA_DIR}/${CA_CERT_FILE}`, // Node.js, read once at start
  };
}
