// Golden exports: every built-in profile × every fixture host, through the real loader, derivePolicy
// and the exporters. A docker golden holds the argv one option a line with the reason beside it (a
// mount's from the Policy); an OCI golden holds config.json, and every field of it must have its
// reason in OCI_REASONS. A refused pair holds the refusal. The invariants below re-check what a
// reviewer looks for, so a regenerated golden cannot quietly accept a writable root, a kept
// capability or a leaked secret.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type DockerExport, exportDocker } from '../../../src/export/docker.js';
import { exportOci, type OciConfig, type OciExport } from '../../../src/export/oci.js';
import { SbxError } from '../../../src/errors.js';
import type { Policy } from '../../../src/policy/types.js';
import { expectGoldenText } from '../../helpers/golden.js';
import { builtinProfileNames, hostFixtureNames, runPipeline } from '../../helpers/hosts.js';
import { GOLDEN_DIR } from '../../helpers/paths.js';

const PROFILES = builtinProfileNames();
const HOSTS = hostFixtureNames();
const CASES = PROFILES.flatMap((profile) => HOSTS.map((host) => ({ profile, host })));
const DIR = '/var/lib/sbx-export/b';
/** mode: danger binds the host root writable: no exporter makes a container of it. */
const REFUSED = new Set(['danger']);

/** Why each docker option is there (mounts carry their reason in the Policy). */
const DOCKER_REASONS: Record<string, string> = {
  '--rm': 'nothing of the container outlives the run',
  '--init': "pid 1 is the engine's init: orphans reaped, signals passed on (bwrap's pid 1 does the same)",
  '--read-only': 'the root filesystem is not writable (remount-ro /)',
  '--cap-drop': 'no capabilities inside',
  '--security-opt': 'no privilege gain through exec (setuid, file caps); the system call filter',
  '--user': 'identity inside',
  '--pid': "the host's pid namespace (the policy shares it)",
  '--ipc': 'own System V IPC and POSIX queues',
  '--hostname': 'hostname inside (own UTS namespace)',
  '--uts': "the host's hostname (the policy shares it)",
  '--cgroupns': 'own cgroup namespace: host cgroup paths hidden',
  '--network': 'network: none is loopback only; host shares the host',
  '--memory': 'memory limit (cgroup)',
  '--memory-swap': 'no swap beyond the memory limit',
  '--pids-limit': 'process limit (cgroup)',
  '--cpus': 'CPU quota (cgroup)',
  '--ulimit': 'resource limit (soft = hard); core=0: no core files in the workspace',
  '--env-file':
    "policy env (the cleared allow-list) from the export's 0600 file, off the argv; secrets from the user's file",
  '--workdir': 'working directory',
  '--entrypoint': 'no ENTRYPOINT of the image runs in front of the command',
};
/** Mounts the export adds that are no policy mount: what the engine would mount and sbx does not. */
const ENGINE_MASKS: Record<string, string> = {
  '/sys': "sbx mounts no /sys: an empty read-only tmpfs over the host's sysfs the engine mounts",
};
const BOOLEAN_FLAGS = new Set(['--rm', '--init', '--read-only']);
const MOUNT_FLAGS = new Set(['--mount', '--tmpfs']);

function dockerTarget(flag: string, value: string): string {
  if (flag === '--tmpfs') return value.slice(0, value.indexOf(':'));
  return /(?:^|,)target=([^,]*)/.exec(value)![1]!;
}

