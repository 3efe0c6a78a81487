// The library door's option check: run() and compile() take options from JavaScript callers, whose
// types nothing has checked. Every bad value is an SbxError (OPTIONS_INVALID) naming the key, before
// anything is read or run: `command: 'ls'` would otherwise run `l` (a string indexes like an array).
// Loaded lazily by src/api.ts: zod costs a plain CLI launch ~100 ms, and the CLI's options come from its
// own typed parser (src/cli/run-flags.ts), so the CLI calls the unchecked door (test/unit/api-options.test.ts).
import { z } from 'zod';
import { SbxError } from './errors.js';
import { CredentialsSchema } from './profile/schema-credentials.js';
import type { Approver } from './commands/host/command-gate.js';
import type { NetworkAsker } from './network/network-asks.js';
import type { CompileOptions, ProfileInfo, RunOptions } from './api.js';

/** An argument the kernel cannot pass: execve() ends each string at its first NUL. */
const arg = z.string().refine((s) => !s.includes('\0'), 'must not contain a NUL character');
const path = arg.min(1, 'must not be empty');
const limitValue = z.union([z.string(), z.number()]);

const isFunction = (v: unknown) => typeof v === 'function';

const runRequest = {
  command: z.array(arg).min(1, 'must name a command: a non-empty array of strings, e.g. ["ls", "-l"]').optional(),
  shell: arg.min(1, 'must not be empty').optional(),
  workspace: path.optional(),
  chdir: path.optional(),
  binds: z.array(z.strictObject({ source: path, target: path.optional(), access: z.enum(['ro', 'rw']) })).optional(),
  env: z.record(z.string(), arg).optional(),
  keepEnv: z.array(z.string()).optional(),
  network: z.enum(['none', 'host']).optional(),
  allowDomains: z.array(z.string()).optional(),
  allowPrivate: z.array(z.string().min(1, 'must not be empty')).optional(),
  unmask: z.array(z.string().min(1, 'must not be empty')).optional(),
  danger: z.boolean().optional(),
  allowSensitiveRoots: z.boolean().optional(),
  exposeWorkspaceSecrets: z.boolean().optional(),
  allowDenylistedCommands: z.boolean().optional(),
  limits: z
    .strictObject({
      memory: limitValue.optional(),
      pids: limitValue.optional(),
      cpus: limitValue.optional(),
      timeout: limitValue.optional(),
      cpu_time: limitValue.optional(),
      file_size: limitValue.optional(),
      nofile: limitValue.optional(),
      address_space: limitValue.optional(),
    })
    .optional(),
  tmpSize: z.string().optional(),
  // The profile key's own schema: the values never pass here, only where sbx reads them.
  credentials: CredentialsSchema.optional(),
};

const compileOnly = {
  profile: path.optional(),
  backend: z.enum(['bwrap', 'nsjail', 'landlock', 'auto']).optional(),
  cwd: path.optional(),
  // process.env is an exotic object zod does not take for a record: its own entries are checked instead.
  hostEnv: z
    .preprocess((v) => (v === process.env ? { ...v } : v), z.record(z.string(), z.string().optional()))
    .optional(),
  tty: z.boolean().optional(),
  trustProfiles: z.array(z.string().regex(/^[0-9a-f]{64}$/, 'must be a sha256 (64 lowercase hex digits)')).optional(),
  onProfile: z.custom<(profile: ProfileInfo) => void>(isFunction, 'must be a function').optional(),
};

/** One of `command` and `shell`, never both: a shell string is the command. */
const oneCommand = (o: { command?: string[] | undefined; shell?: string | undefined }) =>
  (o.command === undefined) !== (o.shell === undefined);
const oneCommandIssue = {
  message: 'give exactly one of command (an argv array) and shell (a string)',
  path: ['command'],
};

export const compileOptionsSchema = z
  .strictObject({ ...runRequest, ...compileOnly })
  .refine(oneCommand, oneCommandIssue);

export const runOptionsSchema = z
  .strictObject({
    ...runRequest,
    ...compileOnly,
    stdio: z.enum(['inherit', 'capture', 'ignore']).optional(),
    input: z
      .union([z.string(), z.custom<Uint8Array>((v) => v instanceof Uint8Array)], {
        error: 'must be a string or a Uint8Array',
      })
      .optional(),
    signal: z.instanceof(AbortSignal, { message: 'must be an AbortSignal' }).optional(),
    forwardSignals: z.boolean().optional(),
    resolve: z.custom<(host: string) => Promise<string[]>>(isFunction, 'must be a function').optional(),
    captureLimitBytes: z
      .number()
      .int()
      .min(1)
      .max(64 * 1024 * 1024)
      .optional(),
    audit: z.strictObject({ file: path }).optional(),
    approve: z
      .custom<Approver>(isFunction, 'must be a function (request) => Promise<"once" | "always" | "deny">')
      .optional(),
    onNotice: z.custom<(line: string) => void>(isFunction, 'must be a function (line) => void').optional(),
    onNetworkRequest: z
      .custom<NetworkAsker>(
        isFunction,
        'must be a function ({ host, port }) => "once" | "always" | "deny" (or a Promise of one)',
      )
      .optional(),
    networkRequestTimeoutMs: z
      .number()
      .int()
      .min(1000, 'must be at least 1000 (a person answers)')
      .max(3_600_000, 'must be at most 3600000 (an hour)')
      .optional(),
  })
  .refine(oneCommand, oneCommandIssue);

/** Both ways assignable (tsc checks it): the schemas and the documented interfaces in src/api.ts cannot drift apart. */
type Assignable<A extends B, B> = [A, B];
export type SchemasMatchInterfaces = [
  Assignable<z.infer<typeof runOptionsSchema>, RunOptions>,
  Assignable<RunOptions, z.infer<typeof runOptionsSchema>>,
  Assignable<z.infer<typeof compileOptionsSchema>, CompileOptions>,
  Assignable<CompileOptions, z.infer<typeof compileOptionsSchema>>,
];

function check<T>(schema: z.ZodType<T>, value: unknown, door: string): T {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
    throw new SbxError('OPTIONS_INVALID', `${door}: options must be an object, got ${got}`, {
      hint: `call ${door}({ command: ['ls', '-l'] })`,
    });
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return value as T;
  const issues = parsed.error.issues.map((i) => `${i.path.map(String).join('.') || '(options)'}: ${i.message}`);
  throw new SbxError('OPTIONS_INVALID', `${door}: ${issues[0]}`, {
    hint: 'see the RunOptions type (dist/types/api.d.ts); unknown keys are refused',
    details: issues.slice(1),
  });
}

/** The caller's own object is returned (functions and the signal keep their identity): nothing copied or defaulted. */
export function checkRunOptions(value: unknown): RunOptions {
  return check(runOptionsSchema, value, 'run()');
}

export function checkCompileOptions(value: unknown): CompileOptions {
  return check(compileOptionsSchema, value, 'compile()');
}
