// The only definition of a profile. Types are inferred from it; every object is strict, so an
// unknown key is an error (with a "did you mean" added by parse.ts), never silently ignored.
import { z } from 'zod';
import { CommandsSchema } from './schema-command-rules.js';
import { CredentialsSchema } from './schema-credentials.js';
import { SecretsSchema } from './schema-secrets.js';

/** Environment variable names: refuse anything that could be read as a bwrap option or break `--setenv`. */
const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)');

/** A keep pattern: a name, or a name with `*` wildcards (e.g. `LC_*`). */
const envPattern = z
  .string()
  .regex(/^[A-Za-z0-9_*]+$/, 'must be a variable name, optionally with * wildcards (e.g. LC_*)');

const pathString = z.string().min(1, 'must not be empty');

/** A host path to bind, as a string or with options. */
export const BindEntrySchema = z.union([
  pathString,
  z.strictObject({
    path: pathString.describe('Host path (variables like ${workspace} expand).'),
    mountAt: pathString.optional().describe('Path inside the sandbox. Default: the same as `path`.'),
    optional: z
      .boolean()
      .optional()
      .describe('Skip the bind when the path does not exist. Default: false (missing = error).'),
  }),
]);

/**
 * An agent key by fingerprint (`SHA256:` and 43 base64 characters, as `ssh-add -l` prints it) or by
 * comment. A `SHA256:` or `MD5:` selector of another shape is a typo, never a comment to look for.
 */
const sshKeySelector = z
  .string()
  .min(1, 'must not be empty')
  .refine((s) => !/^(SHA256|MD5):/i.test(s) || /^SHA256:[A-Za-z0-9+/]{43}$/.test(s), {
    message: 'a fingerprint must be SHA256: and 43 base64 characters, as `ssh-add -l` prints it (MD5 is not accepted)',
  });

/** A TCP port; a list of them names each port once (a repeated one is a typo, not a wish). */
const portList = z
  .array(
    z
      .number()
      .int('must be a whole number')
      // Below 1024 a listener needs CAP_NET_BIND_SERVICE, which no sandbox holds (bwrap --cap-drop ALL).
      .min(1024, 'must be a TCP port from 1024 to 65535 (the sandbox cannot listen below 1024)')
      .max(65535, 'must be a TCP port from 1024 to 65535'),
  )
  .superRefine((ports, ctx) => {
    ports.forEach((port, i) => {
      if (ports.indexOf(port) !== i)
        ctx.addIssue({ code: 'custom', path: [i], message: `port ${port} is listed twice` });
    });
  })
  .optional();

/**
 * A port in both lists would be two things at once: inside, the bridge listens on a host port where the
 * published server must listen; outside, sbx's published listener would be the host service it relays to.
 */
function refuseSharedPorts(
  net: { host_ports?: number[] | undefined; publish?: number[] | undefined },
  ctx: z.RefinementCtx,
): void {
  (net.publish ?? []).forEach((port, i) => {
    if (net.host_ports?.includes(port))
      ctx.addIssue({ code: 'custom', path: ['publish', i], message: `port ${port} is also in network.host_ports` });
  });
}

export const NetworkSchema = z
  .union(
    [
      z.enum(['none', 'host']),
      z
        .strictObject({
          allow: z
            .array(z.string())
            .optional()
            .describe("Destinations reachable through sbx's proxy: example.com, *.example.com, host:port."),
          deny: z.array(z.string()).optional().describe('Destinations refused even if allowed (deny wins).'),
          allow_private: z
            .array(z.string())
            .optional()
            .describe('Private or loopback addresses the proxy may dial, e.g. 127.0.0.1:5432 (refused by default).'),
          unix_sockets: z
            .array(z.string())
            .optional()
            .describe('Host unix sockets bound into the sandbox (e.g. a local database).'),
          host_ports: portList.describe(
            "Host services the sandbox may reach: inside, 127.0.0.1:PORT leads to the host's 127.0.0.1:PORT and nowhere else. Default: [].",
          ),
          publish: portList.describe(
            "Servers inside the sandbox the host may reach: the host's 127.0.0.1:PORT leads to 127.0.0.1:PORT inside (refused if the port is taken on the host). Default: [].",
          ),
          extra_ca_certs: z
            .array(pathString)
            .optional()
            .describe(
              "PEM files of private CAs the proxy also trusts for the hosts `credentials` names (it verifies those against the host's trust store). Default: [].",
            ),
        })
        .superRefine(refuseSharedPorts),
    ],
    { error: 'must be "none", "host", or a map such as { allow: [registry.npmjs.org] }' },
  )
  .describe(
    'none: own network namespace with only lo (default). host: share the host network. { allow: [...] }: only the listed destinations, through a proxy outside the sandbox.',
  );

