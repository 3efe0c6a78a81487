// A long-lived library caller keeps the sensitive-file scan warm between run() calls
// (host/warm-cache.ts): this proves the cache never shows a secret a fresh scan would mask. Each case
// makes a change between two runs of one process (by the sandboxed command itself, or on the host)
// and the very next run() must mask what changed. Real bwrap through dist/api.js.
import { spawnSync } from 'node:child_process';
import { chmodSync, linkSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
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
const SECRET = 'SBX-WARM-SECRET-4f1c';

const options = (command: string[]) => ({
  command,
  cwd: t.workspace,
  hostEnv: { ...t.env, XDG_STATE_HOME: join(t.root, 'state') },
  stdio: 'capture' as const,
});

async function cat(path: string): Promise<string> {
  const o = await api.run(options(['cat', path]));
  return o.stdout?.toString() ?? '';
}

function git(...args: string[]): void {
  const env = { PATH: process.env.PATH!, HOME: t.home, GIT_CONFIG_NOSYSTEM: '1' };
  const r = spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', ...args], { cwd: t.workspace, env });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
}

describe.skipIf(SKIP_INTEGRATION)('warm sensitive scan (library, real bwrap)', () => {
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    api = (await import(DIST_API)) as Api;
  });
  afterEach(() => t?.cleanup());

  it('a .env the previous sandboxed command created is masked in the next run', async () => {
    t = makeTestHost('warm-own');
    writeFileSync(join(t.workspace, 'notes.txt'), 'plain');
    expect(await cat('notes.txt')).toBe('plain');
    const wrote = await api.run(options(['sh', '-c', `echo ${SECRET} > .env`]));
    expect(wrote.exitCode).toBe(0);
    expect(await cat('.env')).not.toContain(SECRET);
    // Control: the file really holds the secret on the host.
    expect(spawnSync('cat', [join(t.workspace, '.env')], { encoding: 'utf8' }).stdout).toContain(SECRET);
  });

  it('a key the host adds in a subdirectory between runs is masked', async () => {
    t = makeTestHost('warm-host');
    mkdirSync(join(t.workspace, 'deploy'));
    expect(await cat('/dev/null')).toBe('');
    writeFileSync(join(t.workspace, 'deploy', 'id_rsa'), SECRET);
    expect(await cat('deploy/id_rsa')).not.toContain(SECRET);
  });

  it('a tracked file edited after the run that exempted it is masked', async () => {
    t = makeTestHost('warm-git');
    writeFileSync(join(t.workspace, '.env'), 'PUBLIC_DEFAULTS=1\n');
    git('init', '-q');
    git('add', '.env');
    git('commit', '-qm', 'init');
    // Tracked with this exact content: shown (its content is in the object store anyway).
    expect(await cat('.env')).toContain('PUBLIC_DEFAULTS');
    writeFileSync(join(t.workspace, '.env'), `${SECRET}\n`);
    expect(await cat('.env')).not.toContain(SECRET);
  });

  it('a key file stays masked when its mode changes and its directory gains a file between runs', async () => {
    t = makeTestHost('warm-chmod');
    mkdirSync(join(t.workspace, 'private'));
    writeFileSync(join(t.workspace, 'private', 'token.pem'), SECRET);
    expect(await cat('private/token.pem')).not.toContain(SECRET);
    chmodSync(join(t.workspace, 'private', 'token.pem'), 0o644);
    writeFileSync(join(t.workspace, 'private', 'readme.pem.txt'), 'x');
    expect(await cat('private/token.pem')).not.toContain(SECRET);
  });

  it('a hard link to a masked .env made between runs in a directory the scan prunes is masked', async () => {
    t = makeTestHost('warm-hardlink');
    writeFileSync(join(t.workspace, '.env'), SECRET);
    mkdirSync(join(t.workspace, 'node_modules'));
    expect(await cat('.env')).not.toContain(SECRET);
    // node_modules is never listed, so never watched, and link(2) there tells the workspace's watch
    // nothing: only the file's own link count changes.
    linkSync(join(t.workspace, '.env'), join(t.workspace, 'node_modules', 'cache.txt'));
    expect(spawnSync('cat', [join(t.workspace, 'node_modules', 'cache.txt')], { encoding: 'utf8' }).stdout).toBe(
      SECRET,
    );
    expect(await cat('node_modules/cache.txt')).not.toContain(SECRET);
  });

  it('a symlink to a secret made between runs is masked at its target', async () => {
    t = makeTestHost('warm-link');
    mkdirSync(join(t.workspace, 'conf'));
    writeFileSync(join(t.workspace, 'conf', 'app.txt'), SECRET);
    expect(await cat('conf/app.txt')).toContain(SECRET);
    symlinkSync('conf/app.txt', join(t.workspace, '.env'));
    expect(await cat('conf/app.txt')).not.toContain(SECRET);
  });
  it('a token the host writes deep in a toolchain root on PATH between runs is masked', async () => {
    t = makeTestHost('warm-toolchain');
    chmodSync(t.home, 0o755);
    const root = join(t.home, '.nvm', 'versions', 'node', 'v20.0.0');
    mkdirSync(join(root, 'bin'), { recursive: true });
    mkdirSync(join(root, 'lib', 'deep'), { recursive: true });
    writeFileSync(join(root, 'bin', 'tool'), '#!/bin/sh\necho tool-ran\n', { mode: 0o755 });
    t.env.PATH = `${join(root, 'bin')}:/usr/bin:/bin`;
    const ran = await api.run(options(['tool']));
    expect(ran.stdout?.toString()).toContain('tool-ran');
    writeFileSync(join(root, 'lib', 'deep', 'credentials'), SECRET);
    expect(await cat(join(root, 'lib', 'deep', 'credentials'))).not.toContain(SECRET);
    // Control: the host reads it, and a toolchain file of no secret-looking name is shown.
    expect(spawnSync('cat', [join(root, 'lib', 'deep', 'credentials')], { encoding: 'utf8' }).stdout).toContain(SECRET);
    writeFileSync(join(root, 'lib', 'deep', 'notes.txt'), SECRET);
    expect(await cat(join(root, 'lib', 'deep', 'notes.txt'))).toContain(SECRET);
  });
});
