// What a tool call of `sbx mcp` answers: the JSON report `sbx run --report-fd` writes (report/report.ts),
// as structuredContent under its own zod schema (report/report-schema.ts), and a text an agent reads
// first. A refusal, a failed command and a violation are all results with isError: never a thrown
// error, which the SDK would turn into a bare message without the report.
import type { SbxError, Violation } from '../../api.js';
import type { Report } from '../../report/report.js';
import { summaryLines } from '../../report/report.js';
import { formatError } from '../print-error.js';
import { whyCommandLine } from '../quote.js';
import { shellArgv } from '../../policy/command-line.js';

/** What a tools/call handler returns (the SDK's CallToolResult, as far as sbx fills it). */
export interface ToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  /** The Report; typed as the SDK's open object, which an interface without an index signature is not. */
  structuredContent: Record<string, unknown>;
  isError: boolean;
}

/** A result that is text only (explain, a background job started). */
export interface TextResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
}

/** Violations spelled out in the text; structuredContent has them all. */
const VIOLATIONS_SHOWN = 10;

/**
 * Where the rule was written, as an agent (or its user) can go and change it: `profile FILE:LINE (key)`,
 * or the flag or default that stands in for a profile line.
 */
export function describeSource(source: NonNullable<Violation['source']>): string {
  if (source.file === undefined) return `${source.origin ?? 'default'} (${source.key})`;
  const at = source.line === undefined ? '' : `:${source.line}`;
  return `profile ${source.file}${at} (${source.key})`;
}

function violationLine(v: Violation): string {
  const where = v.source ? `; ${describeSource(v.source)}` : '';
  return `violation: ${v.kind} (${v.rule}): ${v.detail}${where}`;
}

/** Hidden paths spelled out in the text; structuredContent.masked has up to 100. */
const MASKED_SHOWN = 10;

/**
 * What the policy hid in the trees the sandbox shows, and by which rule: a read of such a file finds it
 * empty, which the command reports as missing data or a parse error, never as "hidden"; said on every
 * run, failed or not, since the model cannot ask with --verbose. The masks carry their rule family
 * only (Mount.role `secret`, policy/types.ts), not the glob that matched.
 */
function maskedLines(masked: Report['masked']): string[] {
  if (!masked || masked.count === 0) return [];
  const shown = masked.paths.slice(0, MASKED_SHOWN).map((p) => (/[\x00-\x1f\x7f]/.test(p) ? JSON.stringify(p) : p));
  const more =
    masked.count > shown.length ? `, and ${masked.count - shown.length} more (structuredContent.masked)` : '';
  const files = masked.count === 1 ? '1 file' : `${masked.count} files`;
  return [
    `hidden: ${files} by the sensitive-file rules (the profile's sensitive.files and sbx's built-in list), shown empty inside: ${shown.join(', ')}${more}; sensitive.except in the profile lets one in`,
  ];
}

/**
 * The `sbx why` the server's user can run at a terminal for a refused command: the server's profile (a
 * built-in by its builtin: name, any other by its file, so no project profile of the same name is
 * meant), and the command as the call gave it: an argv, or a shell string.
 */
function whyLine(report: Report): string | undefined {
  const { profile, command } = report;
  if (!profile || command.length === 0) return undefined;
  const spec = profile.source === 'builtin' ? `builtin:${profile.name}` : profile.file;
  const script = command.length === 4 ? command[3]! : undefined;
  const shell = script !== undefined && shellArgv(script).every((a, i) => a === command[i]);
  return whyCommandLine(spec, shell ? { shell: script } : { argv: command });
}

/** A captured stream under a heading, or nothing when it is empty. */
function streamLines(name: string, captured: Report['captured']): string[] {
  const stream = captured?.[name as 'stdout' | 'stderr'];
  if (!stream || stream.text === '') return [];
  return [`--- ${name} ---`, stream.text.endsWith('\n') ? stream.text.slice(0, -1) : stream.text];
}

/**
 * The text an agent reads: how the run ended (summaryLines' first line: exit, signal or the limit that
 * fired, profile, session), each violation with its profile line, the files the policy hid, sbx's
 * refusal with its hint, the
 * notices sbx gave before the start, then the captured streams (scrubbed; a long one as its head
 * and its tail with `[sbx: N bytes cut here]` between).
 */
export function toolResult(report: Report, notices: readonly string[], error?: SbxError): ToolResult {
  // summaryLines says "exited N": true of a command that ran, not of one sbx refused.
  const headline = error
    ? `refused, nothing ran: ${error.code} (exit ${report.exitCode}) [profile ${report.profile?.name ?? '?'}, session ${report.sessionId}]`
    : summaryLines(report)[0]!.replace(/^sbx: /, '');
  const lines = [headline];
  lines.push(...report.violations.slice(0, VIOLATIONS_SHOWN).map(violationLine));
  if (report.violations.length > VIOLATIONS_SHOWN)
    lines.push(`and ${report.violations.length - VIOLATIONS_SHOWN} more violations (structuredContent.violations)`);
  lines.push(...maskedLines(report.masked));
  if (error) lines.push(...formatError(error).map((l) => l.replace(/^sbx: /, '')));
  const why = error && error.violations.length > 0 ? whyLine(report) : undefined;
  if (why) lines.push(`why: \`${why}\` names the profile line that decides`);
  lines.push(...notices.map((n) => n.replace(/^sbx: /, 'notice: ')));
  lines.push(...streamLines('stdout', report.captured), ...streamLines('stderr', report.captured));
  const isError = report.exitCode !== 0 || report.violations.length > 0 || report.error !== undefined;
  return { content: [{ type: 'text', text: lines.join('\n') }], structuredContent: { ...report }, isError };
}