const limitValue = z.union([z.string(), z.number()]);

/** `none` in a child profile lifts what a parent set (a limit listed in `required` cannot be lifted). */
export const LimitsSchema = z.strictObject({
  memory: limitValue
    .optional()
    .describe(
      'Memory (RAM + swap) for the whole sandbox, e.g. 2GiB, or none. ' +
        'Needs a cgroup: without one it is not enforced (and sbx says so). Default: none.',
    ),
  pids: limitValue.optional().describe('Processes and threads, e.g. 512, or none. Default: none.'),
  cpus: limitValue.optional().describe('CPU cores (fractions allowed), e.g. 2 or 0.5, or none. Default: none.'),
  timeout: limitValue.optional().describe('Wall-clock time, e.g. 30m, or none; the sandbox is ended. Default: none.'),
  cpu_time: limitValue.optional().describe('CPU time per process (RLIMIT_CPU), e.g. 10m, or none. Default: none.'),
  file_size: limitValue
    .optional()
    .describe('Largest file a process may write (RLIMIT_FSIZE), e.g. 1GiB, or none. Default: none.'),
  nofile: limitValue.optional().describe('Open files per process (RLIMIT_NOFILE), e.g. 1024, or none. Default: none.'),
  address_space: limitValue
    .optional()
    .describe(
      'Address space per process (RLIMIT_AS), e.g. 16GiB, or none. ' +
        'Not a memory limit: V8, WebAssembly and the JVM reserve far more. Default: none.',
    ),
  required: z
    .array(z.string())
    .optional()
    .describe(
      'Limits that must be enforced exactly (cgroups), or the run is refused; none cannot lift them. Default: [].',
    ),
});

const seccompPreset = z.enum(['default', 'strict', 'off']);

/** `seccomp: strict` is shorthand for `{ preset: strict }`; normalising here makes `extends` merge it key by key. */
export const SeccompSchema = z.preprocess(
  (v) => (typeof v === 'string' ? { preset: v } : v),
  z.strictObject({
    preset: seccompPreset
      .optional()
      .describe('default (Flatpak/Docker-like deny list), strict (more), off. Default: default.'),
    add: z.array(z.string()).optional().describe('More syscalls to deny with EPERM.'),
    remove: z.array(z.string()).optional().describe('Syscalls to let through despite the preset.'),
    io_uring: z
      .boolean()
      .optional()
      .describe('Allow io_uring (denied by default: a large kernel attack surface). Default: false.'),
  }),
);

