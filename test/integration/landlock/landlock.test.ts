// The landlock backend on this host, through the CLI (`sbx run --backend landlock`), and its helper
// (dist/sbx-landlock) driven directly where the CLI's seccomp filter would hide what Landlock itself
// enforces (TCP connect, signal scoping). Each case tries the forbidden thing and asserts the precise
// failure beside a control that shows the probe works unsandboxed. Runs as root and as a normal user.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readReport } from '../../helpers/report.js';
import {
  IS_ROOT,
  killAll,
  makeTestHost,
  pidsWithArgv,
  runHost,
  runSbx,
  runSbxRaw,
  SBX_BIN,
  SKIP_INTEGRATION,
  uniqueSleepArg,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { REPO_ROOT } from '../../helpers/paths.js';

const HELPER = join(REPO_ROOT, 'dist', 'sbx-landlock');
const MARKER = `LANDLOCK-SECRET-${process.pid}`;
/** name_to_handle_at(AT_FDCWD, ".", {handle_bytes: 0}): EOVERFLOW normally, EPERM under sbx's seccomp filter. */
const HANDLE_PROBE =
  'import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nbuf = (ctypes.c_char * 8)()\nmid = ctypes.c_int()\n' +
  'libc.name_to_handle_at(-100, b".", buf, ctypes.byref(mid), 0)\nprint("handle:" + os.strerror(ctypes.get_errno()))\n';
const connectProbe = (port: number) =>
  'import socket\ntry:\n' +
  `    socket.create_connection(("127.0.0.1", ${port}), timeout=5).close()\n    print("connect:ok")\n` +
  'except OSError as e:\n    print("connect:" + e.strerror)\n';

let t: TestHost;
let server: Server;
let port: number;

beforeAll(async () => {
  if (SKIP_INTEGRATION) return;
  for (const file of [HELPER, join(REPO_ROOT, 'dist', 'cli.js')]) {
    if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build (with a C compiler) first`);
  }
  t = makeTestHost('landlock');
  mkdirSync(join(t.home, '.ssh'), { mode: 0o700 });
  writeFileSync(join(t.home, '.ssh', 'id_ed25519'), `${MARKER}\n`, { mode: 0o600 });
  mkdirSync(join(t.root, 'outside'));
  // The probes close at once: the reset that may answer the greeting is theirs, not a failure.
  server = createServer((socket) => socket.on('error', () => undefined).end('host-service\n'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as { port: number }).port;
});
afterAll(() => {
  server?.close();
  t?.cleanup();
});

/** The helper with `records` on fd 3, no filter on fd 4, its status collected from fd 5, then `pins` from fd 6. */
interface HelperRun {
  code: number | null;
  out: string;
  err: string;
  status: string;
}

async function helper(records: string[], pins: number[] = []): Promise<HelperRun> {
  const child = spawn(HELPER, [], { stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe', 'pipe', ...pins], env: {} });
  const chunks: Record<string, string> = { out: '', err: '', status: '' };
  child.stdout!.on('data', (c: Buffer) => (chunks.out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (chunks.err += c.toString()));
  type Pipes = [unknown, unknown, unknown, NodeJS.WritableStream, NodeJS.WritableStream, NodeJS.ReadableStream];
  const [, , , config, filter, status] = child.stdio as unknown as Pipes;
  status.on('data', (c: Buffer) => (chunks.status += c.toString()));
  config.end(records.map((r) => r + '\0').join(''));
  filter.end();
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, out: chunks.out, err: chunks.err, status: chunks.status };
}

const base = () => [
  ...['ro=/usr', 'ro=/etc', 'ro=/proc', 'dev=/dev/null', `rw=${t.workspace}`, 'env=PATH=/usr/bin:/bin'],
  `cwd=${t.workspace}`,
];

describe.skipIf(SKIP_INTEGRATION)('sbx-landlock, driven directly', () => {
  it('denies TCP connect to a loopback listener unless its port is granted; control: connects', async () => {
    const control = await runHost(['python3', '-c', connectProbe(port)], { env: t.env, cwd: t.workspace });
    expect(control.out).toBe('connect:ok\n');
    const denied = await helper([...base(), 'arg=python3', 'arg=-c', `arg=${connectProbe(port)}`]);
    expect(denied.out).toBe('connect:Permission denied\n');
    const granted = await helper([...base(), `tcp=${port}`, 'arg=python3', 'arg=-c', `arg=${connectProbe(port)}`]);
    expect(granted.out).toBe('connect:ok\n');
  });

  it('grants a pinned path through its descriptor, not by the path named beside it', async () => {
    const [held, named] = [join(t.root, 'held'), join(t.root, 'named')];
    mkdirSync(held);
    mkdirSync(named);
    // O_PATH | O_CLOEXEC, as host/pins.ts opens mount sources.
    const fd = openSync(held, 0o10000000 | 0o2000000);
    try {
      const probe = `echo "held:$( (echo x > ${held}/f) 2>&1)"; echo "named:$( (echo x > ${named}/f) 2>&1)"`;
      const r = await helper([...base(), `pin=6:${named}`, `rw=${named}`, 'arg=sh', 'arg=-c', `arg=${probe}`], [fd]);
      expect(r.out).toBe(`held:\nnamed:sh: 1: cannot create ${named}/f: Permission denied\n`);
    } finally {
      closeSync(fd);
    }
  });

  it('a directory holding an excluded file stays listable, the file unreadable; one holding an excluded directory does not', async () => {
    const [files, dirs] = [join(t.root, 'split-files'), join(t.root, 'split-dirs')];
    mkdirSync(join(files, 'sub'), { recursive: true });
    mkdirSync(join(dirs, 'sub', 'keys'), { recursive: true });
    for (const [path, text] of [
      [join(files, 'sub', 'ok.txt'), 'ok'],
      [join(files, 'sub', 'secret.pem'), MARKER],
      [join(dirs, 'sub', 'ok.txt'), 'ok'],
      [join(dirs, 'sub', 'keys', 'id'), MARKER],
    ] as const)
      writeFileSync(path, `${text}\n`);
    const probe = (dir: string, secret: string) =>
      `ls ${dir}/sub | tr '\\n' ' '; echo; cat ${dir}/sub/ok.txt ${secret} 2>&1`;
    const control = await runHost(['sh', '-c', probe(files, `${files}/sub/secret.pem`)], {
      env: t.env,
      cwd: t.workspace,
    });
    expect(control.out).toBe(`ok.txt secret.pem \nok\n${MARKER}\n`);
    const listed = await helper([
      ...base(),
      `ro=${files}`,
      `except=${files}/sub/secret.pem`,
      ...['arg=sh', 'arg=-c', `arg=${probe(files, `${files}/sub/secret.pem`)}`],
    ]);
    expect(listed.out).toBe(`ok.txt secret.pem \nok\ncat: ${files}/sub/secret.pem: Permission denied\n`);
    const hidden = await helper([
      ...base(),
      `ro=${dirs}`,
      `except=${dirs}/sub/keys`,
      ...['arg=sh', 'arg=-c', `arg=${probe(dirs, `${dirs}/sub/keys/id`)}`],
    ]);
    expect(hidden.out).toBe(`\nok\ncat: ${dirs}/sub/keys/id: Permission denied\n`);
    expect(hidden.err).toContain(`ls: cannot open directory '${dirs}/sub': Permission denied`);
  });

  it('the command cannot signal a process outside its domain (scoping); control: it can unsandboxed', async () => {
    const probe = `kill -0 ${process.pid} 2>/dev/null; echo "kill:$?"`;
    expect((await runHost(['sh', '-c', probe], { env: t.env, cwd: t.workspace })).out).toBe('kill:0\n');
    expect((await helper([...base(), 'arg=sh', 'arg=-c', `arg=${probe}`])).out).toBe('kill:1\n');
  });

  // A normal user cannot empty its bounding set, and has no capability to regain through it.
  it('drops every capability, for root from the bounding set too', async () => {
    const r = await helper([...base(), 'arg=sh', 'arg=-c', 'arg=grep -E "^Cap(Prm|Eff|Bnd|Amb)" /proc/self/status']);
    const caps = Object.fromEntries(
      r.out
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(/:\s+/)),
    );
    const none = '0000000000000000';
    const bounding = IS_ROOT ? none : expect.stringMatching(/^[0-9a-f]{16}$/);
    expect(caps).toEqual({ CapPrm: none, CapEff: none, CapBnd: bounding, CapAmb: none });
  });

  it('reports the status as bwrap does, and a failed setup as exit 125 without a status', async () => {
    const ran = await helper([...base(), 'arg=sh', 'arg=-c', 'arg=exit 7']);
    expect(ran.code).toBe(7);
    expect(ran.status).toMatch(/^\{ "child-pid": \d+ \}\n\{ "exit-code": 7 \}\n$/);
    const failed = await helper([...base(), `ro=${join(t.root, 'missing')}`, 'arg=true']);
    expect(failed.code).toBe(125);
    expect(failed.status).toBe('');
    expect(failed.err).toBe(`sbx-landlock: opening ${join(t.root, 'missing')}: No such file or directory\n`);
    const unknown = await helper([...base(), 'bogus=1', 'arg=true']);
    expect([unknown.code, unknown.err]).toEqual([125, 'sbx-landlock: unknown configuration key bogus\n']);
  });
});

describe.skipIf(SKIP_INTEGRATION)('sbx run --backend landlock', () => {
  const opts = () => ({ env: { ...t.env, GITHUB_TOKEN: MARKER }, cwd: t.workspace });
  const sbx = (args: string[]) => runSbx(['--backend', 'landlock', ...args], opts());

  it('the planted HOME secret is unreadable (EACCES); control: readable unsandboxed', async () => {
    const key = join(t.home, '.ssh', 'id_ed25519');
    expect((await runHost(['cat', key], opts())).out).toBe(`${MARKER}\n`);
    const r = await sbx(['--', 'cat', key]);
    expect(r.code).toBe(1);
    expect(r.err.split('\n')[0]).toBe(`cat: ${key}: Permission denied`);
  });

  it('the workspace is writable; /usr and a directory beside it are not; control: writable unsandboxed', async () => {
    const outside = join(t.root, 'outside');
    expect((await runHost(['sh', '-c', `echo x > ${outside}/control && echo ok`], opts())).out).toBe('ok\n');
    const r = await sbx(['--', 'sh', '-c', `echo w > made && cat made; echo x > /usr/sbx-x; echo x > ${outside}/x`]);
    expect(r.out).toBe('w\n');
    expect(r.err.split('\n').slice(0, 2)).toEqual([
      'sh: 1: cannot create /usr/sbx-x: Permission denied',
      `sh: 1: cannot create ${outside}/x: Permission denied`,
    ]);
    expect(readdirSync(outside)).toEqual(['control']);
  });

  it('/dev/stdout reopens when stdout is a file, as under bwrap; nothing else beside it is writable', async () => {
    const out = join(t.root, 'stdout.txt');
    const inner = `echo via-path > /dev/stdout; echo x > ${t.root}/beside`;
    const r = await runHost(['sh', '-c', `"$0" run --backend landlock -- sh -c '${inner}' > ${out}`, SBX_BIN], opts());
    expect(readFileSync(out, 'utf8')).toBe('via-path\n');
    expect(r.err.split('\n')[0]).toBe(`sh: 1: cannot create ${t.root}/beside: Permission denied`);
  });

  it('network none: connecting to a loopback listener fails; control: it connects unsandboxed', async () => {
    expect((await runHost(['python3', '-c', connectProbe(port)], opts())).out).toBe('connect:ok\n');
    const r = await sbx(['--', 'python3', '-c', connectProbe(port)]);
    expect(r.out).toBe('connect:Address family not supported by protocol\n');
  });

  it('network host (profile network): connecting to the loopback listener works', async () => {
    expect((await sbx(['-p', 'network', '--', 'python3', '-c', connectProbe(port)])).out).toBe('connect:ok\n');
  });

  it('a syscall the seccomp filter denies fails with EPERM; control: EOVERFLOW unsandboxed', async () => {
    const control = await runHost(['python3', '-c', HANDLE_PROBE], opts());
    expect(control.out).toBe('handle:Value too large for defined data type\n');
    expect((await sbx(['--', 'python3', '-c', HANDLE_PROBE])).out).toBe('handle:Operation not permitted\n');
  });

  it("the environment is exactly the policy's (HOME, TMPDIR in the session); control: the host has it", async () => {
    expect((await runHost(['env'], opts())).out).toContain(MARKER);
    const r = await sbx(['--', 'env']);
    const names = r.out
      .split('\n')
      .filter(Boolean)
      .map((l) => l.slice(0, l.indexOf('=')))
      .sort();
    const policyNames = ['LANG', 'LC_ALL', 'PATH', 'SBX_PROFILE', 'SBX_SESSION_ID', 'SBX_WORKSPACE'];
    expect(names).toEqual(['HOME', ...policyNames, 'TMPDIR', 'XDG_RUNTIME_DIR']);
    expect(r.out).not.toContain(MARKER);
    expect(r.out).toMatch(new RegExp(`^HOME=${t.runtimeDir}/sbx/[^/]+/home$`, 'm'));
  });

  it('the report names the backend and its approximations; exit codes pass through', async () => {
    const file = join(t.root, 'report.json');
    const r = await sbx(['--report-file', file, '--', 'sh', '-c', 'exit 42']);
    expect(r.code).toBe(42);
    const report = readReport(file);
    expect(report).toMatchObject({ backend: 'landlock', exitCode: 42, setBy: 'child' });
    const features = ['mounts.tmp', 'mounts.home', 'namespaces.pid', 'network.none', 'landlock.unix-sockets'];
    expect(report.approximations!.map((a) => a.split(':')[0])).toEqual(expect.arrayContaining(features));
    expect((await sbx(['--', 'no-such-command-anywhere'])).code).toBe(127);
  });

  it('what the command leaves running ends with it (no pid namespace); control: it survives unsandboxed', async () => {
    const marker = uniqueSleepArg();
    // Started apart from the output pipes, then waited for until it really is `sleep MARKER`.
    const started = `[ "$(tr '\\0' ' ' < /proc/$pid/cmdline 2>/dev/null)" = "sleep ${marker} " ]`;
    const script = `sleep ${marker} >/dev/null 2>&1 & pid=$!; until ${started}; do :; done; echo started`;
    try {
      expect((await runHost(['sh', '-c', script], opts())).out).toBe('started\n');
      expect(pidsWithArgv(['sleep', marker])).toHaveLength(1);
      killAll(['sleep', marker]);
      const r = await sbx(['--', 'sh', '-c', script]);
      expect([r.code, r.out]).toEqual([0, 'started\n']);
      expect(pidsWithArgv(['sleep', marker])).toEqual([]);
    } finally {
      killAll(['sleep', marker]);
    }
  });

  it('sbx doctor --json reports the helper and the kernel ABI', async () => {
    const r = await runSbxRaw(['doctor', '--json'], opts());
    const checks = (JSON.parse(r.out) as { checks: { name: string; status: string; detail: string }[] }).checks;
    expect(checks.find((c) => c.name === 'landlock')).toEqual({
      name: 'landlock',
      status: 'ok',
      detail: expect.stringMatching(new RegExp(`^sbx-landlock \\(kernel Landlock ABI \\d+\\) at ${HELPER}; `)),
    });
  });

  it('a secret file in the workspace is refused by name (exit 125), nothing runs', async () => {
    const ws = join(t.root, 'ws-env');
    mkdirSync(ws);
    writeFileSync(join(ws, '.env'), `TOKEN=${MARKER}\n`);
    const r = await runSbx(['--backend', 'landlock', '--', 'sh', '-c', 'echo ran'], { env: t.env, cwd: ws });
    expect(r.code).toBe(125);
    expect(r.out).toBe('');
    const refusal = `landlock backend: ${ws}/.env (sensitive file) would be readable by the command:`;
    expect(r.err).toContain(`sbx: error: ${refusal}`);
  });
});
