// commander wiring for every command: help, suggestions, errors. Loaded only when `sbx run`'s fast
// parser declines (help, other commands, a malformed flag).
import { Command, Option } from 'commander';
import { VERSION } from '../version.js';
import { addFlags, MCP_FLAGS, POLICY_FLAGS, RUN_ONLY_FLAGS, type RunCliFlags, type RunFlags } from './run-flags.js';
import { runHere } from './run-command.js';

const EXAMPLES = `
Examples:
  sbx run -- npm test                      default profile: workspace writable, no network
  sbx run -p read-only -- git diff         nothing writable but a private /tmp
  sbx run -p agent --report-fd 3 -- python3 tool.py 3>report.json
  sbx run -p network -- npm install        default + host network
  sbx run -- bash                          an interactive shell in the sandbox
  sbx run -p agent --shell 'ls src'        a shell string, judged by the profile's command rules
  sbx run --capture --report-fd 3 -- make 3>r.json   output bounded and scrubbed into the report
  sbx explain -- make                      show the policy and the exact bwrap command
  sbx why -p agent -- git push             which profile line allows or refuses a command, path or host
  sbx export docker -p agent -- npm test   the same sandbox as a docker run argv (oci, k8s too)
  sbx log -n 5                             the last runs from the audit ledger
  sbx hook claude-code < call.json         a Claude Code PreToolUse hook: Bash commands run in sbx (hook --help)
  sbx approvals list                       remembered approval answers (revoke PREFIX, clear)
  sbx mcp -p builtin:agent --workspace .   an MCP server on stdio: an agent's tool calls run in the sandbox
  sbx profiles list                        which profiles exist, where they come from, trusted or not
  sbx trust ci                             review and trust the project profile .sbx/profiles/ci.yaml
  sbx doctor                               check bwrap, user namespaces, cgroups
  sudo sbx setup                           Ubuntu 24.04+: let bwrap create user namespaces (--dry-run first)

Exit codes: the command's own status passes through (128+N when killed by signal N).
sbx's own: 2 usage, 125 profile/sandbox setup failed, 126 denied by policy or not executable,
127 command not found in the sandbox. See the README for details.`;

const TRUST_HELP = `
A profile found in a project's .sbx/profiles (in the working directory or any parent) is never used
because of where it is: a cloned repository, or a sandboxed command that wrote .sbx/ into its
workspace, would choose your sandbox. sbx runs one only after you trusted its exact content: the
sha256 of the file and of every file it extends (the chain hash). Any change refuses it again
(PROFILE_UNTRUSTED, exit 125) until you review and trust it anew.

  sbx profiles show ci          review the merged profile, its files and its chain hash
  sbx trust --dry-run ci        each file of its chain: the content, or the diff since you trusted it
  sbx trust ci                  the same, with what it widens over its built-in, then asks and pins it
  sbx trust --yes ci            pin without asking (scripts; without a terminal --yes is required)
  sbx trust --list              every pin; whether its file changed since
  sbx trust --revoke .sbx/profiles/ci.yaml

CI (no pin store): name the chain hash for the run, never "trust everything"; for sbx's own profile
whatever the repository defines, use -p builtin:NAME (e.g. -p builtin:untrusted):
  sbx run --trust-profile <sha256> -p ci -- make test
  SBX_TRUST_PROFILE=<sha256>[,<sha256>...] sbx run -p ci -- make test

Pins live in $XDG_STATE_HOME/sbx/trust.json (default ~/.local/state/sbx), hidden from every sandbox.
User profiles (~/.config/sbx/profiles) need no pin, but they and every parent directory must be
owned by you or root and not writable by group or others (else PROFILE_UNSAFE). A file named with
-p PATH is pinned like a project file when it lies inside a .sbx/ directory, the working directory
or its project, --workspace, or (GitHub Actions) the checkout: a run or a pull request could have
written it. Elsewhere the owner and mode checks suffice, unless a writable tree of the run holds it.`;

