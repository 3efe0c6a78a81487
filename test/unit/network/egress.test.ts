import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SbxError } from '../../../src/errors.js';
import {
  canonicalIp,
  classifyAddress,
  compileEgressRules,
  decideAddress,
  decideHost,
  normaliseHost,
  type AddressClass,
} from '../../../src/network/egress.js';

describe('classifyAddress', () => {
  const table: [string, AddressClass][] = [
    // IPv4
    ['8.8.8.8', 'public'],
    ['1.1.1.1', 'public'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'reserved'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['11.0.0.0', 'public'],
    ['100.63.255.255', 'public'],
    ['100.64.0.0', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['100.128.0.0', 'public'],
    ['100.100.100.200', 'metadata'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['169.254.1.1', 'link-local'],
    ['168.63.129.16', 'metadata'],
    ['172.15.255.255', 'public'],
    ['172.16.0.0', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.0', 'public'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['192.88.99.1', 'reserved'],
    ['192.168.1.1', 'private'],
    ['192.169.0.0', 'public'],
    ['198.17.255.255', 'public'],
    ['198.18.0.0', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.20.0.0', 'public'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['223.255.255.255', 'public'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.255', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.254', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    // IPv6
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::2', 'reserved'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:8.8.8.8', 'public'],
    ['::ffff:a00:1', 'private'], // the same mapped address in hex
    ['64:ff9b::a9fe:a9fe', 'metadata'], // NAT64 of 169.254.169.254
    ['64:ff9b::8.8.8.8', 'public'],
    ['64:ff9b:1::1', 'private'],
    ['100::1', 'reserved'],
    ['2001:db8::1', 'documentation'],
    ['2001::1', 'reserved'], // Teredo
    ['2001:4860:4860::8888', 'public'],
    ['2002:7f00:1::', 'loopback'], // 6to4 of 127.0.0.1
    ['2002:808:808::1', 'public'],
    ['3fff::1', 'documentation'],
    ['2606:4700::1111', 'public'],
    ['fc00::1', 'unique-local'],
    ['fdff:ffff::1', 'unique-local'],
    ['fd00:ec2::254', 'metadata'],
    ['fd00:ec2::253', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['4000::1', 'reserved'],
    ['1fff:ffff::1', 'reserved'],
    ['FE80::1', 'link-local'],
    // not canonical IP literals
    ['127.1', 'invalid'],
    ['0x7f.0.0.1', 'invalid'],
    ['2130706433', 'invalid'],
    ['010.0.0.1', 'invalid'],
    ['1.2.3.256', 'invalid'],
    ['[::1]', 'invalid'],
    ['fe80::1%eth0', 'invalid'],
    ['1:2:3:4:5:6:7:8:9', 'invalid'],
    ['1::2::3', 'invalid'],
    ['::ffff:1.2.3', 'invalid'],
    ['', 'invalid'],
    ['example.com', 'invalid'],
  ];
  it.each(table)('%s is %s', (ip, cls) => {
    expect(classifyAddress(ip)).toBe(cls);
  });
});

describe('canonicalIp', () => {
  it.each([
    ['::FFFF:127.0.0.1', '::ffff:127.0.0.1'],
    ['::ffff:7f00:1', '::ffff:127.0.0.1'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'], // first of two equal runs
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'], // a single zero group is not compressed
    ['0:0:0:0:0:0:0:0', '::'],
    ['1.2.3.4', '1.2.3.4'],
  ])('%s → %s', (input, out) => {
    expect(canonicalIp(input)).toBe(out);
  });
});

describe('normaliseHost', () => {
  it.each([
    ['Example.COM', 'example.com'],
    ['example.com.', 'example.com'],
    ['localhost.', 'localhost'],
    ['bücher.example', 'xn--bcher-kva.example'],
    ['XN--BCHER-KVA.example', 'xn--bcher-kva.example'],
    ['[::1]', '::1'],
    ['[0:0::1]', '::1'],
    ['127.1', '127.1'], // a name, not 127.0.0.1
    ['0x7f.0.0.1', '0x7f.0.0.1'],
    ['_dmarc.example.com', '_dmarc.example.com'],
  ])('%s → %s', (input, out) => {
    expect(normaliseHost(input)).toBe(out);
  });
  it.each([
    '',
    '.',
    'a..b',
    'example.com..',
    'ex ample.com',
    'exa%41mple.com',
    'a/b',
    'user@host',
    '[1.2.3.4]',
    '[nope]',
    'xn--zz.com',
    '-a.com',
    'a-.com',
    `${'a'.repeat(64)}.com`,
    '１２７.０.０.１',
    'é%41.com',
  ])('%j is not a host', (input) => {
    expect(normaliseHost(input)).toBeUndefined();
  });
});

describe('compileEgressRules', () => {
  it('compiles names, wildcards, ports and IP literals', () => {
    const rules = compileEgressRules({
      allow: ['Registry.npmjs.org', '*.github.com', 'example.com:8443', '[2001:DB8::1]:443', '*'],
      deny: [],
      allowPrivate: ['127.0.0.1:5432', '10.0.0.5', '[fd00::5]:80', '::ffff:10.0.0.9'],
    });
    expect(rules.allow.map((p) => [p.kind, p.host, p.port])).toEqual([
      ['exact', 'registry.npmjs.org', undefined],
      ['suffix', 'github.com', undefined],
      ['exact', 'example.com', 8443],
      ['exact', '2001:db8::1', 443],
      ['any', '', undefined],
    ]);
    expect(rules.allowPrivate.map((e) => [e.ip, e.port])).toEqual([
      ['127.0.0.1', 5432],
      ['10.0.0.5', undefined],
      ['fd00::5', 80],
      ['10.0.0.9', undefined],
    ]);
  });
  it.each([
    ['allow', 'exa mple.com'],
    ['allow', 'example.com:0'],
    ['allow', 'example.com:65536'],
    ['allow', 'example.com:http'],
    ['allow', 'a.*.com'],
    ['allow', '*example.com'],
    ['allow', '*.1.2.3.4'],
    ['allow', '127.1'],
    ['deny', 'http://example.com'],
    ['deny', ''],
    ['allowPrivate', 'db.internal:5432'],
    ['allowPrivate', '10.0.0.0/8'],
    ['allowPrivate', '[::1]:x'],
  ] as const)('refuses %s %j with PROFILE_INVALID and a hint', (key, entry) => {
    const input = { allow: [] as string[], deny: [] as string[], allowPrivate: [] as string[] };
    input[key].push(entry);
    let error: unknown;
    try {
      compileEgressRules(input);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SbxError);
    expect((error as SbxError).code).toBe('PROFILE_INVALID');
    expect((error as SbxError).hint).toBeTruthy();
  });
});

describe('decideHost', () => {
  const rules = compileEgressRules({
    allow: ['registry.npmjs.org', '*.github.com', 'example.com:8443', 'bücher.example', '203.0.113.5', '[2001:db8::1]'],
    deny: ['evil.github.com', '*.deny.github.com'],
    allowPrivate: [],
  });
  it.each([
    ['registry.npmjs.org', 443, true],
    ['REGISTRY.NPMJS.ORG.', 443, true],
    ['registry.npmjs.org', 80, true], // no port in the pattern: every port
    ['npmjs.org', 443, false],
    ['evilregistry.npmjs.org', 443, false],
    ['api.github.com', 443, true],
    ['a.b.github.com', 443, true],
    ['github.com', 443, false], // *.d is strict subdomains only
    ['xgithub.com', 443, false],
    ['evil.github.com', 443, false], // deny wins over allow
    ['x.deny.github.com', 443, false],
    ['example.com', 8443, true],
    ['example.com', 443, false],
    ['xn--bcher-kva.example', 443, true],
    ['BÜCHER.example', 443, true],
    ['203.0.113.5', 443, true],
    ['[2001:db8:0::1]', 443, true],
    ['2001:db8::1', 443, true],
    ['localhost', 80, false],
    ['127.1', 80, false],
    ['registry.npmjs.org', 0, false],
    ['registry.npmjs.org', 70000, false],
    ['not a host', 80, false],
  ] as const)('%s:%i → %s', (host, port, allowed) => {
    expect(decideHost(rules, host, port).allowed).toBe(allowed);
  });
  it('names the rule and pattern that refused', () => {
    expect(decideHost(rules, 'evil.github.com', 443)).toEqual({
      allowed: false,
      rule: 'network.deny',
      detail: 'evil.github.com:443 matches network.deny "evil.github.com"',
      key: 'network.deny[0]',
    });
    expect(decideHost(rules, 'github.com', 443)).toMatchObject({ allowed: false, rule: 'network.allow' });
    expect(decideHost(rules, 'a b', 443)).toMatchObject({ allowed: false, rule: 'network.invalid' });
  });
  it('an empty allow list allows nothing; "*" allows every name', () => {
    expect(decideHost(compileEgressRules({ allow: [], deny: [], allowPrivate: [] }), 'example.com', 443).allowed).toBe(
      false,
    );
    const any = compileEgressRules({ allow: ['*'], deny: ['example.com'], allowPrivate: [] });
    expect(decideHost(any, 'anything.test', 443).allowed).toBe(true);
    expect(decideHost(any, '127.1', 443).allowed).toBe(true); // a name: its resolved address decides next
    expect(decideHost(any, 'example.com', 443).allowed).toBe(false);
  });
  it("'any' port (a DNS answer): an allow entry for one port is enough, only a deny entry for every port refuses", () => {
    const ported = compileEgressRules({
      allow: ['example.com:8443', '*.test'],
      deny: ['a.test:80', 'b.test'],
      allowPrivate: [],
    });
    expect(decideHost(ported, 'example.com', 'any')).toEqual({ allowed: true, key: 'network.allow[0]' });
    expect(decideHost(ported, 'a.test', 'any')).toEqual({ allowed: true, key: 'network.allow[1]' });
    expect(decideHost(ported, 'a.test', 80).allowed).toBe(false);
    expect(decideHost(ported, 'b.test', 'any')).toEqual({
      allowed: false,
      rule: 'network.deny',
      detail: 'b.test matches network.deny "b.test"',
      key: 'network.deny[1]',
    });
    expect(decideHost(ported, 'other.example', 'any')).toEqual({
      allowed: false,
      rule: 'network.allow',
      detail: 'other.example is not in network.allow',
    });
    expect(decideHost(ported, 'a b', 'any')).toMatchObject({ allowed: false, rule: 'network.invalid' });
  });
});

describe('decideAddress', () => {
  const rules = compileEgressRules({
    allow: ['*'],
    deny: ['198.51.100.1', '8.8.4.4:53'],
    allowPrivate: ['127.0.0.1:5432', '10.0.0.5', '[fd00::5]:80', '169.254.169.254:80'],
  });
  it.each([
    ['8.8.8.8', 443, true],
    ['2606:4700::1111', 443, true],
    ['127.0.0.1', 5432, true],
    ['127.0.0.1', 5433, false],
    ['::ffff:127.0.0.1', 5432, true], // mapped: the same peer as 127.0.0.1
    ['127.0.0.2', 5432, false],
    ['::1', 5432, false],
    ['10.0.0.5', 1, true],
    ['10.0.0.6', 1, false],
    ['::ffff:10.0.0.1', 80, false],
    ['fd00::5', 80, true],
    ['fd00:0::5', 80, true],
    ['fd00::5', 81, false],
    ['169.254.169.254', 80, true], // only because it is listed
    ['169.254.169.254', 443, false],
    ['0.0.0.0', 80, false],
    ['::', 80, false],
    ['64:ff9b::a00:5', 80, false], // NAT64 of 10.0.0.5 is another address
    ['198.51.100.1', 80, false], // denied by IP
    ['8.8.4.4', 53, false],
    ['8.8.4.4', 443, true],
    ['127.1', 80, false],
    ['localhost', 80, false],
  ] as const)('%s:%i → %s', (ip, port, allowed) => {
    expect(decideAddress(rules, ip, port).allowed).toBe(allowed);
  });
  it('names the address class and the key that would allow it', () => {
    const none = compileEgressRules({ allow: ['*'], deny: [], allowPrivate: [] });
    expect(decideAddress(none, '169.254.169.254', 80)).toEqual({
      allowed: false,
      rule: 'network.private',
      detail: '169.254.169.254:80 is a metadata address, not in network.allow_private',
    });
    expect(decideAddress(none, '::ffff:10.0.0.1', 80)).toMatchObject({
      rule: 'network.private',
      detail: expect.stringContaining('10.0.0.1:80 is a private address'),
    });
  });
});

describe('purity', () => {
  it('src/network/egress.ts imports no I/O module', () => {
    const source = readFileSync(new URL('../../../src/network/egress.ts', import.meta.url), 'utf8');
    const imports = [...source.matchAll(/^import .* from '([^']+)'/gm)].map((m) => m[1]);
    expect(imports.length).toBeGreaterThan(0);
    for (const name of imports)
      expect(name).not.toMatch(/^node:(fs|net|dns|child_process|http|https|tls|dgram|os|process)/);
    expect(source).not.toMatch(/process\.env|Date\.now|Math\.random/);
  });
});
