// Where an export writes: another local user's directory (or one they can write) could hold a link
// named like an export file (seccomp.json, env) and have sbx overwrite and chmod what it points at.
// Each case plants that link at a file of ours and checks the file is untouched.
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IS_ROOT, makeTestHost, runSbxRaw, type TestHost } from '../../helpers/sbx-cli.js';

let host: TestHost;
let victim: string;

beforeAll(() => {
  host = makeTestHost('export-out');
  victim = join(host.root, 'victim.txt');
});
afterAll(() => host.cleanup());

function plant(dir: string): void {
  writeFileSync(victim, 'victim\n', { mode: 0o600 });
  chmodSync(victim, 0o600);
  mkdirSync(dir);
  symlinkSync(victim, join(dir, 'seccomp.json'));
  symlinkSync(victim, join(dir, 'env'));
}

function exportTo(dir: string) {
  return runSbxRaw(['export', 'docker', '--out', dir, '-p', 'default', '--', 'true'], {
    env: host.env,
    cwd: host.workspace,
  });
}

function expectVictimUntouched(): void {
  expect(readFileSync(victim, 'utf8')).toBe('victim\n');
  expect(statSync(victim).mode & 0o7777).toBe(0o600);
}

describe('sbx export --out', () => {
  it('replaces a link in its own directory instead of writing through it', async () => {
    const dir = join(host.root, 'own');
    plant(dir);
    const ran = await exportTo(dir);
    expect(ran.code, ran.err).toBe(0);
    expectVictimUntouched();
    for (const [name, mode] of [
      ['seccomp.json', 0o644],
      ['env', 0o600],
    ] as const) {
      const st = lstatSync(join(dir, name));
      expect(st.isFile(), name).toBe(true);
      expect(st.mode & 0o7777, name).toBe(mode);
    }
  });

  it('refuses a directory others can write (exit 2), and writes nothing', async () => {
    const dir = join(host.root, 'shared');
    plant(dir);
    chmodSync(dir, 0o777);
    const ran = await exportTo(dir);
    expect(ran.code, ran.err).toBe(2);
    expect(ran.err).toContain(`${dir} is writable by others`);
    expectVictimUntouched();
  });

  it('refuses a directory below one others can write', async () => {
    const parent = join(host.root, 'shared-parent');
    mkdirSync(parent, { mode: 0o777 });
    chmodSync(parent, 0o777);
    const ran = await exportTo(join(parent, 'out'));
    expect(ran.code, ran.err).toBe(2);
    expect(ran.err).toContain(`${parent} is writable by others`);
  });

  it.skipIf(!IS_ROOT)("refuses another user's directory, naming its owner (needs root to chown)", async () => {
    const dir = join(host.root, 'theirs');
    plant(dir);
    chownSync(dir, 65534, 65534);
    const ran = await exportTo(dir);
    expect(ran.code, ran.err).toBe(2);
    expect(ran.err).toContain(`${dir} is owned by uid 65534`);
    expectVictimUntouched();
  });
});
