// Mount sources are pinned and mount points checked, through real bwrap (dist/api.js in-process and
// bin/sbx.js): a workspace writer racing a bind (flipping ./tools to a symlink to ~/.ssh) never gets
// ~/.ssh mounted; network.unix_sockets takes sockets only; mountAt over system paths is refused and
// leaves the host workspace untouched; bwrap's argument limit is a clear refusal; .sbx and sbx's own
// config are read-only inside, its state and cache hidden. Each refusal beside a control that works.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DIST_API,
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  runSbxRaw,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

type Api = typeof import('../../../src/api.js');
let api: Api;
let t: TestHost;
const MARKER = `SBX-PIN-${randomBytes(6).toString('hex')}`;

const opts = (cwd = t.workspace, env = t.env) => ({ env, cwd });

/** A user profile (the user's own config dir: trusted input) named `name`. */
function writeProfile(name: string, yaml: string): void {
  mkdirSync(join(t.configHome, 'sbx', 'profiles'), { recursive: true, mode: 0o700 });
  writeFileSync(join(t.configHome, 'sbx', 'profiles', `${name}.yaml`), yaml);
}

/** The SbxError code a run is refused with (or 'ran'). */
async function refusal(options: Parameters<Api['run']>[0]): Promise<{ code: string; message: string; hint?: string }> {
  try {
    await api.run({ stdio: 'capture', cwd: t.workspace, hostEnv: t.env, ...options });
    return { code: 'ran', message: '' };
  } catch (error) {
    const e = error as { code?: string; message: string; hint?: string };
    return { code: e.code ?? 'not an SbxError', message: e.message, ...(e.hint ? { hint: e.hint } : {}) };
  }
}

/** Every entry under `dir`, recursively (relative paths), to compare a host tree before and after. */
function listTree(dir: string, rel = ''): string[] {
  return readdirSync(join(dir, rel), { withFileTypes: true }).flatMap((e) => {
    const path = rel ? `${rel}/${e.name}` : e.name;
    return e.isDirectory() && !e.isSymbolicLink() ? [`${path}/`, ...listTree(dir, path)] : [path];
  });
}

