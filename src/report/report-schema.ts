// The JSON report as a zod schema: the source of schema/report.schema.json (written by
// test/unit/report/report-schema.test.ts with SBX_UPDATE_SCHEMA=1, and checked against it in every
// test run). Never imported on the launch path: the report is built from the `Report` interface in
// report.ts, and tsc holds the two to each other below.
import { z } from 'zod';
import type { Report } from './report.js';

const violation = z.strictObject({
  phase: z.enum(['preflight', 'runtime']),
  kind: z.enum([
    ...['policy', 'command', 'path', 'env', 'timeout', 'oom'],
    ...['pids', 'cpu-time', 'file-size', 'seccomp', 'signal', 'network', 'credential', 'git-state'],
  ] as const),
  rule: z.string().describe('Stable rule id, e.g. limits.memory, commands.deny, network.deny'),
  detail: z.string().describe('One line for humans; never a secret value'),
  limit: z.string().optional().describe('The limit that fired, as configured (e.g. 512MiB)'),
  host: z.string().optional().describe('Network violations: the destination refused'),
  port: z.number().int().optional(),
  source: z
    .strictObject({
      key: z.string().describe('The profile key path of the rule, e.g. network.allow[2], limits.memory'),
      file: z.string().optional().describe('The profile file that set it, when a profile line applies'),
      line: z.number().int().min(1).optional(),
      col: z.number().int().min(1).optional(),
      origin: z.enum(['profile', 'flag', 'default']).optional().describe('Who set the rule'),
    })
    .optional()
    .describe('The profile line (or CLI flag, or built-in default) behind the rule'),
});
const source = violation.shape.source;

const capturedText = z.strictObject({
  text: z.string(),
  droppedBytes: z.number().int().min(0),
  redactions: z.array(z.strictObject({ rule: z.string(), count: z.number().int().min(1) })),
});

export const reportSchema = z
  .strictObject({
    format: z.literal(1).describe('The report format; a change that breaks readers gets a new number'),
    sessionId: z.string().describe("The run's session id (also SBX_SESSION_ID inside and in the audit ledger)"),
    profile: z
      .strictObject({
        name: z.string(),
        file: z.string(),
        hash: z.string().describe('sha256 of the profile and what it extends'),
        source: z.enum(['path', 'project', 'user', 'builtin']).describe('Where the profile was found'),
        shadows: z.string().optional().describe('The built-in profile of the same name that this one hides'),
      })
      .nullable()
      .describe('The profile used; null only when the profile itself failed to resolve (not found, invalid)'),
    backend: z.enum(['bwrap', 'nsjail', 'landlock']).optional().describe('Absent when sbx stopped before choosing one'),
    approximations: z
      .array(z.string())
      .optional()
      .describe('What the backend enforced differently from bwrap (landlock: no namespaces), "feature: detail"'),
    warnings: z
      .array(z.string())
      .optional()
      .describe(
        'What this run left open that the caller should know, "topic: detail" (terminal.tiocsti: the command could type into the terminal on stdin); also printed on stderr before it started',
      ),
    policyHash: z
      .string()
      .optional()
      .describe('sha256 (16 hex) of the resolved policy; absent when sbx stopped before deriving one'),
    command: z.array(z.string()).describe('The command; secret values replaced by <redacted>'),
    exitCode: z.number().int().describe("sbx's exit status: the command's, 128+N for signal N, or sbx's own code"),
    signal: z.string().optional().describe('The signal that ended the command (SIGKILL, ...)'),
    interruptedBy: z
      .enum(['user', 'caller'])
      .optional()
      .describe('Who sent that signal: the user (to sbx, e.g. Ctrl-C) or the library caller (abort); not a violation'),
    setBy: z
      .enum(['child', 'sbx'])
      .describe('Who chose exitCode: the command, or sbx (a refusal, a setup failure, the timeout)'),
    durationMs: z.number().min(0).describe("From the run's start in sbx to the command's end, or to the refusal"),
    violations: z.array(violation).describe('Every refusal and every enforced limit that fired'),
    limits: z
      .array(
        z.strictObject({
          name: z.string(),
          value: z.string().describe('As configured, e.g. 2GiB'),
          base: z.number().describe('The value in base units: bytes, tasks, cores or milliseconds'),
          mechanism: z
            .string()
            .describe(
              'What enforces it: cgroup-v2, cgroup-v1, systemd-scope, rlimit, watchdog (memory: RLIMIT_DATA per process + the tree watchdog), wall-clock, none',
            ),
          exact: z.boolean().describe('false: approximated (e.g. RLIMIT_NPROC counts every process of the uid)'),
          enforced: z.boolean().describe('false: not enforced on this host (see reason)'),
          reason: z.string().optional().describe('Why the limit is not exact or not enforced'),
        }),
      )
      .optional(),
    peaks: z
      .strictObject({
        memoryBytes: z.number().optional(),
        memorySampledEveryMs: z
          .number()
          .optional()
          .describe(
            'Only under the watchdog: memoryBytes is the highest of samples taken this often (faster near the limit), so approximate: a process that lived between two samples is not in it',
          ),
        pids: z.number().optional(),
      })
      .describe('Read from the session cgroup; memoryBytes under the watchdog: the highest sum it polled')
      .optional(),
    network: z
      .strictObject({
        connections: z.array(
          z.strictObject({
            host: z.string(),
            port: z.number().int(),
            count: z.number().int(),
            bytesIn: z.number(),
            bytesOut: z.number(),
          }),
        ),
        violationsDropped: z.number().int(),
      })
      .optional(),
    droppedEnv: z.array(z.string()).optional().describe('Names (never values) of variables kept out of the sandbox'),
    secrets: z.array(z.string()).optional().describe('Names of injected secrets (never values)'),
    masked: z.strictObject({ count: z.number().int().min(0), paths: z.array(z.string()) }).optional(),
    unmasked: z
      .strictObject({
        count: z.number().int().min(0),
        paths: z.array(
          z.strictObject({
            path: z.string(),
            by: z.enum(['profile', 'request', 'content', 'exposed']),
            what: z.enum(['certificate', 'public key']).optional(),
          }),
        ),
      })
      .optional()
      .describe(
        "files a sensitive-file rule matched that the sandbox saw: let in by the profile's sensitive.except, the run's --unmask (request), or their public content",
      ),
    allowPrivate: z
      .array(z.strictObject({ address: z.string(), by: z.enum(['profile', 'request']) }))
      .optional()
      .describe(
        'private addresses the egress proxy could dial: from network.allow_private (profile) or --allow-private (request)',
      ),
    captured: z
      .strictObject({ stdout: capturedText, stderr: capturedText })
      .optional()
      .describe('--capture: each stream bounded and scrubbed'),
    error: z
      .strictObject({ code: z.string(), message: z.string(), hint: z.string().optional(), source })
      .optional()
      .describe("sbx's own failure or refusal (setBy: sbx)"),
  })
  .describe('The JSON report of one `sbx run` (--report-fd, --report-file, --capture)');

/** Both ways assignable (tsc checks it): the schema and the Report interface cannot drift apart. */
type Assignable<A extends B, B> = [A, B];
export type ReportSchemaMatchesInterface = [
  Assignable<z.infer<typeof reportSchema>, Report>,
  Assignable<Report, z.infer<typeof reportSchema>>,
];

/** The JSON Schema shipped as schema/report.schema.json. */
export function reportJsonSchema(): Record<string, unknown> {
  return { ...z.toJSONSchema(reportSchema, { target: 'draft-2020-12' }), title: 'sbx run report' };
}
