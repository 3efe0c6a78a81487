// install.sh's judgement of an `sbx` already in the target directory, on fake layouts in a temp dir:
// a copy of the script in a fake checkout (its own package.json and a stub bin/sbx.js), stub `npm` and
// `bwrap` first on PATH so nothing is installed or built, and SBX_INSTALL_BIN_DIR for the target.
// Only a link proven to be sbx's (a regular CHECKOUT/bin/sbx.js whose package.json parses as
// sbx-sandbox with bin.sbx bin/sbx.js) is replaced without --force.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../helpers/paths.js';

const SBX_PACKAGE = { name: 'sbx-sandbox', version: '0.0.0', bin: { sbx: 'bin/sbx.js' } };

let root = '';
let bindir = '';
let link = '';
let checkout = '';

/** A directory laid out like a checkout: package.json as given, and bin/sbx.js a stub that says where it is. */
function fakeCheckout(dir: string, manifest: object | string = SBX_PACKAGE): string {
  mkdirSync(join(dir, 'bin'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), typeof manifest === 'string' ? manifest : JSON.stringify(manifest));
  writeFileSync(join(dir, 'bin', 'sbx.js'), `#!/bin/sh\necho "stub sbx of ${dir}: $*"\n`);
  chmodSync(join(dir, 'bin', 'sbx.js'), 0o755);
  // The real recorder: install.sh records the Node.js that bin/sbx.js will run.
  copyFileSync(join(REPO_ROOT, 'bin', 'record-node.js'), join(dir, 'bin', 'record-node.js'));
  return dir;
}

