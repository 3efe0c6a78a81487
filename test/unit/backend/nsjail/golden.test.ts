// Golden argv for the nsjail backend: every built-in profile × every fixture host, through the real
// loader, derivePolicy and compileNsjail. A golden file holds nsjail's argv, one argument per line,
// then the config nsjail reads from fd 4 (the command's environment); a refused pair holds the
// refusal. The
// invariant tests re-check, per argv, what a reviewer looks for, so a regenerated golden cannot
// quietly accept a writable host path, a kept capability or a leaked secret.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileNsjail, expandNsjailLaunch } from '../../../../src/backend/nsjail/compile.js';
import { SbxError } from '../../../../src/errors.js';
import { isCredentialName } from '../../../../src/env/env.js';
import type { Launch } from '../../../../src/backend/launch.js';
import {
  expectGolden,
  expectGoldenText,
  expectOnlyWorkspaceWritable,
  nsjailGoldenText,
} from '../../../helpers/golden.js';
import { builtinProfileNames, FIXTURE_SESSION, hostFixtureNames, runPipeline } from '../../../helpers/hosts.js';
import { GOLDEN_DIR } from '../../../helpers/paths.js';
import { FIXTURE_EXEC, fixtureNsjailHost, nsjailPipeline } from './nsjail-fixtures.js';
import { hasFlag, hiddenMounts, mountOps, parseNsjailArgs, RLIMIT_FLAGS, valuesOf } from './nsjail-argv.js';

const PROFILES = builtinProfileNames();
const HOSTS = hostFixtureNames();
const CASES = PROFILES.flatMap((profile) => HOSTS.map((host) => ({ profile, host })));
const SECRET_NAMES = ['AWS_SECRET_ACCESS_KEY', 'GITHUB_TOKEN', 'SSH_AUTH_SOCK'];

/** mode: danger binds the host root at /, which the nsjail backend refuses (NSJAIL_GAPS mounts.root-bind). */
const REFUSED = new Set(['danger']);

async function pipeline(profile: string, host: string) {
  const p = await nsjailPipeline(profile, host);
  return { ...p, launch: p.nsjail };
}

/** The refusal, as its golden file records it. */
async function refusalOf(profile: string, host: string): Promise<string> {
  const p = await runPipeline(profile, host);
  try {
    compileNsjail(p.policy, FIXTURE_SESSION, fixtureNsjailHost(p.host.uid, p.host.stdinIsTty));
  } catch (e) {
    if (e instanceof SbxError && e.code === 'BACKEND_UNSUPPORTED') return `# refused (${e.code}): ${e.message}`;
    throw e;
  }
  throw new Error(`${profile} × ${host} compiled; expected a refusal`);
}

/** The config on fd 4 as name → value (the fixtures' values are plain ASCII without quotes). */
function configEnv(launch: Launch): Record<string, string> {
  const fd = launch.fds[1];
  if (fd?.purpose !== 'args') throw new Error('no config on fd 4');
  const lines = new TextDecoder()
    .decode(fd.data)
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'));
  return Object.fromEntries(
    lines.map((l) => {
      const m = /^envar: "([^"=]+)=(.*)"$/.exec(l);
      if (!m) throw new Error(`unexpected config line ${l}`);
      return [m[1]!, m[2]!];
    }),
  );
}

