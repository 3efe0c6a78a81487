// The library door (dist/api.js, as a package user imports it) running real bwrap in-process:
// run() with captured stdio, the same isolation as the CLI, refusals as SbxError, and compile().
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readdirSync, readSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DIST_API,
  makeTestHost,
  requireIntegrationPrerequisites,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

type Api = typeof import('../../../src/api.js');
let api: Api;
let t: TestHost;
const MARKER = `SBX-LIB-${randomBytes(6).toString('hex')}`;

describe.skipIf(SKIP_INTEGRATION)('library API (dist/api.js, real bwrap)', () => {
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    api = (await import(DIST_API)) as Api;
    t = makeTestHost('lib');
    mkdirSync(join(t.home, '.ssh'), { mode: 0o700 });
    writeFileSync(join(t.home, '.ssh', 'id_rsa'), `${MARKER}\n`, { mode: 0o600 });
  });
  afterAll(() => t?.cleanup());

  it('run(): exitCode 3 and the captured stdout/stderr, setBy child, no session dir left', async () => {
    const o = await api.run({
      command: ['sh', '-c', 'echo out; echo err >&2; exit 3'],
      stdio: 'capture',
      cwd: t.workspace,
      hostEnv: t.env,
    });
    expect(o.exitCode).toBe(3);
    expect(o.stdout?.toString()).toBe('out\n');
    expect(o.stderr?.toString()).toBe('err\n');
    expect(o.setBy).toBe('child');
    expect(o.backend).toBe('bwrap');
    expect(o.profile.name).toBe('default');
    expect(o.command).toEqual(['sh', '-c', 'echo out; echo err >&2; exit 3']);
    expect(o.violations).toEqual([]);
    expect(o.durationMs).toBeGreaterThan(0);
    expect(readdirSync(join(t.runtimeDir, 'sbx'))).toEqual([]);
  });

  it('run(): input bytes through cat are returned unchanged', async () => {
    const input = randomBytes(256 * 1024);
    const o = await api.run({ command: ['cat'], stdio: 'capture', input, cwd: t.workspace, hostEnv: t.env });
    expect(o.exitCode).toBe(0);
    expect(createHash('sha256').update(o.stdout!).digest('hex')).toBe(createHash('sha256').update(input).digest('hex'));
  });

  it('run(): the same isolation as the CLI — planted key absent, host env secret dropped', async () => {
    const o = await api.run({
      command: ['sh', '-c', 'cat "$HOME/.ssh/id_rsa"; env'],
      stdio: 'capture',
      cwd: t.workspace,
      hostEnv: { ...t.env, GITHUB_TOKEN: MARKER },
    });
    expect(o.exitCode).toBe(0);
    expect(o.stderr?.toString()).toBe(`cat: ${t.home}/.ssh/id_rsa: No such file or directory\n`);
    expect(o.stdout?.toString()).not.toContain(MARKER);
    expect(o.droppedEnv).toContain('GITHUB_TOKEN');
  });

  it("run(): leaves the host process's own descriptors as they were", async () => {
    const file = join(t.root, 'host-fd.txt');
    writeFileSync(file, 'still here');
    const fd = openSync(file, 'r');
    try {
      const before = fstatSync(fd);
      const o = await api.run({ command: ['true'], stdio: 'capture', cwd: t.workspace, hostEnv: t.env });
      expect(o.exitCode).toBe(0);
      const after = fstatSync(fd);
      expect([after.ino, after.dev]).toEqual([before.ino, before.dev]);
      const buf = Buffer.alloc(32);
      expect(buf.subarray(0, readSync(fd, buf, 0, 32, 0)).toString()).toBe('still here');
    } finally {
      closeSync(fd);
    }
  });

  it('run(): a refusal rejects with SbxError (code, exitCode) and runs nothing', async () => {
    await expect(
      api.run({ command: ['touch', 'ran-lib'], profile: 'danger', stdio: 'capture', cwd: t.workspace, hostEnv: t.env }),
    ).rejects.toMatchObject({
      name: 'SbxError',
      code: 'DANGER_NOT_ALLOWED',
      exitCode: 126,
    });
    await expect(
      api.run({ command: ['no-such-command-anywhere'], stdio: 'capture', cwd: t.workspace, hostEnv: t.env }),
    ).rejects.toMatchObject({
      code: 'COMMAND_NOT_FOUND',
      exitCode: 127,
    });
    expect(readdirSync(t.workspace)).not.toContain('ran-lib');
  });

  it('compile() with limits (-p untrusted): the launch is the wrapper run() spawns, bwrap behind it, and no cgroup is made', async () => {
    const c = await api.compile({ profile: 'untrusted', command: ['make'], cwd: t.workspace, hostEnv: t.env });
    const inner = c.launcherLaunch!;
    expect(inner.file).toMatch(/\/bwrap$/);
    expect(inner.args).toEqual(['--args', '4', '--', 'make']);
    // The wrapper (limits/host/cgroup/trampoline.ts: the shell, or a systemd scope then the shell) comes first,
    // the launcher's file and args close it unchanged, and its descriptors are the launcher's.
    expect(c.launch.file).not.toBe(inner.file);
    expect(c.launch.args).toContain('sbx-limits');
    expect(c.launch.args.slice(-inner.args.length - 1)).toEqual([inner.file, ...inner.args]);
    expect(c.launch.fds).toEqual(inner.fds);
    // Planned, not made: each session cgroup it names is absent, beside its parent, which exists (the control).
    const procs = c.launch.args.filter((a) => a.endsWith('/cgroup.procs'));
    for (const file of procs) {
      expect(file).toContain(`/sbx-${c.sessionId}/`);
      expect(existsSync(dirname(file)), file).toBe(false);
      expect(existsSync(dirname(dirname(file))), file).toBe(true);
    }
  });

  it('compile(): the launch is bwrap, its options (carried on the --args descriptor) start with --unshare-user', async () => {
    const c = await api.compile({ command: ['make', 'test'], cwd: t.workspace, hostEnv: t.env });
    expect(c.launch.file).toMatch(/\/bwrap$/);
    expect(c.launch.env).toEqual({});
    // Options travel on a pipe (`--args FD`), never in bwrap's world-readable argv; only the command stays there.
    expect(c.launch.args).toEqual(['--args', '4', '--', 'make', 'test']);
    // No limits: nothing wraps the launcher.
    expect(c.launcherLaunch).toBeUndefined();
    const argsFd = c.launch.fds[Number(c.launch.args[1]) - 3];
    expect(argsFd?.purpose).toBe('args');
    const options = new TextDecoder()
      .decode((argsFd as { data: Uint8Array }).data)
      .split('\0')
      .slice(0, -1);
    expect(options[0]).toBe('--unshare-user');
    expect(options).toContain('--die-with-parent');
    expect(options).toContain('--unshare-net');
    expect(options).toContain('--clearenv');
    expect(c.policy.workspace).toMatchObject({ host: t.workspace, access: 'rw' });
    expect(c.sessionId).toMatch(/^[0-9a-z]+-[0-9a-f]{8}$/);
    // compile() runs nothing and creates no session directory
    const base = join(t.runtimeDir, 'sbx');
    expect(existsSync(base) ? readdirSync(base) : []).toEqual([]);
  });
});
