// Issue 31 §4 end to end (real bwrap via bin/sbx.js): a protected host file with a second name (a hard
// link) inside the workspace. The sandbox would rewrite `~/.bashrc` or sbx's own default profile
// through that name; sbx refuses the run, naming both names, and nothing runs. Beside it the control:
// the same write unsandboxed reaches the protected file (that is what a hard link is), and a link
// whose second name lies outside every writable tree does not stop a run.
import { existsSync, linkSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;

describe.skipIf(SKIP_INTEGRATION)('protected host files by identity, hard links included (issue 31 §4)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('host-links');
  });
  afterAll(() => t?.cleanup());

  it.each([
    ['~/.bashrc', () => join(t.home, '.bashrc'), 'a shell startup file'],
    ['the default profile in sbx config', () => join(t.configHome, 'sbx', 'profiles', 'default.yaml'), "sbx's own"],
  ])('%s hard-linked into the workspace: the run is refused, naming both', async (_name, protectedOf, what) => {
    const file = protectedOf();
    const ws = join(t.root, `ws-${what.replace(/\W+/g, '-')}`);
    mkdirSync(join(ws, 'dotfiles'), { recursive: true });
    mkdirSync(join(file, '..'), { recursive: true, mode: 0o700 });
    writeFileSync(file, 'extends: default\n');
    const second = join(ws, 'dotfiles', 'linked');
    linkSync(file, second);
    const write = ['sh', '-c', 'echo "network: host" >> dotfiles/linked; touch ran'];
    const r = await runSbx(['--', ...write], { env: t.env, cwd: ws });
    expect(r.code).toBe(125);
    expect(r.err).toContain(`workspace: ${second} is a hard link to ${file} (${what}`);
    expect(existsSync(join(ws, 'ran'))).toBe(false);
    expect(readFileSync(file, 'utf8')).toBe('extends: default\n');
    // Control: the same write, unsandboxed, rewrites the protected file through the second name.
    expect((await runHost(write, { env: t.env, cwd: ws })).code).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('extends: default\nnetwork: host\n');
  });

  it('a second name outside every writable tree does not refuse the run', async () => {
    const file = join(t.home, '.profile');
    writeFileSync(file, '# profile\n');
    const elsewhere = join(t.root, 'dotfiles-elsewhere');
    mkdirSync(elsewhere);
    linkSync(file, join(elsewhere, 'profile'));
    const ws = join(t.root, 'ws-clean');
    mkdirSync(ws);
    const r = await runSbx(['--', 'touch', 'ran'], { env: t.env, cwd: ws });
    expect(r.code).toBe(0);
    expect(existsSync(join(ws, 'ran'))).toBe(true);
  });
});
