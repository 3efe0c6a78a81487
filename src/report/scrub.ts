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

/**
 * Credential-named variables (env/env.ts isCredentialName, `AWS_*`, `GOOGLE_*`, ...) whose value is
 * configuration, never a secret: a profile, a region, an address, a project. Their values are the
 * most common words of ordinary output (`default`, `us-east-1`): scrubbed, every file name and line
 * of code holding them would reach the model corrupted.
 */
const CONFIGURATION_NAME =
  /_(?:DEFAULT_)?(?:PROFILE|REGION|ZONE|LOCATION|ADDR|ADDRESS|HOST|PORT|ENDPOINT|ENDPOINT_URL|PROJECT|PROJECT_ID|PROJECT_NUMBER|ACCOUNT|ACCOUNT_ID|NAMESPACE|ENV|ENVIRONMENT|OUTPUT|FORMAT|PAGER|USER|USERNAME|ROLE_ARN|ROLE_SESSION_NAME|CONFIG_FILE|SHARED_CREDENTIALS_FILE|CA_BUNDLE|CACERT|SDK_LOAD_CONFIG|MODE|VERSION|TIMEOUT|RETRY_MODE|MAX_ATTEMPTS|SKIP_VERIFY)$/i;

/**
 * What of a credential variable's value could be a secret: the password of a URL's userinfo
 * (`DATABASE_URL=postgres://app:PASSWORD@db/app`); nothing of an address, a path, a number, a boolean
 * or a short name (`default`, `us-east-1`, `prod_eu`); otherwise the whole value.
 */
export function secretPartsOf(value: string): string[] {
  const userinfo = /^[a-z][a-z0-9+.-]*:\/\/([^\s/@]*)@/i.exec(value);
  if (userinfo) {
    const password = userinfo[1]!.split(':').slice(1).join(':');
    return password ? [password] : [];
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value) || /^(?:\/|~\/|\.\.?\/)/.test(value)) return [];
  if (/^\d+(?:\.\d+)*$/.test(value) || /^(?:true|false|yes|no|on|off)$/i.test(value)) return [];
  if (value.length < 20 && /^[a-z]+(?:[-_.][a-z0-9]+)*$/.test(value)) return [];
  return [value];
}

/**
 * The exact values captured output must not show: every secret the profile injected and every
 * `credentials` value, whatever they look like (the user said so), and of the invoking environment's credential-named variables
 * (`credentials`, already dropped from the sandbox by name) what could be a secret.
 */
export function scrubbedValues(credentials: Readonly<Record<string, string>>, injected: readonly string[]): string[] {
  const fromHost = Object.entries(credentials)
    .filter(([name]) => !CONFIGURATION_NAME.test(name))
    .flatMap(([, value]) => secretPartsOf(value));
  return [...injected, ...fromHost];
}

/** The rules in the order they run (the order `hits` lists them). */
const RULE_ORDER = ['secret.value', ...PATTERN_RULES.map((r) => r.rule)];

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

/** The smallest start ≥ `from` that does not begin inside a UTF-8 character (at most 3 bytes on; past the end, the end). */
function utf8StartIndex(buf: Uint8Array, from: number): number {
  const isContinuation = (i: number) => (buf[i]! & 0xc0) === 0x80;
  for (let start = Math.max(0, from); start <= from + 3; start++) {
    if (start >= buf.length || !isContinuation(start)) return Math.min(start, buf.length);
  }
  return Math.max(0, from);
}

/**
 * Kept past each cut while scrubbing. Cutting first would leave the part of a secret that straddles
 * the cut, too short for its rule; scrubbing everything would cost time and memory on runaway
 * output. So: cut at the bound plus this slack, scrub, then cut at the bound. Longer secrets that
 * straddle a cut are caught only if their rule fires on the part kept (a private key block without
 * its END does).
 */
const SCRUB_SLACK_BYTES = 1024;

