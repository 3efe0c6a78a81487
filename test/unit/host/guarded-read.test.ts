// Policy files are hostile input: regular files only, bounded, never below /proc, /sys or /dev (also
// through a symlink), and with owner checks, owned by the user or root and writable by nobody else
// along the whole path. Each refusal is prompt (a FIFO would block a plain read forever).
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { readGuarded, type ReadGuard } from '../../../src/host/guarded-read.js';
import { parseProfile } from '../../../src/profile/parse.js';
import { sbxErrorOf } from '../../helpers/errors.js';
import { makeTempDir } from '../../helpers/tmp.js';

const UID = process.getuid!();
const IS_ROOT = UID === 0;
const guard = (over: Partial<ReadGuard> = {}): ReadGuard => ({
  what: 'profile',
  maxBytes: 1024,
  checkOwner: true,
  uid: UID,
  ...over,
});

/** A private directory (mkdtemp is 0700) with one file in it. */
function fileIn(text = 'network: none\n', mode = 0o644): { dir: string; file: string } {
  const dir = makeTempDir();
  const file = join(dir, 'p.yaml');
  writeFileSync(file, text);
  chmodSync(file, mode);
  return { dir, file };
}

describe('readGuarded: what may be read', () => {
  it('control: a private regular file is read whole, with its real path', () => {
    const { dir, file } = fileIn();
    symlinkSync(file, join(dir, 'link.yaml'));
    expect(readGuarded(file, guard())).toEqual({ real: file, text: 'network: none\n' });
    expect(readGuarded(join(dir, 'link.yaml'), guard())).toEqual({ real: file, text: 'network: none\n' });
  });

  it.each(['/dev/zero', '/dev/stdin', '/proc/self/fd/0', '/proc/self/environ', '/sys/kernel/mm'])(
    '%s: PROFILE_UNSAFE, nothing read',
    (path) => {
      const error = sbxErrorOf(() => readGuarded(path, guard({ checkOwner: false })));
      expect(error.code).toBe('PROFILE_UNSAFE');
      expect(error.message).toContain('/proc, /sys and /dev hold no profiles');
    },
  );

  it('a symlink to /dev/zero is judged by where it leads', () => {
    const dir = makeTempDir();
    symlinkSync('/dev/zero', join(dir, 'zero.yaml'));
    const error = sbxErrorOf(() => readGuarded(join(dir, 'zero.yaml'), guard()));
    expect(error.code).toBe('PROFILE_UNSAFE');
    expect(error.message).toContain('(-> /dev/zero)');
  });

  it('a FIFO is refused at once (no writer needed), a directory too', () => {
    const dir = makeTempDir();
    execFileSync('mkfifo', [join(dir, 'fifo.yaml')]);
    expect(sbxErrorOf(() => readGuarded(join(dir, 'fifo.yaml'), guard())).message).toContain(
      'is a FIFO, not a regular file',
    );
    mkdirSync(join(dir, 'd.yaml'));
    expect(sbxErrorOf(() => readGuarded(join(dir, 'd.yaml'), guard())).message).toContain(
      'is a directory, not a regular file',
    );
  });

  it('a unix socket is refused', async () => {
    const dir = makeTempDir();
    const path = join(dir, 's.yaml');
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      const error = sbxErrorOf(() => readGuarded(path, guard()));
      expect(error.code).toBe('PROFILE_UNSAFE');
      expect(error.message).toContain('a socket');
    } finally {
      server.close();
    }
  });

  it('over the cap: PROFILE_TOO_LARGE naming the size and the cap; at the cap: read', () => {
    const { file } = fileIn('#'.repeat(1025));
    const error = sbxErrorOf(() => readGuarded(file, guard()));
    expect(error.code).toBe('PROFILE_TOO_LARGE');
    expect(error.message).toContain('1025 bytes');
    expect(error.message).toContain('1 KiB limit');
    expect(readGuarded(fileIn('#'.repeat(1024)).file, guard()).text).toHaveLength(1024);
  });

  it('a missing file: PROFILE_NOT_FOUND', () => {
    expect(sbxErrorOf(() => readGuarded(join(makeTempDir(), 'none.yaml'), guard())).code).toBe('PROFILE_NOT_FOUND');
  });
});

