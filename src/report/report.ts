// Outcome (or sbx's own failure) → the machine-readable report and the human summary line.
import type { Lifted, Outcome } from './outcome.js';
import type { RunFacts, SbxError } from '../errors.js';
import type { Violation, ViolationSource } from '../policy/violation.js';
import { refusalEnding } from './ending.js';
import { limitHints, limitVerdict } from './limit-lines.js';
import { showSource, type SourceView } from './source-line.js';

export const REPORT_FORMAT = 1 as const;
/** A workspace full of fixtures may mask thousands of files: the report names the first ones. */
const MASKED_SHOWN = 100;
/** Violations spelled out on stderr; the report has every one. */
const VIOLATIONS_SHOWN = 10;
/** The summary line after a failure names the first few. */
const MASKED_IN_SUMMARY = 3;

/**
 * The JSON report (--report-fd, --report-file, --capture). Its JSON Schema, schema/report.schema.json,
 * is generated from src/report/report-schema.ts, which tsc holds to this interface.
 */
export interface Report {
  format: typeof REPORT_FORMAT;
  sessionId: string;
  /** null only when the profile itself failed to resolve (not found, invalid). */
  profile: Outcome['profile'] | null;
  backend?: 'bwrap' | 'nsjail' | 'landlock';
  approximations?: Outcome['approximations'];
  warnings?: Outcome['warnings'];
  /** sha256 (16 hex) of the resolved Policy; absent when sbx stopped before deriving one. */
  policyHash?: string;
  command: string[];
  exitCode: number;
  signal?: string;
  /** The signal was sent by the user (to sbx) or the library caller (abort): no violation. */
  interruptedBy?: 'user' | 'caller';
  /** Who chose the exit code: the sandboxed command, or sbx (a refusal or a setup failure). */
  setBy: 'child' | 'sbx';
  /** From sbx's start of the run to the command's end (or to the refusal). */
  durationMs: number;
  violations: Violation[];
  limits?: Outcome['limits'];
  peaks?: Outcome['peaks'];
  network?: Outcome['network'];
  droppedEnv?: string[];
  /** Names of injected secrets (never values). */
  secrets?: string[];
  /** Sensitive files hidden in the sandbox: how many, and the first MASKED_SHOWN of their paths inside. */
  masked?: { count: number; paths: string[] };
  /** Files a sensitive-file rule matched that the sandbox saw anyway, and who let them in: how many, and the first MASKED_SHOWN. */
  unmasked?: { count: number; paths: Lifted['unmasked'] };
  /** Private addresses the egress proxy could dial, and who allowed each. */
  allowPrivate?: Lifted['allowPrivate'];
  /** --capture: each stream bounded and scrubbed. */
  captured?: Outcome['captured'];
  error?: { code: string; message: string; hint?: string; source?: ViolationSource };
}

export function reportFromOutcome(outcome: Outcome): Report {
  return {
    format: REPORT_FORMAT,
    sessionId: outcome.sessionId,
    profile: outcome.profile,
    backend: outcome.backend,
    ...(outcome.approximations ? { approximations: outcome.approximations } : {}),
    ...(outcome.warnings ? { warnings: outcome.warnings } : {}),
    policyHash: outcome.policyHash,
    command: outcome.command,
    exitCode: outcome.exitCode,
    ...(outcome.signal ? { signal: outcome.signal } : {}),
    ...(outcome.interruptedBy ? { interruptedBy: outcome.interruptedBy } : {}),
    setBy: outcome.setBy,
    durationMs: roundMs(outcome.durationMs),
    violations: outcome.violations,
    ...(outcome.limits ? { limits: outcome.limits } : {}),
    ...(outcome.peaks ? { peaks: outcome.peaks } : {}),
    ...(outcome.network ? { network: outcome.network } : {}),
    droppedEnv: outcome.droppedEnv,
    ...(outcome.secrets.length > 0 ? { secrets: outcome.secrets } : {}),
    masked: { count: outcome.masked.length, paths: outcome.masked.slice(0, MASKED_SHOWN) },
    ...(outcome.lifted?.unmasked.length
      ? { unmasked: { count: outcome.lifted.unmasked.length, paths: outcome.lifted.unmasked.slice(0, MASKED_SHOWN) } }
      : {}),
    ...(outcome.lifted?.allowPrivate.length ? { allowPrivate: outcome.lifted.allowPrivate } : {}),
    ...(outcome.captured ? { captured: outcome.captured } : {}),
  };
}

