// bin/sbx.js answers a lone --version (or -V) without loading the CLI: the same line commander prints.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { VERSION } from '../../../src/version.js';
import { SBX_BIN } from '../../helpers/sbx-cli.js';

const sbx = (...args: string[]) => spawnSync(SBX_BIN, args, { encoding: 'utf8' });

describe('sbx --version', () => {
  it.each([['--version'], ['-V'], ['--version', 'run'], ['-V', '--help']])('%s prints the version', (...args) => {
    const r = sbx(...args);
    expect({ status: r.status, stdout: r.stdout, stderr: r.stderr }).toEqual({
      status: 0,
      stdout: `${VERSION}\n`,
      stderr: '',
    });
  });
});