export async function buildProgram(): Promise<Command> {
  const program = new Command('sbx')
    .description('Run untrusted commands in a bubblewrap sandbox compiled from a named profile.')
    .version(VERSION, '-V, --version')
    .enablePositionalOptions()
    .showSuggestionAfterError()
    .addHelpText('after', EXAMPLES)
    .exitOverride();
  // In the order `sbx --help` lists them.
  await addRunCommand(program);
  await addExplainCommand(program);
  await addWhyCommand(program);
  await addExportCommands(program);
  addProxyCommand(program);
  addAuditCommand(program);
  addProfilesCommands(program);
  addTrustCommand(program);
  addApprovalsCommands(program);
  addLogCommand(program);
  addHookCommand(program);
  await addMcpCommand(program);
  addHostCommands(program);
  return program;
}

async function addRunCommand(program: Command): Promise<void> {
  const run = program
    .command('run')
    .description("run COMMAND in the sandbox; its exit status becomes sbx's")
    .argument('[command...]', 'the command and its arguments (put them after --), unless --shell is given')
    .passThroughOptions();
  await addFlags(run, [...POLICY_FLAGS, ...RUN_ONLY_FLAGS]);
  run.action(async (command: string[], flags: RunCliFlags) => {
    await runHere(command, flags);
  });
}

async function addExplainCommand(program: Command): Promise<void> {
  const explain = program
    .command('explain')
    .description(
      "show the resolved policy and the exact launcher argv, shell-quoted (with limits, after the wrapper that starts it in the run's cgroup, as run spawns it); runs nothing",
    )
    .argument('[command...]', 'the command (default: sh)')
    .passThroughOptions()
    .option('--json', 'machine-readable output');
  await addFlags(explain, POLICY_FLAGS);
  explain.action(async (command: string[], flags: RunFlags & { json?: boolean }) => {
    const { explainCommand } = await import('./explain.js');
    await explainCommand(flags.shell !== undefined || command.length > 0 ? command : ['sh'], flags);
  });
}

const WHY_HELP = `
Each TARGET is a path (it holds a /, starts with . or ~, or names a file here: /etc/hosts, .env, src,
~/.ssh/id_rsa), else a host (registry.npmjs.org; *.example.com is a pattern, not a host: name one),
host:port or [v6]:port (port 443 when none is given); the command follows --, or comes as
--shell 'STRING' as an agent's hook sends it. For each, sbx says what the sandbox of \`sbx run\` with
the same -p, -w and flags makes of it, and which rule decides:
  a path      writable, readable, hidden (a mask over it) or absent (not in the sandbox), and the
              mount that decides: the profile entry that binds it (writable_roots[1], read_only[0]),
              the sensitive root or sensitive-file rule that hides it, or sbx's own default
  a host      allowed or denied by network.allow, network.deny, network.allow_private or the network
              mode, and the entry that matched
  a command   allowed, needs approval or denied by the command rules, and each rule that decided
A rule is shown as (FILE:LINE:COL KEY) for a profile line (builtin:NAME for sbx's own profiles, see
\`sbx profiles show builtin:NAME\`), (default KEY) for sbx's default, (flag --NAME) for a flag, or
(sbx) where no key of any profile sets it. Nothing runs and nothing is recorded: the policy is
derived as \`sbx explain\` derives it, and a path is a host path as you name it (inside, the workspace
may sit elsewhere: both are shown).

Exit status: 0 every target is allowed (a path readable or writable); 1 at least one is not (hidden,
absent, denied, or a command that needs approval); 2, 125, 126 as for sbx run when the question itself
fails (usage, a profile that does not load, mode: danger without --danger).

Examples:
  sbx why -p agent -- git push                  which rule refuses it, at which profile line
  sbx why -p agent --shell 'curl x | sh'        a shell string, judged command by command
  sbx why ~/.ssh/id_rsa ./.env                  hidden or absent, and the rule that keeps each out
  sbx why -p ci registry.npmjs.org evil.test:80 the network.allow entry that matched, or why not
  sbx why --json -p agent src/ -- make          machine-readable: {profile, answers: [...]}`;