function roundMs(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** `run`: what run() knew when it refused (SbxError.run). */
export function reportFromError(error: SbxError, command: string[], run: RunFacts): Report {
  const ending = refusalEnding(error);
  return {
    format: REPORT_FORMAT,
    sessionId: run.sessionId,
    profile: run.profile,
    ...(run.backend ? { backend: run.backend } : {}),
    ...(run.policyHash ? { policyHash: run.policyHash } : {}),
    command,
    exitCode: ending.exitCode,
    setBy: ending.setBy,
    durationMs: roundMs(run.durationMs),
    violations: ending.violations,
    error: {
      code: error.code,
      message: error.message,
      ...(error.hint ? { hint: error.hint } : {}),
      ...(error.source ? { source: error.source } : {}),
    },
  };
}

function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * Each distinct violation once, in order of first occurrence, with how often it happened: a client
 * that retries a refused destination (curl, pip, npm) repeats the same refusal (one
 * refusal printed 10 times). The report keeps every occurrence.
 */
export function distinctViolations(
  violations: readonly Violation[],
  view?: SourceView,
): { line: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const v of violations) {
    const source = v.source && view ? ` ${showSource(v.source, view)}` : '';
    const line = `${v.phase} ${v.kind} (${v.rule}): ${v.detail}${source}`;
    counts.set(line, (counts.get(line) ?? 0) + 1);
  }
  return [...counts].map(([line, count]) => ({ line, count }));
}

/**
 * The one-line summary (plus a line per violation) printed on stderr when a run failed or was refused;
 * with a `view`, each violation names the profile line (or flag, or default) behind it.
 */
export function summaryLines(report: Report, view?: SourceView): string[] {
  const exit = report.exitCode;
  const plain = report.interruptedBy
    ? `was interrupted by ${report.signal} from the ${report.interruptedBy} (exit ${exit})`
    : report.signal
      ? `was killed by ${report.signal} (exit ${exit})`
      : `exited ${exit}`;
  const what = limitVerdict(report) ?? plain;
  // bwrap is the default launcher: only another one is named.
  const backend = report.backend && report.backend !== 'bwrap' ? `, backend ${report.backend}` : '';
  const lines = [
    `sbx: ${report.command[0] ?? 'command'} ${what} [profile ${report.profile?.name ?? '?'}${backend}, session ${report.sessionId ?? '?'}, ${formatDuration(report.durationMs)}]`,
  ];
  const distinct = distinctViolations(report.violations, view);
  for (const { line, count } of distinct.slice(0, VIOLATIONS_SHOWN)) {
    lines.push(`sbx:   ${line}${count > 1 ? ` (${count} times)` : ''}`);
  }
  const more = distinct.length - VIOLATIONS_SHOWN;
  if (more > 0) {
    lines.push(`sbx:   and ${more} more violation${more === 1 ? '' : 's'}: the report lists them all (--report-fd)`);
  }
  for (const hint of limitHints(report)) lines.push(`sbx: hint: ${hint}`);
  // A failing command may have needed a file it was shown empty: say so without --verbose.
  const masked = report.masked;
  if (report.exitCode !== 0 && masked && masked.count > 0) {
    const quote = (p: string) => (/[\x00-\x1f\x7f]/.test(p) ? JSON.stringify(p) : p);
    const shown = masked.paths.slice(0, MASKED_IN_SUMMARY).map(quote);
    const more = masked.count > shown.length ? `, and ${masked.count - shown.length} more` : '';
    const files = masked.count === 1 ? '1 sensitive file was' : `${masked.count} sensitive files were`;
    const where =
      'if the command needed one, let it in with --unmask GLOB (or sensitive.except in the profile); --verbose lists them';
    lines.push(`sbx: ${files} masked (${shown.join(', ')}${more}); ${where}`);
  }
  return lines;
}
