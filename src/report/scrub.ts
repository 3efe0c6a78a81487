// Redaction of a sandboxed command's captured output before an agent (or a log) sees it
// (README "JSON report", captured): exact values first, then token shapes, keyword assignments and, last,
// unlabelled high-entropy strings. A net for accidents (a build that echoes its env, a test that
// prints a key), not a boundary: a command that wants to exfiltrate can encode. Pure: text in, text out.
//
// Each match becomes `[REDACTED:<rule>]`. Rules run in order over the output of the one before, and
// none of them matches inside a marker, so a value is redacted, and counted, once.

export interface ScrubOptions {
  /** Exact values: injected secrets and credential env values seen on the host. */
  secrets: readonly string[];
}

export interface ScrubResult {
  text: string;
  /** Rules that fired, in rule order, with how many matches each redacted. */
  hits: { rule: string; count: number }[];
}

/** Shorter values would redact ordinary words and numbers all over the output. */
const MIN_SECRET_LENGTH = 6;
const MARKER_START = '[REDACTED:';
const marker = (rule: string) => `${MARKER_START}${rule}]`;

interface PatternRule {
  rule: string;
  re: RegExp;
  /** The replacement, or undefined to keep the match (not counted). Whole match redacted if absent. */
  redact?: (match: string, groups: (string | undefined)[], offset: number, text: string) => string | undefined;
}

// Shannon entropy of random base62 is ~5.3 bits/char at 32 chars; English words, paths and
// identifiers sit around 3.5 to 4.4. Hex is at most 4 bits/char.
const MIN_ENTROPY_BITS = 4.0;
// Random strings interleave digits and letters (at 32 chars, 96% of random base62 strings have 3 or
// more such adjacencies); paths and identifiers with high letter entropy rarely do
// (UserServiceImpl2Test, x86_64-linux-gnu: fewer than 3).
const MIN_LETTER_DIGIT_ADJACENCIES = 3;

