import { describe, expect, it } from 'vitest';
import {
  DNS_TYPE_A,
  DNS_TYPE_AAAA,
  dnsErrorResponse,
  dnsResponse,
  MAX_DNS_QUERY_BYTES,
  parseDnsQuery,
  type DnsQuery,
} from '../../../src/network/dns-message.js';
import { dnsQuery, type QueryOptions } from '../../helpers/dns-query.js';

const query = (name: string, type: number = DNS_TYPE_A, opts: QueryOptions = {}): Buffer => dnsQuery(name, type, opts);

function parsedQuery(bytes: Buffer): DnsQuery {
  const r = parseDnsQuery(bytes);
  if (r.kind !== 'query') throw new Error(`not a query: ${JSON.stringify(r)}`);
  return r.query;
}

describe('parseDnsQuery', () => {
  it('reads the id, RD, name, type and class of a query, with or without an EDNS record', () => {
    for (const opt of [false, true]) {
      const q = parsedQuery(query('Registry.NPMJS.org', DNS_TYPE_AAAA, { opt }));
      expect(q).toMatchObject({ id: 0x1234, recursionDesired: true, name: 'Registry.NPMJS.org', type: 28, class: 1 });
      expect(Buffer.from(q.question)).toEqual(query('Registry.NPMJS.org', DNS_TYPE_AAAA).subarray(12));
    }
  });

  it('reads the root name as the empty string', () => {
    expect(parsedQuery(query('')).name).toBe('');
  });

  it.each([
    ['a response', query('a.test', 1, { flags: 0x8100 }), 'a response, not a query'],
    ['two questions', query('a.test', 1, { counts: [2, 0, 0, 0] }), 'not exactly one question'],
    ['no question', query('a.test', 1, { counts: [0, 0, 0, 0] }), 'not exactly one question'],
    ['answers in a query', query('a.test', 1, { counts: [1, 1, 0, 0] }), 'records in a query'],
    [
      'a compression pointer',
      Buffer.concat([query('').subarray(0, 12), Buffer.from([0xc0, 0x0c, 0, 1, 0, 1])]),
      'compressed name in a query',
    ],
    [
      'a label length of 64',
      Buffer.concat([
        query('').subarray(0, 12),
        Buffer.from([64]),
        Buffer.alloc(64, 0x61),
        Buffer.from([0, 0, 1, 0, 1]),
      ]),
      'bad label length',
    ],
    [
      'a dot inside a label',
      query('ab', 1).fill(0x2e, 14, 15),
      'name with a byte that is not printable ASCII, or a dot',
    ],
    [
      'a NUL inside a label',
      Buffer.concat([query('').subarray(0, 12), Buffer.from([1, 0, 0, 0, 1, 0, 1])]),
      'name with a byte that is not printable ASCII, or a dot',
    ],
    [
      'a name of 256 bytes',
      query(Array.from({ length: 5 }, () => 'a'.repeat(50)).join('.')),
      'name longer than 255 bytes',
    ],
    ['no type and class', query('a.test').subarray(0, 20), 'truncated question'],
    [
      'an oversized message',
      Buffer.concat([query('a.test'), Buffer.alloc(MAX_DNS_QUERY_BYTES)]),
      'longer than a query',
    ],
  ])('refuses %s as malformed, keeping the id', (_what, bytes, reason) => {
    expect(parseDnsQuery(bytes)).toEqual({ kind: 'malformed', id: 0x1234, reason });
  });

  it('takes a name of exactly 255 bytes on the wire', () => {
    const name = [...Array.from({ length: 3 }, () => 'a'.repeat(63)), 'a'.repeat(61)].join('.');
    expect(parsedQuery(query(name)).name).toBe(name);
  });

  it('has no id to answer to below two bytes', () => {
    expect(parseDnsQuery(Buffer.alloc(0))).toEqual({
      kind: 'malformed',
      id: undefined,
      reason: 'shorter than a header',
    });
    expect(parseDnsQuery(Buffer.from([7]))).toEqual({
      kind: 'malformed',
      id: undefined,
      reason: 'shorter than a header',
    });
  });

  it('calls another opcode unsupported', () => {
    expect(parseDnsQuery(query('a.test', 1, { flags: 0x2800 }))).toEqual({
      kind: 'unsupported',
      id: 0x1234,
      reason: 'opcode 5',
    });
  });

  it('never throws and always returns a typed result on truncated, mutated or random bytes', () => {
    // A fixed LCG: the same "random" inputs on every run.
    let seed = 0x5eed;
    const next = (): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed >>> 16;
    };
    const valid = query('www.example.test', DNS_TYPE_A, { opt: true });
    const inputs: Buffer[] = [];
    for (let n = 0; n <= valid.length; n++) inputs.push(valid.subarray(0, n));
    for (let i = 0; i < 3000; i++) {
      const m = Buffer.from(valid);
      for (let k = next() % 4; k >= 0; k--) m[next() % m.length] = next() & 0xff;
      inputs.push(m);
      inputs.push(Buffer.from(Array.from({ length: next() % 80 }, () => next() & 0xff)));
    }
    for (const input of inputs) {
      const r = parseDnsQuery(input);
      expect(['query', 'malformed', 'unsupported']).toContain(r.kind);
      if (r.kind === 'query') expect(r.query.name.length).toBeLessThanOrEqual(253);
    }
  });
});

describe('dnsResponse', () => {
  const q = parsedQuery(query('a.test'));

  it('answers A with one record pointing at the question, TTL and address', () => {
    const r = dnsResponse(q, { kind: 'address', address: '198.18.0.2', ttlSeconds: 5 });
    expect(r.readUInt16BE(0)).toBe(0x1234);
    expect(r.readUInt16BE(2)).toBe(0x8180); // QR, RD, RA, NOERROR
    expect([r.readUInt16BE(4), r.readUInt16BE(6), r.readUInt16BE(8), r.readUInt16BE(10)]).toEqual([1, 1, 0, 0]);
    const answer = r.subarray(12 + q.question.length);
    expect([...answer]).toEqual([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4, 198, 18, 0, 2]);
  });

  it.each([
    ['no-data', 0],
    ['nxdomain', 3],
    ['servfail', 2],
    ['refused', 5],
  ] as const)('answers %s with rcode %i, the question and no records', (kind, rcode) => {
    const r = dnsResponse(q, { kind });
    expect(r.readUInt16BE(2) & 0xf).toBe(rcode);
    expect(r.readUInt16BE(6)).toBe(0);
    expect(r.subarray(12)).toEqual(Buffer.from(q.question));
  });

  it('keeps RD as the query had it', () => {
    const noRd = parsedQuery(query('a.test', 1, { flags: 0 }));
    expect(dnsResponse(noRd, { kind: 'nxdomain' }).readUInt16BE(2)).toBe(0x8083);
  });

  it('refuses to put an A record under an AAAA question', () => {
    const aaaa = parsedQuery(query('a.test', DNS_TYPE_AAAA));
    expect(() => dnsResponse(aaaa, { kind: 'address', address: '198.18.0.2', ttlSeconds: 5 })).toThrow(RangeError);
  });

  it('answers FORMERR and NOTIMP with a bare header', () => {
    expect([...dnsErrorResponse(0xbeef, 'formerr')]).toEqual([0xbe, 0xef, 0x80, 0x81, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(dnsErrorResponse(1, 'notimp').readUInt16BE(2)).toBe(0x8084);
  });
});
