// Egress rules: which destinations the sandbox's proxy may dial. Pure (docs/DESIGN.md, "Network").
// Two decisions, made in order by the proxy:
//   decideHost(name the client asked for)   allow/deny patterns; deny wins
//   decideAddress(each address it resolved) non-public addresses only via allow_private
// The second exists because a name is a claim, not a destination: an allowed name can resolve to
// 169.254.169.254 or 10.0.0.1 (or be rebound to one between two lookups), so the proxy resolves once,
// checks every address with decideAddress and dials exactly the address it checked.
//
// Host normal form: lower-case, one trailing dot dropped, IDNs in punycode (UTS #46 via
// url.domainToASCII), IPv6 without brackets in RFC 5952 form. A string is an IP address only when it
// is a canonical literal: dotted-quad decimal IPv4 without leading zeros, or any valid IPv6 text.
// Everything else (`127.1`, `0x7f.0.0.1`, `2130706433`, `010.0.0.1`) is a host name: it must match an
// allow pattern like any name, and whatever the resolver makes of it is then checked as an address.
// We never interpret those forms ourselves: inet_aton and WHATWG URL disagree on them, which is the
// classic SSRF filter bypass.
import { domainToASCII } from 'node:url';
import { SbxError } from '../errors.js';
import type { ViolationSource } from '../policy/violation.js';

/** A compiled allow or deny entry. Plain JSON data: it travels in the Policy (types.ts NetworkPolicy). */
export interface HostPattern {
  /** As written in the profile, for messages. */
  text: string;
  /** any: `*`. exact: one host name or IP literal. suffix: `*.d` = strict subdomains of d. */
  kind: 'any' | 'exact' | 'suffix';
  /** Normal form: the host, or for suffix the domain without `*.`. Empty for any. */
  host: string;
  /** Absent: every port. */
  port?: number;
}

/** A compiled allow_private entry: one address, optionally one port. */
export interface PrivateAddress {
  text: string;
  /** Canonical address; IPv4-mapped IPv6 is stored as its IPv4 (the same destination). */
  ip: string;
  /** Absent: every port. */
  port?: number;
}

export interface EgressRules {
  allow: HostPattern[];
  deny: HostPattern[];
  allowPrivate: PrivateAddress[];
}

/**
 * `key`: the profile key path of the entry that decided: on a refusal the deny entry (`network.deny[1]`)
 * when the rule id does not say it; on a pass the allow (`network.allow[0]`) or allow_private entry that
 * let it through, absent for a public address (no entry needed). `sbx why` names its line
 * (policy/why.ts). The index counts the Policy's list, where --allow-domain's entries follow the
 * profile's: `sbx why` names the flag for those (whyHost's `flagDomains`).
 */
export type EgressDecision =
  | { allowed: true; key?: string }
  | { allowed: false; rule: string; detail: string; key?: string };

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'cgnat'
  | 'link-local'
  | 'metadata'
  | 'unique-local'
  | 'multicast'
  | 'broadcast'
  | 'unspecified'
  | 'documentation'
  | 'benchmarking'
  | 'reserved'
  | 'invalid';

// ---- IP literals ---------------------------------------------------------------------------------

type IpBytes = { family: 4; bytes: number[] } | { family: 6; bytes: number[] };

/** Canonical dotted-quad only: four decimal octets 0-255, no leading zeros, no other forms. */
function parseIPv4(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p)) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out.push(n);
  }
  return out;
}

