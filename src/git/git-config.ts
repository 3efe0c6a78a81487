// A repository's .git/config as the sandbox sees it: everything git needs to work (user.name and
// user.email for commits, core, branches, remotes and their refspecs) minus what authenticates:
// userinfo in URLs (https://x-access-token:TOKEN@host), credential helpers, auth headers, and keys
// named like a credential. Pure: text in, text out. Parsed as git's config.c does (sections,
// subsections, quoting, escapes, comments, backslash continuations); a line it cannot parse is
// dropped, never passed on (fail closed).

export interface SanitizedGitConfig {
  text: string;
  /** What was removed or rewritten, as `section[.subsection].key` names (never values). */
  removed: string[];
}

const HEADER =
  "# sbx: this repository's config with credentials removed (URL userinfo, credential helpers, auth headers)\n";

/** Keys whose values authenticate: any section, any subsection. */
const CREDENTIAL_KEY = /pass|token|secret|extraheader|credential/i;
/** Sections that exist only to authenticate. */
const CREDENTIAL_SECTIONS = new Set(['credential']);

/**
 * A URL without its credential: for a scheme other than ssh the whole userinfo goes (a token may be
 * the user name: https://TOKEN@github.com); ssh keeps its user (ssh://git@host authenticates by
 * key) and loses only a password. scp-like `user@host:path` has no password field and is kept.
 * Undefined when there is nothing to remove.
 */
export function stripUrlUserinfo(value: string): string | undefined {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/s.exec(value);
  if (!m) return undefined;
  const [, scheme, authority, rest] = m as unknown as [string, string, string, string];
  const at = authority.lastIndexOf('@');
  if (at < 0) return undefined;
  const userinfo = authority.slice(0, at);
  const host = authority.slice(at + 1);
  if (/^(?:ssh|git\+ssh|ssh\+git)$/i.test(scheme)) {
    const colon = userinfo.indexOf(':');
    return colon < 0 ? undefined : `${scheme}://${userinfo.slice(0, colon)}@${host}${rest}`;
  }
  return `${scheme}://${host}${rest}`;
}

interface Cursor {
  text: string;
  at: number;
}

const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\r';

function skipSpaces(c: Cursor): void {
  while (isSpace(c.text[c.at])) c.at++;
}

/** Past the end of the current line (its newline included). */
function skipLine(c: Cursor): void {
  const nl = c.text.indexOf('\n', c.at);
  c.at = nl < 0 ? c.text.length : nl + 1;
}

class ParseError extends Error {}

/** `[name]`, `[name "sub"]` or the legacy `[name.sub]`; the cursor is on `[`. */
function parseHeader(c: Cursor): { name: string; sub: string | undefined } {
  const nl = c.text.indexOf('\n', c.at);
  const line = c.text.slice(c.at, nl < 0 ? undefined : nl);
  const close = /^\[\s*([A-Za-z0-9.-]+)\s*(?:"((?:[^"\\\n]|\\.)*)"\s*)?\]/.exec(line);
  if (!close) throw new ParseError('bad section header');
  c.at += close[0].length;
  const [, rawName, quoted] = close as unknown as [string, string, string | undefined];
  if (quoted !== undefined) return { name: rawName.toLowerCase(), sub: quoted.replace(/\\(.)/g, '$1') };
  const dot = rawName.indexOf('.');
  if (dot < 0) return { name: rawName.toLowerCase(), sub: undefined };
  return { name: rawName.slice(0, dot).toLowerCase(), sub: rawName.slice(dot + 1).toLowerCase() };
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', b: '\b', '"': '"', '\\': '\\' };

/** A value as git reads it (config.c parse_value); the cursor ends past its line. */
function parseValue(c: Cursor): string {
  skipSpaces(c);
  let out = '';
  let quoted = false;
  let spaces = 0;
  for (;;) {
    const ch = c.text[c.at];
    if (ch === undefined || ch === '\n') {
      if (quoted) throw new ParseError('unterminated quote');
      if (ch === '\n') c.at++;
      return out;
    }
    if (!quoted && (ch === '#' || ch === ';')) {
      skipLine(c);
      return out;
    }
    c.at++;
    if (ch === '\\') {
      const next = c.text[c.at];
      if (next === '\n') {
        c.at++;
        continue;
      }
      if (next === '\r' && c.text[c.at + 1] === '\n') {
        c.at += 2;
        continue;
      }
      const mapped = next === undefined ? undefined : ESCAPES[next];
      if (mapped === undefined) throw new ParseError('bad escape');
      c.at++;
      out += ' '.repeat(spaces) + mapped;
      spaces = 0;
    } else if (ch === '"') {
      quoted = !quoted;
    } else if (!quoted && isSpace(ch)) {
      if (out.length > 0) spaces++;
    } else {
      out += ' '.repeat(spaces) + ch;
      spaces = 0;
    }
  }
}

