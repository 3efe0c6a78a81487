// The `secrets` profile key: credentials handed to the command without living in the profile or the
// workspace (docs/DESIGN.md, "Secrets": named in the profile, injected at run time). Pure; schema.ts mounts it.
import { z } from 'zod';

/** A name that is safe as an environment variable and as a `--setenv`-style argument; SBX_* is sbx's own. */
const secretName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)')
  .refine((name) => !name.startsWith('SBX_'), 'the SBX_* namespace is reserved for sbx');

/**
 * `- NAME` is shorthand for `- { name: NAME }`. Normalised before validation (like `seccomp: strict`), so
 * every issue points at the field at fault instead of a union's "neither a string nor a map".
 */
export const SecretEntrySchema = z.preprocess(
  (v) => (typeof v === 'string' ? { name: v } : v),
  z.strictObject(
    {
      name: secretName.describe(
        'Key in the secret store ($XDG_CONFIG_HOME/sbx/secrets.yaml), or the variable in the invoking environment with from: env. A bare NAME list item means { name: NAME }.',
      ),
      from: z
        .enum(['store', 'env'])
        .optional()
        .describe(
          'store: the secret store. env: the invoking environment (how a credential-named variable is passed on explicitly). Default: store.',
        ),
      as: secretName.optional().describe('Variable name inside the sandbox. Default: the same as `name`.'),
      optional: z
        .boolean()
        .optional()
        .describe(
          'Run without it when it is missing. Default: false (missing = error). An unsafe store is refused regardless.',
        ),
    },
    {
      error: (issue) =>
        issue.code === 'invalid_type'
          ? 'must be a variable name (e.g. ANTHROPIC_API_KEY) or a map such as { name: GITHUB_TOKEN, from: env, as: GH_TOKEN }'
          : undefined,
    },
  ),
);

export const SecretsSchema = z
  .array(SecretEntrySchema)
  .describe(
    'Secrets set as environment variables inside the sandbox, from the secret store or the invoking environment. Values never enter argv, messages or reports. Default: [].',
  );

export type SecretEntry = z.infer<typeof SecretEntrySchema>;
export type Secrets = z.infer<typeof SecretsSchema>;