describe.each(CASES)('$profile × $host', ({ profile, host }) => {
  it('matches its golden argv', async () => {
    const file = join(GOLDEN_DIR, `${profile}.${host}.nsjail.argv`);
    if (REFUSED.has(profile)) expectGolden(file, [await refusalOf(profile, host)]);
    else {
      const { launch, policy } = await pipeline(profile, host);
      const text = nsjailGoldenText(expandNsjailLaunch(launch), policy.mounts);
      expect(text).not.toMatch(/# NO (POLICY MOUNT|REASON)$/m);
      expectGoldenText(file, text);
    }
  });

  it.runIf(REFUSED.has(profile))('is refused by name', async () => {
    expect(await refusalOf(profile, host)).toMatch(
      /^# refused \(BACKEND_UNSUPPORTED\): nsjail backend: \/ is bound at \/ \(as mode: danger does\)/,
    );
  });

  it.skipIf(REFUSED.has(profile))('keeps the security invariants', async () => {
    const { launch, host: h, policy } = await pipeline(profile, host);
    expect(launch.file).toBe('/usr/bin/nsjail');
    expect(launch.fds.map((f) => f.purpose)).toEqual(['status', 'args']);
    expect(launch.env).toEqual({});
    const parsed = parseNsjailArgs(launch.args);
    expect(parsed.command).toEqual(['sh', '-c', 'echo hi']);
    expect(valuesOf(parsed, '--exec_file')).toEqual([FIXTURE_EXEC]);

    // Log to the status pipe, then the config (it replaces all settings before it), run once, the
    // mount API that makes read-only binds recursive.
    expect(launch.args.slice(0, 4)).toEqual(['--log_fd', '3', '--config', '/proc/self/fd/4']);
    expect(valuesOf(parsed, '--config')).toHaveLength(1);
    expect(valuesOf(parsed, '--mode')).toEqual(['o']);
    expect(valuesOf(parsed, '--experimental_mnt')).toEqual(['new']);

    // Namespaces: all of nsjail's (user, mount, pid, ipc, uts, cgroup), network unless shared on purpose.
    const sharesNetwork = profile === 'network';
    expect(hasFlag(parsed, '--disable_clone_newnet'), '--disable_clone_newnet').toBe(sharesNetwork);
    for (const flag of [
      '--disable_clone_newpid',
      '--disable_clone_newipc',
      '--disable_clone_newuts',
      '--disable_clone_newcgroup',
    ])
      expect(hasFlag(parsed, flag), flag).toBe(false);
    expect(valuesOf(parsed, '--hostname')).toEqual([policy.hostname]);

    // Identity: a root host never hands uid 0 to the child (inside); outside is nsjail's own uid.
    const inside = h.uid === 0 ? '65534' : String(h.uid);
    expect(valuesOf(parsed, '--user')).toEqual([`${inside}:${h.uid}:1`]);
    expect(valuesOf(parsed, '--group')).toEqual([h.uid === 0 ? '65534' : String(h.gid)]);
    expect(hasFlag(parsed, '--skip_setsid')).toBe(false);

    // nsjail's defaults are all overridden: time limit, niceness, every rlimit exactly once, no core dumps.
    expect(valuesOf(parsed, '--time_limit')).toEqual([
      policy.limits.timeoutMs === undefined ? '0' : String(Math.ceil(policy.limits.timeoutMs / 1000) + 1),
    ]);
    expect(valuesOf(parsed, '--nice_level')).toEqual(['0']);
    for (const flag of RLIMIT_FLAGS) expect(valuesOf(parsed, flag), flag).toHaveLength(1);
    expect(valuesOf(parsed, '--rlimit_core')).toEqual(['0']);

    // Mounts: nothing hidden by a later mount; root read-only except in danger mode; nothing
    // writable from the host but the workspace (and the device nodes of /dev).
    const mounts = mountOps(parsed);
    expect(hiddenMounts(mounts)).toEqual([]);
    const rwBinds = mounts
      .filter((m) => m.flag === '--bindmount' && !m.source!.startsWith('/dev/'))
      .map((m) => [m.source, m.target]);
    expect(hasFlag(parsed, '--rw')).toBe(false);
    expectOnlyWorkspaceWritable(rwBinds, policy.workspace, profile === 'read-only');
    const tmpfs = mounts.filter((m) => m.fstype === 'tmpfs').map((m) => m.target);
    expect(tmpfs).toEqual(expect.arrayContaining(['/tmp', h.home]));
    expect(
      mounts.filter((m) => m.flag === '--bindmount' && m.source!.startsWith('/dev/')).map((m) => m.source),
    ).toEqual(['null', 'zero', 'full', 'random', 'urandom', 'tty'].map((n) => `/dev/${n}`));
    expect(mounts.filter((m) => m.fstype === 'devpts').map((m) => m.options)).toEqual([
      'newinstance,ptmxmode=0666,mode=620',
    ]);
    expect(valuesOf(parsed, '--proc_path')).toEqual(['/proc']);

    // Masks: root-only host files (root host) and reachable credential stores are covered.
    const masked = new Set(
      mounts
        .filter(
          (m) =>
            (m.flag === '--bindmount_ro' && m.source === FIXTURE_SESSION.emptyFile) ||
            (m.fstype === 'tmpfs' && m.options === 'size=4096,mode=0555,ro'),
        )
        .map((m) => m.target),
    );
    if (h.uid === 0) for (const { path } of h.rootOnly) expect([...masked], `${path} masked`).toContain(path);
    // The fixture's sensitive files (.env, certs/) sit in the workspace: masked wherever it is bound.
    // So are the secret-looking files the toolchain scan found, when the profile binds the toolchains.
    const tools = policy.mounts.some((m) => m.reason.startsWith('toolchain (')) ? (h.toolchains?.masks ?? []) : [];
    const sensitive = [...h.sensitiveFiles.masks.filter((m) => !m.tracked), ...tools].map((m) => m.path);
    for (const path of sensitive) expect([...masked], `${path} masked`).toContain(path);
    // Unreadable stand-ins and git config views: generated files bound from the session directory.
    const generated = mounts
      .filter((m) => m.flag === '--bindmount_ro' && m.source?.startsWith(`${FIXTURE_SESSION.dir}/file-`))
      .map((m) => m.target);
    const expected = [...h.sensitiveFiles.masks.filter((m) => m.tracked), ...h.sensitiveFiles.views].map((m) => m.path);
    for (const path of expected) expect(generated, `${path} generated`).toContain(path);
    expect(masked.size).toBe((h.uid === 0 ? h.rootOnly.length : 0) + sensitive.length);

    // Environment: exactly the policy's, in the config only; no credential (name or value) anywhere.
    expect(configEnv(launch)).toEqual(policy.env.vars);
    const config = new TextDecoder().decode((launch.fds[1] as { data: Uint8Array }).data);
    const credentials = [...new Set([...SECRET_NAMES, ...Object.keys(h.env).filter(isCredentialName)])];
    for (const name of credentials) {
      expect(Object.keys(configEnv(launch))).not.toContain(name);
      const value = h.env[name]!;
      expect(
        launch.args.filter((a) => a.includes(value)),
        `value of ${name}`,
      ).toEqual([]);
      expect(config.includes(value), `value of ${name}`).toBe(false);
    }
    for (const [name, value] of Object.entries(policy.env.vars))
      expect(
        launch.args.filter((a) => a.includes(`${name}=${value}`)),
        `${name}=… on the argv`,
      ).toEqual([]);
    expect(valuesOf(parsed, '--cwd')).toEqual([policy.cwd]);
    // Seccomp: the Kafel policy, one line per argument.
    const kafel = valuesOf(parsed, '--seccomp_string');
    expect(kafel[0]).toMatch(/^\/\/ sbx seccomp rules for x86_64/);
    expect(kafel.at(-1)).toBe('USE sbx DEFAULT ALLOW');
  });
});

describe('golden files', () => {
  it('exist only for current profile × host pairs (no orphans to review)', () => {
    const expected = CASES.map(({ profile, host }) => `${profile}.${host}.nsjail.argv`).sort();
    const present = readdirSync(GOLDEN_DIR)
      .filter((f) => f.endsWith('.nsjail.argv'))
      .sort();
    expect(present).toEqual(expected);
  });
});
