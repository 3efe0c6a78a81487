// Descriptors through real bwrap (`node bin/sbx.js run`): stdin/stdout are binary-safe, and a
// descriptor sbx's caller left open (without close-on-exec) does not cross into the sandbox.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  startSbx,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * Lists the shell's own descriptors (`ls -l /proc/<sh>/fd`, so the listing itself opens nothing in the
 * shell), then prints the content behind each given fd.
 */
const fdProbe = (fds: number[]) =>
  `ls -l /proc/$$/fd; ${fds.map((fd) => `cat /proc/self/fd/${fd} 2>/dev/null`).join('; ')}; true`;

/** `ls -l /proc/PID/fd` lines → fd number → link target. */
function fdTable(out: string): Record<number, string> {
  return Object.fromEntries(
    out
      .split('\n')
      .map((l) => / (\d+) -> (.*)$/.exec(l))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [Number(m[1]), m[2]!]),
  );
}

describe.skipIf(SKIP_INTEGRATION)('stdio and descriptors (real bwrap via bin/sbx.js)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('fds');
  });
  afterAll(() => t?.cleanup());

  it('1 MiB of random bytes through stdin → cat → stdout keeps its sha256 (control: the same unsandboxed)', async () => {
    const input = randomBytes(1024 * 1024);
    const host = await runHost(['cat'], { env: t.env, cwd: t.workspace, input });
    expect(sha256(host.stdout)).toBe(sha256(input));
    const r = await runSbx(['--', 'cat'], { env: t.env, cwd: t.workspace, input });
    expect(r.code).toBe(0);
    expect(r.stdout.length).toBe(input.length);
    expect(sha256(r.stdout)).toBe(sha256(input));
    expect(r.err).toBe('');
  });

  it('binary bytes on stderr pass through too', async () => {
    const input = randomBytes(64 * 1024);
    const r = await runSbx(['--', 'sh', '-c', 'cat >&2'], { env: t.env, cwd: t.workspace, input });
    expect(r.code).toBe(0);
    expect(sha256(r.stderr)).toBe(sha256(input));
    expect(r.stdout.length).toBe(0);
  });

  describe('a descriptor the caller leaked', () => {
    let secretFile: string;
    let fd: number;
    beforeAll(() => {
      secretFile = join(t.root, 'secret-fd.txt');
      writeFileSync(secretFile, 'SECRETFD\n');
      fd = openSync(secretFile, 'r');
    });
    afterAll(() => closeSync(fd));

    // fd 5 (as an agent framework would pass it) and fd 40 (above every descriptor sbx and bwrap use
    // themselves, and above the range Node marks close-on-exec at start-up: a real leak into sbx).
    const LEAKED = [5, 40];
    const extraStdio = () => Object.fromEntries(LEAKED.map((n) => [n, fd]));

    it('control: unsandboxed, the child reads SECRETFD from those descriptors', async () => {
      const r = await runHost(['sh', '-c', fdProbe(LEAKED)], {
        env: t.env,
        cwd: t.workspace,
        extraStdio: extraStdio(),
      });
      const table = fdTable(r.out);
      for (const n of LEAKED) expect(table[n]).toBe(secretFile);
      expect(r.out.split('SECRETFD')).toHaveLength(LEAKED.length + 1);
    });

    it('inside, neither /proc/self/fd nor a read shows the file; the leaked numbers are /dev/null or closed', async () => {
      const sbx = startSbx(['--', 'sh', '-c', `echo ready; read line; ${fdProbe(LEAKED)}`], {
        env: t.env,
        cwd: t.workspace,
        stdin: 'pipe',
        extraStdio: extraStdio(),
      });
      await sbx.line(/^ready$/);
      // The attempt is real: sbx itself holds fd 40 open on the file, without close-on-exec.
      const pid = sbx.child.pid!;
      expect(readFileSync(`/proc/${pid}/fdinfo/40`, 'utf8')).toMatch(/^flags:\s+[0-7]*$/m);
      const flags = parseInt(/^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/${pid}/fdinfo/40`, 'utf8'))![1]!, 8);
      expect(flags & 0o2000000, 'fd 40 is close-on-exec in sbx: the leak would not be exercised').toBe(0);
      sbx.stdin!.end('go\n');
      const r = await sbx.done;
      expect(r.code).toBe(0);
      expect(r.out + r.err).not.toContain('SECRETFD');
      const table = fdTable(r.out);
      expect(Object.values(table)).not.toContain(secretFile);
      expect(table[0]).toBeDefined();
      for (const [n, target] of Object.entries(table)) if (Number(n) > 2) expect(target, `fd ${n}`).toBe('/dev/null');
    });
  });
});