/** The markers of `text` that reach into [from, to) (string offsets), counted by rule in rule order. */
function hitsWithin(text: string, from: number, to: number): ScrubResult['hits'] {
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/\[REDACTED:([a-z0-9.-]+)\]/g))
    if (m.index < to && m.index + m[0].length > from) counts.set(m[1]!, (counts.get(m[1]!) ?? 0) + 1);
  return RULE_ORDER.flatMap((rule) => (counts.has(rule) ? [{ rule, count: counts.get(rule)! }] : []));
}

/**
 * The scrubbed text of `buf`'s first `limitBytes`, never splitting a character, and the redactions
 * it shows (a marker the cut split counts: the value behind it is hidden there).
 */
function scrubbedHead(buf: Buffer, limitBytes: number, opts: ScrubOptions) {
  const slackEnd = utf8CutIndex(buf, limitBytes + SCRUB_SLACK_BYTES);
  const { text } = scrubText(buf.subarray(0, slackEnd).toString('utf8'), opts);
  const bytes = Buffer.from(text, 'utf8');
  const shown = bytes.subarray(0, utf8CutIndex(bytes, limitBytes)).toString('utf8');
  return { text: shown, hits: hitsWithin(text, 0, shown.length) };
}

/** The scrubbed text of `buf`'s last `limitBytes`, never splitting a character, and the redactions it shows. */
function scrubbedTail(buf: Buffer, limitBytes: number, opts: ScrubOptions) {
  const slackStart = utf8StartIndex(buf, buf.length - limitBytes - SCRUB_SLACK_BYTES);
  const { text } = scrubText(buf.subarray(slackStart).toString('utf8'), opts);
  const bytes = Buffer.from(text, 'utf8');
  const shown = bytes.subarray(utf8StartIndex(bytes, bytes.length - limitBytes)).toString('utf8');
  return { text: shown, hits: hitsWithin(text, text.length - shown.length, text.length) };
}

function mergedHits(...lists: ScrubResult['hits'][]): ScrubResult['hits'] {
  const counts = new Map<string, number>();
  for (const list of lists) for (const { rule, count } of list) counts.set(rule, (counts.get(rule) ?? 0) + count);
  return RULE_ORDER.flatMap((rule) => (counts.has(rule) ? [{ rule, count: counts.get(rule)! }] : []));
}

/** The end of a stream: what `head` holds past `total - tail.length` when it holds it all, else `tail`. */
export interface StreamEnd {
  /** The last bytes the stream carried (backend/host/exec.ts keeps them past its head). */
  tail?: Buffer;
}

/**
 * Captured output as an agent may see it, scrubbed and within `limitBytes`. A stream that fits is
 * kept whole. A longer one keeps its head and its tail, half the bound each, with one marker line
 * where the middle was cut: a build's first error is at its head, a test run's failures and summary
 * at its end. `head` is the stream's kept head, `total` what it carried in all, `end.tail` its last
 * bytes when the head did not hold them. `droppedBytes`: the bytes the stream carried that the text
 * does not show.
 */
export function scrubCapture(
  head: Buffer,
  limitBytes: number,
  opts: ScrubOptions,
  total = head.length,
  end: StreamEnd = {},
): ScrubResult & { droppedBytes: number } {
  // A stream within the bound is shown whole: its markers may make the text a little longer.
  if (total <= limitBytes && head.length === total)
    return { ...scrubText(head.toString('utf8'), opts), droppedBytes: 0 };
  const headLimit = Math.floor(limitBytes / 2);
  const tailLimit = limitBytes - headLimit;
  const first = scrubbedHead(head, headLimit, opts);
  const source = end.tail ?? head;
  const last = scrubbedTail(source, tailLimit, opts);
  const droppedBytes = Math.max(0, total - Buffer.byteLength(first.text) - Buffer.byteLength(last.text));
  return {
    text: withCutMarker(first.text, droppedBytes, last.text),
    hits: mergedHits(first.hits, last.hits),
    droppedBytes,
  };
}

/** The head, one marker line saying how much was cut there, and the tail. */
function withCutMarker(head: string, droppedBytes: number, tail: string): string {
  const newline = head === '' || head.endsWith('\n') ? '' : '\n';
  return `${head}${newline}[sbx: ${droppedBytes} bytes cut here]\n${tail}`;
}