function entropyBitsPerChar(token: string): number {
  const counts = new Map<string, number>();
  for (const ch of token) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) {
    const p = n / token.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

function letterDigitAdjacencies(token: string): number {
  // 1 letter, 2 digit, 0 anything else: a pair summing to 3 is a letter beside a digit.
  const kind = (code: number) => (code >= 48 && code <= 57 ? 2 : (code | 0x20) >= 97 && (code | 0x20) <= 122 ? 1 : 0);
  let count = 0;
  for (let i = 1; i < token.length; i++) {
    if (kind(token.charCodeAt(i - 1)) + kind(token.charCodeAt(i)) === 3) count++;
  }
  return count;
}

/**
 * Whether a high-entropy candidate is a digest, which build output is full of and which is no
 * secret: hex of any length (git commit ids, sha256 digests; also UUIDs), Subresource Integrity
 * (sha512-…, npm) and Go module sums (h1:…).
 */
function isDigest(token: string, offset: number, text: string): boolean {
  return (
    /^[0-9A-Fa-f-]+$/.test(token) ||
    /^sha(?:1|256|384|512)-/.test(token) ||
    (offset >= 3 && text.slice(offset - 3, offset) === 'h1:')
  );
}

/** Redacts only the value of a `name = value` match: groups are the prefix, then one value group per quoting. */
function redactKeywordValue(
  _match: string,
  [prefix, doubleQuoted, singleQuoted, bare]: (string | undefined)[],
): string | undefined {
  const value = doubleQuoted ?? singleQuoted ?? bare ?? '';
  if (value === '' || value.startsWith(MARKER_START)) return undefined;
  const quote = doubleQuoted !== undefined ? '"' : singleQuoted !== undefined ? "'" : '';
  return `${prefix}${quote}${marker('pattern.keyword')}${quote}`;
}

// A value: double-quoted, single-quoted, or bare up to whitespace.
const VALUE = String.raw`(?:"([^"\n]*)"|'([^'\n]*)'|([^\s"']\S*))`;

const PATTERN_RULES: readonly PatternRule[] = [
  // PEM and OpenSSH private keys, PGP private key blocks. With no END line (output cut, or a key
  // longer than what was kept) everything from BEGIN on goes: fail closed.
  {
    rule: 'pattern.private-key',
    re: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*$)/g,
  },
  // Header and payload are base64url JSON objects, so both start with eyJ ('{"'). Unsigned tokens
  // (alg none) have an empty signature and are still bearer credentials.
  { rule: 'pattern.jwt', re: /\beyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g },
  { rule: 'pattern.aws-access-key-id', re: /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g },
  { rule: 'pattern.github-token', re: /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b/g },
  { rule: 'pattern.slack-token', re: /\bxox[abprs]-[A-Za-z0-9-]{10,}/g },
  // Before the OpenAI shape, which would also match it.
  { rule: 'pattern.anthropic-key', re: /\bsk-ant-[A-Za-z0-9_-]{20,}/g },
  // A digit is required: slugs like sk-learn-compatible-estimators are not keys; a random key of 20+
  // base62 characters lacks a digit with probability under 3%.
  { rule: 'pattern.openai-key', re: /\bsk-(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}/g },
  { rule: 'pattern.google-api-key', re: /\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/g },
  // scheme://user:password@host, as in git remotes (https://x-access-token:…@github.com).
  {
    rule: 'pattern.url-credentials',
    re: /\b([a-z][a-z0-9+.-]*:\/\/[^\s:@/]+:)((?!\[REDACTED:)[^\s@/]+)(?=@)/gi,
    redact: (_match, [prefix]) => `${prefix}${marker('pattern.url-credentials')}`,
  },
  {
    rule: 'pattern.authorization',
    re: /(\b(?:proxy-)?authorization["']?[ \t]*[:=][ \t]*["']?(?:bearer|basic|token)[ \t]+)(?!\[REDACTED:)[^\s"']+/gi,
    redact: (_match, [prefix]) => `${prefix}${marker('pattern.authorization')}`,
  },
  // password=…, "client_secret": "…", API_KEY: …, AWS_SECRET_ACCESS_KEY=…: the value only. `[ \t]`,
  // not `\s`: a key at the end of a line (YAML `password:` then a nested map) has no value here.
  {
    rule: 'pattern.keyword',
    re: new RegExp(
      String.raw`((?:password|passwd|passphrase|secret|token|api[_-]?key)(?:[_-]?(?:access[_-]?)?key)?["']?[ \t]*[:=][ \t]*)${VALUE}`,
      'gi',
    ),
    redact: redactKeywordValue,
  },
  {
    rule: 'pattern.high-entropy',
    re: /[A-Za-z0-9+/=_-]{32,}/g,
    redact: (token, _groups, offset, text) =>
      isDigest(token, offset, text) ||
      letterDigitAdjacencies(token) < MIN_LETTER_DIGIT_ADJACENCIES ||
      entropyBitsPerChar(token) < MIN_ENTROPY_BITS
        ? undefined
        : marker('pattern.high-entropy'),
  },
];

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Exact values as one alternation, longest first so a secret containing another goes whole. */
function secretValuesRule(secrets: readonly string[]): PatternRule | undefined {
  const values = [...new Set(secrets)].filter((s) => s.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
  if (values.length === 0) return undefined;
  return { rule: 'secret.value', re: new RegExp(values.map(escapeRegExp).join('|'), 'g') };
}

function applyRule(text: string, { rule, re, redact }: PatternRule): { text: string; count: number } {
  let count = 0;
  const out = text.replace(re, (match: string, ...rest: unknown[]) => {
    // replace() passes the groups, then the offset, then the whole string (no named groups here).
    const whole = rest[rest.length - 1] as string;
    const offset = rest[rest.length - 2] as number;
    const groups = rest.slice(0, -2) as (string | undefined)[];
    const replacement = redact ? redact(match, groups, offset, whole) : marker(rule);
    if (replacement === undefined) return match;
    count++;
    return replacement;
  });
  return { text: out, count };
}

export function scrubText(text: string, opts: ScrubOptions): ScrubResult {
  const secretRule = secretValuesRule(opts.secrets);
  const rules = secretRule ? [secretRule, ...PATTERN_RULES] : PATTERN_RULES;
  const hits: ScrubResult['hits'] = [];
  let current = text;
  for (const rule of rules) {
    const result = applyRule(current, rule);
    current = result.text;
    if (result.count > 0) hits.push({ rule: rule.rule, count: result.count });
  }
  return { text: current, hits };
}

/**
 * The largest cut ≤ limit that does not split a UTF-8 character: if the byte at the cut is a
 * continuation byte (10xxxxxx), step back to the lead byte of its character (at most 3 bytes; a
 * longer run is not UTF-8, and is cut at the limit).
 */
function utf8CutIndex(buf: Uint8Array, limitBytes: number): number {
  if (limitBytes >= buf.length) return buf.length;
  const isContinuation = (i: number) => (buf[i]! & 0xc0) === 0x80;
  for (let cut = limitBytes; cut >= 0 && cut >= limitBytes - 3; cut--) {
    if (!isContinuation(cut)) return cut;
  }
  return limitBytes;
}

function withDropMarker(text: string, droppedBytes: number): string {
  const newline = text === '' || text.endsWith('\n') ? '' : '\n';
  return `${text}${newline}[sbx: ${droppedBytes} bytes dropped]\n`;
}

/** The first `limitBytes` of `buf` as text, never splitting a character, and a marker line when cut. */
export function boundCapture(buf: Buffer, limitBytes: number): { text: string; droppedBytes: number } {
  const end = utf8CutIndex(buf, limitBytes);
  const text = buf.subarray(0, end).toString('utf8');
  if (end === buf.length) return { text, droppedBytes: 0 };
  return { text: withDropMarker(text, buf.length - end), droppedBytes: buf.length - end };
}

/**
 * Kept past the limit while scrubbing. Cutting first would leave the head of a secret that straddles
 * the cut, too short for its rule; scrubbing everything would cost time and memory on runaway
 * output. So: cut at limit + slack, scrub, then cut at the limit. Longer secrets that straddle the
 * cut are caught only if their rule fires on the head (a private key block without its END does).
 */
const SCRUB_SLACK_BYTES = 1024;

/**
 * Captured output as an agent may see it: bounded to `limitBytes` (UTF-8 safe, marker line when
 * cut) and scrubbed. `droppedBytes` counts the raw bytes past limit + slack plus the scrubbed bytes
 * past the limit.
 */
export function scrubCapture(
  buf: Buffer,
  limitBytes: number,
  opts: ScrubOptions,
  totalBytes = buf.length,
): ScrubResult & { droppedBytes: number } {
  const slackEnd = utf8CutIndex(buf, limitBytes + SCRUB_SLACK_BYTES);
  const scrubbed = scrubText(buf.subarray(0, slackEnd).toString('utf8'), opts);
  const bytes = Buffer.from(scrubbed.text, 'utf8');
  const end = utf8CutIndex(bytes, limitBytes);
  // totalBytes: what the stream carried, when only its head was kept.
  const droppedBytes = totalBytes - slackEnd + (bytes.length - end);
  const text = bytes.subarray(0, end).toString('utf8');
  return { text: droppedBytes === 0 ? text : withDropMarker(text, droppedBytes), hits: scrubbed.hits, droppedBytes };
}
