// Flags of `run` and `explain`, defined once as data. commander builds help and errors from the table;
// `sbx run` itself is parsed by parseRunArgv from the same table, so the launch path does not load
// commander (about 12 ms) at all.
import type { Command } from 'commander';
import { SbxError } from '../errors.js';
import type { RunOptions } from '../api.js';
import type { McpFlags } from './mcp/mcp.js';

export interface RunFlags {
  profile?: string;
  workspace?: string;
  bind: string[];
  roBind: string[];
  env: string[];
  keepEnv: string[];
  network?: 'none' | 'host';
  allowDomain: string[];
  /** Absent in flags built by hand (tests); the parsers always set them. */
  allowPrivate?: string[];
  unmask?: string[];
  danger?: boolean;
  allowSensitiveRoots?: boolean;
  exposeWorkspaceSecrets?: boolean;
  allowDenylistedCommands?: boolean;
  shell?: string;
  backend?: 'bwrap' | 'nsjail' | 'landlock' | 'auto';
  memory?: string;
  pids?: string;
  cpus?: string;
  timeout?: string;
  cpuTime?: string;
  fileSize?: string;
  nofile?: string;
  addressSpace?: string;
  tmpSize?: string;
  trustProfile?: string;
}

export interface RunCliFlags extends RunFlags {
  reportFile?: string;
  reportFd?: string;
  approval?: 'prompt' | 'never';
  capture?: boolean;
  captureLimit?: string;
  auditFile?: string;
  /** false with --no-audit (commander's negated-flag convention). */
  audit?: boolean;
  dryRun?: boolean;
  verbose?: boolean;
  /** Served by the warm server when it can be (cli/warm/warm-run.ts); else run here, and a server started. */
  warm?: boolean;
}

interface FlagSpec {
  long: string;
  short?: string;
  /** commander's placeholder; absent for boolean flags. */
  value?: string;
  multiple?: boolean;
  choices?: string[];
  description: string;
}

/** Shared by run and explain. */
export const POLICY_FLAGS: readonly FlagSpec[] = [
  {
    long: 'profile',
    short: 'p',
    value: '<name>',
    description: 'profile name or path to a .yaml file (default: default)',
  },
  {
    long: 'workspace',
    short: 'w',
    value: '<dir>',
    description: 'workspace directory, bound read-write (default: the current directory)',
  },
  { long: 'bind', value: '<src[:dest]>', multiple: true, description: 'also bind a host path read-write (repeatable)' },
  {
    long: 'ro-bind',
    value: '<src[:dest]>',
    multiple: true,
    description: 'also bind a host path read-only (repeatable)',
  },
  {
    long: 'env',
    short: 'e',
    value: '<name=value>',
    multiple: true,
    description: 'set a variable in the sandbox (repeatable)',
  },
  {
    long: 'keep-env',
    value: '<name>',
    multiple: true,
    description: 'inherit this variable (or LC_*-style pattern) from your environment (repeatable)',
  },
  {
    long: 'network',
    value: '<mode>',
    choices: ['none', 'host'],
    description:
      'override the profile: none (no network: loopback only in its own namespace; under --backend landlock, TCP and sockets refused) or host',
  },
  {
    long: 'allow-domain',
    value: '<name[:port]>',
    multiple: true,
    description: 'also allow this destination through the egress proxy (repeatable; *.example.com globs)',
  },
  {
    long: 'allow-private',
    value: '<addr[:port]>',
    multiple: true,
    description:
      'let the egress proxy dial this private or loopback address (repeatable; network.allow_private for this run)',
  },
  {
    long: 'unmask',
    value: '<glob>',
    multiple: true,
    description:
      'show files matching this glob though a sensitive-file rule masks them (repeatable; sensitive.except for this run)',
  },
  {
    long: 'backend',
    value: '<name>',
    choices: ['bwrap', 'nsjail', 'landlock', 'auto'],
    description:
      'the launcher: bwrap (default), nsjail, landlock, or auto (bwrap; nsjail without bwrap; landlock where no user namespace can be created)',
  },
  { long: 'danger', description: 'allow a profile with mode: danger (the host filesystem, writable)' },
  {
    long: 'allow-sensitive-roots',
    description: 'let credential stores (~/.ssh, ~/.aws, ...) be bound and stop masking them (unsafe)',
  },
  {
    long: 'expose-workspace-secrets',
    description:
      'landlock backend: run although secrets in the workspace (.env, a git config with credentials) stay readable, and list them in the report (unsafe)',
  },
  {
    long: 'allow-denylisted-commands',
    description: "lift the command rules' deny list (shells, network tools, rm, ...; very unsafe)",
  },
  {
    long: 'shell',
    value: '<string>',
    description: 'run a shell string with /bin/sh instead of COMMAND (under restricted syntax each command is judged)',
  },
  { long: 'memory', value: '<size>', description: 'memory for the whole sandbox, e.g. 2GiB (none lifts it)' },
  { long: 'pids', value: '<n>', description: 'process/thread limit, e.g. 512 (or none)' },
  { long: 'cpus', value: '<n>', description: 'CPU cores, e.g. 2 or 0.5 (or none)' },
  { long: 'timeout', value: '<duration>', description: 'wall-clock limit, e.g. 90s or 10m, or none (exit 124)' },
  { long: 'cpu-time', value: '<duration>', description: 'CPU time per process, e.g. 10m (or none)' },
  { long: 'file-size', value: '<size>', description: 'largest file a process may write, e.g. 1GiB (or none)' },
  { long: 'nofile', value: '<n>', description: 'open files per process, e.g. 1024 (or none)' },
  { long: 'address-space', value: '<size>', description: 'RLIMIT_AS per process, e.g. 16GiB (or none)' },
  { long: 'tmp-size', value: '<size>', description: 'size of the private /tmp (and HOME), e.g. 256MiB' },
  {
    long: 'trust-profile',
    value: '<sha256[,...]>',
    description: 'trust the project profile with this chain hash for this run only (CI; see `sbx trust --help`)',
  },
];

