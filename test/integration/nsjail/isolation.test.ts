// Real nsjail, started with exactly what compileNsjail produces for the default profile on a temp
// workspace. Each test attempts the forbidden thing and asserts the precise failure, beside a control
// showing the same probe works unsandboxed. Runs as root and as an unprivileged user (user namespaces).
// nsjail: $SBX_NSJAIL, else a build under ~/.cache/sbx-test (harness.ts); without one the suite is
// skipped and says why.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { nsjailSetupError } from '../../../src/backend/nsjail/status.js';
import { derive, findNsjail, makeFixture, runLaunch, SECRET_ENV, type Fixture, type RunOptions } from './harness.js';

const found = findNsjail();
const NSJAIL = 'path' in found ? found.path : '';
if ('missing' in found) console.warn(`[nsjail integration] SKIPPED: ${found.missing}`);
const IS_ROOT = process.getuid!() === 0;

describe.skipIf(!NSJAIL)('nsjail isolation (default profile)', () => {
  let fx: Fixture;
  beforeEach(() => {
    fx = makeFixture();
  });
  afterEach(() => fx.close());

  async function run(
    command: string[],
    request: Parameters<typeof derive>[1] extends infer R ? Omit<R, 'command'> : never = {},
    opts: RunOptions = {},
    profile = 'default',
  ) {
    const { policy } = await derive(fx, { command, ...request }, profile);
    return { policy, ...(await runLaunch(policy, fx, NSJAIL, opts)) };
  }

  function sh(script: string, request = {}, opts: RunOptions = {}, profile = 'default') {
    return run(['sh', '-c', script], request, opts, profile);
  }

  it('runs the command: stdout, the workspace as cwd, the sandbox identity', async () => {
    const r = await sh('id -u; pwd; cat hello.txt');
    expect(r.status).toMatchObject({ started: true, code: 0, timedOut: false });
    expect(r.stdout.split('\n')).toEqual([IS_ROOT ? '65534' : String(process.getuid!()), fx.workspace, 'hello', '']);
  });

  it('passes exit codes through: 0, 1, 42', async () => {
    for (const code of [0, 1, 42]) {
      const r = await sh(`exit ${code}`);
      expect(r.code, `nsjail exit for ${code}`).toBe(code);
      expect(r.status).toEqual({ started: true, code, timedOut: false, violations: [] });
    }
  });

  it("a command killed by SIGKILL → 137 (killed from outside; and a subshell's `kill -9 $$`)", async () => {
    // The command is pid 1 of its namespace: the kernel drops a signal it sends itself without a
    // handler (NSJAIL_GAPS nsjail.init), so `kill -9 $$` in the command itself does nothing.
    const self = await sh('kill -9 $$; echo survived');
    expect(self.stdout).toBe('survived\n');
    expect(self.status.code).toBe(0);
    const nested = await sh("sh -c 'kill -9 $$'; exit $?");
    expect(nested.status.code).toBe(137);
    // From outside (nsjail's namespace), SIGKILL reaches it: nsjail reports the signal.
    const outside = await sh(
      'echo ready; exec sleep 30',
      {},
      {
        onStdout: (text, child) => {
          if (text !== 'ready\n') return;
          const task = `/proc/${child.pid}/task/${child.pid}/children`;
          const pid = Number(readFileSync(task, 'utf8').trim().split(/\s+/)[0]);
          process.kill(pid, 'SIGKILL');
        },
      },
    );
    expect(outside.code).toBe(137);
    expect(outside.status).toEqual({ started: true, code: 137, timedOut: false, signal: 'SIGKILL', violations: [] });
  });

  it("a timeout ends it: nsjail's time limit, reported as 124", async () => {
    const started = performance.now();
    const r = await sh('sleep 30', { limits: { timeout: '1s' } });
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(r.code).toBe(137);
    expect(r.status).toMatchObject({ started: true, code: 124, timedOut: true, signal: 'SIGKILL' });
    expect(r.status.violations).toEqual([expect.objectContaining({ kind: 'timeout', rule: 'limits.timeout' })]);
  });

  it('the planted ~/.ssh/id_rsa is not readable (private HOME); control: readable outside', async () => {
    const key = join(fx.home, '.ssh', 'id_rsa');
    expect(readFileSync(key, 'utf8')).toMatch(/planted/);
    const r = await sh(`cat ${key}`);
    expect(r.status.code).toBe(1);
    expect(r.stderr).toMatch(/No such file or directory/);
    expect(r.stdout).toBe('');
  });

  it('a bound HOME: its ~/.ssh is masked by an empty read-only tmpfs', async () => {
    const r = await sh('ls -A /mnt/home/.ssh; cat /mnt/home/.ssh/id_rsa; touch /mnt/home/.ssh/x; ls /mnt/home', {
      binds: [{ source: fx.home, target: '/mnt/home', access: 'ro' }],
    });
    expect(r.stderr).toMatch(/cat: \/mnt\/home\/.ssh\/id_rsa: No such file or directory/);
    expect(r.stderr).toMatch(/cannot touch '\/mnt\/home\/.ssh\/x': Read-only file system/);
    expect(r.stdout).toBe('');
    expect(readdirSync(join(fx.home, '.ssh'))).toEqual(['id_rsa']);
  });

  it('mode: danger is refused by name (NSJAIL_GAPS mounts.root-bind)', async () => {
    await expect(sh('true', { danger: true }, {}, 'danger')).rejects.toMatchObject({
      code: 'BACKEND_UNSUPPORTED',
      message: expect.stringMatching(/is bound at \/ \(as mode: danger does\)/),
    });
  });

  it('writes outside the workspace fail (read-only system, private /tmp) and nothing appears on the host', async () => {
    const outsideFile = join(fx.outside, 'escape.txt');
    const r = await sh(
      `touch /etc/sbx-nsjail-probe; touch /usr/sbx-nsjail-probe; echo x > ${outsideFile}; echo tmp > /tmp/sbx-nsjail-probe && echo tmp-ok`,
    );
    expect(r.stderr).toMatch(/cannot touch '\/etc\/sbx-nsjail-probe': Read-only file system/);
    expect(r.stderr).toMatch(/cannot touch '\/usr\/sbx-nsjail-probe': Read-only file system/);
    expect(r.stderr).toMatch(new RegExp(`${outsideFile}: (Directory nonexistent|No such file or directory)`));
    expect(r.stdout).toBe('tmp-ok\n');
    expect(existsSync('/etc/sbx-nsjail-probe')).toBe(false);
    expect(existsSync('/usr/sbx-nsjail-probe')).toBe(false);
    expect(existsSync('/tmp/sbx-nsjail-probe')).toBe(false);
    expect(readdirSync(fx.outside)).toEqual([]);
    // Control: the same write works unsandboxed.
    writeFileSync(outsideFile, 'x');
    expect(readdirSync(fx.outside)).toEqual(['escape.txt']);
  });

  it('writes inside the workspace reach the host', async () => {
    const r = await sh('echo written > new.txt && mkdir -p sub && echo deep > sub/f');
    expect(r.status.code).toBe(0);
    expect(readFileSync(join(fx.workspace, 'new.txt'), 'utf8')).toBe('written\n');
    expect(readFileSync(join(fx.workspace, 'sub', 'f'), 'utf8')).toBe('deep\n');
  });

  it("host environment secrets are absent, from the command's environment and from every process's", async () => {
    const r = await sh(
      'env; echo ---; cat /proc/[0-9]*/environ | tr "\\0" "\\n"; echo ---; cat /proc/[0-9]*/cmdline | tr "\\0" " "',
    );
    expect(r.status.code).toBe(0);
    for (const [name, value] of Object.entries(SECRET_ENV)) {
      expect(r.stdout).not.toContain(value);
      expect(r.stdout).not.toMatch(new RegExp(`^${name}=`, 'm'));
    }
    expect(r.stdout).toMatch(/^SBX_PROFILE=default$/m);
    expect(r.stdout).toMatch(new RegExp(`^HOME=${fx.home}$`, 'm'));
  });

  it('environment values arrive byte for byte (quotes, backslashes, UTF-8, newlines)', async () => {
    const weird = 'a "q" \\ é\nline2 $HOME `x`';
    const r = await sh('printf %s "$WEIRD"', { env: { WEIRD: weird } });
    expect(r.stdout).toBe(weird);
  });

  describe('network', () => {
    let server: Server;
    let port: number;
    let connections = 0;
    beforeAll(async () => {
      server = createServer((s) => {
        connections++;
        s.end('hello\n');
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => server.close());

    it('a host 127.0.0.1 listener is unreachable; control: reachable unsandboxed', async () => {
      const probe = `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`;
      const accepted = once(server, 'connection');
      const control = spawnSync('bash', ['-c', probe], { encoding: 'utf8' });
      expect(control.stdout).toBe('connected\n');
      await accepted;
      const before = connections;
      const r = await run(['bash', '-c', probe]);
      expect(r.status.code).toBe(1);
      expect(r.stderr).toMatch(/Connection refused/);
      expect(connections).toBe(before);
    });
  });

  it('seccomp: `unshare -U true` fails with EPERM; control: it works unsandboxed', () => {
    const control = spawnSync('unshare', ['-U', 'true']);
    expect(control.status).toBe(0);
    return sh('unshare -U true').then((r) => {
      expect(r.status.code).toBe(1);
      expect(r.stderr).toMatch(/unshare failed: Operation not permitted/);
    });
  });

  it('procfs is read-only and /dev is the minimal one', async () => {
    const r = await sh('grep -E " /(proc|dev) " /proc/self/mountinfo | cut -d" " -f5,6; ls /dev | tr "\\n" " "');
    expect(r.stdout).toMatch(/^\/proc ro,/m);
    expect(r.stdout).toMatch(/^\/dev ro,/m);
    expect(r.stdout).toMatch(/fd full null ptmx pts random shm stderr stdin stdout tty urandom zero/);
  });

  it("a missing bind source is a setup failure (SANDBOX_SETUP) carrying nsjail's reason", async () => {
    const { policy } = await derive(fx, { command: ['true'] });
    policy.mounts.splice(1, 0, {
      kind: 'bind',
      source: join(fx.root, 'missing'),
      target: '/opt/missing',
      access: 'ro',
      optional: false,
      reason: 'test',
    });
    const r = await runLaunch(policy, fx, NSJAIL);
    expect(r.code).toBe(255);
    expect(r.status.started).toBe(false);
    expect(r.status.failure).toMatch(
      /Failed to mount mandatory point: '\/opt\/missing' \(open_tree\('.*missing'\): No such file or directory\)/,
    );
    expect(nsjailSetupError(r.status)).toMatchObject({ code: 'SANDBOX_SETUP', exitCode: 125 });
  });

  it.runIf(IS_ROOT)('as root: /etc/shadow is masked (empty); control: root reads it unsandboxed', async () => {
    expect(readFileSync('/etc/shadow', 'utf8')).toMatch(/^root:/);
    const r = await sh('wc -c < /etc/shadow; grep -c . /etc/shadow; id -u');
    expect(r.stdout).toBe('0\n0\n65534\n');
  });

  it.runIf(IS_ROOT)(
    'as root: a host submount below a read-only bind stays read-only (why --experimental_mnt new)',
    async () => {
      const dir = join(fx.root, 'ro-src');
      mkdirSync(join(dir, 'sub'), { recursive: true });
      execFileSync('mount', ['-t', 'tmpfs', 'none', join(dir, 'sub')]);
      try {
        writeFileSync(join(dir, 'sub', 'f'), 'orig\n');
        const r = await sh(`echo top >> ${dir}/top; echo changed >> ${dir}/sub/f`, {
          binds: [{ source: dir, access: 'ro' }],
        });
        expect(r.stderr).toMatch(new RegExp(`${dir}/top: Read-only file system`));
        expect(r.stderr).toMatch(new RegExp(`${dir}/sub/f: Read-only file system`));
        expect(readFileSync(join(dir, 'sub', 'f'), 'utf8')).toBe('orig\n');
      } finally {
        execFileSync('umount', [join(dir, 'sub')]);
      }
    },
  );
});
