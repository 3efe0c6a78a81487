// The placeholder a credential's variable holds inside the sandbox: random per run, never the value,
// and shaped like it where clients look (a known prefix kept, the same alphabet, at least the same
// length), so that a client checking `ghp_` or a hex length accepts it. Pure: the randomness is the
// caller's (`pick`, network/host/credential-broker.ts passes crypto.randomInt).

/**
 * Token prefixes clients and servers recognise a kind by: GitHub (fine-grained first), GitLab,
 * Anthropic, OpenAI, Slack, npm, PyPI, Hugging Face, AWS access key ids, DigitalOcean, Stripe.
 * Longest first, so `github_pat_` wins over nothing and `sk-ant-` over `sk-`.
 */
const KNOWN_PREFIXES: readonly string[] = [
  'github_pat_',
  'ghp_',
  'gho_',
  'ghu_',
  'ghs_',
  'ghr_',
  'glpat-',
  'sk-ant-',
  'sk-proj-',
  'sk_live_',
  'sk_test_',
  'sk-',
  'xoxb-',
  'xoxp-',
  'xapp-',
  'npm_',
  'pypi-',
  'hf_',
  'AKIA',
  'ASIA',
  'dop_v1_',
].sort((a, b) => b.length - a.length);

/** Alphabets from narrowest to widest: the placeholder's random characters come from the first that holds the value's. */
const ALPHABETS: readonly string[] = [
  '0123456789',
  '0123456789abcdef',
  '0123456789ABCDEF',
  '0123456789abcdefghijklmnopqrstuvwxyz',
  '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ',
  '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',
];
const ALNUM = ALPHABETS[ALPHABETS.length - 1] as string;

/**
 * At least this many random characters: 24 alphanumerics are 142 bits, 24 digits 79. A short value
 * gets a longer placeholder rather than one that could turn up in a request by chance (which the
 * proxy would then refuse as a leak).
 */
export const MIN_RANDOM_CHARS = 24;

/** The known prefix `value` starts with, or ''. */
export function knownPrefix(value: string): string {
  return KNOWN_PREFIXES.find((p) => value.startsWith(p)) ?? '';
}

/**
 * A placeholder for `value`. Characters of the value's alphabet become random ones of it; others
 * (`-`, `_`, `.`, `=`) keep their place, so the structure a client may parse survives. `pick(n)` is
 * a uniform random integer in [0, n).
 */
export function placeholderFor(value: string, pick: (n: number) => number): string {
  const prefix = knownPrefix(value);
  const body = value.slice(prefix.length);
  const alphabet = ALPHABETS.find((a) => [...body].every((c) => a.includes(c))) ?? ALNUM;
  const random = () => alphabet[pick(alphabet.length)] as string;
  for (;;) {
    let randomChars = 0;
    let out = prefix;
    for (const c of body) {
      if (alphabet.includes(c)) {
        out += random();
        randomChars++;
      } else out += c;
    }
    for (; randomChars < MIN_RANDOM_CHARS; randomChars++) out += random();
    // Only a pick that repeats the value's characters exactly could make it: never hand that out.
    if (out !== value) return out;
  }
}