async function addWhyCommand(program: Command): Promise<void> {
  const why = program
    .command('why')
    .description(
      'say whether the profile lets the sandbox see a path, reach a host or run a command, and which profile line decides; runs nothing',
    )
    .argument('[targets...]', 'paths and hosts, then -- and a command')
    .option('--json', 'machine-readable output')
    .addHelpText('after', WHY_HELP);
  const { WHY_FLAGS } = await import('./why.js');
  await addFlags(
    why,
    POLICY_FLAGS.filter((f) => WHY_FLAGS.includes(f.long)),
  );
  why.action(async (targets: string[], flags: import('./why.js').WhyFlags) => {
    // commander drops the `--` that ends the targets: the command is found in why's own arguments.
    const { whyCommand } = await import('./why.js');
    await whyCommand(targets, process.argv.slice(process.argv.indexOf('why', 2) + 1), flags);
  });
}

const EXPORT_HELP = `
The profile's policy, compiled for an engine that runs elsewhere; runs nothing. Files the engine reads
(the seccomp profile, generated files, a bundle) go to --out, by default sbx's own state directory
($XDG_STATE_HOME/sbx/export/PROFILE), and never inside the workspace or a writable bind: a sandboxed
command could rewrite its next sandbox. Gaps (what the engine enforces differently) go to stderr, or
into --json; a policy the engine cannot honour is refused, naming the key (exit 125).
docs/EXPORT.md maps every key.`;

async function addExportCommands(program: Command): Promise<void> {
  const exp = program
    .command('export')
    .description('compile the profile for Docker/Podman, an OCI runtime (runc, crun, runsc) or Kubernetes')
    .addHelpText('after', EXPORT_HELP);
  const docker = exp
    .command('docker')
    .description('print the `docker run` argv (the same under podman run): read-only root, no capabilities, seccomp')
    .argument('[command...]', 'the command and its arguments (put them after --)')
    .passThroughOptions()
    .option('--image <image>', 'the image that supplies the system directories (default: debian:stable-slim)')
    .option('--out <dir>', 'where the seccomp profile and generated files are written')
    .option('--env-file <file>', "your file of NAME=value lines for the profile's secrets (sbx never writes values)")
    .option('--json', 'print {argv, files, gaps} as JSON')
    .addHelpText(
      'after',
      '\nExample:\n  sbx export docker -p default --image sbx-host -- make test\n  eval "$(sbx export docker -p default -- make test)"   runs it (read the gaps on stderr first)',
    );
  await addFlags(docker, POLICY_FLAGS);
  docker.action(async (command: string[], flags: import('./export/export.js').ExportFlags) => {
    const { exportDockerCommand } = await import('./export/export.js');
    await exportDockerCommand(command, flags);
  });
  const oci = exp
    .command('oci')
    .description(
      'write an OCI runtime bundle (config.json, rootfs/) to DIR for runc, crun or runsc: no image, the host system read-only',
    )
    .argument('<dir>', 'the bundle directory (created; outside the workspace)')
    .argument('[command...]', 'the command and its arguments, after -- (options may come before or after DIR)')
    .option('--json', 'print {bundle, config, gaps} as JSON')
    .addHelpText(
      'after',
      '\nExample (as root):\n  sbx export oci /var/lib/sbx/b1 -p default -- make test && runc run --bundle /var/lib/sbx/b1 b1',
    );
  await addFlags(oci, POLICY_FLAGS);
  oci.action(async (dir: string, command: string[], flags: import('./export/export.js').ExportFlags) => {
    const { exportOciCommand } = await import('./export/export.js');
    await exportOciCommand(dir, command, flags);
  });
  const k8s = exp
    .command('k8s')
    .description(
      'print a Pod (or --job a Job), its ConfigMap and a NetworkPolicy as YAML: non-root, read-only root, no capabilities; an allow-list adds the egress proxy (Deployment, Service, NetworkPolicy)',
    )
    .argument('[command...]', 'the command and its arguments (put them after --)')
    .passThroughOptions()
    .option('--image <image>', 'the image that supplies the system directories (default: debian:stable-slim)')
    .option('--job', 'a batch/v1 Job (backoffLimit 0) instead of a Pod')
    .option('--name <name>', 'object names and the label the NetworkPolicy selects (default: sbx-PROFILE)')
    .option('--workspace-claim <pvc>', 'the PersistentVolumeClaim holding the workspace (default: NAME-workspace)')
    .option(
      '--secret-name <secret>',
      "the Secret holding the profile's secrets, one key per variable (default: NAME-secrets)",
    )
    .addOption(
      new Option(
        '--seccomp <kind>',
        "localhost: sbx's profile, copied to each node's kubelet seccomp dir; runtime-default: the runtime's",
      )
        .choices(['localhost', 'runtime-default'])
        .default('localhost'),
    )
    .option(
      '--proxy-image <image>',
      "an allow-list network: the image of the egress proxy's Deployment, with sbx on PATH (default: --image)",
    )
    .option('--proxy-port <port>', 'the port the egress proxy serves and HTTP_PROXY names (default: 3128)')
    .option('--out <dir>', 'where the seccomp profile is written (for copying to the nodes)')
    .option('--json', 'print {manifests, files, gaps} as JSON');
  await addFlags(k8s, POLICY_FLAGS);
  k8s.action(async (command: string[], flags: import('./export/export.js').ExportFlags) => {
    const { exportK8sCommand } = await import('./export/export.js');
    await exportK8sCommand(command, flags);
  });
}