describe('readGuarded: owner and mode checks', () => {
  it.each([
    [0o664, 'group'],
    [0o646, 'others'],
    [0o666, 'group and others'],
  ])('a file of mode %s is writable by %s: refused with the chmod fix', (mode, who) => {
    const { file } = fileIn('x: 1\n', mode);
    const error = sbxErrorOf(() => readGuarded(file, guard()));
    expect(error.code).toBe('PROFILE_UNSAFE');
    expect(error.message).toContain(`${file} is writable by ${who} (mode 0${mode.toString(8)})`);
    expect(error.hint).toBe(`chmod go-w ${file}`);
  });

  it('built-ins skip the owner checks (the package is trusted), not the type checks', () => {
    const { file } = fileIn('x: 1\n', 0o666);
    expect(readGuarded(file, guard({ checkOwner: false })).text).toBe('x: 1\n');
  });

  it('a world-writable parent without the sticky bit is refused; with it, only entries of the user or root pass', () => {
    const { dir, file } = fileIn();
    chmodSync(dir, 0o777);
    const error = sbxErrorOf(() => readGuarded(file, guard()));
    expect(error.message).toContain(`${dir} is writable by group and others (mode 0777)`);
    chmodSync(dir, 0o1777);
    expect(readGuarded(file, guard()).text).toBe('network: none\n');
  });

  // Inside an sbx sandbox (SBX_SESSION_ID is set by sbx, e.g. when this suite runs under `sbx run`),
  // /tmp is the sandbox's own tmpfs, owned by the sandbox user: there is no root-owned sticky
  // directory to plant in. Everywhere else a missing one is a failure.
  const sticky = statSync(tmpdir());
  const stickyRootTmp = sticky.uid === 0 && (sticky.mode & 0o1777) === 0o1777;
  it.skipIf(!stickyRootTmp && process.env.SBX_SESSION_ID !== undefined)(
    'a file another user owns, directly in the sticky world-writable /tmp: refused (skipped inside an sbx sandbox, whose /tmp is its own)',
    () => {
      const shared = tmpdir();
      if (!stickyRootTmp)
        throw new Error(`${shared} is not a root-owned sticky world-writable dir: this test needs one`);
      const file = join(shared, `sbx-planted-${process.pid}-${Date.now()}.yaml`);
      writeFileSync(file, 'network: host\n');
      onTestFinished(() => rmSync(file, { force: true }));
      // As root, the other user is nobody; unprivileged, the file is ours and the reader another uid.
      if (IS_ROOT) chownSync(file, 65534, 65534);
      const reader = IS_ROOT ? 0 : UID + 1;
      const error = sbxErrorOf(() => readGuarded(file, guard({ uid: reader })));
      expect(error.code).toBe('PROFILE_UNSAFE');
      expect(error.message).toContain(
        `${file} is owned by uid ${IS_ROOT ? 65534 : UID}, not by you (uid ${reader}) or root`,
      );
      // Control: its owner may read it (the sticky parent is fine).
      expect(readGuarded(file, guard({ uid: IS_ROOT ? 65534 : UID })).text).toBe('network: host\n');
    },
  );

  it('the path as written is checked too: a symlink in a world-writable dir is refused even if its target is fine', () => {
    const dir = makeTempDir();
    const target = join(makeTempDir(), 'real.yaml');
    writeFileSync(target, 'x: 1\n');
    symlinkSync(target, join(dir, 'p.yaml'));
    expect(readGuarded(join(dir, 'p.yaml'), guard()).real).toBe(target);
    chmodSync(dir, 0o777);
    expect(sbxErrorOf(() => readGuarded(join(dir, 'p.yaml'), guard())).message).toContain(
      `${dir} is writable by group and others`,
    );
  });

  // Only root can give a symlink to another user.
  it.runIf(IS_ROOT)('a symlink another user planted in a sticky dir is refused even if its target is fine', () => {
    const dir = makeTempDir();
    chmodSync(dir, 0o1777);
    const target = join(makeTempDir(), 'real.yaml');
    writeFileSync(target, 'x: 1\n');
    const link = join(dir, 'p.yaml');
    symlinkSync(target, link);
    execFileSync('chown', ['-h', '65534', link]);
    expect(sbxErrorOf(() => readGuarded(link, guard())).message).toContain(`${link} is owned by uid 65534`);
  });
});

describe('parseProfile: alias expansion cap', () => {
  it('a "billion laughs" document is a PROFILE_PARSE error, not a hang or a crash', () => {
    let text = 'a: &a [x, x, x, x, x, x, x, x, x]\n';
    let previous = 'a';
    for (let i = 0; i < 9; i++) {
      text += `b${i}: &b${i} [${Array(9).fill(`*${previous}`).join(', ')}]\n`;
      previous = `b${i}`;
    }
    const error = sbxErrorOf(() => parseProfile(text, 'laughs.yaml'));
    expect(error.code).toBe('PROFILE_PARSE');
    expect(error.message).toContain('alias');
  });

  it('control: a few aliases are fine', () => {
    expect(parseProfile('env:\n  keep: &k [PATH]\nread_only: []\n', 'ok.yaml').profile.env?.keep).toEqual(['PATH']);
  });
});
