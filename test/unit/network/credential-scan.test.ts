// Finding a credential where it does not belong, and putting its value in where it does: every
// encoding the proxy undoes, a trace split across body chunks, header-only and basic-auth substitution.
import { describe, expect, it } from 'vitest';
import {
  bodyScanner,
  carriedInName,
  type LiveCredential,
  percentDecoded,
  substituteHeaders,
  tracerOf,
  tracesOf,
  userinfoAuthorization,
} from '../../../src/network/credential-scan.js';
import { compileEgressRules } from '../../../src/network/egress.js';

const pattern = (text: string) => compileEgressRules({ allow: [text], deny: [], allowPrivate: [] }).allow[0]!;
const GH: LiveCredential = {
  name: 'GITHUB_TOKEN',
  hosts: [pattern('api.github.com')],
  placeholder: 'ghp_PLACEHOLDERplaceholder0123456789abcd',
  value: 'ghp_REALVALUErealvalue01234567890123abcd',
};
const KEY: LiveCredential = {
  name: 'API_KEY',
  hosts: [pattern('*.example.com')],
  header: 'X-Api-Key',
  placeholder: 'k_placeholder_for_the_api_key_000',
  value: 'short',
};
const tracer = tracerOf([GH, KEY]);
const any = () => true;
const find = (text: string) => tracer.find(Buffer.from(text), any);

describe('tracesOf and percentDecoded', () => {
  it('finds the secret raw, base64 and base64url at every alignment, and percent-encoded (twice too)', () => {
    const p = GH.placeholder;
    for (const prefix of ['', 'a', 'ab', 'abc']) {
      expect(find(Buffer.from(`${prefix}${p}!`).toString('base64'))?.what, `base64 after ${prefix.length}`).toBe(
        'placeholder',
      );
      expect(find(Buffer.from(`${prefix}${p}?`).toString('base64url'))?.credential.name).toBe('GITHUB_TOKEN');
    }
    const once = [...p].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    expect(find(`q=${once}`)?.credential.name).toBe('GITHUB_TOKEN');
    expect(find(`q=${once.replaceAll('%', '%25')}`)?.credential.name).toBe('GITHUB_TOKEN');
    expect(percentDecoded(Buffer.from('a%zzb'))).toBeUndefined();
    expect(percentDecoded(Buffer.from('%2541'))?.toString()).toBe('A');
  });

  it('finds the value too, when it is long enough to be told apart from chance; never a short one', () => {
    expect(find(`x ${GH.value} y`)).toEqual({ credential: GH, what: 'value' });
    expect(find('a short answer')).toBeUndefined();
  });

  it('control: unrelated text, and a placeholder cut short, are not findings', () => {
    expect(find('GET /repos/x/y HTTP/1.1')).toBeUndefined();
    expect(find(GH.placeholder.slice(0, -1))).toBeUndefined();
    expect(tracesOf('abc')).toEqual([Buffer.from('abc')]);
  });

  it('accept narrows what counts (the credentials not listed for the destination)', () => {
    expect(tracer.find(Buffer.from(GH.placeholder), (c) => c.name !== 'GITHUB_TOKEN')).toBeUndefined();
  });
});

describe('carriedInName', () => {
  it('finds a placeholder or value spelled in a host name, whatever its case, across labels', () => {
    expect(carriedInName([GH], `${GH.placeholder.toLowerCase()}.evil.example`)?.what).toBe('placeholder');
    const split = `${GH.placeholder.slice(0, 20)}.${GH.placeholder.slice(20)}.evil.example`.toUpperCase();
    expect(carriedInName([GH], split)?.credential.name).toBe('GITHUB_TOKEN');
    expect(carriedInName([GH], `${GH.value}.evil.example`)?.what).toBe('value');
    // Control: an ordinary name, and a value too short to be told from chance.
    expect(carriedInName([GH, KEY], 'api.github.com')).toBeUndefined();
    expect(carriedInName([KEY], 'short.example.com')).toBeUndefined();
  });
});

describe('bodyScanner', () => {
  it('finds a trace split across chunks, at any split point', () => {
    const body = Buffer.from(`{"token":"${GH.placeholder}"}`);
    for (let cut = 1; cut < body.length; cut++) {
      const scan = bodyScanner(tracer, any);
      const first = scan(body.subarray(0, cut));
      const second = scan(body.subarray(cut));
      expect(first ?? second, `cut at ${cut}`).toBeDefined();
    }
  });

  it('control: a long clean body passes chunk by chunk', () => {
    const scan = bodyScanner(tracer, any);
    for (let i = 0; i < 100; i++) expect(scan(Buffer.alloc(1000, 0x61 + (i % 26)))).toBeUndefined();
  });
});

describe('substituteHeaders', () => {
  const raw = (h: Record<string, string>) => Object.entries(h).flat();

  it('puts the value in any header of a request to a listed host, and in basic auth', () => {
    const basic = `Basic ${Buffer.from(`x-access-token:${GH.placeholder}`).toString('base64')}`;
    expect(
      substituteHeaders(
        raw({ Authorization: `Bearer ${GH.placeholder}`, 'X-Other': GH.placeholder }),
        [GH, KEY],
        'api.github.com',
        443,
      ),
    ).toEqual(['Authorization', `Bearer ${GH.value}`, 'X-Other', GH.value]);
    expect(substituteHeaders(raw({ authorization: basic }), [GH], 'api.github.com', 443)).toEqual([
      'authorization',
      `Basic ${Buffer.from(`x-access-token:${GH.value}`).toString('base64')}`,
    ]);
  });

  it('only in the header a credential names, and only at its hosts', () => {
    expect(
      substituteHeaders(
        raw({ 'x-api-key': KEY.placeholder, Authorization: KEY.placeholder }),
        [KEY],
        'a.example.com',
        443,
      ),
    ).toEqual(['x-api-key', 'short', 'Authorization', KEY.placeholder]);
    // Control: another host keeps every placeholder as it is.
    expect(substituteHeaders(raw({ Authorization: `Bearer ${GH.placeholder}` }), [GH], 'evil.example', 443)).toEqual([
      'Authorization',
      `Bearer ${GH.placeholder}`,
    ]);
    expect(substituteHeaders(raw({ 'x-api-key': KEY.placeholder }), [KEY], 'example.com', 443)).toEqual([
      'x-api-key',
      KEY.placeholder,
    ]);
  });

  it("a URL's userinfo becomes basic auth, percent-decoded", () => {
    expect(userinfoAuthorization('me:p%40ss')).toBe(`Basic ${Buffer.from('me:p@ss').toString('base64')}`);
    expect(userinfoAuthorization('token')).toBe(`Basic ${Buffer.from('token:').toString('base64')}`);
  });
});
