// Outcome (or sbx's own failure) → the machine-readable report and the human summary line.
import { writeSync } from 'node:fs';
import type { Outcome } from './outcome.js';
import type { SbxError } from '../errors.js';
import type { Violation } from '../policy/violation.js';

export const REPORT_FORMAT = 1;
/** A workspace full of fixtures may mask thousands of files: the report names the first ones. */
const MASKED_SHOWN = 100;
/** The summary line after a failure names the first few. */
const MASKED_IN_SUMMARY = 3;

export interface Report {
  format: number;
  sessionId?: string;
  profile?: { name: string; file: string; hash: string };
  backend?: string;
  /** sha256 (16 hex) of the resolved Policy. */
  policyHash?: string;
  command: string[];
  exitCode: number;
  signal?: string;
  /** Who chose the exit code: the sandboxed command, or sbx (a refusal or a setup failure). */
  setBy: 'child' | 'sbx';
  durationMs?: number;
  violations: Violation[];
  limits?: Outcome['limits'];
  peaks?: Outcome['peaks'];
  network?: Outcome['network'];
  droppedEnv?: string[];
  /** Names of injected secrets (never values). */
  secrets?: string[];
  /** Sensitive files hidden in the sandbox: how many, and the first MASKED_SHOWN of their paths inside. */
  masked?: { count: number; paths: string[] };
  /** --capture: each stream bounded and scrubbed. */
  captured?: Outcome['captured'];
  error?: { code: string; message: string; hint?: string };
}

export function reportFromOutcome(outcome: Outcome): Report {
  return {
    format: REPORT_FORMAT,
    sessionId: outcome.sessionId,
    profile: outcome.profile,
    backend: outcome.backend,
    policyHash: outcome.policyHash,
    command: outcome.command,
    exitCode: outcome.exitCode,
    ...(outcome.signal ? { signal: outcome.signal } : {}),
    setBy: outcome.setBy,
    durationMs: Math.round(outcome.durationMs * 10) / 10,
    violations: outcome.violations,
    ...(outcome.limits ? { limits: outcome.limits } : {}),
    ...(outcome.peaks ? { peaks: outcome.peaks } : {}),
    ...(outcome.network ? { network: outcome.network } : {}),
    droppedEnv: outcome.droppedEnv,
    ...(outcome.secrets.length > 0 ? { secrets: outcome.secrets } : {}),
    masked: { count: outcome.masked.length, paths: outcome.masked.slice(0, MASKED_SHOWN) },
    ...(outcome.captured ? { captured: outcome.captured } : {}),
  };
}

export function reportFromError(error: SbxError, command: string[]): Report {
  // A refusal names the rules that refused; an older-style one without them becomes one policy violation.
  const violation: Violation[] =
    error.violations.length > 0
      ? error.violations
      : error.exitCode === 126 && error.code !== 'COMMAND_NOT_EXECUTABLE'
        ? [{ phase: 'preflight', kind: 'policy', rule: error.code.toLowerCase(), detail: error.message }]
        : [];
  return {
    format: REPORT_FORMAT,
    command,
    exitCode: error.exitCode,
    setBy: 'sbx',
    violations: violation,
    error: { code: error.code, message: error.message, ...(error.hint ? { hint: error.hint } : {}) },
  };
}

/** One JSON document and a newline, written synchronously so it is complete before sbx exits. */
export function writeReport(fd: number, report: Report): void {
  writeSync(fd, JSON.stringify(report) + '\n');
}

function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** The one-line summary (plus a line per violation) printed on stderr when a run failed or was refused. */
export function summaryLines(report: Report): string[] {
  const timedOut = report.violations.some((v) => v.kind === 'timeout');
  const what = timedOut
    ? `timed out (exit ${report.exitCode})`
    : report.signal
      ? `was killed by ${report.signal} (exit ${report.exitCode})`
      : `exited ${report.exitCode}`;
  // bwrap is the default launcher: only another one is named.
  const backend = report.backend && report.backend !== 'bwrap' ? `, backend ${report.backend}` : '';
  const lines = [`sbx: ${report.command[0] ?? 'command'} ${what} [profile ${report.profile?.name ?? '?'}${backend}, session ${report.sessionId ?? '?'}, ${formatDuration(report.durationMs)}]`];
  for (const v of report.violations) lines.push(`sbx:   ${v.phase} ${v.kind} (${v.rule}): ${v.detail}`);
  // A failing command may have needed a file it was shown empty: say so without --verbose.
  const masked = report.masked;
  if (report.exitCode !== 0 && masked && masked.count > 0) {
    const quote = (p: string) => (/[\x00-\x1f\x7f]/.test(p) ? JSON.stringify(p) : p);
    const shown = masked.paths.slice(0, MASKED_IN_SUMMARY).map(quote);
    const more = masked.count > shown.length ? `, and ${masked.count - shown.length} more` : '';
    const files = masked.count === 1 ? '1 sensitive file was' : `${masked.count} sensitive files were`;
    const where = 'if the command needed one, see `sensitive` in the profile, or --verbose';
    lines.push(`sbx: ${files} masked (${shown.join(', ')}${more}); ${where}`);
  }
  return lines;
}
