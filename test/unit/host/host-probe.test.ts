// probeBwrap caches `bwrap --version` by the binary's identity, in the process and in the cache dir:
// a rewritten binary, or a cache entry that is not exactly sbx's own, means asking the binary again.
import { chmodSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { probeBwrap } from '../../../src/host/host-probe.js';
import { makeTempDir } from '../../helpers/tmp.js';

/** probeBwrap as a new process has it: nothing learnt yet but what the cache dir holds. */
async function freshProbe(): Promise<typeof probeBwrap> {
  vi.resetModules();
  return (await import('../../../src/host/host-probe.js')).probeBwrap;
}

/** A stand-in bwrap that prints `version` and counts its runs in a file beside it. */
function fakeBwrap(dir: string, version: string): { env: Record<string, string>; runs: () => number } {
  const bin = join(dir, 'bwrap');
  const count = join(dir, 'runs');
  writeFileSync(count, '');
  writeFileSync(bin, `#!/bin/sh\necho x >> ${count}\necho "bubblewrap ${version}"\n`, { mode: 0o755 });
  return { env: { SBX_BWRAP: bin }, runs: () => readFileSync(count, 'utf8').length / 2 };
}

describe('probeBwrap', () => {
  it('asks the binary once, then answers from the cache', async () => {
    const dir = makeTempDir();
    const cache = join(dir, 'cache');
    const bwrap = fakeBwrap(dir, '0.8.0');
    const first = probeBwrap(bwrap.env, cache);
    expect(first).toMatchObject({ version: 'bubblewrap 0.8.0', features: { bindFd: true, tmpfsSize: true } });
    expect(statSync(join(cache, 'bwrap.json')).mode & 0o777).toBe(0o600);
    expect((await freshProbe())(bwrap.env, cache)).toEqual(first);
    expect(bwrap.runs()).toBe(1);
  });

  it('within a process, a binary seen before is not asked again, cache dir or not', () => {
    const dir = makeTempDir();
    const bwrap = fakeBwrap(dir, '0.8.0');
    probeBwrap(bwrap.env, join(dir, 'cache'));
    rmSync(join(dir, 'cache'), { recursive: true });
    expect(probeBwrap(bwrap.env, undefined).version).toBe('bubblewrap 0.8.0');
    expect(bwrap.runs()).toBe(1);
  });

  it('a binary rewritten in place, same size and mtime, is asked again', () => {
    const dir = makeTempDir();
    const cache = join(dir, 'cache');
    const bwrap = fakeBwrap(dir, '0.8.0');
    probeBwrap(bwrap.env, cache);
    const { atime, mtime } = statSync(bwrap.env.SBX_BWRAP!);
    writeFileSync(bwrap.env.SBX_BWRAP!, readFileSync(bwrap.env.SBX_BWRAP!, 'utf8').replace('0.8.0', '0.7.0'));
    utimesSync(bwrap.env.SBX_BWRAP!, atime, mtime);
    expect(probeBwrap(bwrap.env, cache).features.bindFd).toBe(false);
    expect(bwrap.runs()).toBe(2);
  });

  it.each([
    ['others can write', (file: string) => chmodSync(file, 0o666)],
    ['is not JSON', (file: string) => writeFileSync(file, '{"id": ', { mode: 0o600 })],
    ['names another binary', (file: string) => writeFileSync(file, '{"id":"/x","version":"9"}', { mode: 0o600 })],
    [
      'has no version string',
      (file: string) => {
        const { id } = JSON.parse(readFileSync(file, 'utf8')) as { id: string };
        writeFileSync(file, JSON.stringify({ id, version: 9 }), { mode: 0o600 });
      },
    ],
  ])('a cache entry that %s is ignored', async (_, spoil) => {
    const dir = makeTempDir();
    const cache = join(dir, 'cache');
    const bwrap = fakeBwrap(dir, '0.8.0');
    probeBwrap(bwrap.env, cache);
    spoil(join(cache, 'bwrap.json'));
    expect((await freshProbe())(bwrap.env, cache).version).toBe('bubblewrap 0.8.0');
    expect(bwrap.runs()).toBe(2);
  });
});
