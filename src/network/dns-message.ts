// The DNS messages sbx's resolver reads and writes inside the sandbox (docs/DESIGN.md, "Transparent
// capture"): one question in, one answer out (RFC 1035 §4.1). Pure and bounds-checked: the bytes come
// from the sandbox, so every length is checked against what is left before it is used, a name is read
// in one forward pass (compression pointers, needless in a query, are refused: no pointer loops), and
// no input makes parseDnsQuery throw.

export const DNS_TYPE_A = 1;
export const DNS_TYPE_AAAA = 28;
const CLASS_IN = 1;

/** The largest query sbx reads; RFC 1035 allows 65535 over TCP, a real query is a few hundred bytes. */
export const MAX_DNS_QUERY_BYTES = 4096;

const HEADER_BYTES = 12;
const MAX_NAME_WIRE_BYTES = 255; // RFC 1035 §2.3.4
const MAX_LABEL_BYTES = 63;

const FLAG_QR = 0x8000;
const FLAG_RD = 0x0100;
const FLAG_RA = 0x0080;

/** RFC 1035 §4.1.1 response codes. */
const RCODE = { noerror: 0, formerr: 1, servfail: 2, nxdomain: 3, notimp: 4, refused: 5 } as const;

export interface DnsQuery {
  id: number;
  recursionDesired: boolean;
  /** Presentation form as sent (labels joined by dots, no trailing dot; the root is ''). Not normalised. */
  name: string;
  type: number;
  /** Only IN is answered; other classes are refused. */
  class: number;
  /** The question section as sent (name, type, class), echoed in the answer. */
  question: Uint8Array;
}

export type DnsParse =
  | { kind: 'query'; query: DnsQuery }
  /** Opcode other than QUERY (0): answered NOTIMP. */
  | { kind: 'unsupported'; id: number; reason: string }
  /** `id` is undefined when not even the header's first two bytes arrived. */
  | { kind: 'malformed'; id: number | undefined; reason: string };

export type DnsAnswer =
  | { kind: 'address'; address: string; ttlSeconds: number }
  /** The name exists, with no record of the type asked (AAAA, MX, ...): NOERROR, no answers. */
  | { kind: 'no-data' }
  | { kind: 'nxdomain' }
  | { kind: 'servfail' }
  | { kind: 'refused' };

function u16(bytes: Uint8Array, at: number): number {
  return ((bytes[at] as number) << 8) | (bytes[at + 1] as number);
}

/** A label byte that prints and cannot be confused with the dot between labels. */
function isLabelByte(b: number): boolean {
  return b > 0x20 && b < 0x7f && b !== 0x2e;
}

/** The name at `at` and where it ends, or why it is malformed. */
function readName(bytes: Uint8Array, at: number): { name: string; end: number } | { error: string } {
  const labels: string[] = [];
  let pos = at;
  for (;;) {
    if (pos >= bytes.length) return { error: 'truncated name' };
    const length = bytes[pos] as number;
    if (length === 0) {
      pos++;
      break;
    }
    if (length > MAX_LABEL_BYTES) return { error: length >= 0xc0 ? 'compressed name in a query' : 'bad label length' };
    if (pos + 1 + length > bytes.length) return { error: 'truncated name' };
    const label = bytes.subarray(pos + 1, pos + 1 + length);
    if (!label.every(isLabelByte)) return { error: 'name with a byte that is not printable ASCII, or a dot' };
    labels.push(String.fromCharCode(...label));
    pos += 1 + length;
    if (pos - at > MAX_NAME_WIRE_BYTES) return { error: 'name longer than 255 bytes' };
  }
  if (pos - at > MAX_NAME_WIRE_BYTES) return { error: 'name longer than 255 bytes' };
  return { name: labels.join('.'), end: pos };
}

/**
 * One DNS message as a client sends it. Header checks: a query (QR 0), one question, no answer or
 * authority records; the additional section (an EDNS OPT record) is ignored, as is anything after
 * the question.
 */
