// The exports, run by real engines: the OCI bundle by runc (and crun when installed), the docker argv
// by the Docker from /work/shared/tools/container-host.sh (image sbx-host:latest, --network none).
// Each runs the red-team's core cases — read a planted credential, write outside the workspace, reach
// a host port, gain privilege — beside the same probe run unsandboxed, which succeeds.
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IS_ROOT, makeTestHost, runHost, runSbxRaw, type TestHost } from '../../helpers/sbx-cli.js';

const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const OCI_RUNTIMES = ['runc', 'crun'].filter(has);
const IMAGE = 'sbx-host:latest';
const dockerReady =
  has('docker') && spawnSync('docker', ['image', 'inspect', IMAGE], { stdio: 'ignore', timeout: 10_000 }).status === 0;
const NOBODY = 65534;

let host: TestHost;
let server: Server;
let port = 0;

/** One line per case: the verdict the sandbox (or the host, for the control) gave. */
function probe(cred: string, outside: string, sandboxed: boolean): string {
  return [
    `cat ${cred} >/dev/null 2>&1 && echo CRED:read || echo CRED:blocked`,
    `echo x 2>/dev/null >${outside} && echo OUTSIDE:written || echo OUTSIDE:blocked`,
    // Only inside: the control must not write the host's /etc.
    sandboxed ? 'touch /etc/sbx-export-pwned 2>/dev/null && echo ETC:written || echo ETC:blocked' : 'echo ETC:skipped',
    'echo ok 2>/dev/null >ws-marker && echo WS:written || echo WS:blocked',
    `(echo hi >/dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo NET:reached || echo NET:blocked`,
    'unshare -U true 2>/dev/null && echo USERNS:created || echo USERNS:blocked',
    "grep -Eq '^CapEff:\\s*0+$' /proc/self/status && echo CAPS:none || echo CAPS:some",
    "grep -Eq '^NoNewPrivs:\\s*1' /proc/self/status && echo NNP:set || echo NNP:unset",
    // A sysctl opened for writing (read and write, no truncation: nothing is written): a root export's
    // command is the host's uid 0, which the kernel lets write sysctls on the owner bits alone.
    '(: 1<>/proc/sys/vm/stat_interval) 2>/dev/null && echo SYSCTL:writable || echo SYSCTL:blocked',
  ].join('\n');
}

const verdicts = (out: string) => out.split('\n').filter((l) => /^[A-Z]+:/.test(l));
const BLOCKED = [
  'CRED:blocked',
  'OUTSIDE:blocked',
  'ETC:blocked',
  'WS:written',
  'NET:blocked',
  'USERNS:blocked',
  'CAPS:none',
  'NNP:set',
  'SYSCTL:blocked',
];