/** Any RFC 4291 §2.2 text form (no zone id: a zone is meaningless to a proxy and ambiguous). */
function parseIPv6(text: string): number[] | undefined {
  if (text.length > 45 || !/^[0-9a-fA-F:.]+$/.test(text)) return undefined;
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (s: string): number[] | undefined => {
    if (s === '') return [];
    const out: number[] = [];
    const parts = s.split(':');
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i] as string;
      if (i === parts.length - 1 && p.includes('.')) {
        const v4 = parseIPv4(p);
        if (!v4) return undefined;
        out.push(((v4[0] as number) << 8) | (v4[1] as number), ((v4[2] as number) << 8) | (v4[3] as number));
      } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) {
        out.push(parseInt(p, 16));
      } else {
        return undefined;
      }
    }
    return out;
  };
  const head = groups(halves[0] as string);
  const tail = halves.length === 2 ? groups(halves[1] as string) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const words = [...head, ...new Array<number>(missing).fill(0), ...tail];
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}

function parseIp(text: string): IpBytes | undefined {
  const v4 = parseIPv4(text);
  if (v4) return { family: 4, bytes: v4 };
  const v6 = text.includes(':') ? parseIPv6(text) : undefined;
  return v6 ? { family: 6, bytes: v6 } : undefined;
}

/** RFC 5952: lower case, no leading zeros, the longest run (≥2) of zero groups as `::`. */
function formatIPv6(bytes: number[]): string {
  if (isMapped(bytes)) return `::ffff:${bytes.slice(12).join('.')}`;
  const words: number[] = [];
  for (let i = 0; i < 16; i += 2) words.push(((bytes[i] as number) << 8) | (bytes[i + 1] as number));
  let bestAt = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) [bestAt, bestLen] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = words.map((w) => w.toString(16));
  if (bestAt < 0) return hex.join(':');
  return `${hex.slice(0, bestAt).join(':')}::${hex.slice(bestAt + bestLen).join(':')}`;
}

function isMapped(bytes: number[]): boolean {
  return bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
}

/** The canonical text of an IP literal, or undefined when `text` is not one (see the header). */
export function canonicalIp(text: string): string | undefined {
  const ip = parseIp(text);
  if (!ip) return undefined;
  return ip.family === 4 ? ip.bytes.join('.') : formatIPv6(ip.bytes);
}

// ---- address classes -----------------------------------------------------------------------------

type Range = { bytes: number[]; bits: number; cls: AddressClass | 'embedded-v4' };

function inRange(bytes: number[], r: Range): boolean {
  const whole = r.bits >> 3;
  for (let i = 0; i < whole; i++) if (bytes[i] !== r.bytes[i]) return false;
  const rest = r.bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[whole] as number) & mask) === ((r.bytes[whole] as number) & mask);
}

function ranges(table: [string, number, Range['cls']][]): readonly Range[] {
  return Object.freeze(
    table.map(([text, bits, cls]) => Object.freeze({ bytes: (parseIp(text) as IpBytes).bytes, bits, cls })),
  );
}

// First match wins, so single addresses come before the blocks holding them. Sources: IANA IPv4 and
// IPv6 Special-Purpose Address Registries (RFC 6890), cloud provider metadata docs.
const V4_RANGES = ranges([
  ['0.0.0.0', 32, 'unspecified'], // connect(0.0.0.0) reaches the local host on Linux
  ['0.0.0.0', 8, 'reserved'],
  ['10.0.0.0', 8, 'private'],
  ['100.100.100.200', 32, 'metadata'], // Alibaba Cloud metadata
  ['100.64.0.0', 10, 'cgnat'], // RFC 6598 shared address space
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.169.254', 32, 'metadata'], // AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean
  ['169.254.170.2', 32, 'metadata'], // AWS ECS task credentials
  ['169.254.0.0', 16, 'link-local'],
  ['168.63.129.16', 32, 'metadata'], // Azure WireServer: public-looking, answers only inside Azure
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'], // IETF protocol assignments
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'reserved'], // deprecated 6to4 relay anycast
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['255.255.255.255', 32, 'broadcast'],
  ['240.0.0.0', 4, 'reserved'],
]);