export function parseDnsQuery(bytes: Uint8Array): DnsParse {
  if (bytes.length < 2) return { kind: 'malformed', id: undefined, reason: 'shorter than a header' };
  const id = u16(bytes, 0);
  if (bytes.length < HEADER_BYTES) return { kind: 'malformed', id, reason: 'shorter than a header' };
  if (bytes.length > MAX_DNS_QUERY_BYTES) return { kind: 'malformed', id, reason: 'longer than a query' };
  const flags = u16(bytes, 2);
  if (flags & FLAG_QR) return { kind: 'malformed', id, reason: 'a response, not a query' };
  const opcode = (flags >> 11) & 0xf;
  if (opcode !== 0) return { kind: 'unsupported', id, reason: `opcode ${opcode}` };
  if (u16(bytes, 4) !== 1) return { kind: 'malformed', id, reason: 'not exactly one question' };
  if (u16(bytes, 6) !== 0 || u16(bytes, 8) !== 0) return { kind: 'malformed', id, reason: 'records in a query' };
  const name = readName(bytes, HEADER_BYTES);
  if ('error' in name) return { kind: 'malformed', id, reason: name.error };
  if (name.end + 4 > bytes.length) return { kind: 'malformed', id, reason: 'truncated question' };
  return {
    kind: 'query',
    query: {
      id,
      recursionDesired: (flags & FLAG_RD) !== 0,
      name: name.name,
      type: u16(bytes, name.end),
      class: u16(bytes, name.end + 2),
      question: bytes.slice(HEADER_BYTES, name.end + 4),
    },
  };
}

function header(id: number, recursionDesired: boolean, rcode: number, questions: number, answers: number): Buffer {
  const out = Buffer.alloc(HEADER_BYTES);
  out.writeUInt16BE(id, 0);
  out.writeUInt16BE(FLAG_QR | (recursionDesired ? FLAG_RD : 0) | FLAG_RA | rcode, 2);
  out.writeUInt16BE(questions, 4);
  out.writeUInt16BE(answers, 6);
  return out;
}

/** An A record for the question's name: a pointer to it (offset 12), IN, the TTL, four bytes. */
function addressRecord(address: string, ttlSeconds: number): Buffer {
  const octets = address.split('.').map(Number);
  if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o) || o < 0 || o > 255))
    throw new RangeError(`not an IPv4 address: ${address}`);
  const out = Buffer.alloc(16);
  out.writeUInt16BE(0xc000 | HEADER_BYTES, 0);
  out.writeUInt16BE(DNS_TYPE_A, 2);
  out.writeUInt16BE(CLASS_IN, 4);
  out.writeUInt32BE(ttlSeconds, 6);
  out.writeUInt16BE(4, 10);
  Buffer.from(octets).copy(out, 12);
  return out;
}

/** The response to a parsed query. An `address` answer to a question that is not A/IN is a caller's bug. */
export function dnsResponse(query: DnsQuery, answer: DnsAnswer): Buffer {
  const question = Buffer.from(query.question);
  const rd = query.recursionDesired;
  switch (answer.kind) {
    case 'address':
      if (query.type !== DNS_TYPE_A || query.class !== CLASS_IN) throw new RangeError('an A record answers only A/IN');
      return Buffer.concat([
        header(query.id, rd, RCODE.noerror, 1, 1),
        question,
        addressRecord(answer.address, answer.ttlSeconds),
      ]);
    case 'no-data':
      return Buffer.concat([header(query.id, rd, RCODE.noerror, 1, 0), question]);
    case 'nxdomain':
      return Buffer.concat([header(query.id, rd, RCODE.nxdomain, 1, 0), question]);
    case 'servfail':
      return Buffer.concat([header(query.id, rd, RCODE.servfail, 1, 0), question]);
    case 'refused':
      return Buffer.concat([header(query.id, rd, RCODE.refused, 1, 0), question]);
  }
}

/** The answer to a message that did not parse as a query: FORMERR (malformed) or NOTIMP (another opcode), no question. */
export function dnsErrorResponse(id: number, kind: 'formerr' | 'notimp'): Buffer {
  return header(id, false, RCODE[kind], 0, 0);
}

/** Whether a query's class is the Internet's: the only one sbx answers. */
export function isInternetClass(query: DnsQuery): boolean {
  return query.class === CLASS_IN;
}