/** Only for run. */
export const RUN_ONLY_FLAGS: readonly FlagSpec[] = [
  { long: 'report-file', value: '<path>', description: 'write the JSON report to this file' },
  { long: 'report-fd', value: '<n>', description: 'write the JSON report to this open file descriptor (3 or more)' },
  {
    long: 'approval',
    value: '<mode>',
    choices: ['prompt', 'never'],
    description:
      'commands the rules do not allow, and with --capture hosts network.allow does not match: prompt on the terminal (default) or refuse',
  },
  {
    long: 'capture',
    description:
      "collect the command's stdout and stderr (bounded, secrets scrubbed) into the report instead of passing them through",
  },
  { long: 'capture-limit', value: '<size>', description: 'bytes kept of each captured stream (default 16KiB)' },
  {
    long: 'audit-file',
    value: '<path>',
    description: 'the audit ledger (default $XDG_STATE_HOME/sbx/audit.jsonl, or $SBX_AUDIT_FILE)',
  },
  { long: 'no-audit', description: 'write no audit record for this run' },
  { long: 'dry-run', description: 'print what would run (like explain) and run nothing' },
  { long: 'verbose', short: 'v', description: 'print the summary even on success, and what was kept out' },
  {
    long: 'warm',
    description:
      "run through sbx's warm server, without starting Node.js (started by the first --warm run; a run it cannot serve exactly as this one runs here instead)",
  },
];

const camel = (long: string) => long.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

export async function addFlags(cmd: Command, specs: readonly FlagSpec[]): Promise<Command> {
  const { Option } = await import('commander');
  for (const spec of specs) {
    const option = new Option(
      `${spec.short ? `-${spec.short}, ` : ''}--${spec.long}${spec.value ? ` ${spec.value}` : ''}`,
      spec.description,
    );
    if (spec.choices) option.choices(spec.choices);
    if (spec.multiple) option.argParser(collect).default([]);
    cmd.addOption(option);
  }
  return cmd;
}

/** The flags of `sbx mcp`: those of `run` that fix what every call runs under, and --max-runs. */
export const MCP_FLAGS: readonly FlagSpec[] = [
  ...[...POLICY_FLAGS, ...RUN_ONLY_FLAGS].filter((f) =>
    ['profile', 'workspace', 'backend', 'trust-profile', 'audit-file', 'no-audit'].includes(f.long),
  ),
  {
    long: 'max-runs',
    value: '<n>',
    description: 'commands running at once; further calls wait for one to end (default 4)',
  },
];

/**
 * Flags from `specs` without commander, until `--` or the first non-flag: the flags and the rest.
 * Undefined for anything unusual (help, unknown flag, bad value), which commander then reports.
 */
function readFlags(
  args: readonly string[],
  specs: readonly FlagSpec[],
  flags: Record<string, string | boolean | string[]>,
): { flags: Record<string, string | boolean | string[]>; rest: string[] } | undefined {
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      i++;
      break;
    }
    if (!arg.startsWith('-') || arg === '-') break;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    const spec = specs.find((s) => name === `--${s.long}` || (s.short !== undefined && name === `-${s.short}`));
    if (!spec) return undefined;
    // commander's convention: --no-audit sets `audit` to false.
    const negated = spec.long.startsWith('no-');
    const key = camel(negated ? spec.long.slice(3) : spec.long);
    if (!spec.value) {
      if (eq > 0) return undefined;
      flags[key] = !negated;
      continue;
    }
    const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
    if (value === undefined || (spec.choices && !spec.choices.includes(value))) return undefined;
    flags[key] = spec.multiple ? [...(flags[key] as string[]), value] : value;
  }
  return { flags, rest: args.slice(i) };
}

