// The `credentials` key in the Policy (policy/derive/credentials.ts, network/credentials.ts): compiled
// against the run's allow-list, refused where the proxy cannot put the value in, the CA shown inside
// (its directory, the system bundle covered), the trust variables set, the variable left to the runtime.
import { describe, expect, it } from 'vitest';
import { compileCredentials, isIntercepted } from '../../../../src/network/credentials.js';
import { compileEgressRules } from '../../../../src/network/egress.js';
import type { Host } from '../../../../src/policy/host.js';
import type { Profile } from '../../../../src/profile/schema.js';
import { sbxErrorOf } from '../../../helpers/errors.js';
import { deriveOnFixture } from '../../../helpers/hosts.js';

const BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
const withBundle = (h: Host) => {
  h.paths[BUNDLE] = { exists: true, real: BUNDLE, type: 'file', uid: 0 };
  h.bridge = { node: '/usr/bin/node', script: '/opt/sbx/dist/bridge.cjs' };
};
const gh: Profile = {
  network: { allow: ['api.github.com', '*.example.com'] },
  credentials: {
    GITHUB_TOKEN: { from: { env: 'GITHUB_TOKEN' }, hosts: ['api.github.com'] },
    API_KEY: { from: { file: '~/.config/keys/api' }, hosts: ['*.example.com:443'], header: 'X-Api-Key' },
  },
};