/** A value written so git reads it back unchanged. */
function quoteValue(value: string): string {
  const escaped = value.replace(/[\\"]/g, '\\$&').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\x08/g, '\\b');
  return /^\s|\s$|[#;]/.test(value) || escaped !== value ? `"${escaped}"` : value;
}

function quoteSubsection(sub: string): string {
  return `"${sub.replace(/[\\"]/g, '\\$&')}"`;
}

/** A subsection naming a URL that carries userinfo (`[url "https://TOKEN@host/"]`, `[http "…"]`). */
export const carriesUserinfo = (sub: string | undefined) =>
  sub !== undefined && stripUrlUserinfo(sub) !== undefined && !/^(?:ssh|git\+ssh|ssh\+git):/i.test(sub);

/** Past a line and the lines its trailing backslashes continue it onto. */
function skipLogicalLine(c: Cursor): void {
  for (;;) {
    const nl = c.text.indexOf('\n', c.at);
    if (nl < 0) {
      c.at = c.text.length;
      return;
    }
    const continued = /\\\r?$/.test(c.text.slice(c.at, nl));
    c.at = nl + 1;
    if (!continued) return;
  }
}

/** One step of a config file as git reads it: a section header, a key (value undefined: a bare boolean), or a line git would refuse. */
export type GitConfigEvent =
  | { kind: 'section'; name: string; sub: string | undefined }
  | { kind: 'key'; key: string; value: string | undefined }
  | { kind: 'unparsed' };

/** The config's headers and keys in order; a line that does not parse (continuations included) is one `unparsed`. */
export function parseGitConfig(input: string): GitConfigEvent[] {
  const c: Cursor = { text: input, at: 0 };
  const out: GitConfigEvent[] = [];
  let inSection = false;
  while (c.at < input.length) {
    const lineStart = c.at;
    skipSpaces(c);
    const ch = input[c.at];
    try {
      if (ch === undefined || ch === '\n' || ch === '#' || ch === ';') {
        skipLine(c);
        continue;
      }
      if (ch === '[') {
        const { name, sub } = parseHeader(c);
        out.push({ kind: 'section', name, sub });
        inSection = true;
        skipSpaces(c);
        const after = input[c.at];
        if (after === undefined || after === '\n' || after === '#' || after === ';') {
          skipLine(c);
          continue;
        }
        // `[core] bare = false`: a key follows on the header's line.
      }
      const key = /^[A-Za-z][A-Za-z0-9-]*/.exec(input.slice(c.at, c.at + 256))?.[0];
      if (!key) throw new ParseError('bad key');
      c.at += key.length;
      skipSpaces(c);
      const sep = input[c.at];
      let value: string | undefined;
      if (sep === '=') {
        c.at++;
        value = parseValue(c);
      } else if (sep === undefined || sep === '\n' || sep === '#' || sep === ';') {
        skipLine(c);
      } else {
        throw new ParseError('bad key');
      }
      if (!inSection) throw new ParseError('key outside a section');
      out.push({ kind: 'key', key, value });
    } catch (error) {
      if (!(error instanceof ParseError)) throw error;
      // What git would refuse to read is not passed on, continuation lines included.
      c.at = lineStart;
      skipLogicalLine(c);
      out.push({ kind: 'unparsed' });
    }
  }
  return out;
}

/** Which sections and keys a view keeps; values are stripped of URL userinfo in every view. */
export interface ViewRules {
  header: string;
  keepSection(name: string, sub: string | undefined): boolean;
  keepKey(name: string, sub: string | undefined, key: string, value: string | undefined): boolean;
  /** A kept section's header is written even when none of its keys is (a repository's `[branch "x"]`). */
  emptySections: boolean;
}

/**
 * The config rewritten from what was parsed: one header per section, one `key = value` per line,
 * values quoted where needed, comments left out (they are for people, and may quote a token).
 */
export function rewriteGitConfig(input: string, rules: ViewRules): SanitizedGitConfig {
  const out: string[] = [rules.header];
  const removed: string[] = [];
  let section: { name: string; sub: string | undefined; keep: boolean; written: boolean } | undefined;
  const header = (s: { name: string; sub: string | undefined }) =>
    `[${s.name}${s.sub !== undefined ? ` ${quoteSubsection(s.sub)}` : ''}]\n`;
  const label = (key: string) =>
    [section?.name ?? '?', ...(section?.sub !== undefined ? [section.sub] : []), key.toLowerCase()].join('.');
  for (const event of parseGitConfig(input)) {
    if (event.kind === 'unparsed') {
      removed.push('(unparsed line)');
      continue;
    }
    if (event.kind === 'section') {
      const keep = rules.keepSection(event.name, event.sub);
      section = { ...event, keep, written: keep && rules.emptySections };
      if (section.written) out.push(header(section));
      // A subsection may be a URL with a token in it: named without its userinfo.
      const sub = event.sub === undefined ? undefined : (stripUrlUserinfo(event.sub) ?? event.sub);
      if (!keep) removed.push(`${event.name}${sub !== undefined ? `.${sub}` : ''}`);
      continue;
    }
    if (!section?.keep) continue;
    const { key, value } = event;
    if (CREDENTIAL_KEY.test(key) || !rules.keepKey(section.name, section.sub, key.toLowerCase(), value)) {
      removed.push(label(key));
      continue;
    }
    const stripped = value === undefined ? undefined : stripUrlUserinfo(value);
    if (stripped !== undefined) removed.push(label(key));
    const shown = stripped ?? value;
    if (!section.written) {
      out.push(header(section));
      section.written = true;
    }
    out.push(shown === undefined ? `\t${key}\n` : `\t${key} = ${quoteValue(shown)}\n`);
  }
  return { text: out.join(''), removed };
}

/** A repository's .git/config: everything but credential sections, credential-named keys and URL userinfo. */
export function sanitizeGitConfig(input: string): SanitizedGitConfig {
  return rewriteGitConfig(input, {
    header: HEADER,
    keepSection: (name, sub) => !CREDENTIAL_SECTIONS.has(name) && !carriesUserinfo(sub),
    keepKey: () => true,
    emptySections: true,
  });
}