function token(t: string): string {
  return t === '' || /[\s#"'\\]/.test(t) ? JSON.stringify(t) : t;
}

/** The docker argv as a reviewer reads it: `docker run`, one option a line with its reason, then image and command. */
function dockerGoldenText(argv: readonly string[], mounts: Policy['mounts']): string {
  const lines = [argv.slice(0, 2).join(' ')];
  let i = 2;
  let cursor = 0;
  while (argv[i]?.startsWith('--')) {
    const flag = argv[i]!;
    const value = BOOLEAN_FLAGS.has(flag) ? undefined : argv[++i]!;
    let reason = DOCKER_REASONS[flag] ?? 'NO REASON';
    if (MOUNT_FLAGS.has(flag)) {
      const target = dockerTarget(flag, value!);
      const found = mounts.findIndex((m, k) => k >= cursor && m.target === target);
      reason = found < 0 ? (ENGINE_MASKS[target] ?? 'NO POLICY MOUNT') : mounts[found]!.reason;
      if (found >= 0) cursor = found;
    }
    lines.push(`${[flag, ...(value === undefined ? [] : [value])].map(token).join(' ').padEnd(60)} # ${reason}`);
    i++;
  }
  lines.push(argv.slice(i).map(token).join(' '));
  return `${lines.join('\n')}\n`;
}

/** Why each field of config.json is there, by its path with array indexes dropped. */
const OCI_REASONS: Record<string, string> = {
  ociVersion: 'the runtime spec this config follows',
  'root.path': "the bundle's own empty root: no image, the policy binds the system into it",
  'root.readonly': 'the root itself is not writable (remount-ro /)',
  'process.terminal': 'no pseudo-terminal: stdio passes through',
  'process.user.uid': 'identity inside',
  'process.user.gid': 'identity inside',
  'process.user.additionalGids': 'no supplementary groups',
  'process.args': 'the command',
  'process.env': 'policy env (the cleared allow-list), nothing inherited',
  'process.cwd': 'working directory',
  'process.noNewPrivileges': 'no privilege gain through exec (setuid, file caps)',
  'process.capabilities.bounding': 'no capabilities inside',
  'process.capabilities.effective': 'no capabilities inside',
  'process.capabilities.inheritable': 'no capabilities inside',
  'process.capabilities.permitted': 'no capabilities inside',
  'process.capabilities.ambient': 'no capabilities inside',
  'process.rlimits.type': 'resource limit (soft = hard); RLIMIT_CORE 0: no core files in the workspace',
  'process.rlimits.hard': 'resource limit',
  'process.rlimits.soft': 'resource limit',
  hostname: 'hostname inside (own UTS namespace)',
  'mounts.destination': "the policy's mounts, in its order (each one's reason in the Policy)",
  'mounts.type': 'bind, tmpfs, proc, devpts',
  'mounts.source': 'a host path, or the file system type',
  'mounts.options': 'nosuid,nodev on every mount; read-only binds recursive (rro)',
  'linux.namespaces.type': "the policy's namespaces (mount always)",
  'linux.uidMappings.containerID': "the command's uid inside; 0 is the runtime's setup",
  'linux.uidMappings.hostID': 'the exporting user (as bwrap maps it); the setup as nobody',
  'linux.uidMappings.size': 'one id each',
  'linux.gidMappings.containerID': 'as uidMappings',
  'linux.gidMappings.hostID': 'as uidMappings',
  'linux.gidMappings.size': 'one id each',
  'linux.resources.memory.limit': 'memory limit (cgroup)',
  'linux.resources.memory.swap': 'no swap beyond the memory limit',
  'linux.resources.pids.limit': 'process limit (cgroup)',
  'linux.resources.cpu.quota': 'CPU quota per period (cgroup)',
  'linux.resources.cpu.period': 'CPU quota period',
  'linux.seccomp.defaultAction': "sbx's filter is a deny-list over allowed syscalls",
  'linux.seccomp.architectures': 'the native ABI only: other ABIs get the bad-arch kill',
  'linux.seccomp.syscalls.names': 'denied syscalls (src/seccomp/sets.ts)',
  'linux.seccomp.syscalls.action': 'denied with an errno, as sbx does',
  'linux.seccomp.syscalls.errnoRet': 'the errno sbx returns',
  'linux.seccomp.syscalls.args.index': 'argument tested',
  'linux.seccomp.syscalls.args.value': 'mask over the low 32 bits (the kernel truncates these arguments)',
  'linux.seccomp.syscalls.args.valueTwo': 'the masked value that denies',
  'linux.seccomp.syscalls.args.op': 'the one comparison that reads only masked bits',
  'linux.maskedPaths': "the policy's masks: /dev/null over files, an empty read-only tmpfs over directories",
  'linux.readonlyPaths': "the policy's later read-only remounts (HOME in read-only mode)",
};

function fieldPaths(value: unknown, prefix = ''): string[] {
  if (Array.isArray(value)) {
    const inner = value.flatMap((v) => fieldPaths(v, prefix));
    return inner.length > 0 ? inner : [prefix];
  }
  if (value !== null && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => fieldPaths(v, prefix ? `${prefix}.${k}` : k));
  return [prefix];
}

async function exported(profile: string, host: string) {
  const p = await runPipeline(profile, host);
  const options = { dir: DIR, arch: 'x86_64' as const };
  const run = <T>(f: () => T): T | string => {
    try {
      return f();
    } catch (e) {
      if (e instanceof SbxError && e.code === 'BACKEND_UNSUPPORTED') return `# refused (${e.code}): ${e.message}\n`;
      throw e;
    }
  };
  const docker = run(() => exportDocker(p.policy, { ...options, image: 'sbx-host:latest' }));
  const oci = run(() => exportOci(p.policy, { ...options, hostUid: p.host.uid, hostGid: p.host.gid }));
  return { ...p, docker, oci };
}

describe.each(CASES)('$profile × $host', ({ profile, host }) => {
  it('matches its golden docker argv and OCI config', async () => {
    const { docker, oci, policy } = await exported(profile, host);
    const dockerText = typeof docker === 'string' ? docker : dockerGoldenText(docker.argv, policy.mounts);
    expect(dockerText).not.toMatch(/# NO (POLICY MOUNT|REASON)$/m);
    expectGoldenText(join(GOLDEN_DIR, `${profile}.${host}.docker.argv`), dockerText);
    const ociText = typeof oci === 'string' ? oci : `${JSON.stringify(oci.config, null, 2)}\n`;
    expectGoldenText(join(GOLDEN_DIR, `${profile}.${host}.oci.json`), ociText);
    if (typeof oci !== 'string')
      for (const path of fieldPaths(oci.config))
        expect(OCI_REASONS[path], `reason for ${path}`).toEqual(expect.any(String));
  });

  it.runIf(REFUSED.has(profile))('is refused by name', async () => {
    const { docker, oci } = await exported(profile, host);
    expect(docker).toMatch(/^# refused \(BACKEND_UNSUPPORTED\): docker export: mode: danger binds/);
    expect(oci).toMatch(/^# refused \(BACKEND_UNSUPPORTED\): oci export: mode: danger binds/);
  });

  it.skipIf(REFUSED.has(profile))('keeps the security invariants', async () => {
    const { docker, oci, policy, host: h } = await exported(profile, host);
    const d = docker as DockerExport;
    const config = (oci as { config: OciConfig }).config;
    const argv = d.argv;
    const values = (flag: string) => argv.flatMap((a, i) => (a === flag ? [argv[i + 1]!] : []));
    // Docker: read-only root, no capabilities, no privilege gain, the filter, the identity.
    for (const flag of ['--rm', '--read-only', '--init']) expect(argv).toContain(flag);
    expect(values('--cap-drop')).toEqual(['ALL']);
    expect(values('--security-opt')).toEqual(['no-new-privileges', `seccomp=${DIR}/seccomp.json`]);
    expect(values('--user')).toEqual([`${policy.identity.uid}:${policy.identity.gid}`]);
    expect(values('--network')).toEqual([profile === 'network' ? 'host' : 'none']);
    // Nothing writable from the host but the workspace (and directories inside it bound over themselves:
    // the pinned parents of protected git state); no --privileged, --cap-add, --device, -v.
    const ws = policy.workspace;
    const rwBinds = values('--mount').filter((m) => m.startsWith('type=bind') && !m.endsWith(',readonly'));
    const insideWs = (m: string) => m.startsWith(`type=bind,source=${ws.host}/`);
    expect(rwBinds.filter((m) => !insideWs(m))).toEqual(
      profile === 'read-only' ? [] : [`type=bind,source=${ws.host},target=${ws.sandbox}`],
    );
    for (const flag of ['--privileged', '--cap-add', '--device', '-v', '--volume', '--security-opt=seccomp=unconfined'])
      expect(argv).not.toContain(flag);
    // Every mask is there, as /dev/null or an empty read-only tmpfs.
    for (const m of policy.mounts)
      if (m.kind === 'mask')
        expect(
          m.what === 'file'
            ? values('--mount').includes(`type=bind,source=/dev/null,target=${m.target},readonly`)
            : values('--tmpfs').some((t) => t.startsWith(`${m.target}:ro,`)),
          `mask ${m.target}`,
        ).toBe(true);
    // Environment: exactly the policy's, from a 0600 file of the export's, never on the argv (where any
    // local user reads it in /proc/PID/cmdline); no credential value anywhere.
    expect(values('--env')).toEqual([]);
    expect(values('--env-file')[0]).toBe(`${DIR}/env`);
    const envFile = d.files.find((f) => f.path === `${DIR}/env`);
    expect(envFile).toEqual({
      kind: 'file',
      path: `${DIR}/env`,
      mode: 0o600,
      content: Object.keys(policy.env.vars)
        .sort()
        .map((k) => `${k}=${policy.env.vars[k]}\n`)
        .join(''),
    });
    // sbx mounts no /sys: the engine's read-only sysfs is covered.
    expect(values('--tmpfs')).toContainEqual(expect.stringMatching(/^\/sys:ro,/));
    expect((oci as OciExport).files.find((f) => f.path === `${DIR}/config.json`)).toMatchObject({ mode: 0o600 });
    for (const name of ['AWS_SECRET_ACCESS_KEY', 'GITHUB_TOKEN', 'SSH_AUTH_SOCK']) {
      const value = h.env[name]!;
      expect(
        argv.filter((a) => a.includes(value)),
        name,
      ).toEqual([]);
      expect(
        config.process.env.filter((a) => a.includes(value)),
        name,
      ).toEqual([]);
    }
    // OCI: the same, in the spec's words.
    expect(config.root.readonly).toBe(true);
    expect(config.process.noNewPrivileges).toBe(true);
    expect(Object.values(config.process.capabilities).flat()).toEqual([]);
    expect(config.linux.namespaces.map((n) => n.type)).toEqual([
      'mount',
      'user',
      'pid',
      'ipc',
      'uts',
      ...(profile === 'network' ? [] : ['network']),
      'cgroup',
    ]);
    expect(config.linux.uidMappings).toContainEqual({ containerID: policy.identity.uid, hostID: h.uid, size: 1 });
    expect(config.linux.uidMappings.every((m) => m.size === 1)).toBe(true);
    // Masks, and the kernel's state as runc's own defaults cover it: the command may be the host's uid 0.
    const covered = (cover: string) =>
      policy.mounts.flatMap((m) => (m.kind === 'kernel' && m.cover === cover ? [m.target] : []));
    expect(config.linux.maskedPaths).toEqual([
      ...covered('masked'),
      ...policy.mounts.flatMap((m) => (m.kind === 'mask' ? [m.target] : [])),
    ]);
    expect(config.linux.readonlyPaths).toEqual(expect.arrayContaining(['/proc/sys', '/proc/sysrq-trigger', '/dev']));
    expect(config.linux.readonlyPaths.slice(0, 5)).toEqual(covered('read-only'));
    const rw = config.mounts.filter((m) => m.type === 'bind' && m.options.includes('rw'));
    const wsHost = policy.workspace.host;
    expect(rw.map((m) => m.source).filter((source) => !source.startsWith(`${wsHost}/`))).toEqual(
      profile === 'read-only' ? [] : [wsHost],
    );
    for (const m of config.mounts) expect(m.options, m.destination).toEqual(expect.arrayContaining(['nosuid']));
    expect(config.linux.seccomp?.syscalls.length).toBeGreaterThan(0);
  });
});

describe('golden files', () => {
  it('exist only for current profile × host pairs (no orphans to review)', () => {
    for (const suffix of ['.docker.argv', '.oci.json']) {
      const expected = CASES.map(({ profile, host }) => `${profile}.${host}${suffix}`).sort();
      const present = readdirSync(GOLDEN_DIR)
        .filter((f) => f.endsWith(suffix))
        .sort();
      expect(present).toEqual(expected);
    }
  });
});