describe.skipIf(SKIP_INTEGRATION)('mount sources and mount points (real bwrap)', () => {
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    api = (await import(DIST_API)) as Api;
    t = makeTestHost('pin');
    mkdirSync(join(t.home, '.ssh'), { mode: 0o700 });
    writeFileSync(join(t.home, '.ssh', 'id'), `${MARKER}\n`, { mode: 0o600 });
  });
  afterAll(() => t?.cleanup());

  describe('a bind source flipped to a symlink by a workspace writer', () => {
    const RUNS = 150;

    it('control: through the symlink the host reads the secret, and sbx refuses the symlinked bind', async () => {
      const ws = join(t.root, 'ws-control');
      mkdirSync(ws);
      symlinkSync(join(t.home, '.ssh'), join(ws, 'tools'));
      expect((await runHost(['cat', join(ws, 'tools', 'id')], opts(ws))).out).toBe(`${MARKER}\n`);
      const r = await refusal({
        command: ['cat', '/tools/id'],
        cwd: ws,
        binds: [{ source: './tools', target: '/tools', access: 'ro' }],
      });
      expect(r.code).toBe('DANGER_NOT_ALLOWED');
    });

    const title = `${RUNS} runs of --ro-bind ./tools:/tools against a flipping ./tools`;
    it(`${title}: each mounts the real dir or refuses, none reads the secret`, async () => {
      const ws = join(t.root, 'ws-race');
      mkdirSync(join(ws, 'tools'), { recursive: true });
      writeFileSync(join(ws, 'tools', 'id'), 'REAL\n');
      // The attacker: anything that can write the workspace (another sandbox, a build step). It swaps
      // ./tools between the real directory and a symlink to ~/.ssh as fast as it can, until killed.
      const flipper = spawn(
        process.execPath,
        [
          '-e',
          `const fs = require('fs'); process.chdir(${JSON.stringify(ws)}); process.stdout.write('ready\\n');
           const secret = ${JSON.stringify(join(t.home, '.ssh'))};
           for (;;) { fs.renameSync('tools', 'tools.real'); fs.symlinkSync(secret, 'tools');
                      fs.unlinkSync('tools'); fs.renameSync('tools.real', 'tools'); }`,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      try {
        await new Promise<void>((resolve, reject) => {
          flipper.stdout!.once('data', () => resolve());
          flipper.once('exit', (code) => reject(new Error(`flipper exited (${code})`)));
        });
        const seen: Record<string, number> = {};
        for (let i = 0; i < RUNS; i++) {
          const result = await api
            .run({
              command: ['cat', '/tools/id'],
              stdio: 'capture',
              cwd: ws,
              hostEnv: t.env,
              binds: [{ source: './tools', target: '/tools', access: 'ro' }],
            })
            .then(
              (o) =>
                o.exitCode === 0
                  ? `ran: ${o.stdout!.toString().trim()}`
                  : `exit ${o.exitCode}: ${o.stderr!.toString().trim()}`,
              (error: { code?: string; message: string }) => `refused: ${error.code ?? error.message}`,
            );
          seen[result] = (seen[result] ?? 0) + 1;
        }
        // Mounted the real directory, or refused: gone when probed (BIND_SOURCE_MISSING), the symlink
        // when probed (a credential store), or moved while bwrap mounted the pinned descriptor (bwrap
        // --bind-fd checks the mount against the descriptor and dies: SANDBOX_SETUP).
        expect(JSON.stringify(seen)).not.toContain(MARKER);
        const outcomes = [
          'ran: REAL',
          'refused: BIND_SOURCE_MISSING',
          'refused: DANGER_NOT_ALLOWED',
          'refused: SANDBOX_SETUP',
        ];
        expect(
          Object.keys(seen).filter((k) => !outcomes.includes(k)),
          JSON.stringify(seen),
        ).toEqual([]);
        expect(seen['ran: REAL'], JSON.stringify(seen)).toBeGreaterThan(0);
      } finally {
        flipper.kill('SIGKILL');
      }
    }, 240_000);
  });

  describe('network.unix_sockets', () => {
    let server: Server;
    let socketPath: string;
    beforeAll(async () => {
      const dir = join(t.root, 'svc');
      mkdirSync(dir);
      socketPath = join(dir, 'app.sock');
      server = createServer((c) => c.once('data', (d) => c.end(`pong:${d.toString()}`)));
      await new Promise<void>((resolve) => server.listen(socketPath, resolve));
      writeFileSync(join(dir, 'plain.txt'), 'not a socket\n');
      writeProfile('sock-ok', `extends: default\nnetwork:\n  unix_sockets: [${socketPath}]\n`);
      writeProfile('sock-dir', `extends: default\nnetwork:\n  unix_sockets: [${dir}]\n`);
      writeProfile('sock-file', `extends: default\nnetwork:\n  unix_sockets: [${join(dir, 'plain.txt')}]\n`);
      writeProfile('sock-etc', `extends: default\nnetwork:\n  unix_sockets: [/etc]\n`);
      writeProfile('sock-ro', `extends: read-only\nnetwork:\n  unix_sockets: [${socketPath}]\n`);
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    const client = (path: string) => [
      'python3',
      '-c',
      `import socket; s = socket.socket(socket.AF_UNIX); s.connect(${JSON.stringify(path)}); ` +
        's.sendall(b"ping"); print(s.recv(64).decode())',
    ];

    it('control and the allowed case: a real listening socket is reachable, unsandboxed and inside', async () => {
      expect((await runHost(client(socketPath), opts())).out).toBe('pong:ping\n');
      const r = await runSbx(['-p', 'sock-ok', '--', ...client(socketPath)], opts());
      expect(r.err).toBe('');
      expect(r.out).toBe('pong:ping\n');
      expect(r.code).toBe(0);
    });

    it('a directory, a regular file and /etc are refused (UNIX_SOCKET_INVALID), nothing run', async () => {
      for (const [profile, what] of [
        ['sock-dir', 'a directory'],
        ['sock-file', 'a regular file'],
        ['sock-etc', 'a directory'],
      ] as const) {
        const r = await refusal({ profile, command: ['sh', '-c', `echo RAN-${MARKER}`] });
        expect(r, profile).toMatchObject({
          code: 'UNIX_SOCKET_INVALID',
          message: expect.stringContaining(`is ${what}`),
        });
      }
      const cli = await runSbx(['-p', 'sock-etc', '--', 'sh', '-c', 'touch /etc/sbx-planted'], opts());
      expect(cli.code).toBe(125);
      expect(cli.err).toContain('network.unix_sockets: /etc is a directory');
    });

    it('mode read-only refuses a socket (connecting writes to it), with the fix in the hint', async () => {
      const r = await refusal({ profile: 'sock-ro', command: client(socketPath) });
      expect(r).toMatchObject({
        code: 'UNIX_SOCKET_INVALID',
        message: expect.stringContaining('mode: read-only promises no writes'),
        hint: expect.stringContaining('workspace-write'),
      });
    });
  });

  describe('mountAt', () => {
    it('workspace.mountAt / and /etc are refused (BIND_TARGET_INVALID), the host workspace unchanged', async () => {
      const ws = join(t.root, 'ws-mountat');
      mkdirSync(join(ws, 'src'), { recursive: true });
      writeFileSync(join(ws, 'src', 'main.c'), 'int main(void) { return 0; }\n');
      // A run makes an empty .sbx in a writable workspace (held read-only: profile-paths.test.ts); made
      // here first, so the listings compare what the mounts would create.
      mkdirSync(join(ws, '.sbx'));
      const before = listTree(ws);
      for (const target of ['/', '/etc', '/var', '/proc/x']) {
        writeProfile('mountat', `extends: default\nworkspace:\n  mountAt: ${target}\n`);
        const r = await refusal({ profile: 'mountat', cwd: ws, command: ['true'] });
        expect(r, target).toMatchObject({
          code: 'BIND_TARGET_INVALID',
          message: expect.stringContaining('would cover a system directory'),
        });
        const cli = await runSbx(['-p', 'mountat', '--', 'true'], opts(ws));
        expect(cli.code, target).toBe(125);
        expect(listTree(ws), target).toEqual(before);
      }
      // Control: a mountAt of its own works and creates nothing on the host.
      writeProfile('mountat', 'extends: default\nworkspace:\n  mountAt: /work\n');
      const ok = await runSbx(['-p', 'mountat', '--', 'sh', '-c', 'pwd; cat src/main.c'], opts(ws));
      expect(ok.out).toBe('/work\nint main(void) { return 0; }\n');
      expect(listTree(ws)).toEqual(before);
    });

    it('a bind whose mount point would be created in the writable workspace is refused; elsewhere works', async () => {
      const ws = join(t.root, 'ws-mountpoint');
      mkdirSync(join(ws, 'vendor'), { recursive: true });
      const lib = join(t.root, 'lib');
      mkdirSync(lib);
      writeFileSync(join(lib, 'x'), 'lib\n');
      mkdirSync(join(ws, '.sbx')); // as in the test above
      const before = listTree(ws);
      const r = await refusal({
        cwd: ws,
        command: ['true'],
        binds: [{ source: lib, target: join(ws, 'newdir'), access: 'ro' }],
      });
      expect(r).toMatchObject({
        code: 'BIND_TARGET_INVALID',
        message: expect.stringContaining(`its mount point ${join(ws, 'newdir')} would be created on the host`),
      });
      expect(listTree(ws)).toEqual(before);
      // Control: elsewhere it mounts.
      const ok = await runSbx(['--ro-bind', `${lib}:/opt/lib`, '--', 'cat', '/opt/lib/x'], opts(ws));
      expect(ok.out).toBe('lib\n');
      expect(listTree(ws)).toEqual(before);
      // An existing directory of the workspace is a mount point already: nothing is created, it mounts.
      const onto = await runSbx(['--ro-bind', `${lib}:${join(ws, 'vendor')}`, '--', 'cat', 'vendor/x'], opts(ws));
      expect(onto.out).toBe('lib\n');
      expect(listTree(ws)).toEqual(before);
    });
  });

  describe("sbx's session directories", () => {
    // A writable workspace holding them is refused (test/integration/core/host-state.test.ts); a
    // read-only one still shows where they are.
    it('are hidden when a bind shows them (XDG_RUNTIME_DIR in a read-only workspace)', async () => {
      const ws = join(t.root, 'ws-runtime');
      const runtime = join(ws, 'run');
      mkdirSync(join(runtime, 'sbx'), { recursive: true, mode: 0o700 });
      const env = { ...t.env, XDG_RUNTIME_DIR: runtime };
      const probe = ['sh', '-c', 'ls -A run/sbx | wc -l; mkdir run/sbx/planted; echo rc=$?'];
      const writable = await runSbx(['--', ...probe], opts(ws, env));
      expect(writable.code).toBe(125);
      expect(writable.err).toContain("(sbx's session directories)");
      const r = await runSbx(['-p', 'read-only', '--', ...probe], opts(ws, env));
      expect(r.out).toBe('0\nrc=1\n');
      expect(r.err).toContain('Read-only file system');
      expect(readdirSync(join(runtime, 'sbx'))).toEqual([]);
      // Control: on the host the directory is writable.
      expect((await runHost(probe, opts(ws, env))).out).toBe('0\nrc=0\n');
    });
  });

  describe('sbx explain', () => {
    it('lists each pinned descriptor with its path and prints a runnable form with the paths', async () => {
      const ws = join(t.root, 'ws-explain');
      mkdirSync(join(ws, 'tools'), { recursive: true });
      const r = await runSbxRaw(['explain', '--ro-bind', './tools:/tools', '--', 'true'], opts(ws));
      expect(r.code).toBe(0);
      const lines = r.out.split('\n');
      const listing = lines.slice(
        lines.indexOf('mount sources, opened and checked once; the launcher mounts these descriptors:') + 1,
      );
      expect(listing.slice(0, listing.indexOf(''))).toEqual(
        expect.arrayContaining([
          expect.stringMatching(new RegExp(`^  fd \\d+  ${join(ws, 'tools')}$`)),
          expect.stringMatching(new RegExp(`^  fd \\d+  ${ws}$`)),
        ]),
      );
      expect(r.out).toContain(`--ro-bind ${join(ws, 'tools')} /tools`);
      const json = JSON.parse(
        (await runSbxRaw(['explain', '--json', '--ro-bind', './tools:/tools', '--', 'true'], opts(ws))).out,
      ) as { launch: { argv: string[]; fds: { purpose: string; source?: string }[] } };
      const at = json.launch.argv.indexOf('/tools');
      expect(json.launch.argv[at - 2]).toBe('--ro-bind-fd');
      expect(json.launch.fds[Number(json.launch.argv[at - 1]) - 3]).toEqual({
        purpose: 'bind',
        source: join(ws, 'tools'),
      });
    });
  });

  describe("bubblewrap's argument limit", () => {
    it('3000 masked *.pem files: a refusal naming the count, the limit and the fix; skipped, it runs', async () => {
      const ws = join(t.root, 'ws-pem');
      mkdirSync(join(ws, 'fixtures'), { recursive: true });
      for (let i = 0; i < 3000; i++) writeFileSync(join(ws, 'fixtures', `k${i}.pem`), 'fixture\n');
      // A file the sandbox may read beside them: the directory cannot be masked whole (sensitive/host/mask-fit.ts).
      writeFileSync(join(ws, 'fixtures', 'README.md'), 'fixtures\n');
      const r = await refusal({ cwd: ws, command: ['true'] });
      expect(r.code).toBe('LAUNCH_TOO_LARGE');
      expect(r.message).toMatch(
        /^the sandbox needs \d+ bwrap arguments, more than bubblewrap's limit of 9000 \(30\d\d masked paths/,
      );
      expect(r.hint).toContain('sensitive.skip');
      const cli = await runSbx(['--', 'true'], opts(ws));
      expect(cli.code).toBe(125);
      expect(cli.err).toContain("more than bubblewrap's limit of 9000");
      writeProfile('pem-skip', 'extends: default\nsensitive:\n  skip: [fixtures]\n');
      const ok = await runSbx(['-p', 'pem-skip', '--', 'sh', '-c', 'ls fixtures | wc -l'], opts(ws));
      expect(ok.out).toBe('3001\n');
      expect(ok.code).toBe(0);
    }, 60_000);

    it('a command of 9000 arguments is refused by name; 8000 run', async () => {
      const many = (n: number) => ['sh', '-c', 'echo $#', 'sh', ...Array.from({ length: n }, (_, i) => `a${i}`)];
      const r = await refusal({ command: many(9000) });
      expect(r).toMatchObject({
        code: 'LAUNCH_TOO_LARGE',
        message: expect.stringContaining('a command of 9004 arguments'),
        hint: expect.stringContaining('xargs'),
      });
      const o = await api.run({ command: many(8000), stdio: 'capture', cwd: t.workspace, hostEnv: t.env });
      expect(o.stdout!.toString()).toBe('8000\n');
    });
  });

  describe("sbx's own policy files", () => {
    it('.sbx in the workspace is read-only inside (EROFS); the rest of the workspace stays writable', async () => {
      const ws = join(t.root, 'ws-dotsbx');
      mkdirSync(join(ws, '.sbx', 'profiles'), { recursive: true });
      const r = await runSbx(
        ['--', 'sh', '-c', 'echo "network: host" > .sbx/profiles/default.yaml; echo rc=$?; touch built.o; echo rc=$?'],
        opts(ws),
      );
      expect(r.err).toContain('.sbx/profiles/default.yaml: Read-only file system');
      expect(r.out).toBe('rc=2\nrc=0\n');
      expect(readdirSync(join(ws, '.sbx', 'profiles'))).toEqual([]);
      expect(readdirSync(ws).sort()).toEqual(['.sbx', 'built.o']);
    });

    // A writable workspace = HOME is refused (test/integration/core/host-state.test.ts); read-only, it
    // still shows sbx's directories, so they stay read-only or hidden there.
    it('read-only workspace = HOME: config read-only, state and cache hidden; an absent config dir made first', async () => {
      const home = join(t.root, 'home2');
      mkdirSync(join(home, '.local', 'state', 'sbx'), { recursive: true });
      writeFileSync(join(home, '.local', 'state', 'sbx', 'audit.jsonl'), `${MARKER}\n`);
      mkdirSync(join(home, '.cache', 'sbx'), { recursive: true });
      writeFileSync(join(home, '.cache', 'sbx', 'bwrap.json'), `${MARKER}\n`);
      const env = {
        ...t.env,
        HOME: home,
        XDG_CONFIG_HOME: join(home, '.config'),
        XDG_CACHE_HOME: join(home, '.cache'),
      };
      const probe = [
        'sh',
        '-c',
        'mkdir -p .config/sbx/profiles; echo rc=$?; ' +
          'echo "network: host" > .config/sbx/profiles/default.yaml; echo rc=$?; ' +
          'cat .local/state/sbx/audit.jsonl .cache/sbx/bwrap.json; echo rc=$?; ' +
          'touch .config/sbx/planted; echo rc=$?; touch notes; echo rc=$?',
      ];
      const writable = await runSbx(['--workspace', home, '--', ...probe], opts(home, env));
      expect(writable.code).toBe(125);
      expect(writable.err).toContain('is your home directory, which no sandbox may write');
      const r = await runSbx(['-p', 'read-only', '--workspace', home, '--', ...probe], opts(home, env));
      expect(r.out + r.err).not.toContain(MARKER);
      expect(r.err).toContain('Read-only file system');
      expect(r.err).toContain('.local/state/sbx/audit.jsonl: No such file or directory');
      expect(r.out).toBe('rc=1\nrc=2\nrc=1\nrc=1\nrc=1\n');
      // sbx made its own config dir (0700) rather than leave its creation to the sandbox.
      expect(statSync(join(home, '.config', 'sbx')).mode & 0o777).toBe(0o700);
      expect(readdirSync(join(home, '.config', 'sbx'))).toEqual([]);
      // Control: unsandboxed, the same script writes the profile.
      const host = await runHost(probe, opts(home, env));
      expect(host.out).toContain(MARKER);
      expect(readdirSync(join(home, '.config', 'sbx', 'profiles'))).toEqual(['default.yaml']);
    });
  });
});
