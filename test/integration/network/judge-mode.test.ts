// The network judge's `--judge` mode on its own (native/sbx-landlock.c, native/sbx-landlock-net.c), in a
// network namespace bwrap makes for the test (only `lo`): the judge's child plays sbx's bridge and the
// command (fixtures/judge-client.py), so each case of the capture exchange is seen from the client's
// side. A blocking, a non-blocking and a v4-mapped IPv6 connect are captured with the preamble; a 403
// is ECONNREFUSED and the socket can connect again; a 502 is ECONNREFUSED and reported on the status
// descriptor (a 403 is the proxy's to report); a capture the proxy has not answered does not hold
// another; a loopback connect is the namespace's own. The control: the same client without the judge
// reaches nothing off `lo`. Root and normal user alike.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../helpers/paths.js';
import { SKIP_INTEGRATION } from '../../helpers/sbx-cli.js';

const HELPER = join(REPO_ROOT, 'dist', 'sbx-landlock');
const CLIENT = join(REPO_ROOT, 'test', 'integration', 'network', 'fixtures', 'judge-client.py');
const SKIP = SKIP_INTEGRATION || !existsSync(HELPER) ? 'dist/sbx-landlock was not built (no C compiler)' : '';

function collect(stream: Readable | null): () => string {
  let out = '';
  stream?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  return () => out;
}

/** The client in a fresh network namespace, under the judge or not: its stdout and the judge's status. */
async function inNamespace(judged: boolean): Promise<{ out: string; status: string; code: number | null }> {
  const bwrap = ['--unshare-net', '--unshare-pid', '--die-with-parent', '--ro-bind', '/', '/', '--dev', '/dev'];
  const client = ['/usr/bin/python3', CLIENT];
  // Descriptor 7: the judge's status; 9: where the client announces (the judge's pipe, or a plain one).
  const command = judged ? [HELPER, '--judge', '-', '7', '9', '--', ...client] : client;
  const child = spawn('bwrap', [...bwrap, '--proc', '/proc', '--', ...command], {
    stdio: ['ignore', 'pipe', 'inherit', 'ignore', 'ignore', 'ignore', 'ignore', 'pipe', 'ignore', 'pipe'],
  });
  const out = collect(child.stdout);
  const status = collect(child.stdio[7] as Readable);
  // 'close': the process has exited and every stream it held has ended.
  const [code] = (await once(child, 'close')) as [number | null];
  return { out: out(), status: status(), code };
}

beforeAll(() => {
  if (SKIP) return;
  if (!existsSync('/usr/bin/python3')) throw new Error('python3 is required (apt-get install python3)');
});

describe.skipIf(SKIP !== '')(`sbx-landlock --judge${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it('captures each TCP connect off lo with the preamble; refusals are ECONNREFUSED; a stalled one holds no other', async () => {
    const r = await inNamespace(true);
    const lines = r.out.trimEnd().split('\n');
    expect(lines.slice(0, -1)).toEqual([
      'v4 ok tunnel',
      'mapped ok tunnel',
      'nonblocking ok tunnel',
      'refused ConnectionRefusedError',
      // The refused socket was left unconnected: it connects again.
      'retry ok tunnel',
      'bad-gateway ConnectionRefusedError',
      'while-stalled ok tunnel',
      'stalled ok tunnel',
      'loopback ok',
    ]);
    const preamble = (target: string) => `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nX-Sbx-Capture: 1\r\n\r\n`;
    const heads = JSON.parse(lines.at(-1)!) as string[];
    // A v4-mapped address is named as IPv4 (the pool's form); the stalled and the other in either order.
    expect(heads.slice(0, 6)).toEqual(
      ['198.18.0.5:443', '198.18.0.6:80', '198.18.0.7:80', '10.9.9.9:443', '198.18.0.8:443', '10.8.8.8:443'].map(
        preamble,
      ),
    );
    expect(heads.slice(6).sort()).toEqual([preamble('10.7.7.7:443'), preamble('198.18.0.9:443')]);
    expect(r.status.trim().split('\n')).toEqual([
      '{ "denied": { "call": "connect", "what": "sbx\'s proxy refused the captured connection", "address": "10.8.8.8", "port": 443, "captured": true } }',
    ]);
    expect(r.code).toBe(0);
  }, 60_000);

  it('control: without the judge nothing off lo is reached, loopback is', async () => {
    const r = await inNamespace(false);
    const lines = r.out.trimEnd().split('\n');
    expect(lines.slice(0, 6)).toEqual([
      'v4 OSError',
      'mapped OSError',
      'nonblocking OSError',
      'refused OSError',
      'retry OSError',
      'bad-gateway OSError',
    ]);
    expect(lines).toContain('loopback ok');
    expect(JSON.parse(lines.at(-1)!)).toEqual([]);
  }, 60_000);
});