/**
 * `sbx run [flags] [--] COMMAND...` without commander: flags until `--` or the first non-flag, the
 * rest is the command. Returns undefined for anything unusual (help, unknown flag, bad value) so the
 * caller can let commander produce its full error message.
 */
export function parseRunArgv(args: readonly string[]): { flags: RunCliFlags; command: string[] } | undefined {
  const read = readFlags(args, [...POLICY_FLAGS, ...RUN_ONLY_FLAGS], {
    bind: [],
    roBind: [],
    env: [],
    keepEnv: [],
    allowDomain: [],
    allowPrivate: [],
    unmask: [],
  });
  if (!read) return undefined;
  const { flags, rest: command } = read;
  // --shell STRING takes the place of the command; both, or neither, is for commander to report.
  if ((command.length === 0) === (flags.shell === undefined)) return undefined;
  return { flags: flags as unknown as RunCliFlags, command };
}

/**
 * `sbx mcp [flags]` without commander (about 12 ms of every server's start): its flags only, no
 * argument; anything else is undefined, for commander to report.
 */
export function parseMcpArgv(args: readonly string[]): McpFlags | undefined {
  const read = readFlags(args, MCP_FLAGS, {});
  return read && read.rest.length === 0 ? (read.flags as McpFlags) : undefined;
}

function splitBind(value: string, flag: string): { source: string; target?: string } {
  const i = value.indexOf(':');
  const source = i < 0 ? value : value.slice(0, i);
  const target = i < 0 ? undefined : value.slice(i + 1);
  if (!source || target === '')
    throw new SbxError('USAGE', `${flag} ${value}: expected SRC or SRC:DEST`, {
      hint: `e.g. ${flag} ~/tools:/opt/tools`,
    });
  return target === undefined ? { source } : { source, target };
}

export function toRunOptions(flags: RunFlags, command: string[]): RunOptions {
  const env: Record<string, string> = {};
  for (const pair of flags.env) {
    const i = pair.indexOf('=');
    // Messages name the variable, never the value: it may be a secret.
    if (i <= 0) throw new SbxError('USAGE', '--env: expected NAME=VALUE', { hint: 'e.g. --env NODE_ENV=test' });
    const name = pair.slice(0, i);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new SbxError('USAGE', `--env: "${name}" is not a valid variable name`, {
        hint: 'names match [A-Za-z_][A-Za-z0-9_]*',
      });
    env[name] = pair.slice(i + 1);
  }
  for (const name of flags.keepEnv) {
    if (!/^[A-Za-z0-9_*]+$/.test(name))
      throw new SbxError('USAGE', `--keep-env ${name}: not a variable name or pattern`, {
        hint: 'e.g. --keep-env NODE_OPTIONS or --keep-env "LC_*"',
      });
  }
  return {
    // A shell string takes the place of the command (the library door refuses both at once).
    ...(flags.shell !== undefined ? { shell: flags.shell } : { command }),
    ...(flags.profile ? { profile: flags.profile } : {}),
    ...(flags.workspace ? { workspace: flags.workspace } : {}),
    binds: [
      ...flags.bind.map((b) => ({ ...splitBind(b, '--bind'), access: 'rw' as const })),
      ...flags.roBind.map((b) => ({ ...splitBind(b, '--ro-bind'), access: 'ro' as const })),
    ],
    env,
    keepEnv: flags.keepEnv,
    ...(flags.network ? { network: flags.network } : {}),
    ...(flags.allowDomain.length > 0 ? { allowDomains: flags.allowDomain } : {}),
    ...(flags.allowPrivate?.length ? { allowPrivate: flags.allowPrivate } : {}),
    ...(flags.unmask?.length ? { unmask: flags.unmask } : {}),
    danger: flags.danger ?? false,
    ...(flags.allowSensitiveRoots ? { allowSensitiveRoots: true } : {}),
    ...(flags.exposeWorkspaceSecrets ? { exposeWorkspaceSecrets: true } : {}),
    ...(flags.allowDenylistedCommands ? { allowDenylistedCommands: true } : {}),
    ...(flags.backend ? { backend: flags.backend } : {}),
    limits: Object.fromEntries(
      (
        [
          ['memory', flags.memory],
          ['pids', flags.pids],
          ['cpus', flags.cpus],
          ['timeout', flags.timeout],
          ['cpu_time', flags.cpuTime],
          ['file_size', flags.fileSize],
          ['nofile', flags.nofile],
          ['address_space', flags.addressSpace],
        ] as const
      ).filter(([, v]) => v !== undefined),
    ),
    ...(flags.tmpSize !== undefined ? { tmpSize: flags.tmpSize } : {}),
    ...(flags.trustProfile !== undefined ? { trustProfiles: flags.trustProfile.split(',').map((h) => h.trim()) } : {}),
  };
}
