// TIOCSTI from inside the sandbox into the caller's terminal, through real bwrap (`bin/sbx.js run`):
// script(1) gives sbx a fresh pty as stdin, so the run keeps that terminal's session (no
// --new-session) and only the seccomp filter stands between the command and the terminal. Under the
// default preset the ioctl fails with EPERM and nothing is said; under `seccomp: off` sbx warns on
// stderr before the command starts and lists the warning in the report.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TIOCSTI_WARNING } from '../../../src/pipeline/terminal.js';
import { readReport } from '../../helpers/report.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runSbx,
  SBX_BIN,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

const EPERM = 1;
const EIO = 5;
const ENOTTY = 25;
/** Pushes one byte into stdin's terminal and prints the errno (0: it went in). */
const PUSH = [
  'import fcntl, termios',
  'try:',
  '    fcntl.ioctl(0, termios.TIOCSTI, b"#")',
  '    print("tiocsti 0")',
  'except OSError as e:',
  '    print("tiocsti", e.errno)',
].join('\n');
/** Where dev.tty.legacy_tiocsti=0 (Linux 6.2+) the kernel refuses TIOCSTI itself, and sbx says nothing. */
const LEGACY = '/proc/sys/dev/tty/legacy_tiocsti';
const KERNEL_ALLOWS = !existsSync(LEGACY) || readFileSync(LEGACY, 'utf8').trim() !== '0';

let t: TestHost;

const sq = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

/** `sbx run ARGS -- python3 -c PUSH` on a fresh pty: everything it and sbx wrote, and the errno seen inside. */
function onPty(args: readonly string[]): { text: string; errno: number } {
  const argv = [process.execPath, SBX_BIN, 'run', ...args, '--', 'python3', '-c', PUSH];
  const r = spawnSync('script', ['-qec', argv.map(sq).join(' '), '/dev/null'], {
    cwd: t.workspace,
    env: { ...t.env, PATH: `${dirname(process.execPath)}:${t.env.PATH}` },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 20_000,
  });
  expect(r.status, r.stdout + r.stderr).toBe(0);
  const errno = /tiocsti (\d+)\r?$/m.exec(r.stdout)?.[1];
  expect(errno, r.stdout).toBeDefined();
  return { text: r.stdout, errno: Number(errno) };
}

describe.skipIf(SKIP_INTEGRATION)('TIOCSTI into the terminal on stdin (script(1) pty, real bwrap)', () => {
  let off = '';
  beforeAll(() => {
    requireIntegrationPrerequisites();
    const found = spawnSync('script', ['--version'], { stdio: 'ignore' });
    if (found.error) throw new Error(`script (util-linux) is required for the pty tests: ${found.error.message}`);
    t = makeTestHost('tty');
    off = join(t.root, 'seccomp-off.yaml');
    writeFileSync(off, 'extends: default\nseccomp: off\n', { mode: 0o644 });
  });
  afterAll(() => t?.cleanup());

  it('the default preset: TIOCSTI fails with EPERM, and no warning', () => {
    const r = onPty([]);
    expect(r.errno).toBe(EPERM);
    expect(r.text).not.toContain('sbx: warning');
  });

  it('seccomp: off warns before the command starts and lists it in the report; the push goes through', () => {
    const report = join(t.root, 'off-report.json');
    const r = onPty(['-p', off, '--report-file', report]);
    if (KERNEL_ALLOWS) {
      const lines = r.text.split(/\r?\n/);
      const warned = lines.indexOf(`sbx: warning: ${TIOCSTI_WARNING}`);
      expect(warned, r.text).toBeGreaterThanOrEqual(0);
      expect(warned, 'the warning comes before the command runs').toBeLessThan(
        lines.findIndex((l) => l.includes('tiocsti ')),
      );
      expect(r.errno).toBe(0); // the control: nothing but the filter stopped it
      expect(readReport(report).warnings).toEqual([TIOCSTI_WARNING]);
    } else {
      expect(r.errno).toBe(EIO);
      expect(r.text).not.toContain('sbx: warning');
      expect(readReport(report).warnings).toBeUndefined();
    }
  });

  it('seccomp: off without a terminal on stdin: no warning (the command gets its own session)', async () => {
    const r = await runSbx(['-p', off, '--', 'python3', '-c', PUSH], { env: t.env, cwd: t.workspace });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe(`tiocsti ${ENOTTY}\n`);
    expect(r.err).toBe('');
  });
});
