// The `credentials` profile key: a value the command never holds. Inside, the variable holds a
// placeholder; sbx's egress proxy puts the value in place of it in requests to the listed hosts only
// (docs/DESIGN.md, "Credentials"). Pure; schema.ts mounts it, the library's `credentials` option
// reuses it (api-options.ts).
import { z } from 'zod';

/** A variable name the sandbox sees: safe as `--setenv`'s argument; SBX_* is sbx's own. */
const credentialName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)')
  .refine((name) => !name.startsWith('SBX_'), 'the SBX_* namespace is reserved for sbx');

/** RFC 9110 §5.6.2 token: a header name as it goes on the wire. */
const headerName = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name, e.g. Authorization or X-Api-Key');

/** Exactly one source; each fails closed (the run is refused) when it yields nothing. */
const CredentialSourceSchema = z.union(
  [
    z.strictObject({
      env: credentialName.describe("A variable of the invoking environment (sbx's own, not the sandbox's)."),
    }),
    z.strictObject({
      file: z
        .string()
        .min(1, 'must not be empty')
        .describe(
          'A file of yours outside every tree the sandbox sees (~ and ${home} expand); one trailing newline is dropped.',
        ),
    }),
    z.strictObject({
      command: z
        .array(z.string().min(1, 'must not be empty'))
        .min(1, 'name the program and its arguments, e.g. [gh, auth, token]')
        .describe('A program run on the host before the sandbox starts (argv, no shell); its stdout is the value.'),
    }),
  ],
  { error: 'must be exactly one of { env: NAME }, { file: PATH } or { command: [argv...] }' },
);

export const CredentialSchema = z.strictObject({
  from: CredentialSourceSchema.describe('Where sbx reads the value at run time, outside the sandbox.'),
  hosts: z
    .array(z.string().min(1, 'must not be empty'))
    .min(1, 'name the hosts the value is for, e.g. [api.github.com]')
    .describe(
      'The only destinations where the placeholder is replaced by the value: host, *.domain, each with optional :port. Each must be in network.allow; its HTTPS is terminated by the proxy.',
    ),
  header: headerName
    .optional()
    .describe('Replace the placeholder only in this request header. Default: in any request header (and basic auth).'),
});

export const CredentialsSchema = z
  .record(credentialName, CredentialSchema)
  .describe(
    "Variables whose value the command never holds: inside, each holds a random placeholder, and sbx's egress proxy replaces it with the value in requests to its hosts only (an HTTPS request to another host carrying it is refused). Default: none.",
  );

export type CredentialEntry = z.infer<typeof CredentialSchema>;
export type Credentials = z.infer<typeof CredentialsSchema>;
