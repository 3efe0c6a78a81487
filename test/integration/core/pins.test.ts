// host/pins.ts on the real filesystem: what is checked is the opened descriptor (its path from
// /proc/self/fd and its fstat), it keeps pointing at the checked object when the path is swapped
// afterwards, and a path sbx resolved earlier is refused once it resolves elsewhere.
import { execFileSync } from 'node:child_process';
import {
  fstatSync,
  mkdirSync,
  mkdtempSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPins } from '../../../src/host/pins.js';
import { sbxErrorOf } from '../../helpers/errors.js';

let root: string;

describe('pinned paths (host/pins.ts)', () => {
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'sbx-pins-'));
    mkdirSync(join(root, 'real'));
    writeFileSync(join(root, 'real', 'f'), 'real\n');
    mkdirSync(join(root, 'secret'));
    symlinkSync(join(root, 'real'), join(root, 'link'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('describes what it opened: a symlink resolves to its target, the type comes from the descriptor', () => {
    const pins = openPins();
    try {
      expect(pins.probe(join(root, 'link'))).toEqual({
        exists: true,
        real: join(root, 'real'),
        type: 'dir',
        link: join(root, 'real'),
        uid: process.getuid!(),
      });
      expect(pins.probe(join(root, 'real', 'f'))).toMatchObject({ exists: true, type: 'file' });
      expect(pins.probe(join(root, 'missing'))).toEqual({ exists: false });
      expect(readlinkSync(`/proc/self/fd/${pins.fdOf(join(root, 'real'))}`)).toBe(join(root, 'real'));
    } finally {
      pins.close();
    }
  });

  it('a socket is a socket, a FIFO is opened without blocking (O_PATH) and is "other"', async () => {
    const server = createServer();
    const sock = join(root, 's.sock');
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    execFileSync('mkfifo', [join(root, 'fifo')]);
    const pins = openPins();
    try {
      expect(pins.probe(sock)).toMatchObject({ exists: true, type: 'socket' });
      expect(pins.probe(join(root, 'fifo'))).toMatchObject({ exists: true, type: 'other' });
    } finally {
      pins.close();
      server.close();
    }
  });

  it('the descriptor stays on the checked object when the path is swapped for a symlink afterwards', () => {
    const dir = join(root, 'swap');
    mkdirSync(dir);
    const before = statSync(dir);
    const pins = openPins();
    try {
      pins.probe(dir);
      renameSync(dir, `${dir}.moved`);
      symlinkSync(join(root, 'secret'), dir);
      const st = fstatSync(pins.fdOf(dir)!);
      expect([st.dev, st.ino]).toEqual([before.dev, before.ino]);
      // Control: the path itself now leads elsewhere.
      expect(statSync(dir).ino).not.toBe(before.ino);
      // Re-pinning the checked path now refuses: it no longer resolves to itself.
      const other = openPins();
      try {
        expect(sbxErrorOf(() => other.pinExact(dir, 'test')).code).toBe('BIND_SOURCE_CHANGED');
        other.pinExact(join(root, 'real'), 'test');
        expect(other.fdOf(join(root, 'real'))).toEqual(expect.any(Number));
      } finally {
        other.close();
      }
    } finally {
      pins.close();
    }
  });

  it('close() closes every descriptor', () => {
    const pins = openPins();
    pins.probe(join(root, 'real'));
    const fd = pins.fdOf(join(root, 'real'))!;
    pins.close();
    expect(pins.fdOf(join(root, 'real'))).toBeUndefined();
    expect(() => fstatSync(fd)).toThrow(/EBADF/);
  });
});
