// The SNI parser on real ClientHellos from node:tls (captured in memory: tls.connect over a Duplex that
// records what it is asked to write, so no socket is involved) and on hand-built and damaged ones.
import { Duplex } from 'node:stream';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { describe, expect, it } from 'vitest';
import {
  CLIENT_HELLO_MAX_BYTES,
  parseClientHello,
  type ClientHelloResult,
} from '../../../../src/network/host/client-hello.js';

/** The first flight node:tls writes for these options. */
function captureHello(options: ConnectionOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const wire = new Duplex({
      read() {},
      write(chunk: Buffer, _enc, done) {
        chunks.push(chunk);
        done();
        resolve(Buffer.concat(chunks));
        setImmediate(() => socket.destroy()); // the first write happens inside tls.connect()
      },
    });
    const socket = tlsConnect({ ...options, socket: wire });
    socket.on('error', () => undefined);
    setImmediate(() => chunks.length === 0 && reject(new Error('no ClientHello written')));
  });
}

function u16(n: number): number[] {
  return [(n >> 8) & 0xff, n & 0xff];
}

/** A minimal ClientHello with the given extensions, in one record (or split into `records` pieces). */
function buildHello(extensions: [number, number[]][] | undefined, records = 1): Buffer {
  const body = [0x03, 0x03, ...new Array(32).fill(7), 0, ...u16(2), 0x13, 0x01, 1, 0];
  if (extensions) {
    const ext = extensions.flatMap(([type, data]) => [...u16(type), ...u16(data.length), ...data]);
    body.push(...u16(ext.length), ...ext);
  }
  const handshake = [0x01, 0, ...u16(body.length), ...body];
  const out: number[] = [];
  const size = Math.ceil(handshake.length / records);
  for (let at = 0; at < handshake.length; at += size) {
    const part = handshake.slice(at, at + size);
    out.push(0x16, 0x03, 0x01, ...u16(part.length), ...part);
  }
  return Buffer.from(out);
}

function sni(...names: [number, string][]): [number, number[]] {
  const list = names.flatMap(([type, name]) => [type, ...u16(name.length), ...Buffer.from(name, 'latin1')]);
  return [0, [...u16(list.length), ...list]];
}

const KINDS: ClientHelloResult['kind'][] = ['incomplete', 'not-tls', 'malformed', 'client-hello'];

describe('parseClientHello on node:tls output', () => {
  it('finds the server name', async () => {
    const hello = await captureHello({ servername: 'allowed.test' });
    expect(parseClientHello(hello)).toEqual({ kind: 'client-hello', serverName: 'allowed.test' });
  });

  it('finds it with TLS 1.2 only and many cipher suites', async () => {
    const hello = await captureHello({ servername: 'Mixed.Case.test', maxVersion: 'TLSv1.2', ciphers: 'ALL' });
    expect(parseClientHello(hello)).toEqual({ kind: 'client-hello', serverName: 'Mixed.Case.test' });
  });

  it('reports no server name when the client sends none (IP-literal target)', async () => {
    const hello = await captureHello({ host: '127.0.0.1', servername: '' });
    expect(parseClientHello(hello)).toEqual({ kind: 'client-hello', serverName: undefined });
  });

  it('asks for more on every strict prefix and never throws', async () => {
    const hello = await captureHello({ servername: 'allowed.test' });
    for (let n = 0; n < hello.length; n++) {
      expect(parseClientHello(hello.subarray(0, n)).kind, `prefix of ${n} bytes`).toBe('incomplete');
    }
  });

  it('survives every single-byte corruption without throwing', async () => {
    const hello = await captureHello({ servername: 'allowed.test' });
    for (let i = 0; i < hello.length; i++) {
      for (const value of [0x00, 0xff, hello[i]! ^ 0x80]) {
        const damaged = Buffer.from(hello);
        damaged[i] = value;
        expect(KINDS).toContain(parseClientHello(damaged).kind);
      }
    }
  });

  it('survives seeded random damage without throwing', async () => {
    const hello = await captureHello({ servername: 'allowed.test' });
    let seed = 0x5eed;
    const next = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    for (let round = 0; round < 2000; round++) {
      const damaged = Buffer.from(hello.subarray(0, Math.floor(next() * (hello.length + 1))));
      for (let k = 0; k < 4; k++) damaged[Math.floor(next() * damaged.length)] = Math.floor(next() * 256);
      expect(KINDS).toContain(parseClientHello(damaged).kind);
    }
  });
});

