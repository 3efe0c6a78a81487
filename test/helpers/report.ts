// Every report the integration tests read goes through here: parsed, and validated against the
// shipped report schema (src/report/report-schema.ts, the source of schema/report.schema.json).
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { reportSchema } from '../../src/report/report-schema.js';
import type { Report } from '../../src/report/report.js';

/** One JSON document and a newline, valid against the schema; throws naming every mismatch. */
export function parseReport(text: string): Report {
  if (!text.endsWith('\n') || text.trim().includes('\n')) {
    throw new Error(`a report is one JSON line: ${JSON.stringify(text.slice(0, 300))}`);
  }
  const parsed = reportSchema.safeParse(JSON.parse(text));
  if (!parsed.success) {
    throw new Error(`the report does not match schema/report.schema.json:\n${z.prettifyError(parsed.error)}\n${text}`);
  }
  return parsed.data;
}

export function readReport(file: string): Report {
  return parseReport(readFileSync(file, 'utf8'));
}