const V6_RANGES = ranges([
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['::ffff:0:0', 96, 'embedded-v4'], // IPv4-mapped: the socket talks IPv4 to the embedded address
  ['64:ff9b::', 96, 'embedded-v4'], // NAT64 well-known prefix: the translator dials the embedded v4
  ['64:ff9b:1::', 48, 'private'], // RFC 8215 local-use NAT64
  ['100::', 64, 'reserved'], // discard-only
  ['2001:db8::', 32, 'documentation'],
  ['2001::', 23, 'reserved'], // IETF protocol assignments, incl. Teredo (obfuscated embedded v4)
  ['2002::', 16, 'embedded-v4'], // 6to4: the relay forwards to the embedded v4
  ['3fff::', 20, 'documentation'], // RFC 9637
  ['2000::', 3, 'public'], // global unicast: the only IPv6 block treated as public
  ['fd00:ec2::254', 128, 'metadata'], // AWS IMDS over IPv6
  ['fc00::', 7, 'unique-local'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'private'], // deprecated site-local
  ['ff00::', 8, 'multicast'],
  ['::', 0, 'reserved'], // the rest of the space is unassigned or reserved: fail closed
]);

function classifyBytes(ip: IpBytes): AddressClass {
  if (ip.family === 4)
    return (V4_RANGES.find((r) => inRange(ip.bytes, r))?.cls as AddressClass | undefined) ?? 'public';
  const r = V6_RANGES.find((x) => inRange(ip.bytes, x)) as Range;
  if (r.cls !== 'embedded-v4') return r.cls;
  // 6to4 carries the v4 in bits 16..47; the /96 prefixes in the last 32 bits.
  const v4 = r.bits === 16 ? ip.bytes.slice(2, 6) : ip.bytes.slice(12, 16);
  return classifyBytes({ family: 4, bytes: v4 });
}

/** What kind of destination an IP literal is. Non-canonical or non-IP text is `invalid`. */
export function classifyAddress(ip: string): AddressClass {
  const parsed = parseIp(ip);
  return parsed ? classifyBytes(parsed) : 'invalid';
}

// ---- host names and patterns ---------------------------------------------------------------------

const LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;

/**
 * The normal form of a host as a client names it (`Example.COM.`, `[::1]`, `bücher.de`), or
 * undefined when it is neither a valid host name nor an IP literal.
 */