export const ProfileSchema = z.strictObject({
  description: z.string().optional().describe('One line shown by `sbx profiles list`.'),
  extends: z
    .union([z.string(), z.array(z.string()).min(1)])
    .optional()
    .describe('Parent profile name(s), merged left to right before this one.'),
  mode: z
    .enum(['read-only', 'workspace-write', 'danger'])
    .optional()
    .describe(
      'read-only: nothing writable but /tmp. workspace-write (default): workspace and writable_roots. danger: the host filesystem (needs --danger).',
    ),
  workspace: z
    .strictObject({
      path: pathString.optional().describe('Host directory of the workspace. Default: ${cwd} (or --workspace).'),
      mountAt: pathString.optional().describe('Where it appears inside. Default: its own path.'),
    })
    .optional(),
  writable_roots: z
    .array(BindEntrySchema)
    .optional()
    .describe('Extra host paths bound read-write (workspace-write mode only).'),
  read_only: z.array(BindEntrySchema).optional().describe('Extra host paths bound read-only (tools, skills, caches).'),
  system: z
    .array(BindEntrySchema)
    .optional()
    .describe('System paths bound read-only. Default: /usr /bin /sbin /lib /lib32 /lib64 /etc (missing ones skipped).'),
  tmp: z
    .strictObject({
      size: z
        .union([z.string(), z.number()])
        .optional()
        .describe('Size of the private /tmp tmpfs, e.g. 256MiB. Default: 512MiB.'),
    })
    .optional(),
  env: z
    .strictObject({
      keep: z
        .array(envPattern)
        .optional()
        .describe(
          'Names (or LC_*-style patterns) inherited from the invoking environment. Credential-like names are dropped unless named exactly.',
        ),
      set: z
        .record(envName, z.string())
        .optional()
        .describe('Variables set in the sandbox (values may use variables).'),
    })
    .optional(),
  network: NetworkSchema.optional(),
  user: z
    .enum(['sandbox', 'root'])
    .optional()
    .describe(
      "sandbox (default): an unprivileged uid inside. root: uid 0 inside (and, when sbx runs as root, root's file access).",
    ),
  limits: LimitsSchema.optional(),
  seccomp: SeccompSchema.optional(),
  sensitive: z
    .strictObject({
      roots: z
        .array(pathString)
        .optional()
        .describe(
          'More host paths that never enter the sandbox, like the built-in ~/.ssh ~/.aws ... (added to them; only --allow-sensitive-roots lifts the block).',
        ),
      files: z
        .array(z.string().min(1))
        .optional()
        .describe(
          'More globs (minimatch, relative to each mounted tree) of files and dirs masked inside the sandbox, added to the built-in .env, *.pem, *secret* ...',
        ),
      except: z
        .array(z.string().min(1))
        .optional()
        .describe('Globs never masked (added to the built-in .env.example, .env.sample ...).'),
      skip: z
        .array(z.string().min(1))
        .optional()
        .describe(
          'Directories (relative to each mounted tree) the sensitive-file scan does not enter, for speed, e.g. node_modules. Default: .git/objects and other content-addressed stores.',
        ),
    })
    .optional()
    .describe('Credential stores and secret-looking files kept out of the sandbox.'),
  git: z
    .strictObject({
      global_config: z
        .boolean()
        .optional()
        .describe(
          'Show your ~/.gitconfig and $XDG_CONFIG_HOME/git/config inside HOME as sanitized read-only views (identity, aliases, settings that run nothing; no credential helpers or programs). Default: true.',
        ),
    })
    .optional()
    .describe('How git inside the sandbox sees your git configuration.'),
  toolchains: z
    .union([z.boolean(), z.literal('machine')])
    .optional()
    .describe(
      'Show the toolchains on your PATH read-only, each with its root, credentials inside masked: true, ' +
        'those in HOME (nvm, pyenv, rustup, a virtualenv, ~/.local/bin, ...) and those outside it (a CI tool ' +
        'cache, /opt/TOOL/bin); machine, only those outside HOME. Default: false (the built-in default ' +
        'profile, and those extending it, set true; untrusted sets machine).',
    ),
  secrets: SecretsSchema.optional(),
  credentials: CredentialsSchema.optional(),
  ssh_agent: z
    .strictObject({
      keys: z
        .array(sshKeySelector)
        .min(1, 'name at least one key (an ssh_agent with no keys offers nothing: remove the key instead)')
        .describe(
          'The keys of your ssh-agent ($SSH_AUTH_SOCK) the sandbox may use, each by fingerprint ' +
            '(SHA256:..., as `ssh-add -l` prints it) or by comment (me@laptop). A key that is not in the agent refuses the run.',
        ),
    })
    .optional()
    .describe(
      'An agent socket inside (SSH_AUTH_SOCK) that lists and signs with the named keys only and refuses ' +
        'every other request (add, remove, lock, extensions). The key material never enters the sandbox. ' +
        'Default: no agent.',
    ),
  commands: CommandsSchema.optional(),
  backend: z
    .enum(['bwrap', 'nsjail', 'landlock', 'auto'])
    .optional()
    .describe(
      'The launcher: bwrap (default), nsjail, landlock, or auto (bwrap; nsjail without bwrap; ' +
        'landlock where no user namespace can be created). --backend overrides it.',
    ),
  hostname: z
    .string()
    .regex(/^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$/, 'must be a valid hostname label')
    .optional()
    .describe('Hostname inside the sandbox. Default: sbx.'),
});

export type Profile = z.infer<typeof ProfileSchema>;
export type BindEntry = z.infer<typeof BindEntrySchema>;
