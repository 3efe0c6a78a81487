// A session directory is removed when its run ends, whatever it holds.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSession } from '../../../src/host/session.js';
import { makeTempDir } from '../../helpers/tmp.js';

const UID = process.getuid!();

describe('openSession', () => {
  it.each([
    ['its files', (dir: string) => writeFileSync(join(dir, 'fd3'), 'data')],
    ['a directory', (dir: string) => mkdirSync(join(dir, 'sub', 'deeper'), { recursive: true })],
  ])('close() removes the directory with %s', (_, add) => {
    const runtime = makeTempDir();
    const session = openSession({ XDG_RUNTIME_DIR: runtime }, UID);
    expect(existsSync(session.emptyFile)).toBe(true);
    add(session.dir);
    session.close();
    expect(existsSync(session.dir)).toBe(false);
    expect(existsSync(join(runtime, 'sbx'))).toBe(true);
  });
});