const PROXY_HELP = `
The rules are the profile's network.allow, network.deny and network.allow_private (matched exactly as
\`sbx run\` matches them), plus the flags; without -p, only the flags. A name is resolved by the proxy,
and every address it resolves to must be public or listed in allow_private (no 10.x, 169.254.169.254,
127.x unless listed). Clients use it as an HTTP proxy (plain http:// and CONNECT) or a SOCKS5 proxy, on
the same port:
  HTTP_PROXY=http://127.0.0.1:3128 HTTPS_PROXY=http://127.0.0.1:3128 ALL_PROXY=socks5h://127.0.0.1:3128

stdout: one line per event, host and port only (never a path, query or header): listening (the port is
bound), open, close (bytes each way), refused (the rule and why), failed, stopped. --json-log makes
each a JSON object with an ISO time. stderr: warnings and errors. SIGTERM or SIGINT ends every
connection and exits 0. The proxy serves whoever reaches its address: 127.0.0.1 unless --allow-remote.

Examples:
  sbx proxy -p ci                                      the profile ci's allow-list on 127.0.0.1:3128
  sbx proxy --allow-domain registry.npmjs.org --listen 127.0.0.1:0 --json-log
  sbx proxy --listen 0.0.0.0:3128 --allow-remote --json-log --allow-domain registry.npmjs.org:443
                                                       what \`sbx export k8s\` runs in the proxy pod: the
                                                       profile's rules on the argv, on every address`;

const AUDIT_HELP = `
Runs CMD unsandboxed (a container engine's run of \`sbx export\`) between two walks of the directories it
may write: whatever would make a later host git run a program (a hook, a config key such as
core.fsmonitor, a redirected commondir, a new git dir or submodule carrying one) is put back or renamed
aside, one line each. Run the container in the foreground (--rm): the audit starts when CMD exits.
Exit: CMD's status, or 125 when the audit could not finish (named on stderr).

Example:
  sbx audit --writable "$PWD" -- docker run --rm $(sbx export docker -- make test)`;

function addAuditCommand(program: Command): void {
  const collect = (value: string, previous: string[] = []) => [...previous, value];
  program
    .command('audit')
    .description('run a command (a container of an export) and audit the git state it leaves, as sbx run does')
    .argument('<command...>', 'the command, after --')
    .option(
      '--writable <dir>',
      'a directory the command can write (repeatable; default: the current directory)',
      collect,
    )
    .option('--report-file <file>', 'also write the exit code and the git-state violations as JSON')
    .addHelpText('after', AUDIT_HELP)
    .action(async (command: string[], flags: import('./audit-command.js').AuditFlags) => {
      const { auditCommand } = await import('./audit-command.js');
      await auditCommand(command, flags);
    });
}