beforeAll(async () => {
  host = makeTestHost('export');
  mkdirSync(join(host.home, '.aws'));
  writeFileSync(join(host.home, '.aws', 'credentials'), 'aws_secret_access_key = planted\n');
  server = createServer((s) => s.end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(() => {
  server?.close();
  host?.cleanup();
});

const cred = () => join(host.home, '.aws', 'credentials');

describe('control: the same probe unsandboxed', () => {
  it.runIf(IS_ROOT)('reads the credential, writes outside, reaches the port, creates a user namespace', async () => {
    const outside = join(host.root, 'outside-control');
    const ran = await runHost(['bash', '-c', probe(cred(), outside, false)], { env: host.env, cwd: host.workspace });
    expect(verdicts(ran.out)).toEqual([
      'CRED:read',
      'OUTSIDE:written',
      'ETC:skipped',
      'WS:written',
      'NET:reached',
      'USERNS:created',
      'CAPS:some',
      'NNP:unset',
      'SYSCTL:writable',
    ]);
  });
});

describe.each(OCI_RUNTIMES)('OCI bundle under %s', (runtime) => {
  it.skipIf(!IS_ROOT)(
    'blocks the red-team cases (as root: the bundle maps its uid onto root, as bwrap does)',
    async () => {
      const bundle = join(host.root, `bundle-${runtime}`);
      const outside = join(host.root, `outside-${runtime}`);
      const exported = await runSbxRaw(
        ['export', 'oci', bundle, '-p', 'default', '--', 'bash', '-c', probe(cred(), outside, true)],
        {
          env: host.env,
          cwd: host.workspace,
        },
      );
      expect(exported.code, exported.err).toBe(0);
      const ran = await runHost([runtime, 'run', '--bundle', bundle, `sbx-export-test-${process.pid}`], {
        env: host.env,
        cwd: host.root,
        timeoutMs: 60_000,
      });
      expect(ran.code, ran.err).toBe(0);
      expect(verdicts(ran.out)).toEqual(BLOCKED);
      expect(existsSync(outside), 'nothing written outside the workspace on the host').toBe(false);
      expect(existsSync('/etc/sbx-export-pwned')).toBe(false);
      expect(existsSync(join(host.workspace, 'ws-marker'))).toBe(true);
    },
  );
});

// The export's post-run audit (export gap `git-state`): the container writes the bound workspace, and
// `sbx audit -- RUNTIME run` checks it as sbx run would, beside the same bundle run without it.
describe.each(OCI_RUNTIMES)('sbx audit around %s run', (runtime) => {
  it.skipIf(!IS_ROOT)('a nested repository armed inside the container runs nothing in host git', async () => {
    const marker = join(host.root, `audit-marker-${runtime}`);
    const plant = `git init -q nested && git -C nested config core.fsmonitor 'touch ${marker}; false'`;
    const prepared = async (name: string) => {
      const ws = join(host.root, `audit-${name}-${runtime}`);
      mkdirSync(ws);
      spawnSync('git', ['init', '-q', ws], { env: host.env });
      const bundle = join(host.root, `bundle-audit-${name}-${runtime}`);
      const exported = await runSbxRaw(['export', 'oci', bundle, '-p', 'default', '--', 'sh', '-c', plant], {
        env: host.env,
        cwd: ws,
      });
      expect(exported.code, exported.err).toBe(0);
      return { ws, run: [runtime, 'run', '--bundle', bundle, `sbx-audit-${name}-${process.pid}`] };
    };
    const statusRuns = (ws: string) => {
      spawnSync('git', ['-C', join(ws, 'nested'), 'status'], { env: host.env });
      return existsSync(marker);
    };
    const control = await prepared('control');
    expect((await runHost(control.run, { env: host.env, cwd: host.root, timeoutMs: 60_000 })).code).toBe(0);
    expect(statusRuns(control.ws)).toBe(true);
    rmSync(marker);
    const audited = await prepared('audited');
    const r = await runSbxRaw(['audit', '--', ...audited.run], { env: host.env, cwd: audited.ws, timeoutMs: 60_000 });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain(`${audited.ws}/nested/.git: new git dir that names programs: core.fsmonitor=`);
    expect(statusRuns(audited.ws)).toBe(false);
  });
});

describe.each(OCI_RUNTIMES)('OCI seccomp under %s', (runtime) => {
  it.skipIf(!IS_ROOT || !has('python3'))("kills an x32 syscall (a foreign ABI), as sbx's own filter does", async () => {
    const bundle = join(host.root, `bundle-x32-${runtime}`);
    const x32 = 'import ctypes; ctypes.CDLL(None).syscall(0x40000000 | 39); print("x32 call returned")';
    const exported = await runSbxRaw(['export', 'oci', bundle, '-p', 'default', '--', 'python3', '-c', x32], {
      env: host.env,
      cwd: host.workspace,
    });
    expect(exported.code, exported.err).toBe(0);
    const ran = await runHost([runtime, 'run', '--bundle', bundle, `sbx-export-x32-${process.pid}`], {
      env: host.env,
      cwd: host.root,
      timeoutMs: 60_000,
    });
    // The control: unsandboxed, the same call returns (ENOSYS where the kernel has no x32).
    const control = await runHost(['python3', '-c', x32], { env: host.env, cwd: host.root });
    expect(control.out).toContain('x32 call returned');
    expect(ran.code).toBe(128 + 31);
    expect(ran.out).not.toContain('x32 call returned');
  });
});

it.skipIf(IS_ROOT)('OCI: skipped as non-root (runc run needs root for this bundle)', () => {});
it.skipIf(OCI_RUNTIMES.length > 0)('OCI: skipped, neither runc nor crun is installed (apt-get install runc)', () => {});

describe('docker argv', () => {
  it.skipIf(!IS_ROOT || !dockerReady)(
    `blocks the red-team cases (needs root and ${IMAGE}: bash /work/shared/tools/container-host.sh)`,
    async () => {
      // Docker runs the command as the host's 65534 (no user namespace): give it the workspace, as the gap says.
      const ws = join(host.root, 'ws-docker');
      mkdirSync(ws);
      chownSync(ws, NOBODY, NOBODY);
      const outside = join(host.root, 'outside-docker');
      const exported = await runSbxRaw(
        [
          'export',
          'docker',
          '-p',
          'default',
          '--image',
          IMAGE,
          '--json',
          '--keep-env',
          'EXPORT_KEPT_TOKEN',
          '--',
          'bash',
          '-c',
          // Beyond the red-team's cases: sbx mounts no /sys, and a kept variable arrives through the env file.
          `${probe(cred(), outside, true)}\n[ -z "$(ls -A /sys)" ] && echo SYS:empty || echo SYS:host\necho "KEPT:$EXPORT_KEPT_TOKEN"`,
        ],
        { env: { ...host.env, EXPORT_KEPT_TOKEN: 'kept-42' }, cwd: ws },
      );
      expect(exported.code, exported.err).toBe(0);
      const { argv } = JSON.parse(exported.out) as { argv: string[] };
      expect(argv.slice(argv.indexOf('--network'), argv.indexOf('--network') + 2)).toEqual(['--network', 'none']);
      const ran = await runHost(argv, { env: host.env, cwd: ws, timeoutMs: 60_000 });
      expect(ran.code, ran.err).toBe(0);
      expect(verdicts(ran.out)).toEqual([...BLOCKED, 'SYS:empty', 'KEPT:kept-42']);
      expect(argv.filter((a) => a.includes('kept-42'))).toEqual([]);
      expect(existsSync(outside)).toBe(false);
      expect(existsSync(join(ws, 'ws-marker'))).toBe(true);
    },
  );
});

describe('files the engine reads later', () => {
  it('are refused inside the workspace, which the sandbox can write (a command would rewrite its next sandbox)', async () => {
    const out = join(host.workspace, 'export');
    const ran = await runSbxRaw(['export', 'docker', '-p', 'default', '--out', out, '--', 'true'], {
      env: host.env,
      cwd: host.workspace,
    });
    expect(ran.code).toBe(2);
    expect(ran.err).toMatch(/--out .* lies in .*, which the sandbox can write/);
    expect(existsSync(out)).toBe(false);
    const bundle = await runSbxRaw(['export', 'oci', join(host.workspace, 'b'), '-p', 'default', '--', 'true'], {
      env: host.env,
      cwd: host.workspace,
    });
    expect(bundle.code).toBe(2);
    expect(existsSync(join(host.workspace, 'b'))).toBe(false);
  });

  it('go to sbx state directory by default, which no sandbox sees', async () => {
    const ran = await runSbxRaw(['export', 'docker', '-p', 'default', '--json', '--', 'true'], {
      env: host.env,
      cwd: host.workspace,
    });
    expect(ran.code, ran.err).toBe(0);
    const { files } = JSON.parse(ran.out) as { files: string[] };
    expect(files).toContain(join(host.home, '.local/state/sbx/export/default/seccomp.json'));
  });
});
