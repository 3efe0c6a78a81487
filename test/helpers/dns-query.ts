// DNS queries as a client writes them (RFC 1035 §4.1), for the tests of sbx's DNS codec and server.
export const QUERY_ID = 0x1234;

export interface QueryOptions {
  id?: number;
  /** Header flags; default 0x0100 (RD), as glibc sends. */
  flags?: number;
  /** QDCOUNT, ANCOUNT, NSCOUNT, ARCOUNT. */
  counts?: number[];
  cls?: number;
  /** Append an EDNS0 OPT record (ARCOUNT 1), as Go's resolver and glibc with `edns0` do. */
  opt?: boolean;
}

export function dnsQuery(name: string, type: number, opts: QueryOptions = {}): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt16BE(opts.id ?? QUERY_ID, 0);
  head.writeUInt16BE(opts.flags ?? 0x0100, 2);
  const counts = opts.counts ?? [1, 0, 0, opts.opt ? 1 : 0];
  for (const [i, c] of counts.entries()) head.writeUInt16BE(c, 4 + 2 * i);
  const labels = name === '' ? [] : name.split('.');
  const qname = Buffer.concat([
    ...labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')])),
    Buffer.from([0]),
  ]);
  const tail = Buffer.alloc(4);
  tail.writeUInt16BE(type, 0);
  tail.writeUInt16BE(opts.cls ?? 1, 2);
  const opt = opts.opt ? Buffer.from([0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]) : Buffer.alloc(0);
  return Buffer.concat([head, qname, tail, opt]);
}

/** What a test reads back from a response: the rcode and the A records' addresses. */
export function readDnsResponse(bytes: Buffer): { id: number; rcode: number; addresses: string[] } {
  const rcode = bytes.readUInt16BE(2) & 0xf;
  const questions = bytes.readUInt16BE(4);
  const answers = bytes.readUInt16BE(6);
  let at = 12;
  for (let q = 0; q < questions; q++) {
    while (bytes[at] !== 0) at += 1 + (bytes[at] as number);
    at += 5;
  }
  const addresses: string[] = [];
  for (let a = 0; a < answers; a++) {
    at += 2; // the name pointer
    const type = bytes.readUInt16BE(at);
    const length = bytes.readUInt16BE(at + 8);
    if (type === 1) addresses.push([...bytes.subarray(at + 10, at + 14)].join('.'));
    at += 10 + length;
  }
  return { id: bytes.readUInt16BE(0), rcode, addresses };
}