function addProxyCommand(program: Command): void {
  const collect = (value: string, previous: string[] = []) => [...previous, value];
  program
    .command('proxy')
    .description("serve a profile's egress allow-list as an HTTP and SOCKS5 proxy on one port, until SIGTERM")
    .option('-p, --profile <name>', 'the profile whose network lists to serve (default: none, the flags only)')
    .option('--allow-domain <name[:port]>', 'also allow this destination (repeatable; *.example.com globs)', collect)
    .option('--deny-domain <name[:port]>', 'refuse this destination even if allowed (repeatable)', collect)
    .option(
      '--allow-private <addr[:port]>',
      'let the proxy dial this private or loopback address (repeatable)',
      collect,
    )
    .option('--listen <addr:port>', 'the IP address and port to serve (default: 127.0.0.1:3128; port 0: any free one)')
    .option('--allow-remote', 'permit --listen on an address other hosts can reach (it serves them all)')
    .option('--json-log', 'each event as a JSON object on its line')
    .option('--trust-profile <sha256[,...]>', 'trust the project profile with this chain hash (see `sbx trust --help`)')
    .addHelpText('after', PROXY_HELP)
    .action(async (flags: import('./proxy-command.js').ProxyFlags) => {
      const { proxyCommand } = await import('./proxy-command.js');
      await proxyCommand(flags);
    });
}

function addProfilesCommands(program: Command): void {
  const profiles = program.command('profiles').description('list and show profiles');
  profiles
    .command('list')
    .description('every visible profile, where it comes from (project, user, builtin) and whether runs may use it')
    .option('--json', 'machine-readable output')
    .action(async (flags: { json?: boolean }) => {
      const { listCommand } = await import('./profiles.js');
      await listCommand(flags);
    });
  profiles
    .command('show')
    .description('the merged profile, with the profile each value came from')
    .argument('<name>', 'profile name or path')
    .option('--json', 'machine-readable output')
    .action(async (name: string, flags: { json?: boolean }) => {
      const { showCommand } = await import('./profiles.js');
      await showCommand(name, flags);
    });
}

function addTrustCommand(program: Command): void {
  program
    .command('trust')
    .description('trust a project profile (.sbx/profiles) after review: pins its hash and that of all it extends')
    .argument('[name]', 'profile name or path (default: default)')
    .option('--list', 'every trusted profile, its chain hash, and whether the file changed since')
    .option('--revoke <path>', 'forget the pin of this profile (name or path)')
    .option('--dry-run', 'show what would be trusted (the content, or the diff since it was trusted) and pin nothing')
    .option('--yes', 'pin without asking for confirmation (needed without a terminal)')
    .addHelpText('after', TRUST_HELP)
    .action(async (name: string | undefined, flags: import('./trust-command.js').TrustFlags) => {
      const { trustCommand } = await import('./trust-command.js');
      await trustCommand(name, flags);
    });
}

function addApprovalsCommands(program: Command): void {
  const approvals = program
    .command('approvals')
    .description('the remembered approval answers ("always", and "deny" for 10 minutes): list, revoke, clear');
  approvals
    .command('list')
    .description('each remembered answer: profile, fingerprint, the command, the answer, when it expires')
    .option('--json', 'one JSON record per line')
    .action(async (flags: import('./approvals-command.js').ApprovalsFlags) => {
      const { listApprovals } = await import('./approvals-command.js');
      listApprovals(flags);
    });
  approvals
    .command('revoke')
    .description('forget the answer whose fingerprint starts with PREFIX (the next run asks again)')
    .argument('<prefix>', 'a fingerprint, or an unambiguous prefix of one (4+ hex digits)')
    .action(async (prefix: string) => {
      const { revokeApproval } = await import('./approvals-command.js');
      await revokeApproval(prefix);
    });
  approvals
    .command('clear')
    .description('forget every remembered answer (asks on a terminal)')
    .option('--yes', 'do not ask: needed without a terminal')
    .action(async (flags: import('./approvals-command.js').ApprovalsFlags) => {
      const { clearApprovals } = await import('./approvals-command.js');
      await clearApprovals(flags);
    });
}

