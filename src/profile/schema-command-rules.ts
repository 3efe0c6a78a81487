// The `commands` profile key: rules judged against the command sbx is given, before anything runs
// (docs/DESIGN.md, "Command rules" and "Restricted shell strings"). Pure; schema.ts mounts it.
import { z } from 'zod';

export const COMMAND_GROUP_NAMES = ['@network', '@shells', '@delete', '@privilege'] as const;
export type CommandGroupName = (typeof COMMAND_GROUP_NAMES)[number];

const commandName = z.string().regex(/^[A-Za-z0-9._+-]+$/, 'must be a command name (a basename such as git or npm)');

const SubcommandRulesSchema = z.strictObject({
  allow: z
    .array(z.string().trim().min(1))
    .optional()
    .describe(
      'Only these subcommands run (one or more words, e.g. "run build"); another is refused, or asked about under default: ask. Default: any.',
    ),
  block: z
    .array(z.string().trim().min(1))
    .optional()
    .describe(
      'A subcommand with flags refused in any order or spelling, e.g. "push --force" (also push -f, push +main). Default: none.',
    ),
});

export const CommandsSchema = z
  .strictObject({
    default: z
      .enum(['allow', 'deny', 'ask'])
      .optional()
      .describe(
        'The verdict for a command no rule names: allow, deny, or ask on the terminal (refused without one). Default: allow.',
      ),
    allow: z
      .record(
        commandName,
        z.preprocess((v) => v ?? {}, SubcommandRulesSchema),
      )
      .optional()
      .describe(
        'Commands that run without asking (`ls:` alone), with optional subcommand rules (`git: { block: ["push --force"] }`). Default: none.',
      ),
    deny: z
      .array(
        z
          .string()
          .regex(/^@?[A-Za-z0-9._+-]+$/, 'must be a command name or a group such as @network')
          .refine((name) => !name.startsWith('@') || (COMMAND_GROUP_NAMES as readonly string[]).includes(name), {
            error: `unknown group; the groups are ${COMMAND_GROUP_NAMES.join(' ')}`,
          }),
      )
      .optional()
      .describe(
        `Commands refused outright (names or groups: ${COMMAND_GROUP_NAMES.join(' ')}); only --allow-denylisted-commands lifts it. Default: none.`,
      ),
    paths: z
      .enum(['workspace', 'any'])
      .optional()
      .describe(
        'workspace: path-like arguments must stay in the workspace (no .., no absolute paths elsewhere, no symlink out); any: not checked. Default: any.',
      ),
    shell_syntax: z
      .enum(['full', 'restricted'])
      .optional()
      .describe(
        'restricted: a shell string (--shell, sh -c) may not chain, pipe, redirect, substitute or expand, and its words are judged as a command. Default: full.',
      ),
  })
  .describe(
    'Command rules, judged against the command sbx is given (not what it runs next). Default: everything allowed.',
  );