describe('derivePolicy: credentials', () => {
  it('compiles each credential, its source resolved (~ expanded), into policy.credentials', () => {
    const policy = deriveOnFixture(gh, { host: withBundle });
    expect(policy.credentials).toEqual({
      rules: [
        {
          name: 'GITHUB_TOKEN',
          from: { env: 'GITHUB_TOKEN' },
          hosts: [{ text: 'api.github.com', kind: 'exact', host: 'api.github.com' }],
        },
        {
          name: 'API_KEY',
          from: { file: '/home/alice/.config/keys/api' },
          hosts: [{ text: '*.example.com:443', kind: 'suffix', host: 'example.com', port: 443 }],
          header: 'X-Api-Key',
        },
      ],
      extraCaCerts: [],
      systemBundle: BUNDLE,
    });
  });

  it("shows the CA read-only at /run/sbx/ca and over the system bundle; the variables point at them; the credential's own variable is the runtime's", () => {
    const policy = deriveOnFixture(
      { ...gh, env: { set: { GITHUB_TOKEN: 'from-the-profile', SSL_CERT_FILE: '/x' } } },
      { host: withBundle },
    );
    expect(policy.mounts.filter((m) => m.role === 'trust')).toEqual([
      { kind: 'session-dir', target: '/run/sbx/ca', subdir: 'ca', reason: expect.any(String), role: 'trust' },
      { kind: 'session-dir', target: BUNDLE, subdir: 'ca/bundle.pem', reason: expect.any(String), role: 'trust' },
    ]);
    expect(policy.env.vars).toMatchObject({
      SSL_CERT_FILE: '/run/sbx/ca/bundle.pem',
      REQUESTS_CA_BUNDLE: '/run/sbx/ca/bundle.pem',
      CURL_CA_BUNDLE: '/run/sbx/ca/bundle.pem',
      GIT_SSL_CAINFO: '/run/sbx/ca/bundle.pem',
      PIP_CERT: '/run/sbx/ca/bundle.pem',
      CARGO_HTTP_CAINFO: '/run/sbx/ca/bundle.pem',
      AWS_CA_BUNDLE: '/run/sbx/ca/bundle.pem',
      NODE_EXTRA_CA_CERTS: '/run/sbx/ca/ca.pem',
    });
    expect(policy.env.vars.GITHUB_TOKEN).toBeUndefined();
    // The bundle mount comes after /etc's, so it lands over the file rather than under a later bind.
    const at = (target: string) => policy.mounts.findIndex((m) => m.target === target);
    expect(at(BUNDLE)).toBeGreaterThan(at('/etc'));
  });

  it("covers Java's trust store where the host has one", () => {
    const java = '/etc/ssl/certs/java/cacerts';
    const policy = deriveOnFixture(gh, {
      host: (h) => {
        withBundle(h);
        h.paths[java] = { exists: true, real: java, type: 'file', uid: 0 };
      },
    });
    expect(policy.credentials?.javaTrustStore).toBe(true);
    expect(policy.mounts).toContainEqual(
      expect.objectContaining({ kind: 'session-dir', target: java, subdir: 'ca/java-cacerts.p12', role: 'trust' }),
    );
    expect(deriveOnFixture(gh, { host: withBundle }).credentials?.javaTrustStore).toBeUndefined();
  });

  it("the caller's credentials join the profile's, replacing one of the same name", () => {
    const policy = deriveOnFixture(gh, {
      host: withBundle,
      request: {
        credentials: { GITHUB_TOKEN: { from: { command: ['gh', 'auth', 'token'] }, hosts: ['*.example.com'] } },
      },
    });
    expect(policy.credentials?.rules.map((r) => [r.name, r.from, r.hosts.map((h) => h.text)])).toEqual([
      ['GITHUB_TOKEN', { command: ['gh', 'auth', 'token'] }, ['*.example.com']],
      ['API_KEY', { file: '/home/alice/.config/keys/api' }, ['*.example.com:443']],
    ]);
  });

  it('control: no credentials, no trust mounts or variables, and no policy.credentials (the built-ins hash as before)', () => {
    const policy = deriveOnFixture({ network: { allow: ['api.github.com'] } }, { host: withBundle });
    expect(policy.credentials).toBeUndefined();
    expect(policy.mounts.some((m) => m.role === 'trust')).toBe(false);
    expect(policy.env.vars.SSL_CERT_FILE).toBeUndefined();
  });

  it.each([
    ['no network', { network: 'none' }, undefined, /need an allow-list network, and this run's network is none/],
    ['the host network', { network: 'host' }, undefined, /this run's network is host/],
    ['--network host over an allow-list', {}, { network: 'host' as const }, /this run's network is host/],
  ])('refuses credentials with %s', (_what, profile, request, message) => {
    const e = sbxErrorOf(() =>
      deriveOnFixture({ ...gh, ...(profile as Profile) }, { host: withBundle, ...(request ? { request } : {}) }),
    );
    expect(e.code).toBe('PROFILE_INVALID');
    expect(e.message).toMatch(message);
  });

  it('refuses a host not in network.allow, "*", a secret of the same name, and extra_ca_certs without credentials', () => {
    const off = sbxErrorOf(() =>
      deriveOnFixture(
        { network: { allow: ['example.org'] }, credentials: { T: { from: { env: 'T' }, hosts: ['api.github.com'] } } },
        { host: withBundle },
      ),
    );
    expect(off.message).toBe(
      'credentials.T.hosts[0]: api.github.com is not reachable: api.github.com:443 is not in network.allow',
    );
    const star = sbxErrorOf(() =>
      deriveOnFixture(
        { network: { allow: ['*'] }, credentials: { T: { from: { env: 'T' }, hosts: ['*'] } } },
        { host: withBundle },
      ),
    );
    expect(star.message).toBe('credentials.T.hosts[0]: "*" would send T to every host');
    const both = sbxErrorOf(() =>
      deriveOnFixture({ ...gh, secrets: [{ name: 'GITHUB_TOKEN' }] }, { host: withBundle }),
    );
    expect(both.message).toBe('credentials.GITHUB_TOKEN: GITHUB_TOKEN is also a secret: the variable would hold both');
    const ca = sbxErrorOf(() =>
      deriveOnFixture({ network: { allow: ['a.example'], extra_ca_certs: ['/etc/ca.pem'] } }, { host: withBundle }),
    );
    expect(ca.source).toEqual({ key: 'network.extra_ca_certs' });
  });
});

describe('compileCredentials and isIntercepted', () => {
  const rules = compileEgressRules({
    allow: ['*.example.com', 'api.github.com:443'],
    deny: ['bad.example.com'],
    allowPrivate: [],
  });

  it('a suffix pattern is checked by a name it covers; a denied host is refused', () => {
    expect(compileCredentials({ T: { from: { env: 'T' }, hosts: ['*.example.com'] } }, rules)[0]?.hosts[0]?.kind).toBe(
      'suffix',
    );
    expect(
      sbxErrorOf(() => compileCredentials({ T: { from: { env: 'T' }, hosts: ['bad.example.com'] } }, rules)).message,
    ).toMatch(/matches network\.deny/);
    expect(
      sbxErrorOf(() => compileCredentials({ T: { from: { env: 'T' }, hosts: ['api.github.com:8443'] } }, rules)).code,
    ).toBe('PROFILE_INVALID');
  });

  it('a source merged into two is refused by name', () => {
    const e = sbxErrorOf(() =>
      compileCredentials({ T: { from: { env: 'T', file: '/x' } as never, hosts: ['a.example.com'] } }, rules),
    );
    expect(e.message).toBe('credentials.T.from: give exactly one of env, file or command');
  });

  it('intercepts exactly the hosts (and ports) some credential names', () => {
    const compiled = compileCredentials(
      { A: { from: { env: 'A' }, hosts: ['*.example.com'] }, B: { from: { env: 'B' }, hosts: ['api.github.com:443'] } },
      rules,
    );
    expect(isIntercepted(compiled, 'x.example.com', 443)).toBe(true);
    expect(isIntercepted(compiled, 'example.com', 443)).toBe(false);
    expect(isIntercepted(compiled, 'api.github.com', 443)).toBe(true);
    expect(isIntercepted(compiled, 'api.github.com', 22)).toBe(false);
  });
});