function install(...args: string[]): { code: number | null; out: string; err: string } {
  const stubs = join(root, 'stubs');
  const path = [stubs, dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':');
  const r = spawnSync('bash', [join(checkout, 'install.sh'), ...args], {
    encoding: 'utf8',
    env: { PATH: path, HOME: join(root, 'home'), SBX_INSTALL_BIN_DIR: bindir },
    timeout: 20_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('install.sh: which existing `sbx` it replaces', () => {
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'sbx-install-'));
    checkout = fakeCheckout(join(root, 'checkout'));
    copyFileSync(join(REPO_ROOT, 'install.sh'), join(checkout, 'install.sh'));
    mkdirSync(join(root, 'stubs'));
    for (const tool of ['npm', 'bwrap']) {
      writeFileSync(join(root, 'stubs', tool), '#!/bin/sh\nexit 0\n');
      chmodSync(join(root, 'stubs', tool), 0o755);
    }
    bindir = join(root, 'bin');
    mkdirSync(bindir);
    mkdirSync(join(root, 'home'));
    link = join(bindir, 'sbx');
    return () => rmSync(root, { recursive: true, force: true });
  });

  const linksHere = () => expect(readlinkSync(link)).toBe(join(checkout, 'bin', 'sbx.js'));

  it('no sbx yet: links it and runs the first command through the link', () => {
    const r = install();
    // The Node.js that ran install.sh, by its real path, for bin/sbx.js's launcher (issue 31 §2).
    expect(readFileSync(join(checkout, 'node-path'), 'utf8')).toBe(`${realpathSync(process.execPath)}\n`);
    expect(r.out).toContain(`install: bin/sbx.js runs ${realpathSync(process.execPath)}\n`);
    expect(r.code, r.err).toBe(0);
    linksHere();
    expect(r.out).toContain(`install: linked ${link} -> ${join(checkout, 'bin', 'sbx.js')}\n`);
    expect(r.out).toContain(`stub sbx of ${checkout}: run -- sh -c`);
  });

  it('a link to this checkout already: left as it is', () => {
    symlinkSync(join(checkout, 'bin', 'sbx.js'), link);
    const r = install();
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`install: ${link} already links to ${join(checkout, 'bin', 'sbx.js')}\n`);
    linksHere();
  });

  it.each([
    ['an absolute link', (other: string) => join(other, 'bin', 'sbx.js')],
    ["npm's relative global link", () => '../lib/node_modules/sbx-sandbox/bin/sbx.js'],
  ])('%s to another checkout of sbx: replaced without --force, and said so', (_what, target) => {
    fakeCheckout(join(root, 'other'));
    fakeCheckout(join(root, 'lib', 'node_modules', 'sbx-sandbox'));
    symlinkSync(target(join(root, 'other')), link);
    const r = install();
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`install: ${link} links to an earlier sbx install (${target(join(root, 'other'))})`);
    linksHere();
  });

  it.each([
    ['a package.json that only mentions the name', { name: 'other-tool', description: '"name": "sbx-sandbox"' }],
    ['a package.json whose "name": "sbx-sandbox" is a dependency\'s', { name: 'x', deps: { name: 'sbx-sandbox' } }],
    ['sbx-sandbox whose bin.sbx is another file', { ...SBX_PACKAGE, bin: { sbx: 'bin/other.js' } }],
    ['sbx-sandbox with no bin.sbx', { name: 'sbx-sandbox', bin: 'bin/sbx.js' }],
    ['a package.json that does not parse', '{ "name": "sbx-sandbox", '],
  ])('a link to */bin/sbx.js in %s: refused without --force, replaced with it', (_what, manifest) => {
    const other = fakeCheckout(join(root, 'other'), manifest);
    symlinkSync(join(other, 'bin', 'sbx.js'), link);
    const refused = install();
    expect(refused.code).toBe(1);
    expect(refused.err).toContain(`install: ${link} already exists (a link to ${join(other, 'bin', 'sbx.js')})`);
    expect(refused.err).toContain('run ./install.sh --force');
    expect(readlinkSync(link)).toBe(join(other, 'bin', 'sbx.js'));
    const forced = install('--force');
    expect(forced.code, forced.err).toBe(0);
    linksHere();
  });

  it.each([
    ['a directory', (file: string) => mkdirSync(file)],
    [
      'a link to another checkout',
      (file: string) => symlinkSync(join(fakeCheckout(join(dirname(file), 'x')), 'bin/sbx.js'), file),
    ],
  ])('a link to a bin/sbx.js that is %s, not a regular file: refused', (_what, make) => {
    const other = join(root, 'other');
    mkdirSync(join(other, 'bin'), { recursive: true });
    writeFileSync(join(other, 'package.json'), JSON.stringify(SBX_PACKAGE));
    make(join(other, 'bin', 'sbx.js'));
    symlinkSync(join(other, 'bin', 'sbx.js'), link);
    const r = install();
    expect(r.code).toBe(1);
    expect(r.err).toContain(`install: ${link} already exists`);
    expect(readlinkSync(link)).toBe(join(other, 'bin', 'sbx.js'));
  });

  it('a dangling link, even to */bin/sbx.js: refused with the fix; --force replaces it', () => {
    const gone = join(root, 'deleted-clone', 'bin', 'sbx.js');
    symlinkSync(gone, link);
    const refused = install();
    expect(refused.code).toBe(1);
    expect(refused.err).toBe(
      `install: ${link} is a dangling link (to ${gone}, which no longer exists): nothing shows it was sbx's.\n` +
        `    Remove it (rm ${link}), or run ./install.sh --force to replace it with a link to ${join(checkout, 'bin', 'sbx.js')}\n`,
    );
    expect(readlinkSync(link)).toBe(gone);
    const forced = install('--force');
    expect(forced.code, forced.err).toBe(0);
    expect(forced.out).toContain(`install: replacing ${link}\n`);
    linksHere();
  });

  it('a file of its own (another program called sbx): refused; --force replaces it', () => {
    writeFileSync(link, '#!/bin/sh\n');
    const refused = install();
    expect(refused.code).toBe(1);
    expect(refused.err).toContain(`install: ${link} already exists (regular file) and is not a link to this checkout.`);
    expect(lstatSync(link).isFile()).toBe(true);
    expect(install('--force').code).toBe(0);
    linksHere();
  });
});
