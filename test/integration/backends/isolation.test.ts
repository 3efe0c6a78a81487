// One table of isolation cases, run through the CLI (`node bin/sbx.js run --backend NAME`) against
// both launchers: the same profile must give the same sandbox, whichever builds it. Each case tries
// the forbidden thing and asserts it failed; its control shows the same probe works unsandboxed.
// nsjail: $SBX_NSJAIL, else a build under ~/.cache/sbx-test (nsjail/harness.ts); without one its half is
// skipped and says why.
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Report } from '../../../src/report/report.js';
import {
  IS_ROOT,
  makeTestHost,
  pidsWithArgv,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  startSbx,
  uniqueSleepArg,
  type Ran,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { findNsjail } from '../nsjail/harness.js';
import { readReport } from '../../helpers/report.js';

const found = findNsjail();
if ('missing' in found) console.warn(`[backends integration] nsjail half SKIPPED: ${found.missing}`);
const BACKENDS = [
  { name: 'bwrap', env: {} as Record<string, string>, skip: false },
  { name: 'nsjail', env: 'path' in found ? { SBX_NSJAIL: found.path } : {}, skip: !('path' in found) },
];

const SECRET_VALUE = `backend-secret-${process.pid}`;
const KEY_MARKER = `PLANTED-KEY-${process.pid}`;

let t: TestHost;
let server: Server;
let port: number;

beforeAll(async () => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  t = makeTestHost('backends');
  mkdirSync(join(t.home, '.ssh'), { mode: 0o700 });
  writeFileSync(join(t.home, '.ssh', 'id_ed25519'), `${KEY_MARKER}\n`, { mode: 0o600 });
  mkdirSync(join(t.root, 'outside'));
  server = createServer((socket) => socket.end('host-service\n'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as { port: number }).port;
});
afterAll(() => {
  server?.close();
  t?.cleanup();
});

describe.skipIf(SKIP_INTEGRATION).each(BACKENDS)(
  'isolation through --backend $name',
  ({ name, env: backendEnv, skip }) => {
    const opts = () => ({
      env: { ...t.env, ...backendEnv, AWS_SECRET_ACCESS_KEY: SECRET_VALUE, GITHUB_TOKEN: SECRET_VALUE },
      cwd: t.workspace,
    });
    const sbx = (args: string[]) => runSbx(['--backend', name, ...args], opts());
    const report = async (args: string[]): Promise<{ r: Ran; report: Report }> => {
      const file = join(t.root, `report-${name}-${Math.random().toString(36).slice(2)}.json`);
      const r = await sbx(['--report-file', file, ...args]);
      return { r, report: readReport(file) };
    };

    it.skipIf(skip)('exit codes pass through (0, 42) and the report names the backend', async () => {
      expect((await sbx(['--', 'true'])).code).toBe(0);
      const { r, report: rep } = await report(['--', 'sh', '-c', 'exit 42']);
      expect(r.code).toBe(42);
      expect(rep).toMatchObject({ backend: name, exitCode: 42, setBy: 'child' });
    });

    it.skipIf(skip)('a command that does not exist inside is 127; one that is not executable is 126', async () => {
      expect((await sbx(['--', 'no-such-command-anywhere'])).code).toBe(127);
      writeFileSync(join(t.workspace, 'not-exec.sh'), 'echo hi\n', { mode: 0o644 });
      expect((await sbx(['--', './not-exec.sh'])).code).toBe(126);
    });

    it.skipIf(skip)('the planted ~/.ssh key is not readable (private HOME); control: readable outside', async () => {
      const key = join(t.home, '.ssh', 'id_ed25519');
      expect((await runHost(['cat', key], opts())).out).toContain(KEY_MARKER);
      const r = await sbx(['--', 'sh', '-c', `cat ${key}; ls -A "$HOME"; echo "home=$HOME"`]);
      expect(r.out + r.err).not.toContain(KEY_MARKER);
      expect(r.err).toContain('No such file or directory');
      expect(r.out).toBe(`home=${t.home}\n`);
    });

    it.skipIf(skip)('credentials in the environment never arrive; control: the host env has them', async () => {
      expect((await runHost(['env'], opts())).out).toContain(SECRET_VALUE);
      const r = await sbx(['--keep-env', '*', '--', 'sh', '-c', 'env; cat /proc/1/environ']);
      expect(r.code).toBe(0);
      expect(r.out).not.toContain(SECRET_VALUE);
      expect(r.out).toMatch(/^SBX_PROFILE=default$/m);
    });

    it.skipIf(skip)(
      'a .env in the workspace reads empty and cannot be written, .git/hooks cannot be planted; control: both work unsandboxed',
      async () => {
        writeFileSync(join(t.workspace, '.env'), `TOKEN=${KEY_MARKER}\n`);
        mkdirSync(join(t.workspace, '.git', 'hooks'), { recursive: true });
        expect((await runHost(['cat', '.env'], opts())).out).toContain(KEY_MARKER);
        const r = await sbx([
          '--',
          'sh',
          '-c',
          'cat .env; echo x >> .env; echo "env=$?"; echo x > .git/hooks/pre-commit; echo "hook=$?"',
        ]);
        expect(r.out + r.err).not.toContain(KEY_MARKER);
        expect(r.out).toBe('env=2\nhook=2\n');
        expect(readdirSync(join(t.workspace, '.git', 'hooks'))).toEqual([]);
      },
    );

    it.skipIf(skip)(
      'a repository without .git/hooks: the sandbox cannot create one; control: unsandboxed it can',
      async () => {
        // A clone without templates has no hooks directory; protecting only what exists would let the
        // sandbox make one, and the host's next commit would run what it put there.
        const repos = ['control', 'sandboxed'].map((which) => join(t.root, `no-hooks-${name}-${which}`));
        for (const repo of repos) {
          mkdirSync(join(repo, '.git'), { recursive: true });
          writeFileSync(join(repo, '.git', 'config'), '[core]\n\trepositoryformatversion = 0\n');
        }
        const plant = 'mkdir -p .git/hooks && echo "#!/bin/sh" > .git/hooks/pre-commit; echo "plant=$?"';
        const [control, sandboxed] = repos as [string, string];
        expect((await runHost(['sh', '-c', plant], { ...opts(), cwd: control })).out).toBe('plant=0\n');
        const r = await runSbx(['--backend', name, '--', 'sh', '-c', plant], { ...opts(), cwd: sandboxed });
        expect(r.out).toMatch(/^plant=[12]\n$/);
        expect(readdirSync(join(sandboxed, '.git', 'hooks'))).toEqual([]);
      },
    );

    it.skipIf(skip)('a profile secret reaches the command by value and nowhere else', async () => {
      const sbxConfig = join(t.configHome, 'sbx');
      mkdirSync(join(sbxConfig, 'profiles'), { recursive: true });
      writeFileSync(join(sbxConfig, 'secrets.yaml'), `API_KEY: "${SECRET_VALUE}-stored"\n`, { mode: 0o600 });
      writeFileSync(join(sbxConfig, 'profiles', 'secret.yaml'), 'extends: default\nsecrets: [API_KEY]\n');
      // Matched by a pattern, so the value itself is in no argv.
      const { r, report: rep } = await report([
        '-p',
        'secret',
        '--',
        'sh',
        '-c',
        'case "$API_KEY" in backend-secret-*-stored) echo same;; esac; tr "\\0" " " < /proc/1/cmdline',
      ]);
      expect(r.out.split('\n')[0]).toBe('same');
      expect(r.out.split('\n')[1]).not.toContain(`${SECRET_VALUE}-stored`);
      expect(JSON.stringify(rep)).not.toContain(`${SECRET_VALUE}-stored`);
    });

    it.skipIf(skip)('writes outside the workspace fail and leave nothing on the host; writes inside land', async () => {
      const outside = join(t.root, 'outside');
      const file = `w-${name}`;
      const r = await sbx([
        '--',
        'sh',
        '-c',
        `touch ${outside}/${file}; echo "outside=$?"; touch /usr/${file}; echo "usr=$?"; touch ${file}; echo "ws=$?"`,
      ]);
      expect(r.out).toBe('outside=1\nusr=1\nws=0\n');
      expect(readdirSync(outside)).toEqual([]);
      expect(existsSync(join('/usr', file))).toBe(false);
      expect(existsSync(join(t.workspace, file))).toBe(true);
    });

    it.skipIf(skip)("a listener on the host's 127.0.0.1 is unreachable; control: reachable unsandboxed", async () => {
      const probe = [
        'python3',
        '-c',
        `import socket; s=socket.create_connection(("127.0.0.1", ${port}), 2); print(s.recv(64).decode().strip())`,
      ];
      expect((await runHost(probe, opts())).out).toBe('host-service\n');
      const r = await sbx(['--', ...probe]);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/ConnectionRefusedError|Network is unreachable|Connection refused/);
    });

    it.skipIf(skip)('seccomp: a nested user namespace is refused (EPERM); control: it works unsandboxed', async () => {
      expect((await runHost(['unshare', '-U', 'true'], opts())).code).toBe(0);
      const r = await sbx(['--', 'unshare', '-U', 'true']);
      expect(r.code).not.toBe(0);
      expect(r.err).toMatch(/Operation not permitted/);
    });

    it.skipIf(skip)('a timeout ends the sandbox: exit 124 and a timeout violation', async () => {
      const marker = uniqueSleepArg();
      const { r, report: rep } = await report(['--timeout', '1s', '--', 'sleep', marker]);
      expect(r.code).toBe(124);
      expect(rep.violations).toEqual([expect.objectContaining({ kind: 'timeout', rule: 'limits.timeout' })]);
      expect(pidsWithArgv(['sleep', marker])).toEqual([]);
    });

    it.skipIf(skip)('SIGTERM to sbx ends the command: exit 143, nothing left running', async () => {
      const marker = uniqueSleepArg();
      const run = startSbx(['--backend', name, '--', 'sh', '-c', `echo ready; exec sleep ${marker}`], opts());
      await run.line(/^ready$/);
      run.child.kill('SIGTERM');
      const r = await run.done;
      expect(r.code).toBe(143);
      expect(pidsWithArgv(['sleep', marker])).toEqual([]);
    });

    it.skipIf(skip || !IS_ROOT)('as root: /etc/shadow reads empty and the command is uid 65534', async () => {
      const r = await sbx(['--', 'sh', '-c', 'wc -c < /etc/shadow; id -u']);
      expect(r.out).toBe('0\n65534\n');
    });

    it.skipIf(skip || !IS_ROOT)(
      'as root (cgroup): a memory balloon past --memory is OOM-killed and reported',
      async () => {
        const { r, report: rep } = await report([
          '--memory',
          '64MiB',
          '--',
          'python3',
          '-c',
          'b = bytearray(256 * 1024 * 1024); print("survived")',
        ]);
        expect(r.out).not.toContain('survived');
        expect(r.code).toBe(137);
        expect(rep.violations).toEqual(
          expect.arrayContaining([expect.objectContaining({ kind: 'oom', rule: 'limits.memory' })]),
        );
      },
    );

    it.skipIf(skip || IS_ROOT)(
      'as a user (no writable cgroup here): three processes of 50MiB past --memory 96MiB are ended by the watchdog',
      async () => {
        const hold = 'python3 -c "import time; b = bytearray(50 << 20); time.sleep(20)"';
        const { r, report: rep } = await report([
          '--memory',
          '96MiB',
          '--',
          'sh',
          '-c',
          `${hold} & ${hold} & ${hold} & wait; echo survived`,
        ]);
        expect(r.out).not.toContain('survived');
        expect(r.code).toBe(137);
        expect(rep.limits?.find((l) => l.name === 'memory')?.mechanism).toBe('watchdog');
        expect(rep.violations).toEqual([expect.objectContaining({ kind: 'oom', rule: 'limits.memory' })]);
      },
    );
  },
);
