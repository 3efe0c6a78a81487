import { describe, expect, it } from 'vitest';
import { type CheckStep, createRequestChecker, isSameAuthority } from '../../../src/network/plaintext-http.js';

const TUNNEL = { host: 'allowed.test', port: 8080 };

/** Feeds `chunks` in order; what was forwarded, and the refusal if one came. */
function feed(
  chunks: (string | Buffer)[],
  tunnel = TUNNEL,
): { forwarded: string; refused?: { detail: string; first: boolean } } {
  const checker = createRequestChecker(tunnel);
  const out: Buffer[] = [];
  for (const c of chunks) {
    const step: CheckStep = checker.push(typeof c === 'string' ? Buffer.from(c, 'latin1') : c);
    if (step.kind === 'refuse')
      return { forwarded: Buffer.concat(out).toString('latin1'), refused: { detail: step.detail, first: step.first } };
    out.push(...step.bytes);
  }
  return { forwarded: Buffer.concat(out).toString('latin1') };
}

const get = (host: string, extra = ''): string => `GET /x HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`;

describe('createRequestChecker', () => {
  it('forwards a request for the tunnel name, with or without its port, in any case', () => {
    for (const host of ['allowed.test', 'allowed.test:8080', 'ALLOWED.Test.']) {
      expect(feed([get(host)])).toEqual({ forwarded: get(host) });
    }
  });

  it('takes an h2c offer out of the head (the server answers in HTTP/1.1) and checks the next request', () => {
    const offer =
      'GET /x HTTP/1.1\r\nConnection: Upgrade, HTTP2-Settings, keep-alive\r\nHost: allowed.test\r\n' +
      'HTTP2-Settings: AAEAAEAAAAIAAAABAAMAAABkAAQBAAAAAAUAAEAA\r\nUpgrade: h2c\r\nUser-Agent: Java-http-client/17\r\n\r\n';
    expect(feed([offer, get('allowed.test')])).toEqual({
      forwarded:
        'GET /x HTTP/1.1\r\nConnection: keep-alive\r\nHost: allowed.test\r\nUser-Agent: Java-http-client/17\r\n\r\n' +
        get('allowed.test'),
    });
    const only = 'GET /x HTTP/1.1\r\nHost: allowed.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n\r\n';
    expect(feed([only]).forwarded).toBe('GET /x HTTP/1.1\r\nHost: allowed.test\r\n\r\n');
    expect(feed([only, get('other.test')]).refused?.detail).toContain('Host header names another host');
  });

  it('refuses a Host naming another host, or another port, before forwarding any of it', () => {
    expect(feed([get('other.test')])).toEqual({
      forwarded: '',
      refused: { detail: "Host header names another host than the tunnel's allowed.test:8080", first: true },
    });
    expect(feed([get('allowed.test:80')]).refused?.detail).toContain('Host header names another host');
  });

  it('checks an absolute-form target and the Host beside it', () => {
    expect(
      feed([`GET http://allowed.test:8080/x HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n`]).refused,
    ).toBeUndefined();
    expect(feed([`GET http://u:p@other.test/x HTTP/1.1\r\nHost: allowed.test\r\n\r\n`]).refused?.detail).toContain(
      'request URL names another host',
    );
    expect(feed([`GET http://allowed.test/x HTTP/1.1\r\nHost: other.test\r\n\r\n`]).refused?.detail).toContain(
      'Host header',
    );
  });

  it('checks every request of a keep-alive connection, the second refused after the first went on', () => {
    const r = feed([get('allowed.test'), get('other.test')]);
    expect(r).toEqual({
      forwarded: get('allowed.test'),
      refused: { detail: expect.stringContaining('Host header'), first: false },
    });
    // Pipelined in one chunk: the same.
    expect(feed([get('allowed.test') + get('other.test')]).refused?.first).toBe(false);
  });

  it('reads the same thing fed one byte at a time', () => {
    const body = 'hello';
    const stream = `POST /p HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: ${body.length}\r\n\r\n${body}${get('allowed.test')}`;
    expect(feed([...stream])).toEqual({ forwarded: stream });
    expect(feed([...(stream + get('other.test'))]).refused?.first).toBe(false);
  });

  it('frames a Content-Length body: a request inside it is body, the one after it is checked', () => {
    const hidden = get('other.test');
    const post = `POST /p HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: ${hidden.length}\r\n\r\n${hidden}`;
    expect(feed([post, get('allowed.test')])).toEqual({ forwarded: post + get('allowed.test') });
    expect(feed([post + get('other.test')]).refused?.detail).toContain('Host header');
  });

  it('frames a chunked body with extensions and trailers', () => {
    const hidden = get('other.test');
    const post =
      'POST /p HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n' +
      `${hidden.length.toString(16)};ext=1\r\n${hidden}\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n`;
    expect(feed([post, get('allowed.test')])).toEqual({ forwarded: post + get('allowed.test') });
    expect(feed([...(post + get('other.test'))]).refused?.detail).toContain('Host header');
  });

  it.each([
    [
      'Content-Length and Transfer-Encoding',
      'Content-Length: 3\r\nTransfer-Encoding: chunked\r\n',
      'both Content-Length and Transfer-Encoding',
    ],
    ['a coding other than chunked', 'Transfer-Encoding: gzip, chunked\r\n', 'other than chunked alone'],
    [
      'two Transfer-Encoding fields',
      'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n',
      'other than chunked alone',
    ],
    ['two lengths', 'Content-Length: 3\r\nContent-Length: 3\r\n', 'not one decimal number'],
    ['a length list', 'Content-Length: 3, 3\r\n', 'not one decimal number'],
    ['a signed length', 'Content-Length: +3\r\n', 'not one decimal number'],
    ['obs-fold', 'X-A: a\r\n  folded\r\n', 'obs-fold'],
    ['whitespace before a colon', 'Host : other.test\r\n', 'without a name and a colon'],
    ['a bare LF', 'X-A: a\nHost: other.test\r\n', 'bare LF'],
    ['a bare CR', 'X-A: a\rHost: other.test\r\n', 'bare CR'],
    ['a NUL in a value', 'X-A: a\x00b\r\n', 'control character'],
    ['a second Host', 'Host: allowed.test\r\n', 'more than one Host'],
    ['an upgrade to TLS', 'Upgrade: TLS/1.2\r\nConnection: Upgrade\r\n', 'Upgrade other than websocket'],
    ['an h2c offer beside another', 'Upgrade: h2c, websocket\r\nConnection: Upgrade\r\n', 'Upgrade other than'],
  ])('refuses %s', (_what, extra, detail) => {
    expect(feed([get('allowed.test', extra)]).refused?.detail).toContain(detail);
  });

  it.each([
    ['HTTP/2 prior knowledge', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'HTTP/2.0 cannot be checked'],
    ['CONNECT', 'CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n', 'a CONNECT inside the tunnel'],
    [
      'CONNECT to the tunnel name',
      'CONNECT allowed.test:8080 HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n',
      'a CONNECT inside the tunnel',
    ],
    ['HTTP/1.1 without Host', 'GET / HTTP/1.1\r\n\r\n', 'without Host'],
    ['HTTP/1.2', 'GET / HTTP/1.2\r\nHost: allowed.test\r\n\r\n', 'HTTP/1.2 cannot be checked'],
    ['a leading CRLF (servers skip it)', `\r\n\r\n${get('other.test')}`, 'Host header'],
    [
      'a head past 16 KiB',
      `GET / HTTP/1.1\r\nHost: allowed.test\r\nX-Big: ${'a'.repeat(17 * 1024)}`,
      'request head over',
    ],
    [
      'a target that is neither a path nor a URL',
      'GET other.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n',
      'neither a path',
    ],
  ])('refuses %s', (_what, stream, detail) => {
    expect(feed([stream]).refused?.detail).toContain(detail);
  });

  it('passes an HTTP/1.0 request without Host (the server picks its default site, not the client)', () => {
    expect(feed(['GET / HTTP/1.0\r\n\r\n']).refused).toBeUndefined();
  });

  it.each([
    ['SSH', 'SSH-2.0-OpenSSH_9.6\r\n'],
    ['SMTP', 'EHLO client.test\r\n'],
    ['IMAP', 'a001 LOGIN user pass\r\n'],
    ['Redis', '*1\r\n$4\r\nPING\r\n'],
    ['a binary protocol', Buffer.from([0, 0, 0, 8, 4, 0xd2, 0x16, 0x2f])],
  ])('passes %s unchecked, and everything after it', (_what, first) => {
    const rest = get('other.test');
    const r = feed([first, rest]);
    expect(r.refused).toBeUndefined();
    expect(r.forwarded).toBe(
      Buffer.concat([Buffer.from(first as string, 'latin1'), Buffer.from(rest)]).toString('latin1'),
    );
  });

  it('does not hold a short non-HTTP line waiting for more', () => {
    const checker = createRequestChecker(TUNNEL);
    expect(checker.push(Buffer.from('EHLO x\r\n'))).toEqual({ kind: 'forward', bytes: [Buffer.from('EHLO x\r\n')] });
  });

  it('refuses bytes that are not a request after a request', () => {
    expect(feed([get('allowed.test'), Buffer.from([0x16, 0x03, 0x01])]).refused?.detail).toContain(
      'not an HTTP request after a request',
    );
  });

  it('after a WebSocket upgrade, passes the frames, or checks the next request when the server declined', () => {
    const upgrade = get('allowed.test', 'Upgrade: websocket\r\nConnection: Upgrade\r\n');
    const frame = Buffer.from([0x81, 0x85, 1, 2, 3, 4, 0x69, 0x67, 0x6f, 0x68, 0x6e]);
    expect(feed([upgrade, frame, get('other.test')]).refused).toBeUndefined();
    expect(feed([upgrade, get('other.test')]).refused?.detail).toContain('Host header');
  });

  it('never throws on random and truncated input, and forwards only what a verdict covered', () => {
    let seed = 0xc0ffee;
    const next = (): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed >>> 16;
    };
    const alphabet = Buffer.from(
      'GET POST / HTTP/1.1\r\nHost: allowed.test other.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n0123456789abcdef;:\x00\x16 ',
    );
    for (let i = 0; i < 2000; i++) {
      const checker = createRequestChecker(TUNNEL);
      for (let k = next() % 6; k >= 0; k--) {
        const chunk = Buffer.from(
          Array.from({ length: next() % 64 }, () => alphabet[next() % alphabet.length] as number),
        );
        const step = checker.push(chunk);
        expect(['forward', 'refuse']).toContain(step.kind);
      }
    }
  });
});

describe('isSameAuthority', () => {
  it.each([
    ['allowed.test', 8080, true],
    ['allowed.test:8080', 443, true],
    ['allowed.test:443', 443, false],
    ['[::1]:8080', 443, false],
    ['allowed.test:', 8080, false],
    ['', 8080, false],
  ] as const)('%s (default port %i) → %s', (authority, defaultPort, same) => {
    expect(isSameAuthority(authority, TUNNEL, defaultPort)).toBe(same);
  });
  it('compares IPv6 literals in normal form', () => {
    expect(isSameAuthority('[0:0::1]:80', { host: '::1', port: 80 }, 80)).toBe(true);
  });
});