function addLogCommand(program: Command): void {
  program
    .command('log')
    .description('recent runs and approval answers from the audit ledger')
    .option('--json', 'one JSON record per line')
    .option('--session <id>', 'only this session')
    .option('--profile <name>', 'only runs under this profile')
    .option('--violation <kind>', 'only runs with a violation of this kind (command, path, timeout, oom, network, ...)')
    .option('-n, --limit <n>', 'the newest N records (default 20)')
    .option('--file <path>', 'the ledger to read (default $SBX_AUDIT_FILE or $XDG_STATE_HOME/sbx/audit.jsonl)')
    .action(async (flags: import('./log.js').LogFlags) => {
      const { logCommand } = await import('./log.js');
      await logCommand(flags);
    });
}

const HOOK_HELP = `
Reads the agent's pre-tool hook input (JSON) on stdin and answers on stdout, exit status 0:
  a shell command sbx would refuse      deny, with sbx's reason and the rule (the model sees it)
  any other shell command               the command replaced by '<node>' '<sbx>/bin/sbx.js' run -p PROFILE
                                        --workspace DIR --approval never --shell '<command>'; the agent's
                                        own permission rules then decide whether to ask you, unless
                                        --approve (claude-code only) tells it to run without asking
  any other tool                        no answer (claude-code) or {} (gemini-cli): the agent decides
  malformed input, any failure          deny, with why
The wrapped run judges the command again and builds the sandbox; it never asks on a terminal. For
claude-code, a leading \`cd DIR &&\` into the workspace runs in the agent's shell, so the directory
carries over to the next command as it does without the hook.

Claude Code (~/.claude/settings.json):
  {"hooks": {"PreToolUse": [{"matcher": "Bash|PowerShell",
    "hooks": [{"type": "command", "command": "/usr/local/bin/sbx hook claude-code || exit 2"}]}]}}
Gemini CLI (~/.gemini/settings.json):
  {"hooks": {"BeforeTool": [{"matcher": "run_shell_command",
    "hooks": [{"type": "command", "command": "/usr/local/bin/sbx hook gemini-cli || exit 2"}]}]}}
\`|| exit 2\`: a hook that cannot start (sbx moved, node missing) then blocks the call instead of letting
it run unsandboxed.

--warm: a call is answered by a per-user server (\`sbx warm-server\`, in sbx's cache directory) when one
runs, without starting Node.js: the same answer, about 10 ms instead of Node's start and the CLI's
loading, and the command it wraps runs as \`sbx run --warm\`. The first call starts it; it exits after
15 idle minutes (SBX_WARM_IDLE_SECONDS). It needs the native client built with sbx (a C compiler at
install); without it, --warm changes nothing. Each side checks the other is outside every sandbox
(docs/SECURITY.md, "The warm server").

See the README, "Coding agent hooks".`;

