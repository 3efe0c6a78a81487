// A report as GitHub Actions shows it: `::error` workflow commands (annotations) and the step
// summary's Markdown. Pure: cli/actions-mode.ts reads the runner's environment and writes the lines.
//
// Violation details, paths and hosts come from the sandboxed command and the repository it runs
// in: every such text is escaped here so it stays data, one line of one command (docs/SECURITY.md,
// "GitHub Actions").
import type { Violation } from '../policy/violation.js';
import type { Report } from './report.js';

/** What the annotations may know of the job: the real path of $GITHUB_WORKSPACE. */
export interface GithubContext {
  workspace?: string;
}

/** The refusal behind a run sbx stopped (an SbxError's printable part). */
export interface Refusal {
  code: string;
  message: string;
  hint?: string | undefined;
  location?: { file: string; line: number; col: number } | undefined;
}

/**
 * GitHub keeps 10 error annotations per step and drops the rest: past 9, one more says how many
 * were left out (the summary lists every distinct one).
 */
const ANNOTATIONS_SHOWN = 9;

/**
 * A workflow command's message: `%`, CR and LF percent-encoded (the runner decodes them), so no text
 * can end the line and start another command. As @actions/core's escapeData.
 */
export function escapeData(text: string): string {
  return text.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/** A property value: also `:` and `,`, which end the property list and a property. As escapeProperty. */
export function escapeProperty(text: string): string {
  return escapeData(text).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

interface Annotation {
  title: string;
  message: string;
  file?: string | undefined;
  line?: number | undefined;
  col?: number | undefined;
}

/** `::error title=...,file=...,line=...,col=...::message`, every part escaped. */
export function errorCommand(a: Annotation): string {
  const props: [string, string | number | undefined][] = [
    ['title', a.title],
    ['file', a.file],
    ['line', a.file === undefined ? undefined : a.line],
    ['col', a.file === undefined ? undefined : a.col],
  ];
  const list = props
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${escapeProperty(String(v))}`)
    .join(',');
  return `::error ${list}::${escapeData(a.message)}`;
}

/** A file inside the workspace as GitHub names it (relative to the checkout); undefined outside it. */
function inWorkspace(file: string | undefined, ctx: GithubContext): string | undefined {
  if (file === undefined || ctx.workspace === undefined) return undefined;
  const prefix = ctx.workspace.endsWith('/') ? ctx.workspace : `${ctx.workspace}/`;
  return file.startsWith(prefix) && file.length > prefix.length ? file.slice(prefix.length) : undefined;
}

const ORIGIN = { profile: 'the profile', flag: 'a command-line flag', default: "sbx's default" } as const;

/** Where the rule was written, in words, for a violation whose profile line GitHub cannot link to. */
function sourceWords(v: Violation, linked: boolean): string {
  const s = v.source;
  if (!s) return '';
  if (linked) return ` (profile key ${s.key})`;
  return ` (profile key ${s.key}${s.origin && s.origin !== 'profile' ? `, set by ${ORIGIN[s.origin]}` : ''})`;
}

/** Each distinct violation once, with how often it happened (a retried refusal repeats). */
function distinct(violations: readonly Violation[]): { v: Violation; count: number }[] {
  const seen = new Map<string, { v: Violation; count: number }>();
  for (const v of violations) {
    const key = JSON.stringify([v.phase, v.kind, v.rule, v.detail, v.source]);
    const entry = seen.get(key);
    if (entry) entry.count++;
    else seen.set(key, { v, count: 1 });
  }
  return [...seen.values()];
}

function violationAnnotation(v: Violation, count: number, ctx: GithubContext): Annotation {
  const file = inWorkspace(v.source?.file, ctx);
  const times = count > 1 ? ` (${count} times)` : '';
  return {
    title: `sbx: ${v.rule}`,
    message: `${v.phase} ${v.kind}: ${v.detail}${times}${sourceWords(v, file !== undefined)}`,
    file,
    line: v.source?.line,
    col: v.source?.col,
  };
}

/** One `::error` line per distinct violation of a run (at most 10 in all). */
export function violationCommands(violations: readonly Violation[], ctx: GithubContext): string[] {
  const all = distinct(violations);
  const lines = all.slice(0, ANNOTATIONS_SHOWN).map(({ v, count }) => errorCommand(violationAnnotation(v, count, ctx)));
  const more = all.length - ANNOTATIONS_SHOWN;
  if (more > 0) {
    const message = `and ${more} more distinct violation${more === 1 ? '' : 's'}: the step summary lists them all`;
    lines.push(errorCommand({ title: 'sbx: violations', message }));
  }
  return lines;
}

/**
 * The refusal as one annotation titled with its error code, at the profile line it names (a
 * profile error's location, else the first violation's source), then one per further violation.
 */
export function refusalCommands(refusal: Refusal, violations: readonly Violation[], ctx: GithubContext): string[] {
  const first = violations[0];
  const at = refusal.location ?? (first?.source?.file === undefined ? undefined : first.source);
  const file = inWorkspace(at?.file, ctx);
  const hint = refusal.hint ? ` (hint: ${refusal.hint})` : '';
  const lead = errorCommand({
    title: refusal.code,
    message: `sbx refused: ${refusal.message}${hint}`,
    file,
    line: at?.line,
    col: at?.col,
  });
  // A command refusal's message is its first violation's detail: said once.
  const rest = first?.detail === refusal.message ? violations.slice(1) : violations;
  return [lead, ...violationCommands(rest, ctx)];
}

/**
 * Text in a Markdown table cell, inert: control characters shown as `\xNN`, everything outside a
 * small plain set as a numeric character reference, so no text can end the cell (`|`), the row
 * (newline), or become markup, a link, an image or HTML.
 */
export function markdownText(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (/^[A-Za-z0-9 .,:;/=@+%'"()-]$/.test(ch)) out += ch;
    else if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) out += `&#92;x${code.toString(16).padStart(2, '0')}`;
    else out += `&#${code};`;
  }
  return out;
}

function row(cells: readonly string[]): string {
  return `| ${cells.join(' | ')} |`;
}

function table(head: readonly string[], rows: readonly string[][]): string[] {
  return [row(head), row(head.map(() => '---')), ...rows.map(row)];
}

function duration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function outcomeWords(report: Report): string {
  if (report.error) return `refused: ${report.error.code} (exit ${report.exitCode})`;
  if (report.signal) return `killed by ${report.signal} (exit ${report.exitCode})`;
  return `exited ${report.exitCode}`;
}

function whereWords(v: Violation, ctx: GithubContext): string {
  const s = v.source;
  if (!s) return '';
  const file = inWorkspace(s.file, ctx);
  const at = file === undefined ? '' : ` ${file}${s.line === undefined ? '' : `:${s.line}`}`;
  const origin = s.origin && s.origin !== 'profile' ? ` (${ORIGIN[s.origin]})` : '';
  return `${s.key}${at}${origin}`;
}

/**
 * The step summary of one run: what ran, how it ended, under which profile and backend, how long
 * it took, every distinct violation with the profile line behind it, and the limits in force.
 * `report` is absent when sbx refused before a run began (a usage error): only the refusal shows.
 */
export function stepSummary(report: Report | undefined, refusal: Refusal | undefined, ctx: GithubContext): string {
  const md = (text: string) => markdownText(text);
  const command = report?.command.join(' ') ?? '';
  const lines = [`### sbx run${command ? `: ${md(command)}` : ''}`, ''];
  const facts: [string, string][] = [];
  if (report) {
    facts.push(['Result', md(`${outcomeWords(report)}, set by ${report.setBy === 'child' ? 'the command' : 'sbx'}`)]);
    facts.push(['Profile', md(report.profile ? `${report.profile.name} (${report.profile.source})` : 'none resolved')]);
    facts.push(['Backend', md(report.backend ?? 'none chosen')]);
    facts.push(['Duration', md(duration(report.durationMs))]);
    facts.push(['Session', md(report.sessionId)]);
  }
  if (refusal) {
    facts.push(['Refused', md(`${refusal.code}: ${refusal.message}`)]);
    if (refusal.hint) facts.push(['Hint', md(refusal.hint)]);
  }
  lines.push(...table(['', ''], facts), '');
  const violations = distinct(report?.violations ?? []);
  if (violations.length > 0) {
    lines.push('#### Violations', '');
    const rows = violations.map(({ v, count }) =>
      [v.phase, v.kind, v.rule, v.detail, whereWords(v, ctx), String(count)].map(md),
    );
    lines.push(...table(['Phase', 'Kind', 'Rule', 'Detail', 'Profile line', 'Count'], rows), '');
  }
  const limits = report?.limits ?? [];
  if (limits.length > 0) {
    lines.push('#### Limits', '');
    const rows = limits.map((l) =>
      [
        l.name,
        l.value,
        l.enforced ? l.mechanism : 'not enforced',
        l.enforced ? (l.exact ? 'yes' : `no: ${l.reason ?? 'approximated'}`) : (l.reason ?? ''),
      ].map(md),
    );
    lines.push(...table(['Limit', 'Value', 'Enforced by', 'Exact'], rows), '');
  }
  return `${lines.join('\n')}\n`;
}