export function normaliseHost(input: string): string | undefined {
  let host = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input;
  if (input.startsWith('[')) return host.includes(':') ? canonicalIp(host) : undefined;
  const ip = canonicalIp(host);
  if (ip) return ip;
  if (host.endsWith('.')) host = host.slice(0, -1);
  // Only name characters (and non-ASCII, for IDNs) get as far as UTS #46, which would otherwise
  // percent-decode or map away characters the client sent.
  if (/[\x00-\x2c/:-@[-^`{-\x7f]/.test(host)) return undefined;
  // A name whose labels contain non-ASCII or punycode goes through UTS #46, so `bücher.de` and
  // `xn--bcher-kva.de` compare equal and invalid punycode is refused. ASCII names skip it: it would
  // rewrite `127.1` into `127.0.0.1` (WHATWG URL IPv4 parsing), an interpretation we refuse to make.
  if (/[^\x00-\x7f]/.test(host) || /(^|\.)xn--/i.test(host)) {
    const ascii = domainToASCII(host);
    if (ascii === '' || canonicalIp(ascii)) return undefined;
    host = ascii;
  }
  host = host.toLowerCase();
  if (host.length === 0 || host.length > 253) return undefined;
  return host.split('.').every((l) => LABEL.test(l)) ? host : undefined;
}

/** A name whose last label is numeric is an IPv4 address in some non-canonical form, never a domain. */
function endsInNumber(host: string): boolean {
  return /(^|\.)(\d+|0x[0-9a-f]*)$/.test(host);
}

/** `host`, `host:port`, `[v6]`, `[v6]:port`, bare v6. Returns undefined on a malformed port. */
export function splitHostPort(text: string): { host: string; port: number | undefined } | undefined {
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(text);
  if (bracketed) return withPort(`[${bracketed[1]}]`, bracketed[2]);
  const colons = text.split(':').length - 1;
  if (colons > 1) return { host: text, port: undefined }; // bare IPv6: a port needs brackets
  if (colons === 0) return { host: text, port: undefined };
  const at = text.lastIndexOf(':');
  return withPort(text.slice(0, at), text.slice(at + 1));
}

function withPort(host: string, port: string | undefined): { host: string; port: number | undefined } | undefined {
  if (port === undefined) return { host, port: undefined };
  const n = /^[1-9][0-9]{0,4}$/.test(port) ? Number(port) : 0;
  return n >= 1 && n <= 65535 ? { host, port: n } : undefined;
}

/** One allow or deny entry (or a credential's host: network/credentials.ts); `key` names it in the refusal. */
export function compileHostPattern(text: string, key: string, source: ViolationSource): HostPattern {
  const bad = (why: string): SbxError =>
    new SbxError('PROFILE_INVALID', `${key}: "${text}" is not a host pattern: ${why}`, {
      hint: 'write a host name (registry.npmjs.org), *.domain (strict subdomains), or an IP, each with optional :port',
      source,
    });
  const hp = splitHostPort(text);
  if (!hp) throw bad('the port must be 1-65535');
  if (hp.host === '*') return { text, kind: 'any', host: '', ...portOf(hp) };
  const wildcard = hp.host.startsWith('*.');
  const rest = wildcard ? hp.host.slice(2) : hp.host;
  if (rest.includes('*')) throw bad('only a leading "*." wildcard is supported');
  const host = normaliseHost(rest);
  if (!host) throw bad('invalid host name or IP address');
  const ip = canonicalIp(host) !== undefined;
  if (ip && wildcard) throw bad('"*." cannot prefix an IP address');
  if (!ip && endsInNumber(host)) throw bad('write IPv4 addresses as four decimal octets (e.g. 10.0.0.1)');
  return { text, kind: wildcard ? 'suffix' : 'exact', host, ...portOf(hp) };
}

function compilePrivateAddress(text: string, index: number): PrivateAddress {
  const hp = splitHostPort(text);
  const host = hp && (hp.host.startsWith('[') ? hp.host.slice(1, -1) : hp.host);
  const ip = host !== undefined ? unmap(host) : undefined;
  if (!hp || !ip) {
    throw new SbxError('PROFILE_INVALID', `network.allow_private: "${text}" is not an IP address with optional port`, {
      hint: 'write 10.0.0.5, 10.0.0.5:5432, fd00::5 or [fd00::5]:5432 (host names are not accepted here)',
      source: { key: `network.allow_private[${index}]` },
    });
  }
  return { text, ip, ...portOf(hp) };
}

/** The port as a compiled entry holds it: absent for every port (JSON has no undefined). */
function portOf(hp: { port: number | undefined }): { port?: number } {
  return hp.port === undefined ? {} : { port: hp.port };
}

/** Canonical text, with IPv4-mapped IPv6 reduced to its IPv4: both name the same socket peer. */
function unmap(text: string): string | undefined {
  const ip = parseIp(text);
  if (!ip) return undefined;
  if (ip.family === 6 && isMapped(ip.bytes)) return ip.bytes.slice(12).join('.');
  return ip.family === 4 ? ip.bytes.join('.') : formatIPv6(ip.bytes);
}

/**
 * Validate and normalise the profile's `network` lists. Throws PROFILE_INVALID naming the entry.
 * `flagsFrom`: the index in `allow` where entries from --allow-domain begin (policy/derive/network.ts appends them).
 */
export function compileEgressRules(input: {
  allow: string[];
  deny: string[];
  allowPrivate: string[];
  flagsFrom?: number;
}): EgressRules {
  const allowSource = (i: number): ViolationSource =>
    i >= (input.flagsFrom ?? input.allow.length)
      ? { key: '--allow-domain', origin: 'flag' }
      : { key: `network.allow[${i}]` };
  return {
    allow: input.allow.map((t, i) => compileHostPattern(t, 'network.allow', allowSource(i))),
    deny: input.deny.map((t, i) => compileHostPattern(t, 'network.deny', { key: `network.deny[${i}]` })),
    allowPrivate: input.allowPrivate.map(compilePrivateAddress),
  };
}

/** Whether `host` (normal form) at `port` is one the pattern names. */
export function matchesHostPattern(p: HostPattern, host: string, port: number): boolean {
  if (p.port !== undefined && p.port !== port) return false;
  switch (p.kind) {
    case 'any':
      return true;
    case 'exact':
      return p.host === host;
    case 'suffix':
      // Strict subdomains only: `*.example.com` does not cover example.com itself, as in TLS
      // wildcard certificates (RFC 6125 §6.4.3); list both when both are meant.
      return host.endsWith(`.${p.host}`);
  }
}

function validPort(port: number): boolean {
  return Number.isInteger(port) && port >= 1 && port <= 65535;
}

/** Refused by the deny entry at `index`: the Policy's deny list is the profile's network.deny, in order (policy/derive/network.ts). */
function deniedBy(rules: EgressRules, index: number, destination: string): EgressDecision {
  const detail = `${destination} matches network.deny "${rules.deny[index]!.text}"`;
  return { allowed: false, rule: 'network.deny', detail, key: `network.deny[${index}]` };
}

/**
 * May the client ask for `host:port` by name? Deny patterns win over allow patterns. `port` 'any': may
 * the name be reached on some port (what sbx's DNS answers on, before any port is known): a deny entry
 * refuses it only when it names every port, an allow entry for one port is enough.
 */
export function decideHost(rules: EgressRules, host: string, port: number | 'any'): EgressDecision {
  const name = normaliseHost(host);
  if (!name || (port !== 'any' && !validPort(port))) {
    return { allowed: false, rule: 'network.invalid', detail: 'malformed destination host or port' };
  }
  const named = (p: HostPattern): boolean => matchesHostPattern({ ...p, port: undefined }, name, 0);
  const denies = (p: HostPattern): boolean =>
    port === 'any' ? p.port === undefined && named(p) : matchesHostPattern(p, name, port);
  const allows = (p: HostPattern): boolean => (port === 'any' ? named(p) : matchesHostPattern(p, name, port));
  const destination = port === 'any' ? name : `${name}:${port}`;
  const denied = rules.deny.findIndex(denies);
  if (denied >= 0) return deniedBy(rules, denied, destination);
  const allowed = rules.allow.findIndex(allows);
  if (allowed >= 0) return { allowed: true, key: `network.allow[${allowed}]` };
  return { allowed: false, rule: 'network.allow', detail: `${destination} is not in network.allow` };
}

/**
 * May the proxy dial `ip:port`? Public addresses may; every other class (loopback, private, metadata,
 * ...) only when allow_private lists the address (and the port, if the entry has one). An IP literal
 * in network.deny refuses the address whatever name led to it.
 */
export function decideAddress(rules: EgressRules, ip: string, port: number): EgressDecision {
  const addr = unmap(ip);
  if (!addr || !validPort(port))
    return { allowed: false, rule: 'network.invalid', detail: 'malformed destination address or port' };
  const denied = rules.deny.findIndex(
    (p) => p.kind === 'exact' && unmap(p.host) === addr && (p.port === undefined || p.port === port),
  );
  if (denied >= 0) return deniedBy(rules, denied, `${addr}:${port}`);
  const cls = classifyAddress(addr);
  if (cls === 'public') return { allowed: true };
  const listed = rules.allowPrivate.findIndex((e) => e.ip === addr && (e.port === undefined || e.port === port));
  if (listed >= 0) return { allowed: true, key: `network.allow_private[${listed}]` };
  return {
    allowed: false,
    rule: 'network.private',
    detail: `${addr}:${port} is a ${cls} address, not in network.allow_private`,
  };
}