function addHookCommand(program: Command): void {
  program
    .command('hook')
    .description("answer a coding agent's pre-tool hook: run its shell commands in sbx, refuse what sbx refuses")
    .argument('<agent>', 'the hook format: claude-code or gemini-cli')
    .option('-p, --profile <name>', 'the profile the commands run under', 'builtin:agent')
    .option('--approve', 'tell the agent to run every rewritten command without asking you (claude-code only)')
    .option('--warm', 'answer through a per-user warm server, started by the first call (see below)')
    .addHelpText('after', HOOK_HELP)
    .action(async (agent: string, flags: import('./hook/hook.js').HookFlags) => {
      const { HOOK_AGENTS, canApprove } = await import('./hook/hook-protocol.js');
      const known = HOOK_AGENTS.find((a) => a === agent);
      const { SbxError } = await import('../errors.js');
      if (!known)
        throw new SbxError('USAGE', `sbx hook ${agent}: unknown agent`, { hint: `one of: ${HOOK_AGENTS.join(', ')}` });
      if (flags.approve && !canApprove(known))
        throw new SbxError('USAGE', `sbx hook ${agent} --approve: this agent's hooks cannot approve a call`, {
          hint: 'drop --approve: its own policy judges the rewritten command (README "Coding agent hooks")',
        });
      const { hookCommand } = await import('./hook/hook.js');
      await hookCommand(known, flags);
    });
  program
    .command('warm-server')
    .description(
      'serve `sbx hook AGENT --warm` and `sbx run --warm` for this user (started by the first such call; exits when idle)',
    )
    .addHelpText(
      'after',
      `
Listens on $XDG_CACHE_HOME/sbx/warm-BUILD.sock (~/.cache/sbx/...). It judges each hook call exactly as
\`sbx hook\` does with the caller's environment, and runs each run as \`sbx run\` would in the caller's
place, with the caller's stdio, or declines it (a terminal, other limits or umask, ...: the caller then
runs it in Node.js, and this server says why on its stdout). It exits after SBX_WARM_IDLE_SECONDS (900)
without a call, or when another server takes the socket. A call from a process it cannot place outside
every sandbox is closed unanswered. There is nothing to configure.`,
    )
    .action(async () => {
      const { warmServerCommand } = await import('./warm/warm-server.js');
      await warmServerCommand(process.env);
    });
}

const MCP_HELP = `
Tools: run {command: [argv...] | shell: "string", cwd?, timeout?, output_limit?}, start (the same, in
the background: a dev server, answered with a job number), stop {job}, explain {command | shell, cwd?}.
Every call runs under the profile and workspace fixed here; no tool argument widens them (cwd must
resolve inside the workspace, timeout only shortens the profile's). A refusal, a non-zero exit or a
violation is a result with isError, never a dropped connection. Nothing asks for approval: a command
the rules would ask about is refused. At most --max-runs commands run at once (default 4); a call past
that waits its turn, and a cancelled call ends its sandbox (SIGTERM, then SIGKILL after 2 s). Stdout
carries the protocol; sbx writes only to stderr.

  claude mcp add sbx -- /usr/bin/node /opt/sbx/bin/sbx.js mcp -p builtin:agent --workspace .
  {"mcpServers": {"sbx": {"command": "/usr/bin/node",
    "args": ["/opt/sbx/bin/sbx.js", "mcp", "-p", "builtin:agent", "--workspace", "."]}}}
Name Node.js and sbx by absolute paths: a PATH lookup can find a program a sandboxed command planted.
Without -p the server uses builtin:default.`;

async function addMcpCommand(program: Command): Promise<void> {
  const mcp = program
    .command('mcp')
    .description('serve MCP on stdio: tools that run commands in the sandbox, under one profile and workspace')
    .addHelpText('after', MCP_HELP);
  await addFlags(mcp, MCP_FLAGS);
  mcp.action(async (flags: import('./mcp/mcp.js').McpFlags) => {
    const { mcpCommand } = await import('./mcp/mcp.js');
    await mcpCommand(flags);
  });
}

/** doctor and setup: what this host offers, and the changes that need root. */
function addHostCommands(program: Command): void {
  program
    .command('doctor')
    .description('check bwrap, user namespaces, cgroups and seccomp on this host, with fixes')
    .option('--json', 'machine-readable output')
    .action(async (flags: { json?: boolean }) => {
      const { doctorCommand } = await import('./doctor.js');
      await doctorCommand(flags);
    });
  program
    .command('setup')
    .description('host changes that need root (Ubuntu 23.10+: AppArmor profile letting bwrap create user namespaces)')
    .option('--dry-run', 'print what would be written and loaded; change nothing')
    .option('--bwrap <path>', 'the bwrap to write the profile for (default: the one sbx uses)')
    .option('--remove', 'unload and delete the profile sbx setup wrote')
    .action(async (flags: import('./setup.js').SetupFlags) => {
      const { setupCommand } = await import('./setup.js');
      await setupCommand(flags);
    });
}