describe('parseClientHello on built inputs', () => {
  it('reads a minimal hello, with and without extensions', () => {
    expect(parseClientHello(buildHello([sni([0, 'a.test'])]))).toEqual({ kind: 'client-hello', serverName: 'a.test' });
    expect(parseClientHello(buildHello(undefined))).toEqual({ kind: 'client-hello', serverName: undefined });
    expect(parseClientHello(buildHello([[0x2b, [2, 3, 4]]]))).toEqual({ kind: 'client-hello', serverName: undefined });
  });

  it('reassembles a hello fragmented over several records', () => {
    const hello = buildHello([[0x0a, new Array(300).fill(1)], sni([0, 'frag.test'])], 4);
    expect(parseClientHello(hello)).toEqual({ kind: 'client-hello', serverName: 'frag.test' });
    expect(parseClientHello(hello.subarray(0, hello.length - 1)).kind).toBe('incomplete');
  });

  it('ignores bytes after the hello (early data is the server’s business)', () => {
    const hello = Buffer.concat([buildHello([sni([0, 'a.test'])]), Buffer.from([0x17, 0x03, 0x03, 0x00, 0x01, 0x00])]);
    expect(parseClientHello(hello)).toEqual({ kind: 'client-hello', serverName: 'a.test' });
  });

  it('skips name types other than host_name', () => {
    expect(parseClientHello(buildHello([sni([7, 'zzz'], [0, 'b.test'])]))).toEqual({
      kind: 'client-hello',
      serverName: 'b.test',
    });
  });

  it.each([
    ['two host_names', buildHello([sni([0, 'a.test'], [0, 'b.test'])])],
    ['duplicate server_name extensions', buildHello([sni([0, 'a.test']), sni([0, 'b.test'])])],
    ['an empty server_name extension', buildHello([[0, []]])],
    ['a server_name list without host_name', buildHello([sni([7, 'zzz'])])],
    ['an empty host_name', buildHello([sni([0, ''])])],
    ['a host_name with a NUL', buildHello([sni([0, 'a.test\u0000.evil'])])],
    ['a host_name with a space', buildHello([sni([0, 'a test'])])],
    [
      'an extension running past the end',
      (() => {
        const b = buildHello([sni([0, 'a.test'])]);
        b[b.length - 9] = 0x40; // server_name extension length
        return b;
      })(),
    ],
    ['a zero-length record', Buffer.from([0x16, 0x03, 0x01, 0x00, 0x00, 0x01])],
    ['a record longer than 2^14', Buffer.from([0x16, 0x03, 0x01, 0x40, 0x01])],
    ['a handshake that is not a ClientHello', Buffer.from([0x16, 0x03, 0x01, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00])],
    ['a ClientHello claiming more than the cap', Buffer.from([0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x01, 0x00, 0x00])],
    [
      'an alert record inside the hello',
      Buffer.from([0x16, 0x03, 0x01, 0x00, 0x01, 0x01, 0x15, 0x03, 0x01, 0x00, 0x02]),
    ],
    [
      'a body shorter than its fixed fields',
      Buffer.from([0x16, 0x03, 0x01, 0x00, 0x06, 0x01, 0x00, 0x00, 0x02, 0x03, 0x03]),
    ],
  ])('refuses %s', (_name, input) => {
    expect(parseClientHello(input).kind).toBe('malformed');
  });

  it('refuses a hello not complete within the cap', () => {
    // Legal records, but the name comes only after the cap.
    const big = buildHello([[0x15, new Array(CLIENT_HELLO_MAX_BYTES).fill(0)], sni([0, 'late.test'])], 2);
    expect(big.length).toBeGreaterThan(CLIENT_HELLO_MAX_BYTES);
    expect(parseClientHello(big).kind).toBe('malformed');
    expect(parseClientHello(big.subarray(0, CLIENT_HELLO_MAX_BYTES)).kind).toBe('malformed');
    expect(parseClientHello(big, 64 * 1024)).toEqual({ kind: 'client-hello', serverName: 'late.test' });
  });

  it.each([
    ['HTTP', 'GET / HTTP/1.1\r\n'],
    ['SSH', 'SSH-2.0-OpenSSH_9.6\r\n'],
    ['0x16 without a TLS version', '\u0016\u0001'],
  ])('calls %s not TLS', (_name, text) => {
    expect(parseClientHello(Buffer.from(text, 'latin1')).kind).toBe('not-tls');
  });
});
